import { bodyText, callerAuth, httpHandler } from '../adapters/api';
import { execute } from '../services/caller.service';

/** POST /v1/deployments/{deployment_id}/executions/ → 202 with status and result URLs. */
export const handler = httpHandler(async (req) => {
  const out = await execute(req.deps, callerAuth(req.event), {
    deploymentId: req.param('deployment_id'),
    body: bodyText(req.event),
    contentType: req.header('content-type'),
    idempotencyKey: req.header('idempotency-key'),
    baseUrl: req.baseUrl,
  });
  return { status: out.status, body: out.body, headers: out.headers };
});
