/**
 * The asset route (GET /v1/assets/{token}) through its handler, on in-memory stores and an
 * in-memory object store: links as the links port mints them, answers as API Gateway gets them.
 */
import { invokeStreamed, type StreamedResult } from '../../support/streamed';
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { createHandler } from '../../../functions/asset-get/handler';
import { createLogger } from '../../../functions/adapters/logger';
import { assetLinkKey } from '../../../functions/core/asset-links';
import { executionObjectKey } from '../../../functions/core/object-keys';
import type { ObjectRef } from '../../../functions/core/ports';
import { proxyEvent } from '../../support/events';
import { aDeploymentRecord, testDeps, testKeyMaterial, type TestDeps } from '../../support/fakes';
import { MemoryObjects, withoutStreams } from '../../support/memory-objects-links';
import { memoryStores } from '../../support/memory-stores';

const BASE = 'https://api.example/prod';
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256))]);
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');

interface World {
  d: TestDeps;
  objects: MemoryObjects;
  deploymentId: string;
  logs: string[];
  clock: { at: Date };
}

function world(opts: { streams?: boolean } = {}): World {
  const stores = memoryStores();
  const objects = new MemoryObjects();
  const logs: string[] = [];
  const clock = { at: new Date('2026-11-24T12:00:00Z') };
  const d = testDeps(stores, {
    objects: opts.streams === false ? withoutStreams(objects) : objects,
    clock: { now: () => clock.at },
    log: createLogger('test', (line) => logs.push(line)),
  });
  const record = aDeploymentRecord({ pipeline_id: 'photos', published_at: clock.at.toISOString(), created_at: clock.at.toISOString() });
  const deploymentId = record.deployment_id;
  void stores.deployments.create(record);
  return { d, objects, deploymentId, logs, clock };
}

async function stored(w: World, name: string, body: Buffer, mediaType: string): Promise<ObjectRef> {
  const key = executionObjectKey({ kind: 'api', deployment_id: w.deploymentId, pipeline_id: 'photos', execution_id: randomUUID() }, name);
  await w.objects.put(key, body, mediaType);
  return { key, media_type: mediaType, bytes: body.length, sha256: '' };
}

const tokenOf = (url: string): string => url.slice(`${BASE}/v1/assets/`.length);

async function get(
  w: World,
  token: string,
  headers: Record<string, string> = {},
  method: 'GET' | 'HEAD' = 'GET',
): Promise<StreamedResult & { body: string }> {
  const handler = createHandler(() => w.d);
  const event = proxyEvent({ method, resource: '/v1/assets/{token}', path: `/v1/assets/${token}`, pathParameters: { token }, headers });
  const out = await invokeStreamed(handler, event, { awsRequestId: randomUUID() } as Context);
  return { ...out, body: out.bytes.toString('utf8') };
}

describe('GET /v1/assets/{token}', () => {
  it('serves the exact bytes with their type, length, nosniff, inline for an image', async () => {
    // Prepare
    const w = world();
    const link = await w.d.assetLinks.link(await stored(w, 'out.thumbnail', PNG, 'image/png'), BASE, w.clock.at);
    // Act
    const res = await get(w, tokenOf(link.url));
    // Assess
    expect(res.statusCode).toBe(200);
    expect(res.bytes.equals(PNG)).toBe(true);
    expect(res.headers).toMatchObject({
      'content-type': 'image/png',
      'content-length': String(PNG.length),
      'x-content-type-options': 'nosniff',
      'content-disposition': 'inline; filename="out.thumbnail"',
    });
    expect(String(res.headers?.['cache-control'])).toMatch(/^private, max-age=\d+$/);
    expect(link.expires_at).toBe(new Date(w.clock.at.getTime() + w.d.config.assetLinkTtlSeconds * 1000).toISOString());
    expect(link.url.startsWith(`${BASE}/v1/assets/v1.`)).toBe(true);
  });

  it('serves SVG as an attachment, never inline', async () => {
    // Prepare
    const w = world();
    const link = await w.d.assetLinks.link(await stored(w, 'out.drawing', SVG, 'image/svg+xml'), BASE, w.clock.at);
    // Act
    const res = await get(w, tokenOf(link.url));
    // Assess
    expect(res.statusCode).toBe(200);
    expect(res.headers?.['content-type']).toBe('image/svg+xml');
    expect(res.headers?.['content-disposition']).toBe('attachment; filename="out.drawing"');
    expect(res.headers?.['x-content-type-options']).toBe('nosniff');
    expect(res.bytes.equals(SVG)).toBe(true);
  });

  it('answers 404 for an altered link, the same as for a made-up one', async () => {
    // Prepare
    const w = world();
    const token = tokenOf((await w.d.assetLinks.link(await stored(w, 'out.a', PNG, 'image/png'), BASE, w.clock.at)).url);
    const [v, payload = '', sig] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as unknown[];
    // Another object of the same deployment, with the original tag.
    const other = await stored(w, 'out.b', SVG, 'image/svg+xml');
    const swapped = `${v}.${Buffer.from(JSON.stringify([other.key, 'image/png', 0, claims[3]])).toString('base64url')}.${sig}`;
    // Act
    const altered = await get(w, swapped);
    const madeUp = await get(w, 'v1.e30.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    // Assess
    expect(altered.statusCode).toBe(404);
    expect(JSON.parse(altered.body)).toEqual(JSON.parse(madeUp.body));
    expect(JSON.parse(altered.body).error).toBe('Asset Not Found');
  });

  it('answers 404 for a link signed under other key material (another installation)', async () => {
    // Prepare
    const w = world();
    const ref = await stored(w, 'out.a', PNG, 'image/png');
    const foreign = world();
    foreign.d.keyMaterial = { material: async () => ({ pepper: Buffer.from('other-pepper-0123456789'), masterKey: Buffer.alloc(32, 9) }) };
    const { HmacAssetLinks } = await import('../../../functions/adapters/asset-links');
    const link = await new HmacAssetLinks(foreign.d.keyMaterial, 3600).link(ref, BASE, w.clock.at);
    // Act
    const res = await get(w, tokenOf(link.url));
    // Assess
    expect(res.statusCode).toBe(404);
  });

  it('answers 410 once expired, saying when and how to get a fresh link', async () => {
    // Prepare
    const w = world();
    const link = await w.d.assetLinks.link(await stored(w, 'out.a', PNG, 'image/png'), BASE, w.clock.at);
    w.clock.at = new Date(Date.parse(link.expires_at));
    // Act
    const res = await get(w, tokenOf(link.url));
    // Assess
    expect(res.statusCode).toBe(410);
    const body = JSON.parse(res.body) as Record<string, unknown>;
    expect(body).toMatchObject({ error: 'Asset Link Expired', expired_at: link.expires_at });
    expect(String(body.detail)).toMatch(/read the result again/);
  });

  it('answers 404 at once when the deployment is deleted, though the object is still stored', async () => {
    // Prepare
    const w = world();
    const ref = await stored(w, 'out.a', PNG, 'image/png');
    const link = await w.d.assetLinks.link(ref, BASE, w.clock.at);
    expect((await get(w, tokenOf(link.url))).statusCode).toBe(200);
    // Act
    await w.d.deployments.markDeleted(w.deploymentId, w.clock.at.toISOString());
    const res = await get(w, tokenOf(link.url));
    // Assess
    expect(res.statusCode).toBe(404);
    expect(w.objects.items.has(ref.key)).toBe(true);
  });

  it("serves a run's object while its pipeline exists, 404 otherwise", async () => {
    // Prepare
    const w = world();
    const key = executionObjectKey({ kind: 'run', deployment_id: null, pipeline_id: 'photos', execution_id: randomUUID() }, 'out.a');
    await w.objects.put(key, PNG, 'image/png');
    const link = await w.d.assetLinks.link({ key, media_type: 'image/png', bytes: PNG.length, sha256: '' }, BASE, w.clock.at);
    // Act
    const without = await get(w, tokenOf(link.url));
    await w.d.pipelines.push('photos', { nodes: [], edges: [] } as never, 'h', w.clock.at.toISOString());
    const withPipeline = await get(w, tokenOf(link.url));
    // Assess
    expect(without.statusCode).toBe(404);
    expect(withPipeline.statusCode).toBe(200);
    expect(withPipeline.bytes.equals(PNG)).toBe(true);
  });

  it('answers 404 when the object is gone (retention) and for a key no module made', async () => {
    // Prepare
    const w = world();
    const ref = await stored(w, 'out.a', PNG, 'image/png');
    const gone = await w.d.assetLinks.link(ref, BASE, w.clock.at);
    await w.objects.remove([ref.key]);
    const odd = await w.d.assetLinks.link({ ...ref, key: `d/${w.deploymentId}/x` }, BASE, w.clock.at);
    // Act + Assess
    expect((await get(w, tokenOf(gone.url))).statusCode).toBe(404);
    expect((await get(w, tokenOf(odd.url))).statusCode).toBe(404);
  });

  it('serves a byte range (206), and 416 past the end', async () => {
    // Prepare
    const w = world();
    const link = await w.d.assetLinks.link(await stored(w, 'out.a', PNG, 'image/png'), BASE, w.clock.at);
    // Act
    const part = await get(w, tokenOf(link.url), { Range: 'bytes=100-199' });
    const past = await get(w, tokenOf(link.url), { Range: `bytes=${PNG.length}-` });
    // Assess
    expect(part.statusCode).toBe(206);
    expect(part.bytes.equals(PNG.subarray(100, 200))).toBe(true);
    expect(part.headers).toMatchObject({ 'content-length': '100', 'content-range': `bytes 100-199/${PNG.length}` });
    expect(past.statusCode).toBe(416);
    expect(past.headers?.['content-range']).toBe(`bytes */${PNG.length}`);
  });

  it('reads the object whole where the store cannot stream', async () => {
    // Prepare
    const w = world({ streams: false });
    const link = await w.d.assetLinks.link(await stored(w, 'out.a', PNG, 'image/png'), BASE, w.clock.at);
    // Act
    const res = await get(w, tokenOf(link.url));
    const part = await get(w, tokenOf(link.url), { Range: 'bytes=-8' });
    // Assess
    expect(res.bytes.equals(PNG)).toBe(true);
    expect(part.bytes.equals(PNG.subarray(PNG.length - 8))).toBe(true);
    expect(w.objects.reads).toBe(2);
  });

  it('never shows the key material or the link key, in answers or logs, even when the store fails', async () => {
    // Prepare
    const w = world();
    const { masterKey, pepper } = await testKeyMaterial.material();
    const secrets = [masterKey, pepper, assetLinkKey(masterKey)].flatMap((k) => [
      k.toString('hex'),
      k.toString('base64'),
      k.toString('base64url'),
    ]);
    const ok = await w.d.assetLinks.link(await stored(w, 'out.a', PNG, 'image/png'), BASE, w.clock.at);
    const answers = [ok.url, (await get(w, tokenOf(ok.url))).body, (await get(w, 'v1.e30.AAAA')).body];
    w.objects.open = () => Promise.reject(new Error('disk on fire'));
    const failed = await get(w, tokenOf(ok.url));
    answers.push(failed.body, JSON.stringify(failed.headers));
    // Assess
    expect(failed.statusCode).toBe(500);
    expect(w.logs.join('\n')).toMatch(/disk on fire/);
    for (const text of [...answers, ...w.logs]) for (const s of secrets) expect(text).not.toContain(s);
  });

  describe('HEAD', () => {
    const head = (w: World, token: string, headers: Record<string, string> = {}) => get(w, token, headers, 'HEAD');

    it("answers GET's status and headers without a byte of the body, from the object's metadata alone", async () => {
      // Prepare
      const w = world();
      const link = await w.d.assetLinks.link(await stored(w, 'out.drawing', SVG, 'image/svg+xml'), BASE, w.clock.at);
      const opened: string[] = [];
      const open = w.objects.open.bind(w.objects);
      w.objects.open = (key, range) => {
        opened.push(key);
        return open(key, range);
      };
      // Act
      const byGet = await get(w, tokenOf(link.url));
      opened.length = 0;
      const byHead = await head(w, tokenOf(link.url));
      // Assess
      expect(byHead.statusCode).toBe(200);
      expect(byHead.bytes.length).toBe(0);
      const { 'x-request-id': _g, ...getHeaders } = byGet.headers;
      const { 'x-request-id': _h, ...headHeaders } = byHead.headers;
      expect(headHeaders).toEqual(getHeaders);
      expect(headHeaders).toMatchObject({
        'content-length': String(SVG.length),
        'content-type': 'image/svg+xml',
        'x-content-type-options': 'nosniff',
        'accept-ranges': 'bytes',
      });
      expect(headHeaders['content-disposition']).toMatch(/^attachment/);
      expect(opened).toEqual([]);
      expect(w.objects.reads).toBe(0);
    });

    it('answers a range as GET would (206 with Content-Range), and 416 past the end', async () => {
      const w = world();
      const link = await w.d.assetLinks.link(await stored(w, 'out.a', PNG, 'image/png'), BASE, w.clock.at);
      const part = await head(w, tokenOf(link.url), { range: 'bytes=10-19' });
      expect(part.statusCode).toBe(206);
      expect(part.headers).toMatchObject({ 'content-length': '10', 'content-range': `bytes 10-19/${PNG.length}` });
      expect(part.bytes.length).toBe(0);
      expect((await head(w, tokenOf(link.url), { range: `bytes=${PNG.length}-` })).statusCode).toBe(416);
    });

    it('answers 410 once expired and 404 for an altered link or a gone object, as GET does', async () => {
      const w = world();
      const link = await w.d.assetLinks.link(await stored(w, 'out.a', PNG, 'image/png'), BASE, w.clock.at);
      const token = tokenOf(link.url);
      expect((await head(w, `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`)).statusCode).toBe(404);
      w.objects.items.clear();
      expect((await head(w, token)).statusCode).toBe(404);
      w.clock.at = new Date(Date.parse(link.expires_at));
      expect((await head(w, token)).statusCode).toBe(410);
    });
  });
});
