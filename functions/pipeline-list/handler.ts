import { lambdaDeps } from '../adapters/deps';
import { httpHandler, json } from '../adapters/api';
import { list } from '../services/pipelines.service';

/** GET /v1/pipelines */
export const createHandler = httpHandler(async (req) => json(200, await list(req.deps)));

export const handler = createHandler(lambdaDeps);
