import { lambdaDeps } from '../adapters/deps';
import { httpHandler, json } from '../adapters/api';
import { listSecrets } from '../services/owner-secrets.service';

/** GET /v1/secrets → {secrets: [{name, updated_at}]}, never values */
export const createHandler = httpHandler(async (req) => json(200, await listSecrets(req.deps)));

export const handler = createHandler(lambdaDeps);
