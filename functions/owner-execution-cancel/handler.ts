import { lambdaDeps } from '../adapters/deps';
import { httpHandler, json } from '../adapters/api';
import { cancel } from '../services/owner-executions.service';

/** POST /v1/pipelines/{pipeline_id}/executions/{execution_id}/cancel: a run or an API execution. */
export const createHandler = httpHandler(async (req) =>
  json(200, await cancel(req.deps, req.param('pipeline_id'), req.param('execution_id'))),
);

export const handler = createHandler(lambdaDeps);
