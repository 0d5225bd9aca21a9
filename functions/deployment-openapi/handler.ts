import { lambdaDeps } from '../adapters/deps';
import { callerLimits } from '../services/limits.service';
import { callerAuth, httpHandler, json } from '../adapters/api';
import { openApi } from '../services/caller-openapi.service';

/** GET /v1/deployments/{deployment_id}/openapi.json: this deployment's API as OpenAPI 3.1. */
export const createHandler = httpHandler(
  async (req) => json(200, await openApi(req.deps, callerAuth(req.event), req.param('deployment_id'), req.baseUrl)),
  { gate: callerLimits },
);

export const handler = createHandler(lambdaDeps);
