import { lambdaDeps } from '../adapters/deps';
import { streamedJsonHandler, json, preferredWait } from '../adapters/api';
import { getRun } from '../services/runs.service';

/** GET /v1/pipelines/{pipeline_id}/runs/{run_id} (`Prefer: wait=N` waits for the run to finish) */
export const createHandler = streamedJsonHandler(async (req) => {
  const out = await getRun(req.deps, req.param('pipeline_id'), req.param('run_id'), preferredWait(req), req.baseUrl);
  return json(200, out.body, out.headers);
});

export const handler = createHandler(lambdaDeps);
