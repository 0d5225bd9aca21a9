import { lambdaDeps } from '../adapters/deps';
import { callerLimits } from '../services/limits.service';
import { bodyText, callerAuth, streamedJsonHandler, preferredWait } from '../adapters/api';
import { execute } from '../services/caller.service';

/**
 * POST /v1/deployments/{deployment_id}/executions/ → 202 with status and result URLs; with
 * `Prefer: wait=N`, 200 and the result when it finishes within N seconds.
 */
export const createHandler = streamedJsonHandler(
  async (req) => {
    const wait = preferredWait(req);
    const out = await execute(req.deps, callerAuth(req.event), {
      deploymentId: req.param('deployment_id'),
      body: bodyText(req.event),
      contentType: req.header('content-type'),
      idempotencyKey: req.header('idempotency-key'),
      baseUrl: req.baseUrl,
      wait,
    });
    return { status: out.status, body: out.body, headers: out.headers };
  },
  { inlineAssets: true, gate: callerLimits },
);

export const handler = createHandler(lambdaDeps);
