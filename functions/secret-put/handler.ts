import { lambdaDeps } from '../adapters/deps';
import { jsonBodyText, httpHandler, json } from '../adapters/api';
import { putSecret } from '../services/owner-secrets.service';

/** PUT /v1/secrets/{name} {"value": "…"} → 200 {name, updated_at} */
export const createHandler = httpHandler(async (req) => json(200, await putSecret(req.deps, req.param('name'), jsonBodyText(req.event))));

export const handler = createHandler(lambdaDeps);
