import { lambdaDeps } from '../adapters/deps';
import { httpHandler, json } from '../adapters/api';
import { usage } from '../services/owner-executions.service';

/** GET /v1/pipelines/{pipeline_id}/deployment/usage */
export const createHandler = httpHandler(async (req) => json(200, await usage(req.deps, req.param('pipeline_id'))));

export const handler = createHandler(lambdaDeps);
