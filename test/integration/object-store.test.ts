/**
 * The S3 adapter against the local S3 emulation, with the real SDK: every call the adapter
 * makes, signed and verified, and the presigned URLs it hands out used over plain HTTP.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createObjectStore, s3ClientConfig } from '../../functions/adapters/objects.store';
import type { ObjectStorePort } from '../../functions/core/ports';
import { lifecycleExpiryMs, startLocalS3, type LocalS3 } from '../../lib/local/s3';
import { startRuntime } from '../../lib/local/runtime';

const BUCKET = 'pipegate-objects';
const creds = { accessKeyId: 'AKLOCALTEST', secretAccessKey: 'local-test-secret' };
const D = '0b5c7a4e-8a43-4d7c-9a57-1f6f4f0f4f10';
const D2 = '7d3e1f20-4b5a-4c6d-8e7f-9a0b1c2d3e4f';
const E = '5a1c2a9e-2b43-4c7c-8a57-2f6f4f0f4f20';

describe('S3ObjectStore on the local S3 emulation', () => {
  let dir: string;
  let s3: LocalS3;
  let clock = Date.now();
  let store: ObjectStorePort;
  const settings = () => ({ region: 'local', s3Endpoint: s3.url, s3ForcePathStyle: true });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pipegate-s3-'));
    s3 = await startLocalS3({
      dir,
      buckets: [BUCKET],
      region: 'local',
      secretOf: (id) => (id === creds.accessKeyId ? creds.secretAccessKey : undefined),
      now: () => clock,
    });
    store = createObjectStore(settings(), BUCKET, creds);
  });
  afterAll(async () => {
    await s3.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    clock = Date.now();
  });

  const bytes = (n: number, seed = 1): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) % 256);

  it('puts, heads and reads back the exact bytes and media type', async () => {
    const body = bytes(70_000);
    await store.put(`d/${D}/e/${E}/out.image`, body, 'image/png');

    expect(await store.head(`d/${D}/e/${E}/out.image`)).toEqual({ bytes: 70_000, media_type: 'image/png' });
    expect(Buffer.from((await store.read(`d/${D}/e/${E}/out.image`)) as Uint8Array).equals(Buffer.from(body))).toBe(true);
  });

  it('reads only the first maxBytes with a Range, and an empty object as empty', async () => {
    await store.put('k/range', bytes(1000), 'application/octet-stream');
    await store.put('k/empty', new Uint8Array(0), 'text/plain');

    expect(Buffer.from((await store.read('k/range', 10)) as Uint8Array).equals(Buffer.from(bytes(10)))).toBe(true);
    expect(await store.read('k/range', 5000)).toHaveLength(1000);
    expect(await store.read('k/empty', 10)).toEqual(new Uint8Array(0));
    expect(await store.read('k/empty')).toEqual(new Uint8Array(0));
  });

  it('opens an object as a stream, whole or a range of it, with its whole size', async () => {
    const body = bytes(300_000, 5);
    await store.put('k/open', body, 'video/mp4');
    const collect = async (it: AsyncIterable<Uint8Array>) => {
      const parts: Buffer[] = [];
      for await (const c of it) parts.push(Buffer.from(c));
      return Buffer.concat(parts);
    };

    const whole = await store.open!('k/open');
    const part = await store.open!('k/open', { start: 1000, end: 1999 });

    expect(whole?.bytes).toBe(300_000);
    expect(whole?.media_type).toBe('video/mp4');
    expect((await collect(whole!.body)).equals(Buffer.from(body))).toBe(true);
    expect(part?.bytes).toBe(300_000);
    expect((await collect(part!.body)).equals(Buffer.from(body.slice(1000, 2000)))).toBe(true);
    expect(await store.open!('k/none')).toBeNull();
  });

  it('answers null for a key that is not there', async () => {
    expect(await store.head('k/none')).toBeNull();
    expect(await store.read('k/none')).toBeNull();
    expect(await store.read('k/none', 10)).toBeNull();
  });

  it('keeps keys with odd characters apart, and none of them leaves the bucket', async () => {
    const keys = ['k/odd/a b', 'k/odd/..', 'k/odd/../x', 'k/odd/ü+%2F', 'k/odd//double', 'k/odd/.'];
    for (const [i, k] of keys.entries()) await store.put(k, bytes(3, i), 'text/plain');

    for (const [i, k] of keys.entries())
      expect(Buffer.from((await store.read(k)) as Uint8Array).equals(Buffer.from(bytes(3, i)))).toBe(true);
    expect(await store.removePrefix('k/odd/')).toBe(keys.length);
    for (const k of keys) expect(await store.head(k)).toBeNull();
  });

  it('removes keys (unknown ones too), and everything under a prefix but nothing beside it', async () => {
    for (const name of ['a', 'b', 'c']) await store.put(`d/${D2}/e/${E}/${name}`, bytes(5), 'text/plain');
    await store.put(`d/${D2}/u/${E}`, bytes(5), 'text/plain');
    await store.put(`d/${D2}x/e/${E}/a`, bytes(5), 'text/plain');

    await store.remove([`d/${D2}/e/${E}/a`, 'k/never-was']);
    await store.remove([`d/${D2}/e/${E}/a`]);
    expect(await store.head(`d/${D2}/e/${E}/a`)).toBeNull();
    expect(await store.removePrefix(`d/${D2}/`)).toBe(3);
    expect(await store.head(`d/${D2}x/e/${E}/a`)).not.toBeNull();
    expect(await store.removePrefix(`d/${D2}/`)).toBe(0);
  });

  it('lists in pages with continuation tokens, in key order', async () => {
    const keys = Array.from({ length: 7 }, (_, i) => `k/list/${String.fromCharCode(103 - i)}`);
    for (const k of keys) await store.put(k, bytes(1), 'text/plain');
    const client = new S3Client(s3ClientConfig(settings(), creds));
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'k/list/', MaxKeys: 3, ContinuationToken: token }));
      seen.push(...(page.Contents ?? []).map((o) => o.Key as string));
      token = page.NextContinuationToken;
      pages++;
    } while (token);

    expect(pages).toBe(3);
    expect(seen).toEqual([...keys].sort());
  });

  describe('presigned PUT', () => {
    const put = (url: string, body: Uint8Array, headers: Record<string, string>) =>
      fetch(url, { method: 'PUT', body, headers: { 'Content-Type': headers['Content-Type'] as string } });

    it('accepts exactly the signed bytes and type', async () => {
      const up = await store.presignUpload(`d/${D}/u/${E}`, 'image/jpeg', 2048, 900);
      const res = await put(up.url, bytes(2048), up.headers);

      expect(res.status).toBe(200);
      expect(up.headers).toEqual({ 'Content-Type': 'image/jpeg', 'Content-Length': '2048' });
      expect(await store.head(`d/${D}/u/${E}`)).toEqual({ bytes: 2048, media_type: 'image/jpeg' });
    });

    it.each([
      ['one byte more', 2049, 'image/jpeg'],
      ['one byte fewer', 2047, 'image/jpeg'],
      ['another media type', 2048, 'text/html'],
    ])('refuses %s with SignatureDoesNotMatch, storing nothing', async (_what, n, type) => {
      const key = `d/${D}/u/${E}-${n}-${type.length}`;
      const up = await store.presignUpload(key, 'image/jpeg', 2048, 900);
      const res = await put(up.url, bytes(n), { 'Content-Type': type });

      expect(res.status).toBe(403);
      expect(await res.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
      expect(await store.head(key)).toBeNull();
    });

    it('refuses the URL once it has expired', async () => {
      const up = await store.presignUpload('k/late', 'image/jpeg', 4, 60);
      clock += 61_000;
      const res = await put(up.url, bytes(4), up.headers);

      expect(res.status).toBe(403);
      expect(await res.text()).toContain('<Message>Request has expired</Message>');
    });

    it('refuses a URL whose key or expiry was altered', async () => {
      const up = await store.presignUpload('k/mine', 'image/jpeg', 4, 60);
      const other = await put(up.url.replace('/k/mine?', '/k/yours?'), bytes(4), up.headers);
      const longer = await put(up.url.replace('X-Amz-Expires=60', 'X-Amz-Expires=6000'), bytes(4), up.headers);

      expect(other.status).toBe(403);
      expect(longer.status).toBe(403);
      expect(await store.head('k/yours')).toBeNull();
    });
  });

  describe('presigned GET', () => {
    it('serves the exact bytes with the media type and disposition it was signed for', async () => {
      const body = bytes(5000, 7);
      await store.put('k/get', body, 'application/octet-stream');
      const inline = await store.presignDownload('k/get', 'image/png', 300, false);
      const attached = await store.presignDownload('k/get', 'image/svg+xml', 300, true);

      const a = await fetch(inline.url);
      const b = await fetch(attached.url);

      expect(a.status).toBe(200);
      expect(a.headers.get('content-type')).toBe('image/png');
      expect(a.headers.get('content-disposition')).toBe('inline');
      expect(Buffer.from(await a.arrayBuffer()).equals(Buffer.from(body))).toBe(true);
      expect(b.headers.get('content-type')).toBe('image/svg+xml');
      expect(b.headers.get('content-disposition')).toBe('attachment');
      expect(new Date(inline.expires_at).getTime()).toBeGreaterThan(Date.now() + 290_000);
    });

    it('answers a Range with 206 and just those bytes', async () => {
      await store.put('k/get-range', bytes(100), 'text/plain');
      const link = await store.presignDownload('k/get-range', 'text/plain', 300, false);

      const res = await fetch(link.url, { headers: { Range: 'bytes=10-19' } });

      expect(res.status).toBe(206);
      expect(res.headers.get('content-range')).toBe('bytes 10-19/100');
      expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(bytes(100).slice(10, 20)))).toBe(true);
    });

    it('refuses the URL after its expiry, an altered disposition, and a request without a signature', async () => {
      await store.put('k/get-exp', bytes(10), 'text/plain');
      const link = await store.presignDownload('k/get-exp', 'text/html', 60, true);

      const altered = await fetch(link.url.replace('response-content-disposition=attachment', 'response-content-disposition=inline'));
      const anonymous = await fetch(`${s3.url}/${BUCKET}/k/get-exp`);
      clock += 61_000;
      const late = await fetch(link.url);

      expect(altered.status).toBe(403);
      expect(anonymous.status).toBe(403);
      expect(late.status).toBe(403);
      expect(await late.text()).toContain('Request has expired');
    });
  });

  describe('multipart writes', () => {
    const MIB = 1024 * 1024;
    const begin = (key: string, mediaType: string) => {
      if (store.begin === undefined) throw new Error('the S3 store has no multipart writes');
      return store.begin(key, mediaType);
    };

    it('stores parts as one object only once completed: exact bytes, media type and size', async () => {
      const key = `d/${D}/e/${E}/node.big`;
      const first = bytes(5 * MIB, 3);
      const last = bytes(1234, 5);
      const w = await begin(key, 'video/mp4');
      await w.part(first);
      expect(await store.head(key)).toBeNull();
      await w.part(last);
      expect(await store.head(key)).toBeNull();
      await w.complete();
      expect(await store.head(key)).toEqual({ bytes: first.length + last.length, media_type: 'video/mp4' });
      expect(Buffer.from((await store.read(key)) as Uint8Array).equals(Buffer.concat([first, last]))).toBe(true);
      expect(await store.removePrefix(`d/${D}/e/${E}/node.big`)).toBe(1);
    });

    it('leaves nothing after an abort, and refuses parts or completion of an aborted upload', async () => {
      const key = `d/${D}/e/${E}/node.aborted`;
      const w = await begin(key, 'image/png');
      await w.part(bytes(5 * MIB));
      await w.abort();
      expect(await store.head(key)).toBeNull();
      await expect(w.part(bytes(10))).rejects.toMatchObject({ name: 'NoSuchUpload' });
      await expect(w.complete()).rejects.toMatchObject({ name: 'NoSuchUpload' });
      expect(await store.removePrefix(`d/${D}/e/${E}/node.aborted`)).toBe(0);
    });

    it('refuses to complete with a part other than the last below 5 MiB, as S3 does', async () => {
      const w = await begin('k/small-parts', 'image/png');
      await w.part(bytes(100));
      await w.part(bytes(100));
      await expect(w.complete()).rejects.toMatchObject({ name: 'EntityTooSmall' });
      await w.abort();
      expect(await store.head('k/small-parts')).toBeNull();
    });

    it("removes an upload neither completed nor aborted a day after it began, as the bucket's rule does", async () => {
      const w = await begin('k/forgotten', 'image/png');
      await w.part(bytes(100));
      clock += 24 * 3600 * 1000 + 1;
      await s3.expire();
      clock = Date.now();
      await expect(w.complete()).rejects.toMatchObject({ name: 'NoSuchUpload' });
    });
  });

  it('refuses SDK calls signed with the wrong secret or an unknown key, and an unknown bucket', async () => {
    const wrong = createObjectStore(settings(), BUCKET, { accessKeyId: creds.accessKeyId, secretAccessKey: 'not-it' });
    const unknown = createObjectStore(settings(), BUCKET, { accessKeyId: 'AKNOBODY', secretAccessKey: creds.secretAccessKey });
    const elsewhere = createObjectStore(settings(), 'another-bucket', creds);

    await expect(wrong.put('k/x', bytes(1), 'text/plain')).rejects.toMatchObject({ name: 'SignatureDoesNotMatch' });
    await expect(unknown.put('k/x', bytes(1), 'text/plain')).rejects.toMatchObject({ name: 'InvalidAccessKeyId' });
    await expect(elsewhere.put('k/x', bytes(1), 'text/plain')).rejects.toMatchObject({ name: 'NoSuchBucket' });
    expect(await store.head('k/x')).toBeNull();
  });

  it('refuses a body that does not match its signed SHA-256', async () => {
    const client = new S3Client(s3ClientConfig(settings(), creds));
    client.middlewareStack.add(
      (next) => async (args) => {
        const req = args.request as { body?: unknown };
        req.body = Buffer.from('tampered');
        return next(args);
      },
      { step: 'finalizeRequest', priority: 'low', name: 'tamper' },
    );

    await expect(
      client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'k/tampered', Body: 'original', ContentType: 'text/plain' })),
    ).rejects.toMatchObject({
      name: 'XAmzContentSHA256Mismatch',
    });
    expect(await store.head('k/tampered')).toBeNull();
  });
});

describe("the emulation's lifecycle expiry", () => {
  it('removes objects at the first midnight UTC after they are as many days old as the rule says, not a second before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pipegate-s3-exp-'));
    let clock = Date.now();
    const s3 = await startLocalS3({
      dir,
      buckets: [BUCKET],
      region: 'local',
      secretOf: (id) => (id === creds.accessKeyId ? creds.secretAccessKey : undefined),
      expirationDays: { [BUCKET]: 8 },
      now: () => clock,
    });
    try {
      const store = createObjectStore({ region: 'local', s3Endpoint: s3.url, s3ForcePathStyle: true }, BUCKET, creds);
      const written = clock;
      await store.put(`d/${D}/e/${E}/out.a`, Uint8Array.from([1]), 'text/plain');
      await store.put('p/pipe/r/x/out.b', Uint8Array.from([2]), 'text/plain');
      const due = lifecycleExpiryMs(written, 8);

      clock = due - 1000;
      const early = await s3.expire();
      clock = due;
      const onTime = await s3.expire();
      // SigV4 is checked against the emulation's clock: back to the time the client signs with.
      clock = written;

      expect(early).toBe(0);
      expect(onTime).toBe(2);
      expect(await store.head(`d/${D}/e/${E}/out.a`)).toBeNull();
      expect(await store.head('p/pipe/r/x/out.b')).toBeNull();
    } finally {
      await s3.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rounds up to the next midnight UTC, as S3 does', () => {
    expect(new Date(lifecycleExpiryMs(Date.parse('2026-11-24T17:00:00Z'), 8)).toISOString()).toBe('2026-12-03T00:00:00.000Z');
    expect(new Date(lifecycleExpiryMs(Date.parse('2026-11-24T00:00:00Z'), 8)).toISOString()).toBe('2026-12-02T00:00:00.000Z');
  });
});

describe('the local runtime', () => {
  it('serves Deps.objects from its data dir, over signed calls, and keeps the objects across a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-rt-s3-'));
    try {
      const first = await startRuntime({ dataDir, port: 0, inMemory: true, log: false });
      await first.deps.objects.put(`d/${D}/e/${E}/out.photo`, Uint8Array.from([1, 2, 3]), 'image/png');
      const upload = await first.deps.objects.presignUpload(`d/${D}/u/${E}`, 'image/jpeg', 2, 60);
      const put = await fetch(upload.url, { method: 'PUT', body: Uint8Array.from([4, 5]), headers: { 'Content-Type': 'image/jpeg' } });
      expect(put.status).toBe(200);
      expect(upload.url.startsWith(`${first.s3Url}/`)).toBe(true);
      await first.stop({ drainMs: 0 });

      const second = await startRuntime({ dataDir, port: 0, inMemory: true, log: false });
      try {
        expect(await second.deps.objects.read(`d/${D}/e/${E}/out.photo`)).toEqual(Uint8Array.from([1, 2, 3]));
        expect(await second.deps.objects.head(`d/${D}/u/${E}`)).toEqual({ bytes: 2, media_type: 'image/jpeg' });
        // Nothing is served without a signature.
        const unsigned = await fetch(`${second.s3Url}/pipegate-objects/d/${D}/u/${E}`);
        expect(unsigned.status).toBe(403);
      } finally {
        await second.stop({ drainMs: 0 });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
