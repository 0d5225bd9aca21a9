import { httpHandler, json } from '../adapters/api';
import { list } from '../services/owner.service';

/** GET /v1/pipelines */
export const handler = httpHandler(async (req) => json(200, await list(req.deps)));
