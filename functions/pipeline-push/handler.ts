import { lambdaDeps } from '../adapters/deps';
import { jsonBodyText, httpHandler, json } from '../adapters/api';
import { push } from '../services/push.service';

/** PUT /v1/pipelines/{pipeline_id} → 201 with a new version, 200 when unchanged. */
export const createHandler = httpHandler(async (req) => {
  const out = await push(req.deps, req.param('pipeline_id'), jsonBodyText(req.event));
  return json(out.status, out.body);
});

export const handler = createHandler(lambdaDeps);
