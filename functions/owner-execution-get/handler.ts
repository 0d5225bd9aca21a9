import { lambdaDeps } from '../adapters/deps';
import { streamedJsonHandler, json } from '../adapters/api';
import { getExecution } from '../services/owner-executions.service';

/** GET /v1/pipelines/{pipeline_id}/executions/{execution_id}: the owner's view, trace and deliveries included. */
export const createHandler = streamedJsonHandler(async (req) =>
  json(200, await getExecution(req.deps, req.param('pipeline_id'), req.param('execution_id'), req.baseUrl)),
);

export const handler = createHandler(lambdaDeps);
