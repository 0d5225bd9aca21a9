import { lambdaDeps } from '../adapters/deps';
import { callerAuth, streamedHttpHandler } from '../adapters/api';
import { openEventStream } from '../services/events.service';

async function* utf8(chunks: AsyncIterable<string>): AsyncIterable<Uint8Array> {
  for await (const c of chunks) yield Buffer.from(c, 'utf8');
}

/** GET /v1/deployments/executions/{execution_id}/events/: server-sent events until `done` (contract §4). */
export const createHandler = streamedHttpHandler(async (req) => {
  const events = await openEventStream(req.deps, callerAuth(req.event), req.param('execution_id'), {
    lastEventId: req.header('last-event-id'),
    baseUrl: req.baseUrl,
  });
  return {
    status: 200,
    // no-transform: a proxy that compresses or buffers would hold events back.
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform' },
    body: utf8(events),
  };
});

export const handler = createHandler(lambdaDeps);
