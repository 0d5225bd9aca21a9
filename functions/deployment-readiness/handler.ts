import { httpHandler, json } from '../adapters/api';
import { readiness } from '../services/owner.service';

/** GET /v1/pipelines/{pipeline_id}/deployment: readiness, discovered and published contracts. */
export const handler = httpHandler(async (req) => json(200, await readiness(req.deps, req.param('pipeline_id'), req.baseUrl)));
