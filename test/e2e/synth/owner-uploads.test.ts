/**
 * Owners' uploads against `npm run start:synth`, IAM enforced on every call: the pipeline's
 * uploads route answers a URL presigned by its own function's role (PutObject under p/*\/u/*
 * alone), the emulated S3 checks that signature and the signed size, a run takes the upload's
 * value, and the run's asset output serves the exact bytes.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { PipelineDefinition } from '../../../functions/core/types';
import { dataUri, png } from '../../support/media';
import { startE2eRuntime, useE2eMode, waitUntil, type E2eRuntime } from '../../support/runtime';
import { SYNTH_TIMEOUT_MS } from '../../support/synth';

useE2eMode('synth');
jest.setTimeout(120_000);

const echo: PipelineDefinition = {
  nodes: {
    photo: { type: 'input', value_type: 'asset', value: dataUri('image/png', png(1, 1)), media_types: ['image/png'] },
    about: { type: 'transform', inputs: ['photo'], expression: "photo.media_type & ' ' & $string(photo.bytes) & ' ' & photo.sha256" },
    info: { type: 'output', from: 'about' },
    copy: { type: 'output', from: 'photo' },
  },
};

let rt: E2eRuntime;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  rt = await startE2eRuntime();
  expect((await rt.owner('PUT', '/v1/pipelines/owner-upload-synth', echo)).status).toBe(201);
}, SYNTH_TIMEOUT_MS);
afterAll(async () => {
  await rt?.cleanup();
});

describe("owners' uploads on start:synth, IAM enforced", () => {
  it('PUTs to the URL the pipeline-upload role presigned, runs with upload:<id>, and the output serves the exact bytes', async () => {
    // Prepare: a real PNG far over a run's inline 64 KiB.
    // Random pixels barely compress: 320×320 is about 350 KB.
    const noise = randomBytes(320 * 320 * 3);
    const bytes = png(320, 320, (x, y) => [noise[(y * 320 + x) * 3] ?? 0, noise[(y * 320 + x) * 3 + 1] ?? 0, noise[(y * 320 + x) * 3 + 2] ?? 0, 255]);
    expect(bytes.length).toBeGreaterThan(300_000);
    const created = await rt.owner<{ upload_url: string; headers: Record<string, string>; asset: { value: string } }>('POST', '/v1/pipelines/owner-upload-synth/uploads', {
      media_type: 'image/png',
      bytes: bytes.length,
    });
    expect(created.status).toBe(201);

    // Act
    const lower = Object.fromEntries(Object.entries(created.body.headers).map(([k, v]) => [k.toLowerCase(), v]));
    const short = await fetch(created.body.upload_url, { method: 'PUT', headers: { ...lower, 'content-length': String(bytes.length - 1) }, body: bytes.subarray(1) });
    const put = await fetch(created.body.upload_url, { method: 'PUT', headers: created.body.headers, body: bytes });
    const started = await rt.owner<{ run_id: string }>('POST', '/v1/pipelines/owner-upload-synth/runs', { inputs: { photo: created.body.asset.value } });
    expect({ put: put.status, started: started.status, body: started.body }).toMatchObject({ put: 200, started: 202 });
    const run = await waitUntil(
      () => rt.owner<{ status: string; outputs: Record<string, unknown>; output_assets: Record<string, unknown> }>('GET', `/v1/pipelines/owner-upload-synth/runs/${started.body.run_id}`),
      (r) => ['completed', 'failed', 'cancelled'].includes(r.body.status),
      60_000,
    );
    const copy = run.body.output_assets.copy as { value: string; media_type: string; bytes: number };
    const served = await fetch(copy.value);
    const body = Buffer.from(await served.arrayBuffer());
    const again = await rt.owner('POST', '/v1/pipelines/owner-upload-synth/runs', { inputs: { photo: created.body.asset.value } });

    // Assess
    expect(short.status).toBe(403);
    expect(put.status).toBe(200);
    expect(started.status).toBe(202);
    expect(run.body.status).toBe('completed');
    expect(run.body.outputs.info).toBe(`image/png ${bytes.length} ${sha(bytes)}`);
    expect(copy).toMatchObject({ media_type: 'image/png', bytes: bytes.length });
    expect(served.status).toBe(200);
    expect(sha(body)).toBe(sha(bytes));
    expect(again.status).toBe(400);
  });
});
