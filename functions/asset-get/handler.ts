import { lambdaDeps } from '../adapters/deps';
import { streamedHttpHandler } from '../adapters/api';
import { serveAsset } from '../services/assets.service';

/**
 * GET /v1/assets/{token}: a stored object's exact bytes, for whoever holds an unexpired link;
 * HEAD: the same status and headers without the bytes.
 * Streamed (lib/routes.ts `streams`): the bytes pass from the store to the client in chunks.
 */
export const createHandler = streamedHttpHandler((req) =>
  serveAsset(req.deps, req.param('token'), req.header('range'), req.event.httpMethod === 'HEAD'),
);

export const handler = createHandler(lambdaDeps);
