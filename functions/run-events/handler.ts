import { lambdaDeps } from '../adapters/deps';
import { streamedHttpHandler } from '../adapters/api';
import { openRunEventStream } from '../services/events.service';

async function* utf8(chunks: AsyncIterable<string>): AsyncIterable<Uint8Array> {
  for await (const c of chunks) yield Buffer.from(c, 'utf8');
}

/** GET /v1/pipelines/{pipeline_id}/runs/{run_id}/events: a run's server-sent events until `done` (contract §7). */
export const createHandler = streamedHttpHandler(async (req) => {
  const events = await openRunEventStream(req.deps, req.param('pipeline_id'), req.param('run_id'), {
    lastEventId: req.header('last-event-id'),
    baseUrl: req.baseUrl,
  });
  return {
    status: 200,
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform' },
    body: utf8(events),
  };
});

export const handler = createHandler(lambdaDeps);
