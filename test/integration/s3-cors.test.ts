/**
 * The S3 emulation's CORS, as a browser meets it before and during a presigned upload: the
 * preflight answered from the bucket's rule (lib/storage-cors.ts) for the allowed origin, method
 * and headers, refused otherwise, and the actual PUT carrying the CORS headers for that origin only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createObjectStore } from '../../functions/adapters/objects.store';
import { startLocalS3, type LocalS3 } from '../../lib/local/s3';
import { uploadCorsRule } from '../../lib/storage-cors';

const BUCKET = 'pipegate-objects';
const PLAIN = 'plain-bucket';
const creds = { accessKeyId: 'AKLOCALTEST', secretAccessKey: 'local-test-secret' };
const PAGE = 'http://127.0.0.1:8123';

describe('CORS on the local S3 emulation', () => {
  let dir: string;
  let s3: LocalS3;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pipegate-s3-cors-'));
    s3 = await startLocalS3({
      dir,
      buckets: [BUCKET, PLAIN],
      region: 'local',
      secretOf: (id) => (id === creds.accessKeyId ? creds.secretAccessKey : undefined),
      cors: (bucket) => (bucket === BUCKET ? [uploadCorsRule(PAGE)] : []),
    });
  });
  afterAll(async () => {
    await s3.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const preflight = (bucket: string, headers: Record<string, string>) =>
    fetch(`${s3.url}/${bucket}/d/x/u/y?X-Amz-Signature=abc`, { method: 'OPTIONS', headers });

  it('answers the preflight of a PUT from the allowed origin with the signed header', async () => {
    const r = await preflight(BUCKET, {
      Origin: PAGE,
      'Access-Control-Request-Method': 'PUT',
      'Access-Control-Request-Headers': 'Content-Type',
    });

    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(r.headers.get('access-control-allow-methods')).toBe('PUT');
    expect(r.headers.get('access-control-allow-headers')).toBe('content-type');
    expect(r.headers.get('access-control-expose-headers')).toBe('ETag');
    expect(r.headers.get('access-control-max-age')).toBe('3000');
    expect(r.headers.get('vary')).toContain('Origin');
  });

  it('refuses another origin, another method and an unsigned header, as S3 does (403 AccessForbidden)', async () => {
    const refused: Record<string, string>[] = [
      { Origin: 'http://127.0.0.1:9999', 'Access-Control-Request-Method': 'PUT' },
      { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'PUT' },
      { Origin: PAGE, 'Access-Control-Request-Method': 'GET' },
      { Origin: PAGE, 'Access-Control-Request-Method': 'DELETE' },
      { Origin: PAGE, 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'content-type, x-amz-acl' },
    ];
    for (const headers of refused) {
      const r = await preflight(BUCKET, headers);
      expect({ headers, status: r.status }).toEqual({ headers, status: 403 });
      expect(r.headers.get('access-control-allow-origin')).toBeNull();
      expect(await r.text()).toContain('<Code>AccessForbidden</Code><Message>CORSResponse: This CORS request is not allowed.');
    }
  });

  it('says CORS is not enabled on a bucket without rules, and needs an Origin', async () => {
    const plain = await preflight(PLAIN, { Origin: PAGE, 'Access-Control-Request-Method': 'PUT' });
    expect(plain.status).toBe(403);
    expect(await plain.text()).toContain('CORSResponse: CORS is not enabled for this bucket.');

    const bare = await preflight(BUCKET, { 'Access-Control-Request-Method': 'PUT' });
    expect(bare.status).toBe(400);
    expect(await bare.text()).toContain('Origin request header needed');
  });

  it('adds the CORS headers to a presigned PUT from the allowed origin only', async () => {
    const store = createObjectStore({ region: 'local', s3Endpoint: s3.url, s3ForcePathStyle: true }, BUCKET, creds);
    const put = async (origin: string) => {
      const up = await store.presignUpload('d/x/u/cors', 'image/png', 3, 60);
      return fetch(up.url, { method: 'PUT', headers: { 'Content-Type': 'image/png', Origin: origin }, body: Uint8Array.from([1, 2, 3]) });
    };
    const allowed = await put(PAGE);
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(allowed.headers.get('access-control-expose-headers')).toBe('ETag');

    // S3 still stores it (CORS binds browsers, not S3), but a browser would not hand the answer to the page.
    const other = await put('http://127.0.0.1:9999');
    expect(other.status).toBe(200);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});
