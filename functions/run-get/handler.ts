import { lambdaDeps } from '../adapters/deps';
import { httpHandler, json } from '../adapters/api';
import { getRun } from '../services/owner.service';

/** GET /v1/pipelines/{pipeline_id}/runs/{run_id} */
export const createHandler = httpHandler(async (req) => json(200, await getRun(req.deps, req.param('pipeline_id'), req.param('run_id'))));

export const handler = createHandler(lambdaDeps);
