/**
 * Owners' uploads against `npm run start:synth`, IAM enforced on every call: the pipeline's
 * uploads route answers a URL presigned by its own function's role (PutObject under p/*\/u/*
 * alone), the emulated S3 checks that signature and the signed size, a run takes the upload's
 * value, and the run's asset output serves the exact bytes.
 */
import type { PipelineDefinition } from '../../../functions/core/types';
import { assetFactsExpression, dataUri, noisyPng, png, sha256Hex as sha } from '../../support/media';
import {
  putOneByteShort,
  putUpload,
  startE2eRuntime,
  useE2eMode,
  waitUntil,
  type E2eRuntime,
  type UploadAnswer,
} from '../../support/runtime';
import { SYNTH_TIMEOUT_MS } from '../../support/synth';

useE2eMode('synth');

const echo: PipelineDefinition = {
  nodes: {
    photo: { type: 'input', value_type: 'asset', value: dataUri('image/png', png(1, 1)), media_types: ['image/png'] },
    about: { type: 'transform', inputs: ['photo'], expression: assetFactsExpression('photo') },
    info: { type: 'output', from: 'about' },
    copy: { type: 'output', from: 'photo' },
  },
};

let rt: E2eRuntime;

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
    const bytes = noisyPng(320, 320);
    expect(bytes.length).toBeGreaterThan(300_000);
    const created = await rt.owner<UploadAnswer>('POST', '/v1/pipelines/owner-upload-synth/uploads', {
      media_type: 'image/png',
      bytes: bytes.length,
    });
    expect(created.status).toBe(201);

    // Act
    const short = await putOneByteShort(created.body, bytes);
    const put = await putUpload(created.body, bytes);
    const started = await rt.owner<{ run_id: string }>('POST', '/v1/pipelines/owner-upload-synth/runs', {
      inputs: { photo: created.body.asset.value },
    });
    expect({ put: put.status, started: started.status, body: started.body }).toMatchObject({ put: 200, started: 202 });
    const run = await waitUntil(
      () =>
        rt.owner<{ status: string; outputs: Record<string, unknown>; output_assets: Record<string, unknown> }>(
          'GET',
          `/v1/pipelines/owner-upload-synth/runs/${started.body.run_id}`,
        ),
      (r) => ['completed', 'failed', 'cancelled'].includes(r.body.status),
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
