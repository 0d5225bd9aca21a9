import { lambdaDeps } from '../adapters/deps';
import { jsonBodyText, streamedJsonHandler, json, preferredWait } from '../adapters/api';
import { startRunWaiting } from '../services/owner.service';

/** POST /v1/pipelines/{pipeline_id}/runs → 202 (200 with the run when it finished within `Prefer: wait=N`) */
export const createHandler = streamedJsonHandler(async (req) => {
  const out = await startRunWaiting(req.deps, req.param('pipeline_id'), jsonBodyText(req.event), req.baseUrl, preferredWait(req));
  return json(out.status, out.body, out.headers);
});

export const handler = createHandler(lambdaDeps);
