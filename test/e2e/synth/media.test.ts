/**
 * Media end to end against `npm run start:synth`, IAM enforced on every call: an upload created
 * through the API, its bytes PUT to the presigned URL (the emulated S3 checks the signature, so
 * another size is refused), an execution with the `upload:<id>` value and one with an inline
 * PNG, both completing; the URL the run hands the pipeline for its input (an asset link minted
 * by task-run with the key material, not a URL presigned by its role) serves the exact bytes
 * through the asset route, streamed from the asset function's worker (several MB, past
 * Lambda's 6 MB buffered answer), a range of them too; the asset function reads the object
 * with its own role. */
import { assetValue as asset, noisyPng, photoInfoPipeline, png, sha256Hex as sha } from '../../support/media';
import { putOneByteShort, putUpload, startE2eRuntime, useE2eMode, type E2eRuntime, type Published, type UploadAnswer } from '../../support/runtime';
import { SYNTH_TIMEOUT_MS } from '../../support/synth';

useE2eMode('synth');
jest.setTimeout(120_000);

const photoPipeline = photoInfoPipeline(8_000_000);

let rt: E2eRuntime;
let p: Published;

beforeAll(async () => {
  rt = await startE2eRuntime();
  p = await rt.publishPipeline('photo-synth', photoPipeline);
}, SYNTH_TIMEOUT_MS);
afterAll(async () => {
  await rt?.cleanup();
});

const resultOf = (workflow_input: Record<string, unknown>) => rt.executeToEnd(p, workflow_input, 60_000);

async function download(url: string): Promise<{ res: Response; bytes: Buffer }> {
  const res = await fetch(url);
  return { res, bytes: Buffer.from(await res.arrayBuffer()) };
}

describe('media on start:synth, IAM enforced', () => {
  it('uploads to the presigned URL, executes with upload:<id>, and the link streams the exact bytes', async () => {
    // Prepare: a real PNG of several MB (random pixels do not compress).
    const bytes = noisyPng(1400, 1400);
    expect(bytes.length).toBeGreaterThan(6 * 1024 * 1024);
    const created = await rt.caller<UploadAnswer>('POST', `/v1/deployments/${p.deploymentId}/uploads/`, p.apiKey, {
      media_type: 'image/png',
      bytes: bytes.length,
    });
    expect(created.status).toBe(201);

    // Act
    const short = await putOneByteShort(created.body, bytes);
    const put = await putUpload(created.body, bytes);
    const result = await resultOf({ photo: asset(created.body.asset.value) });
    const data = result.response_data as Record<string, { value: string }>;
    const { res, bytes: served } = await download(data.url?.value ?? '');

    // Assess
    expect(short.status).toBe(403);
    expect(put.status).toBe(200);
    expect(result.status).toBe('completed');
    expect(data.info?.value).toBe(`image/png ${bytes.length} ${sha(bytes)}`);
    expect(data.url?.value.startsWith(`${rt.url}/v1/assets/`)).toBe(true);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.headers.get('content-length')).toBe(String(bytes.length));
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(sha(served)).toBe(sha(bytes));
  });

  it('executes with an inline PNG, and its link downloads the exact bytes and a range of them', async () => {
    // Prepare
    const bytes = png(64, 64);

    // Act
    const result = await resultOf({ photo: asset(bytes.toString('base64')) });
    const url = (result.response_data as Record<string, { value: string }>).url?.value ?? '';
    const whole = await download(url);
    const part = await fetch(url, { headers: { range: 'bytes=0-7' } });
    const past = await fetch(url, { headers: { range: `bytes=${bytes.length}-` } });
    const altered = await fetch(`${url.slice(0, -2)}AA`);

    // Assess
    expect(result.status).toBe('completed');
    expect(url.startsWith(`${rt.url}/v1/assets/`)).toBe(true);
    expect(whole.res.status).toBe(200);
    expect(whole.bytes.equals(bytes)).toBe(true);
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(0, 8))).toBe(true);
    expect(past.status).toBe(416);
    expect(altered.status).toBe(404);
    expect(((await altered.json()) as { error: string }).error).toBe('Asset Not Found');
  });
});
