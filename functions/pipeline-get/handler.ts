import { lambdaDeps } from '../adapters/deps';
import { httpHandler, json } from '../adapters/api';
import { get } from '../services/pipelines.service';

/** GET /v1/pipelines/{pipeline_id} */
export const createHandler = httpHandler(async (req) => json(200, await get(req.deps, req.param('pipeline_id'))));

export const handler = createHandler(lambdaDeps);
