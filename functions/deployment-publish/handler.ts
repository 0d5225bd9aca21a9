import { lambdaDeps } from '../adapters/deps';
import { jsonBodyText, httpHandler, json } from '../adapters/api';
import { publish } from '../services/owner.service';

/** PUT /v1/pipelines/{pipeline_id}/deployment → 201 (created, with key and secret once) or 200. */
export const createHandler = httpHandler(async (req) => {
  const out = await publish(req.deps, req.param('pipeline_id'), jsonBodyText(req.event), req.baseUrl);
  return json(out.status, out.body, { 'cache-control': 'no-store' });
});

export const handler = createHandler(lambdaDeps);
