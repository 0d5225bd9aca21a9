/**
 * Binary bodies through the guarded HTTP port: a binary answer comes back as bytes up to its
 * own limit (at the edge: exactly the limit passes, one byte more fails naming it, with or
 * without a Content-Length), text keeps the text limit, and bytes are sent as they are.
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

const get = (query: string) => http({ method: 'GET', url: `${server.origin}/?${query}`, headers: {}, timeoutMs: 5000, maxResponseBytes: 100, maxBinaryResponseBytes: LIMIT });

describe('binary answers', () => {
  it.each(['', '&chunked'])('takes exactly the binary limit as bytes (%s)', async (extra) => {
    const res = await get(`n=${LIMIT}${extra}`);
    expect(res.body).toBe('');
    expect(Buffer.from(res.bytes ?? new Uint8Array()).equals(pattern(LIMIT))).toBe(true);
  });

  it.each(['', '&chunked'])('refuses one byte more, naming the limit (%s)', async (extra) => {
    await expect(get(`n=${LIMIT + 1}${extra}`)).rejects.toThrow(new Error(`binary response larger than ${LIMIT} bytes`));
  });

  it('keeps the text limit for text, even when a binary allowance is given', async () => {
    await expect(get('n=101&type=text/plain')).rejects.toThrow(new Error('response larger than 100 bytes'));
    const res = await get('n=100&type=application/json&chunked');
    expect(res.bytes).toBeUndefined();
  });

  it('answers text for a binary type when no binary allowance was asked for (callbacks)', async () => {
    const res = await http({ method: 'GET', url: `${server.origin}/?n=10`, headers: {}, timeoutMs: 5000 });
    expect(res.bytes).toBeUndefined();
    expect(typeof res.body).toBe('string');
  });

  it('sends a byte body exactly as given', async () => {
    seen.length = 0;
    const body = pattern(3000);
    await http({ method: 'POST', url: `${server.origin}/?n=1`, headers: { 'content-type': 'image/png' }, body, timeoutMs: 5000 });
    expect(seen[0]?.raw.equals(body)).toBe(true);
    expect(seen[0]?.headers['content-length']).toBe('3000');
  });
});
