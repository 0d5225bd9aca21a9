import { callerAuth, httpHandler, json } from '../adapters/api';
import { status } from '../services/caller.service';

/** GET /v1/deployments/executions/{execution_id}/status/ */
export const handler = httpHandler(async (req) =>
  json(200, await status(req.deps, callerAuth(req.event), req.param('execution_id'), req.baseUrl)),
);
