/**
 * One small HTTP server for the suites that stand in for a caller's callback receiver or a
 * pipeline's upstream: it reads each request's body whole, hands it to the test's answer, and
 * closes every connection it holds when the test is done.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  /** Path and query, as sent. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body's exact bytes (binary bodies). */
  raw: Buffer;
}

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  close(): Promise<void>;
}

export async function startTestServer(answer: (req: ReceivedRequest, res: ServerResponse) => void): Promise<TestServer> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      answer({ method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body: raw.toString('utf8'), raw }, res);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((ok) => server.close(ok));
    },
  };
}

/** Answers a request with a status and, when given, a JSON body. */
export function reply(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.statusCode = status;
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/**
 * A fake AWS service on loopback: answers the queued `[status, body]` pairs in order (then
 * `fallback`) through `write`, and keeps every request it received. `reset` empties both.
 */
export interface ScriptedServer extends TestServer {
  readonly seen: ReceivedRequest[];
  answers: [number, unknown][];
  reset(): void;
}

export async function startScriptedServer(
  fallback: [number, unknown],
  write: (res: ServerResponse, status: number, body: unknown) => void = reply,
): Promise<ScriptedServer> {
  const scripted = { seen: [] as ReceivedRequest[], answers: [] as [number, unknown][] };
  const server = await startTestServer((req, res) => {
    scripted.seen.push(req);
    const [status, body] = scripted.answers.shift() ?? fallback;
    write(res, status, body);
  });
  return Object.assign(scripted, {
    origin: server.origin,
    close: () => server.close(),
    reset() {
      scripted.seen.length = 0;
      scripted.answers = [];
    },
  });
}
