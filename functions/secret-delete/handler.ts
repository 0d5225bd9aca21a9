import { lambdaDeps } from '../adapters/deps';
import { httpHandler, json } from '../adapters/api';
import { deleteSecret } from '../services/owner-secrets.service';

/** DELETE /v1/secrets/{name} → 204 */
export const createHandler = httpHandler(async (req) => {
  await deleteSecret(req.deps, req.param('name'));
  return json(204);
});

export const handler = createHandler(lambdaDeps);
