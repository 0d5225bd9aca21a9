import { lambdaDeps } from '../adapters/deps';
import { httpHandler, json } from '../adapters/api';
import { redeliver } from '../services/owner-executions.service';

/** POST /v1/pipelines/{pipeline_id}/executions/{execution_id}/callback/redeliver */
export const createHandler = httpHandler(async (req) => {
  const r = await redeliver(req.deps, req.param('pipeline_id'), req.param('execution_id'));
  return json(r.status, r.body);
});

export const handler = createHandler(lambdaDeps);
