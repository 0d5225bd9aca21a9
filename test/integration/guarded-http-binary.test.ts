/**
 * Binary bodies through the guarded HTTP port: a binary answer comes back as a stream of its
 * bytes up to its own limit (at the edge: exactly the limit passes, one byte more fails naming
 * it, with or without a Content-Length), the exchange's deadline still holds while it streams,
 * ending it early closes the connection, text keeps the text limit (unless bytes are asked for
 * whatever the type), and bytes (whole or as a sized stream) are sent as they are.
 */
import { createGuardedHttp } from '../../functions/adapters/guarded-http';
import { startTestServer, type ReceivedRequest, type TestServer } from '../support/http-server';

const LIMIT = 4096;
const http = createGuardedHttp({ allowPrivate: true });
let server: TestServer;
const seen: ReceivedRequest[] = [];
const pattern = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7) % 256));

beforeAll(async () => {
  server = await startTestServer((req, res) => {
    seen.push(req);
    const url = new URL(req.path, 'http://x');
    const n = Number(url.searchParams.get('n') ?? '0');
    const type = url.searchParams.get('type') ?? 'image/png';
    // `chunked`: no Content-Length, so only the running count can stop it.
    res.writeHead(200, url.searchParams.has('chunked') ? { 'content-type': type } : { 'content-type': type, 'content-length': String(n) });
    if (url.searchParams.has('chunked')) {
      res.write(pattern(n).subarray(0, 1));
      res.end(pattern(n).subarray(1));
    } else res.end(pattern(n));
  });
});
afterAll(async () => server?.close());

async function collect(body: AsyncIterable<Uint8Array> | undefined): Promise<Buffer> {
  if (body === undefined) throw new Error('no stream');
  const parts: Uint8Array[] = [];
  for await (const c of body) parts.push(c);
  return Buffer.concat(parts);
}

const get = (query: string) =>
  http({
    method: 'GET',
    url: `${server.origin}/?${query}`,
    headers: {},
    timeoutMs: 60_000,
    maxResponseBytes: 100,
    maxBinaryResponseBytes: LIMIT,
  });

describe('binary answers', () => {
  it.each(['', '&chunked'])('takes exactly the binary limit as a stream (%s)', async (extra) => {
    const res = await get(`n=${LIMIT}${extra}`);
    expect(res.body).toBe('');
    expect((await collect(res.stream)).equals(pattern(LIMIT))).toBe(true);
  });

  it('refuses one byte more, naming the limit, before streaming when the length is declared', async () => {
    await expect(get(`n=${LIMIT + 1}`)).rejects.toThrow(new Error(`binary response larger than ${LIMIT} bytes`));
  });

  it('cuts off an undeclared answer once it passes the limit, naming it', async () => {
    const res = await get(`n=${LIMIT + 1}&chunked`);
    await expect(collect(res.stream)).rejects.toThrow(new Error(`binary response larger than ${LIMIT} bytes`));
  });

  it('keeps the text limit for text, even when a binary allowance is given', async () => {
    await expect(get('n=101&type=text/plain')).rejects.toThrow(new Error('response larger than 100 bytes'));
    const res = await get('n=100&type=application/json&chunked');
    expect(res.stream).toBeUndefined();
  });

  it('streams a text-typed answer as bytes, up to the binary limit, when bytes are asked for whatever the type (a fetched file)', async () => {
    const bytes = (query: string) =>
      http({
        method: 'GET',
        url: `${server.origin}/?${query}`,
        headers: {},
        timeoutMs: 60_000,
        maxResponseBytes: 100,
        maxBinaryResponseBytes: LIMIT,
        bytesWhateverType: true,
      });
    const res = await bytes(`n=${LIMIT}&type=text/plain`);
    expect(res.body).toBe('');
    expect((await collect(res.stream)).equals(pattern(LIMIT))).toBe(true);
    await expect(bytes(`n=${LIMIT + 1}&type=text/plain`)).rejects.toThrow(new Error(`binary response larger than ${LIMIT} bytes`));
  });

  it('answers text for a binary type when no binary allowance was asked for (callbacks)', async () => {
    const res = await http({ method: 'GET', url: `${server.origin}/?n=10`, headers: {}, timeoutMs: 60_000 });
    expect(res.stream).toBeUndefined();
    expect(typeof res.body).toBe('string');
  });

  it('sends a byte body exactly as given', async () => {
    seen.length = 0;
    const body = pattern(3000);
    await http({ method: 'POST', url: `${server.origin}/?n=1`, headers: { 'content-type': 'image/png' }, body, timeoutMs: 60_000 });
    expect(seen[0]?.raw.equals(body)).toBe(true);
    expect(seen[0]?.headers['content-length']).toBe('3000');
  });

  it('sends a sized stream as it is read, with its Content-Length', async () => {
    seen.length = 0;
    const body = pattern(3000);
    async function* parts() {
      yield body.subarray(0, 1000);
      yield body.subarray(1000);
    }
    await http({
      method: 'POST',
      url: `${server.origin}/?n=1`,
      headers: { 'content-type': 'image/png' },
      body: { bytes: 3000, stream: parts() },
      timeoutMs: 60_000,
    });
    expect(seen[0]?.raw.equals(body)).toBe(true);
    expect(seen[0]?.headers['content-length']).toBe('3000');
  });

  it('fails a sized stream that yields fewer bytes than it declared', async () => {
    async function* short() {
      yield pattern(10);
    }
    await expect(
      http({ method: 'POST', url: `${server.origin}/?n=1`, headers: {}, body: { bytes: 20, stream: short() }, timeoutMs: 60_000 }),
    ).rejects.toThrow('request body of 10 bytes, not 20');
  });
});

describe('a binary answer while it streams', () => {
  let slow: TestServer;
  let closed: Promise<void>;
  beforeAll(async () => {
    let onClose: () => void = () => undefined;
    closed = new Promise((ok) => (onClose = ok));
    slow = await startTestServer((_req, res) => {
      // The first bytes, then nothing: the rest never comes.
      res.writeHead(200, { 'content-type': 'video/mp4' });
      res.write(pattern(100));
      res.on('close', onClose);
    });
  });
  afterAll(async () => slow?.close());

  it('keeps the exchange deadline: a body that stops coming fails with the time-out', async () => {
    const res = await http({ method: 'GET', url: slow.origin, headers: {}, timeoutMs: 300, maxBinaryResponseBytes: LIMIT });
    await expect(collect(res.stream)).rejects.toThrow(new Error('timed out after 300 ms'));
  });

  it('closes the connection when the stream is ended before it is read', async () => {
    const res = await http({ method: 'GET', url: slow.origin, headers: {}, timeoutMs: 60_000, maxBinaryResponseBytes: LIMIT });
    await res.stream?.[Symbol.asyncIterator]().return?.();
    await closed;
  });
});
