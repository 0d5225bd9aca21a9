/**
 * Asset links on the local runtime over real HTTP, on its S3 emulation: a link minted by the
 * runtime's own links port serves the object's exact bytes through the gateway, and stops at
 * once when its deployment is deleted.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { executionObjectKey } from '../../functions/core/object-keys';
import type { ObjectRef } from '../../functions/core/ports';
import { greeting, startTestRuntime, type Published, type TestRuntime } from '../support/runtime';

let rt: TestRuntime;
let pub: Published;

beforeAll(async () => {
  rt = await startTestRuntime();
  pub = await rt.publishPipeline('asset-links', greeting);
});
afterAll(async () => {
  await rt?.cleanup();
});

async function stored(name: string, body: Buffer, mediaType: string): Promise<ObjectRef> {
  const key = executionObjectKey(
    { kind: 'api', deployment_id: pub.deploymentId, pipeline_id: 'asset-links', execution_id: randomUUID() },
    name,
  );
  await rt.deps.objects.put(key, body, mediaType);
  return { key, media_type: mediaType, bytes: body.length, sha256: '' };
}

describe('asset links on the local runtime', () => {
  it('stream an object of several MB exactly, with its length, and a range of it', async () => {
    // Prepare: incompressible bytes, larger than Lambda's 6 MB buffered answer.
    const big = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), randomBytes(7 * 1024 * 1024)]);
    const link = await rt.deps.assetLinks.link(await stored('out.big', big, 'image/png'), rt.url, new Date());

    // Act
    const whole = await fetch(link.url);
    const bytes = Buffer.from(await whole.arrayBuffer());
    const tail = await fetch(link.url, { headers: { range: `bytes=${big.length - 1000}-` } });
    const tailBytes = Buffer.from(await tail.arrayBuffer());
    const past = await fetch(link.url, { headers: { range: `bytes=${big.length}-` } });

    // Assess
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-length')).toBe(String(big.length));
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(createHash('sha256').update(big).digest('hex'));
    expect(tail.status).toBe(206);
    expect(tailBytes.equals(big.subarray(big.length - 1000))).toBe(true);
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${big.length}`);
    expect(((await past.json()) as { error: string }).error).toBe('Range Not Satisfiable');
  });

  it('serve the exact bytes with their headers, SVG as an attachment, and 404 once the deployment is deleted', async () => {
    // Prepare
    const jpeg = Buffer.concat([Buffer.from('ffd8ffe000104a464946', 'hex'), Buffer.alloc(1_500_000, 0xab), Buffer.from('ffd9', 'hex')]);
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>');
    const photo = await rt.deps.assetLinks.link(await stored('out.photo', jpeg, 'image/jpeg'), rt.url, new Date());
    const drawing = await rt.deps.assetLinks.link(await stored('out.drawing', svg, 'image/svg+xml'), rt.url, new Date());

    // Act
    const a = await fetch(photo.url);
    const aBytes = Buffer.from(await a.arrayBuffer());
    const b = await fetch(drawing.url);
    const bBytes = Buffer.from(await b.arrayBuffer());
    const tampered = await fetch(`${photo.url.slice(0, -2)}AA`);
    const part = await fetch(photo.url, { headers: { range: 'bytes=10-19' } });
    const partBytes = Buffer.from(await part.arrayBuffer());
    const deleted = await rt.owner('DELETE', `/v1/pipelines/asset-links/deployment?confirm=${pub.deploymentId}`);
    const after = await fetch(photo.url);

    // Assess
    expect(a.status).toBe(200);
    expect(aBytes.equals(jpeg)).toBe(true);
    expect(a.headers.get('content-type')).toBe('image/jpeg');
    expect(a.headers.get('content-length')).toBe(String(jpeg.length));
    expect(a.headers.get('x-content-type-options')).toBe('nosniff');
    expect(b.status).toBe(200);
    expect(bBytes.equals(svg)).toBe(true);
    expect(b.headers.get('content-disposition')).toBe('attachment; filename="out.drawing"');
    expect(tampered.status).toBe(404);
    expect(part.status).toBe(206);
    expect(partBytes.equals(jpeg.subarray(10, 20))).toBe(true);
    expect(part.headers.get('content-range')).toBe(`bytes 10-19/${jpeg.length}`);
    expect(deleted.status).toBe(204);
    expect(after.status).toBe(404);
    expect(((await after.json()) as { error: string }).error).toBe('Asset Not Found');
  });
});
