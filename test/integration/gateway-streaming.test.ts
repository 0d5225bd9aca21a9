/**
 * The local gateway's streamed methods over real HTTP: a `streams` method passes a streaming
 * handler's bytes through as they are written (the status and headers first), a method without
 * it never streams (a streaming handler there is a malformed proxy answer, 502, as on API
 * Gateway), a buffered handler behind a streamed method is a 502 too, and a client that goes
 * away stops the handler's stream.
 */
import '../../lib/local/gateway/awslambda-shim';
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { awslambda, type StreamingHandler } from '../../functions/adapters/lambda-streaming';
import { createGateway, type GatewayRoute, type ProxyHandler } from '../../lib/local/gateway';

const routes: GatewayRoute[] = [
  { method: 'GET', path: '/streamed', handler: 'streaming', auth: 'none', streams: true },
  { method: 'GET', path: '/buffered', handler: 'streaming', auth: 'none' },
  { method: 'GET', path: '/streamed-buffered', handler: 'buffered', auth: 'none', streams: true },
  { method: 'GET', path: '/endless', handler: 'endless', auth: 'none', streams: true },
];

let server: Server;
let base: string;
let endlessClosed: Promise<number>;

const streaming: StreamingHandler = awslambda().streamifyResponse(async (_event, stream) => {
  const out = awslambda().HttpResponseStream.from(stream, { statusCode: 200, headers: { 'content-type': 'application/octet-stream' } });
  for (let i = 0; i < 4; i += 1) out.write(Buffer.alloc(1000, i));
  out.end();
});

beforeAll(async () => {
  let closed: (written: number) => void = () => undefined;
  endlessClosed = new Promise((r) => (closed = r));
  const endless: StreamingHandler = awslambda().streamifyResponse(async (_event, stream) => {
    const out = awslambda().HttpResponseStream.from(stream, { statusCode: 200 });
    let written = 0;
    // Writes as fast as the reader takes; ends only when the stream is closed under it.
    while (!out.destroyed) {
      const ok = out.write(Buffer.alloc(64 * 1024));
      written += 1;
      if (!ok) {
        await new Promise<void>((r) => {
          const done = () => {
            out.off('drain', done).off('close', done);
            r();
          };
          out.on('drain', done).on('close', done);
        });
      }
    }
    closed(written);
  });
  const handlers: Record<string, ProxyHandler> = {
    streaming,
    endless,
    buffered: async () => ({ statusCode: 200, body: 'plain' }),
  };
  server = createServer(
    createGateway({
      routes,
      handlers,
      authorizer: async () => ({ principalId: 'x', policyDocument: { Version: '2012-10-17', Statement: [] } }),
      ownerToken: 't',
      maxBodyBytes: 1024,
    }),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('streamed methods on the local gateway', () => {
  it('pass the bytes through with the status and headers of the metadata', async () => {
    // Act
    const res = await fetch(`${base}/streamed`);
    const body = Buffer.from(await res.arrayBuffer());
    // Assess
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(body.length).toBe(4000);
    expect(body.subarray(3000).every((b) => b === 3)).toBe(true);
  });

  it('never stream on a method without the mode: a streaming handler there is a 502', async () => {
    // Act
    const res = await fetch(`${base}/buffered`);
    // Assess
    expect(res.status).toBe(502);
  });

  it('answer 502 for a buffered handler behind a streamed method (no metadata)', async () => {
    // Act
    const res = await fetch(`${base}/streamed-buffered`);
    // Assess
    expect(res.status).toBe(502);
  });

  it("close the handler's stream when the client goes away", async () => {
    // Act: read a little, then hang up.
    await new Promise<void>((resolve, reject) => {
      const req = get(`${base}/endless`, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', (e) => (e.message.includes('socket hang up') ? resolve() : reject(e)));
    });
    const written = await endlessClosed;
    // Assess: the handler stopped, having written only what the buffers hold.
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(1000);
  });
});
