import { callerAuth, httpHandler, json } from '../adapters/api';
import { result } from '../services/caller.service';

/** GET /v1/deployments/executions/{execution_id}/result/ → 200 once terminal, 409 before. */
export const handler = httpHandler(async (req) => json(200, await result(req.deps, callerAuth(req.event), req.param('execution_id'))));
