import { lambdaDeps } from '../adapters/deps';
import { bodyText, httpHandler, json } from '../adapters/api';
import { startRun } from '../services/owner.service';

/** POST /v1/pipelines/{pipeline_id}/runs → 202 */
export const createHandler = httpHandler(async (req) => {
  const body = await startRun(req.deps, req.param('pipeline_id'), bodyText(req.event), req.baseUrl);
  return json(202, body, { location: body.status_url });
});

export const handler = createHandler(lambdaDeps);
