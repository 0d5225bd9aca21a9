import { lambdaDeps } from '../adapters/deps';
import { httpHandler } from '../adapters/api';
import { serveAsset } from '../services/assets.service';

/** GET /v1/assets/{token}: a stored object's exact bytes, for whoever holds an unexpired link. */
export const createHandler = httpHandler(async (req) => {
  const answer = await serveAsset(req.deps, req.param('token'), req.header('range'));
  const chunks: Uint8Array[] = [];
  for await (const chunk of answer.body) chunks.push(chunk);
  return { status: answer.status, headers: answer.headers, binary: Buffer.concat(chunks) };
});

export const handler = createHandler(lambdaDeps);
