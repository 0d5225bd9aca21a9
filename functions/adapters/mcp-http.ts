/**
 * The MCP route's edge: the SDK's Streamable HTTP transport speaks web Request and Response
 * (functions/services/mcp.service.ts), the route API Gateway's proxy event and a streamed
 * answer (adapters/api.ts). Only translation here: the same method, headers and bytes.
 */
import type { RequestInfo, StreamedAnswer } from './api';
import { bodyText } from './api';

/** Headers of a connection, not of an answer: API Gateway and Lambda streaming set their own. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

/** The proxy event as a web Request at `url` (the request's own URL: the transport reads only its method, headers and body). */
export function webRequestOf(req: RequestInfo, url: string): Request {
  const headers = new Headers();
  const multi = req.event.multiValueHeaders ?? {};
  for (const [name, values] of Object.entries(multi)) for (const value of values ?? []) headers.append(name, value);
  for (const [name, value] of Object.entries(req.event.headers ?? {}))
    if (value !== undefined && !headers.has(name)) headers.set(name, value);
  const method = req.event.httpMethod.toUpperCase();
  const body = bodyText(req.event);
  return new Request(url, { method, headers, ...(method === 'GET' || method === 'HEAD' || body === null ? {} : { body }) });
}

/**
 * The transport's Response as a streamed answer: its status and headers, then its body as it
 * comes (an SSE stream ends when the last answer of the request is written). `done` runs once
 * the body has ended, been cut short or never been read.
 */
export function streamedAnswerOf(response: Response, done: () => Promise<void>): StreamedAnswer {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name.toLowerCase())) headers[name] = value;
  });
  const stream = response.body;
  async function* body(): AsyncIterable<Uint8Array> {
    try {
      if (stream === null) return;
      const reader = stream.getReader();
      try {
        for (;;) {
          const { value, done: ended } = await reader.read();
          if (ended) return;
          if (value !== undefined && value.length > 0) yield value;
        }
      } finally {
        // A client that went away: stop the transport's stream too.
        await reader.cancel().catch(() => undefined);
      }
    } finally {
      await done();
    }
  }
  return { status: response.status, headers, body: body() };
}
