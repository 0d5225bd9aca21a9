import { httpHandler, json } from '../adapters/api';
import { get } from '../services/owner.service';

/** GET /v1/pipelines/{pipeline_id} */
export const handler = httpHandler(async (req) => json(200, await get(req.deps, req.param('pipeline_id'))));
