import { lambdaDeps } from '../adapters/deps';
import { callerLimits } from '../services/limits.service';
import { callerAuth, httpHandler, json } from '../adapters/api';
import { contract } from '../services/caller.service';

/** GET /v1/deployments/{deployment_id}/ → the visible contract. */
export const createHandler = httpHandler(
  async (req) => json(200, await contract(req.deps, callerAuth(req.event), req.param('deployment_id'))),
  { gate: callerLimits },
);

export const handler = createHandler(lambdaDeps);
