import { httpHandler, json } from '../adapters/api';
import { listSecrets } from '../services/owner-secrets.service';

/** GET /v1/secrets → {secrets: [{name, updated_at}]}, never values */
export const handler = httpHandler(async (req) => json(200, await listSecrets(req.deps)));
