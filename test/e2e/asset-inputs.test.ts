/**
 * ASSET inputs over real HTTP on the local runtime (its S3 emulation included): real PNG, JPEG
 * and MP4 bytes sent inline and through an upload, seen by a transform as
 * {url, media_type, bytes, sha256}, the URL serving the exact bytes; refusals for the wrong
 * type, bad base64, an oversize body, a reused, foreign or resized upload.
 */
import { createHash } from 'node:crypto';
import { INLINE_ASSET_BODY_MAX_BYTES, UPLOADS_ROUTE } from '../../functions/core/assets';
import type { PipelineDefinition } from '../../functions/core/types';
import { dataUri, jpeg, mp4, png } from '../support/media';
import { startTestRuntime, type Published, type TestRuntime } from '../support/runtime';

jest.setTimeout(60_000);

const photoPipeline: PipelineDefinition = {
  nodes: {
    photo: { type: 'input', value_type: 'asset', value: dataUri('image/png', png(1, 1)), media_types: ['image/png', 'image/jpeg'], max_bytes: 2_000_000 },
    about: { type: 'transform', inputs: ['photo'], expression: "photo.media_type & ' ' & $string(photo.bytes) & ' ' & photo.sha256" },
    link: { type: 'transform', inputs: ['photo'], expression: 'photo.url' },
    info: { type: 'output', from: 'about' },
    url: { type: 'output', from: 'link' },
  },
};

let rt: TestRuntime;
let p: Published;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const executions = () => `/v1/deployments/${p.deploymentId}/executions/`;
const asset = (value: string) => ({ value, value_type: 'ASSET' });

beforeAll(async () => {
  rt = await startTestRuntime();
  p = await rt.publishPipeline('photo-info', photoPipeline);
});
afterAll(async () => {
  await rt?.cleanup();
});

async function resultOf(workflow_input: Record<string, unknown>) {
  const r = await rt.caller('POST', executions(), p.apiKey, { workflow_input });
  expect(r.status).toBe(202);
  const id = r.body.execution_id as string;
  await rt.waitForExecution(id, p.apiKey);
  return (await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, p.apiKey)).body;
}

async function upload(bytes: Uint8Array, mediaType: string, deployment = p) {
  const r = await rt.caller<{ upload_url: string; method: string; headers: Record<string, string>; asset: { value: string; value_type: string } }>(
    'POST',
    `/v1/deployments/${deployment.deploymentId}/uploads/`,
    deployment.apiKey,
    { media_type: mediaType, bytes: bytes.length },
  );
  expect(r.status).toBe(201);
  return r.body;
}

const put = (url: string, headers: Record<string, string>, body: Uint8Array) => fetch(url, { method: 'PUT', headers, body });

describe('inline assets', () => {
  it('runs with a PNG sent as base64: the transform sees its sniffed type, size and hash, and its URL serves the exact bytes', async () => {
    // Prepare
    const bytes = png(16, 16);

    // Act
    const result = await resultOf({ photo: asset(bytes.toString('base64')) });

    // Assess
    expect(result.status).toBe('completed');
    const data = result.response_data as Record<string, { value: string }>;
    expect(data.info?.value).toBe(`image/png ${bytes.length} ${sha(bytes)}`);
    const served = await fetch(data.url?.value ?? '');
    expect(served.status).toBe(200);
    expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('sniffs a JPEG sent as a data URI that calls itself a PNG', async () => {
    const result = await resultOf({ photo: asset(dataUri('image/png', jpeg())) });
    expect((result.response_data as Record<string, { value: string }>).info?.value).toMatch(/^image\/jpeg /);
  });

  it.each([
    ['an MP4 for an image input', asset(mp4().toString('base64')), "input 'photo' is video/mp4 (sniffed from its bytes) but accepts image/png or image/jpeg, at most 2000000 bytes"],
    ['malformed base64', asset('iVBOR w0K'), "input 'photo' is not valid base64 (standard alphabet A-Z a-z 0-9 + /, optional = padding, no whitespace)"],
  ])('answers 422 for %s', async (_name, value, detail) => {
    const r = await rt.caller('POST', executions(), p.apiKey, { workflow_input: { photo: value } });
    expect(r.status).toBe(422);
    expect(r.body).toEqual({ error: 'Invalid Input', detail });
  });

  it('answers 413 past the inline limit, naming it and the uploads route', async () => {
    const r = await rt.caller('POST', executions(), p.apiKey, { workflow_input: { photo: asset('A'.repeat(INLINE_ASSET_BODY_MAX_BYTES)) } });
    expect(r.status).toBe(413);
    expect(r.body.detail).toContain('4194304 bytes (4 MiB)');
    expect(r.body.detail).toContain(UPLOADS_ROUTE);
  });
});

describe('uploads', () => {
  it('runs with a JPEG uploaded by a presigned PUT; the upload then serves no second execution', async () => {
    // Prepare
    const bytes = Buffer.concat([jpeg(), Buffer.alloc(300_000, 0)]);
    const up = await upload(bytes, 'image/jpeg');

    // Act
    const sent = await put(up.upload_url, up.headers, bytes);
    const result = await resultOf({ photo: up.asset });
    const again = await rt.caller('POST', executions(), p.apiKey, { workflow_input: { photo: up.asset } });

    // Assess
    expect(sent.status).toBe(200);
    expect(up.method).toBe('PUT');
    expect((result.response_data as Record<string, { value: string }>).info?.value).toBe(`image/jpeg ${bytes.length} ${sha(bytes)}`);
    expect(again.status).toBe(422);
    expect(again.body.detail).toMatch(/another execution has used already/);
  });

  it('refuses a PUT of another size, and an upload whose bytes never came', async () => {
    // Prepare
    const bytes = png(4, 4);
    const up = await upload(bytes, 'image/png');

    // Act
    const others = Object.fromEntries(Object.entries(up.headers).filter(([k]) => k.toLowerCase() !== 'content-length'));
    const short = await put(up.upload_url, others, bytes.subarray(1));
    const r = await rt.caller('POST', executions(), p.apiKey, { workflow_input: { photo: up.asset } });

    // Assess
    expect(short.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBe(422);
    expect(r.body.detail).toMatch(/whose bytes have not arrived/);
  });

  it("refuses another deployment's upload as if it did not exist", async () => {
    // Prepare
    const other = await rt.publishPipeline('photo-info-2', photoPipeline);
    const bytes = png(2, 2);
    const up = await upload(bytes, 'image/png', other);
    await put(up.upload_url, up.headers, bytes);

    // Act
    const r = await rt.caller('POST', executions(), p.apiKey, { workflow_input: { photo: up.asset } });

    // Assess
    expect(r.status).toBe(422);
    expect(r.body.detail).toMatch(/does not exist or has expired/);
  });
});
