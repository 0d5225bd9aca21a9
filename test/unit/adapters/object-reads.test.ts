/**
 * Object reads as signed requests, against a fake S3 on loopback: what is sent (signed, path
 * style, the key escaped once, the Range), and every answer mapped as the SDK-based store mapped
 * it (missing → null, an empty object's refused Range → empty, refusals thrown by S3's name,
 * throttles tried again).
 */
import type { ServerResponse } from 'node:http';
import { S3ObjectReads, s3ObjectAddress, splitObjectStore, type ObjectWritesPort } from '../../../functions/adapters/object-reads';
import type { RetryPolicy } from '../../../functions/adapters/sigv4';
import { startTestServer, type ReceivedRequest, type TestServer } from '../../support/http-server';

const CREDS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };
const NO_WAIT: RetryPolicy = { maxAttempts: 3, baseMs: 100, capMs: 1000, sleep: () => Promise.resolve() };
const xmlError = (code: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>about ${code}</Message></Error>`;

type Answer = (req: ReceivedRequest, res: ServerResponse) => void;
const send =
  (status: number, headers: Record<string, string> = {}, body = ''): Answer =>
  (_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  };

describe('S3ObjectReads', () => {
  let server: TestServer;
  let seen: ReceivedRequest[] = [];
  let answers: Answer[] = [];
  beforeAll(async () => {
    server = await startTestServer((req, res) => {
      seen.push(req);
      (answers.shift() ?? send(500, {}, xmlError('InternalError')))(req, res);
    });
  });
  afterAll(() => server.close());
  beforeEach(() => {
    seen = [];
    answers = [];
  });
  const reads = () =>
    new S3ObjectReads(
      { region: 'local', s3Endpoint: server.origin, s3ForcePathStyle: true },
      'the-bucket',
      CREDS,
      () => new Date(),
      NO_WAIT,
    );

  it('heads an object as its size and media type, signed for S3, by path', async () => {
    answers = [send(200, { 'content-length': '12', 'content-type': 'image/jpeg' })];

    expect(await reads().head('d/x/e/y/out.image')).toEqual({ bytes: 12, media_type: 'image/jpeg' });
    expect(seen[0]?.method).toBe('HEAD');
    expect(seen[0]?.path).toBe('/the-bucket/d/x/e/y/out.image');
    expect(seen[0]?.headers['x-amz-content-sha256']).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(seen[0]?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/local\/s3\/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, /,
    );
  });

  it('sends a key escaped once, its dot segments kept', async () => {
    answers = [send(200, { 'content-length': '1' }), send(200, { 'content-length': '1' })];

    await reads().head('k/odd/a b/ü+%2F');
    await reads().head('k/odd/../x');

    expect(seen.map((r) => r.path)).toEqual(['/the-bucket/k/odd/a%20b/%C3%BC%2B%252F', '/the-bucket/k/odd/../x']);
  });

  it('answers null for a missing key: HEAD 404 (no body), GET NoSuchKey', async () => {
    answers = [send(404), send(404, { 'content-type': 'application/xml' }, xmlError('NoSuchKey')), send(404, {}, xmlError('NoSuchKey'))];

    expect(await reads().head('gone')).toBeNull();
    expect(await reads().read('gone')).toBeNull();
    expect(await reads().open('gone')).toBeNull();
  });

  it('throws a refusal by the name S3 gives it, with its status, and tries it only once', async () => {
    answers = [send(403, {}, xmlError('AccessDenied')), send(403)];

    await expect(reads().read('k')).rejects.toMatchObject({
      name: 'AccessDenied',
      status: 403,
      $metadata: { httpStatusCode: 403 },
      message: 'S3 GetObject k: AccessDenied: about AccessDenied',
    });
    await expect(reads().head('k')).rejects.toMatchObject({ name: 'Forbidden', status: 403 });
    expect(seen).toHaveLength(2);
  });

  it('tries SlowDown and a 500 again, then reads', async () => {
    answers = [send(503, {}, xmlError('SlowDown')), send(500, {}, xmlError('InternalError')), send(200, { 'content-length': '3' }, 'abc')];

    expect(Buffer.from((await reads().read('k')) ?? []).toString()).toBe('abc');
    expect(seen).toHaveLength(3);
  });

  it('gives up on throttles after the attempts, naming the last', async () => {
    answers = [send(503, {}, xmlError('SlowDown')), send(503, {}, xmlError('SlowDown')), send(503, {}, xmlError('SlowDown'))];

    await expect(reads().read('k')).rejects.toMatchObject({ name: 'SlowDown', status: 503 });
    expect(seen).toHaveLength(3);
  });

  it('reads the first maxBytes through a Range, and an empty object (which refuses any Range) as empty', async () => {
    answers = [
      send(206, { 'content-range': 'bytes 0-1/3' }, 'ab'),
      send(416, {}, xmlError('InvalidRange')),
      send(200, { 'content-length': '0' }),
    ];

    expect(Buffer.from((await reads().read('k', 2)) ?? []).toString()).toBe('ab');
    expect(await reads().read('empty', 10)).toEqual(new Uint8Array(0));
    expect(seen.map((r) => [r.method, r.headers.range])).toEqual([
      ['GET', 'bytes=0-1'],
      ['GET', 'bytes=0-9'],
      ['HEAD', undefined],
    ]);
  });

  it('opens a range as a stream with the whole size from Content-Range', async () => {
    answers = [send(206, { 'content-range': 'bytes 2-4/10', 'content-type': 'video/mp4' }, 'cde')];

    const opened = await reads().open('k', { start: 2, end: 4 });
    const parts: Buffer[] = [];
    for await (const c of opened?.body ?? []) parts.push(Buffer.from(c));

    expect([opened?.bytes, opened?.media_type, Buffer.concat(parts).toString()]).toEqual([10, 'video/mp4', 'cde']);
    expect(seen[0]?.headers.range).toBe('bytes=2-4');
  });

  it('addresses a bucket by host on AWS and at an endpoint without path style, as the SDK does', () => {
    expect(s3ObjectAddress({ region: 'eu-west-1' }, 'b', 'k/x').url.origin).toBe('https://b.s3.eu-west-1.amazonaws.com');
    expect(s3ObjectAddress({ region: 'eu-west-1' }, 'b', 'k/x').path).toBe('/k/x');
    expect(s3ObjectAddress({ region: 'local', s3Endpoint: 'http://localhost:9' }, 'b', 'k').url.origin).toBe('http://b.localhost:9');
  });
});

describe('splitObjectStore', () => {
  it('reads without building the writer, and builds it once, on the first write', async () => {
    // Prepare
    let built = 0;
    const puts: string[] = [];
    const writer: ObjectWritesPort = {
      put: (key) => (puts.push(key), Promise.resolve()),
      remove: () => Promise.resolve(),
      removePrefix: () => Promise.resolve(0),
      presignUpload: () => Promise.reject(new Error('unused')),
    };
    const reads = {
      head: () => Promise.resolve(null),
      read: () => Promise.resolve(null),
      open: () => Promise.resolve(null),
      presignDownload: () => Promise.reject(new Error('unused')),
    };
    const store = splitObjectStore(reads, () => (built++, writer));

    // Act
    await store.head('a');
    await store.read('a');
    const opens = typeof store.open;
    const afterReads = built;
    await store.put('a', new Uint8Array(0), 'text/plain');
    await store.put('b', new Uint8Array(0), 'text/plain');

    // Assess
    expect([afterReads, opens, built, puts]).toEqual([0, 'function', 1, ['a', 'b']]);
  });
});
