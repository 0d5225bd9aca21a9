import { lambdaDeps } from '../adapters/deps';
import { jsonBodyText, httpHandler, json } from '../adapters/api';
import { rotate } from '../services/owner.service';

/** POST /v1/pipelines/{pipeline_id}/deployment/keys → the new key (or signing secret), shown once. */
export const createHandler = httpHandler(async (req) =>
  json(200, await rotate(req.deps, req.param('pipeline_id'), jsonBodyText(req.event), req.baseUrl), { 'cache-control': 'no-store' }),
);

export const handler = createHandler(lambdaDeps);
