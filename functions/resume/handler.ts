import { lambdaDeps } from '../adapters/deps';
import { bodyText, httpHandler, json } from '../adapters/api';
import { resume } from '../services/resume.service';

/**
 * POST /v1/resume/{token} → 202: the event (a JSON object) becomes the wait node's value. No key:
 * the URL is the capability, and it is never logged (nor is the body).
 */
export const createHandler = httpHandler(async (req) =>
  json(202, await resume(req.deps, { token: req.param('token'), body: bodyText(req.event), contentType: req.header('content-type') })),
);

export const handler = createHandler(lambdaDeps);
