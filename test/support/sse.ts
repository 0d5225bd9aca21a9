/**
 * A server-sent events reader for tests: fetch over real HTTP, eventsource-parser on the bytes,
 * every event and comment recorded with the time it arrived (so a test can tell events that
 * came while the execution ran from events that came all at the end).
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { HANG_MS } from './hang';

export interface Received {
  id: string | undefined;
  event: string | undefined;
  data: Record<string, unknown>;
  /** Date.now() when it was parsed. */
  at: number;
}

export interface SseReader {
  status: number;
  headers: Headers;
  events: Received[];
  comments: string[];
  retry: number | undefined;
  /** Resolves once the server ends the stream (or the reader is closed). */
  ended: Promise<void>;
  waitFor(pred: (events: Received[]) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string>): Promise<SseReader> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const events: Received[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  const r: SseReader = {
    status: res.status,
    headers: res.headers,
    events,
    comments,
    retry: undefined,
    ended: Promise.resolve(),
    async waitFor(pred, timeoutMs = HANG_MS) {
      const end = Date.now() + timeoutMs;
      while (!pred(events)) {
        if (Date.now() > end)
          throw new Error(`events not seen within ${timeoutMs} ms: ${JSON.stringify(events.map((e) => [e.id, e.event]))}`);
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiters.delete(wake);
            resolve();
          };
          waiters.add(wake);
          setTimeout(wake, 50);
        });
      }
      return events;
    },
    close: () => abort.abort(),
  };
  const parser = createParser({
    onEvent: (m: EventSourceMessage) => {
      events.push({ id: m.id, event: m.event, data: JSON.parse(m.data) as Record<string, unknown>, at: Date.now() });
      for (const w of [...waiters]) w();
    },
    onComment: (c) => comments.push(c),
    onRetry: (ms) => (r.retry = ms),
  });
  r.ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch (e) {
      if (!abort.signal.aborted) throw e;
    }
  })();
  return r;
}
