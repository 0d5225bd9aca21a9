/**
 * ASSET inputs over real HTTP on the local runtime (its S3 emulation included): real PNG, JPEG
 * and MP4 bytes sent inline and through an upload, seen by a transform as
 * {url, media_type, bytes, sha256}, the URL serving the exact bytes; refusals for the wrong
 * type, bad base64, an oversize body, a reused, foreign or resized upload.
 */
import { INLINE_ASSET_BODY_MAX_BYTES, UPLOADS_ROUTE } from '../../functions/core/assets';
import { assetValue as asset, dataUri, jpeg, mp4, photoInfoPipeline, png, sha256Hex as sha } from '../support/media';
import { putOneByteShort, putUpload, startTestRuntime, type Published, type TestRuntime, type UploadAnswer } from '../support/runtime';

const photoPipeline = photoInfoPipeline(2_000_000);

let rt: TestRuntime;
let p: Published;
const executions = () => `/v1/deployments/${p.deploymentId}/executions/`;

beforeAll(async () => {
  rt = await startTestRuntime();
  p = await rt.publishPipeline('photo-info', photoPipeline);
});
afterAll(async () => {
  await rt?.cleanup();
});

const resultOf = (workflow_input: Record<string, unknown>) => rt.executeToEnd(p, workflow_input);

async function upload(bytes: Uint8Array, mediaType: string, deployment = p) {
  const r = await rt.caller<UploadAnswer>('POST', `/v1/deployments/${deployment.deploymentId}/uploads/`, deployment.apiKey, {
    media_type: mediaType,
    bytes: bytes.length,
  });
  expect(r.status).toBe(201);
  return r.body;
}

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
    [
      'an MP4 for an image input',
      asset(mp4().toString('base64')),
      "input 'photo' is video/mp4 (sniffed from its bytes) but accepts image/png or image/jpeg, at most 2000000 bytes",
    ],
    [
      'malformed base64',
      asset('iVBOR w0K'),
      "input 'photo' is not valid base64 (standard alphabet A-Z a-z 0-9 + /, optional = padding, no whitespace)",
    ],
  ])('answers 422 for %s', async (_name, value, detail) => {
    const r = await rt.caller('POST', executions(), p.apiKey, { workflow_input: { photo: value } });
    expect(r.status).toBe(422);
    expect(r.body).toEqual({ error: 'Invalid Input', detail });
  });

  it('answers 413 past the inline limit, naming it and the uploads route', async () => {
    const r = await rt.caller('POST', executions(), p.apiKey, {
      workflow_input: { photo: asset('A'.repeat(INLINE_ASSET_BODY_MAX_BYTES)) },
    });
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
    const sent = await putUpload(up, bytes);
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
    const short = await putOneByteShort(up, bytes);
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
    await putUpload(up, bytes);

    // Act
    const r = await rt.caller('POST', executions(), p.apiKey, { workflow_input: { photo: up.asset } });

    // Assess
    expect(r.status).toBe(422);
    expect(r.body.detail).toMatch(/does not exist or has expired/);
  });
});
