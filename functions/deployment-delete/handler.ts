import { lambdaDeps } from '../adapters/deps';
import { httpHandler, json } from '../adapters/api';
import { remove } from '../services/deployment-delete.service';

/** DELETE /v1/pipelines/{pipeline_id}/deployment?confirm={deployment_id} → 204 */
export const createHandler = httpHandler(async (req) => {
  await remove(req.deps, req.param('pipeline_id'), req.query('confirm'));
  return json(204);
});

export const handler = createHandler(lambdaDeps);
