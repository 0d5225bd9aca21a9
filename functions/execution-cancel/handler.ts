import { lambdaDeps } from '../adapters/deps';
import { callerLimits } from '../services/limits.service';
import { callerAuth, httpHandler, json } from '../adapters/api';
import { cancel } from '../services/caller.service';

/** POST /v1/deployments/executions/{execution_id}/cancel/ */
export const createHandler = httpHandler(
  async (req) => json(200, await cancel(req.deps, callerAuth(req.event), req.param('execution_id'), req.baseUrl)),
  { gate: callerLimits },
);

export const handler = createHandler(lambdaDeps);
