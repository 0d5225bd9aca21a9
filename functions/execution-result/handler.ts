import { lambdaDeps } from '../adapters/deps';
import { callerLimits } from '../services/limits.service';
import { callerAuth, streamedJsonHandler, json, preferredWait } from '../adapters/api';
import { result } from '../services/caller.service';

/** GET /v1/deployments/executions/{execution_id}/result/ → 200 once terminal, 409 before (`Prefer: wait=N` waits first). */
export const createHandler = streamedJsonHandler(
  async (req) => {
    const out = await result(req.deps, callerAuth(req.event), req.param('execution_id'), preferredWait(req), req.baseUrl);
    return json(200, out.body, out.headers);
  },
  { gate: callerLimits },
);

export const handler = createHandler(lambdaDeps);
