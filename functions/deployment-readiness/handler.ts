import { lambdaDeps } from '../adapters/deps';
import { httpHandler, json } from '../adapters/api';
import { readiness } from '../services/publish.service';

/** GET /v1/pipelines/{pipeline_id}/deployment: readiness, discovered and published contracts. */
export const createHandler = httpHandler(async (req) => json(200, await readiness(req.deps, req.param('pipeline_id'), req.baseUrl)));

export const handler = createHandler(lambdaDeps);
