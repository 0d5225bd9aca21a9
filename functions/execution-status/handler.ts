import { lambdaDeps } from '../adapters/deps';
import { callerLimits } from '../services/limits.service';
import { callerAuth, streamedJsonHandler, json, preferredWait } from '../adapters/api';
import { status } from '../services/caller.service';

/** GET /v1/deployments/executions/{execution_id}/status/ (`Prefer: wait=N` waits for a terminal status). */
export const createHandler = streamedJsonHandler(
  async (req) => {
    const out = await status(req.deps, callerAuth(req.event), req.param('execution_id'), req.baseUrl, preferredWait(req));
    return json(200, out.body, out.headers);
  },
  { gate: callerLimits },
);

export const handler = createHandler(lambdaDeps);
