/**
 * Owners' uploads (POST /v1/pipelines/{pipeline_id}/uploads) through the services on a real
 * store (dynalite) with in-memory object storage: made under the pipeline, used once by one of
 * its runs, refused when foreign (another pipeline, a caller's, or used by a caller), expired,
 * missing, resized or of the wrong type.
 */
import { randomUUID } from 'node:crypto';
import { UPLOAD_USE_SECONDS } from '../../functions/core/assets';
import { AppError } from '../../functions/core/errors';
import type { PipelineDefinition } from '../../functions/core/types';
import type { CallerAuth } from '../../functions/core/consumers';
import { startRun } from '../../functions/services/runs.service';
import { createPipelineUpload } from '../../functions/services/pipeline-uploads.service';
import { push } from '../../functions/services/push.service';
import { startAssetWorld, type AssetWorld } from '../support/asset-world';
import { assetValue, dataUri, mp4, png } from '../support/media';
import { rejection } from '../support/thrown';

let w: AssetWorld;

beforeAll(async () => {
  w = await startAssetWorld('2026-11-25T12:00:00Z');
});
afterAll(async () => {
  await w.close();
});

const definition: PipelineDefinition = {
  nodes: {
    photo: {
      type: 'input',
      value_type: 'asset',
      value: dataUri('image/png', png(1, 1)),
      media_types: ['image/png', 'image/jpeg'],
      max_bytes: 500_000,
    },
    caption: { type: 'input', value_type: 'string', value: 'hi' },
    about: { type: 'transform', inputs: ['photo'], expression: 'photo.media_type' },
    info: { type: 'output', from: 'about' },
  },
};

let n = 0;
async function aPipeline(def: PipelineDefinition = definition): Promise<string> {
  const id = `media-${++n}-${randomUUID().slice(0, 8)}`;
  await push(w.d, id, JSON.stringify(def));
  return id;
}

async function aDeployment(): Promise<CallerAuth> {
  const { auth } = await w.aDeployment([
    { id: 'photo', value_type: 'asset', value: dataUri('image/png', png(1, 1)), visible: true, media_types: ['image/png'] },
  ]);
  return auth;
}

const ask = (pipelineId: string, bytes: number, media_type = 'image/png') =>
  createPipelineUpload(w.d, pipelineId, JSON.stringify({ media_type, bytes }));
const run = (pipelineId: string, inputs: Record<string, unknown>) =>
  startRun(w.d, pipelineId, JSON.stringify({ inputs }), 'http://127.0.0.1');
const callerSubmit = (auth: CallerAuth, value: string) => w.submit(auth, { photo: assetValue(value) });
const refusal = (p: Promise<unknown>): Promise<AppError> => rejection(p, AppError);
const detailText = (e: AppError): string => JSON.stringify(e.detail);

describe('owner uploads', () => {
  it('answers 201 with a PUT of exactly the size under the pipeline; one run then uses it, a second is refused', async () => {
    // Prepare: a photo larger than a definition's data URI may hold.
    const pipelineId = await aPipeline();
    const photo = png(200, 200, (x, y) => [(x * 7 + y * 13) % 256, (x * y) % 256, (x ^ y) % 256, 255]);
    expect(photo.length).toBeGreaterThan(64 * 1024);

    // Act
    const up = await ask(pipelineId, photo.length);
    const put = w.objects.completeUpload(up.upload_url, photo);
    const first = await run(pipelineId, { photo: up.asset.value });
    const again = await refusal(run(pipelineId, { photo: up.asset.value }));

    // Assess
    expect(up).toEqual(w.uploadAnswer(photo.length));
    expect(put).toBe('ok');
    const r = await w.db.executions.get(first.run_id, w.now(), true);
    expect(r?.assets?.photo).toEqual({
      key: `p/${pipelineId}/u/${up.asset.value.slice(7)}`,
      media_type: 'image/png',
      bytes: photo.length,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(r?.inputs).toEqual({ caption: 'hi' });
    expect(again.status).toBe(400);
    expect(detailText(again)).toMatch(/input 'photo' names an upload that another execution has used already/);
  });

  it.each([
    ['no bytes yet', async () => undefined, /whose bytes have not arrived/],
    [
      'another pipeline',
      async (u: { value: string; other: string }) => ({ refused: refusal(run(u.other, { photo: u.value })) }),
      /does not exist or has expired \(an upload can be used for a day, with the pipeline that made it\)/,
    ],
    [
      'expired',
      async (u: { put: () => void }) => {
        u.put();
        w.advance(UPLOAD_USE_SECONDS + 1);
        return undefined;
      },
      /does not exist or has expired/,
    ],
  ] as const)('refuses a run naming an upload with %s', async (_name, act, detail) => {
    // Prepare
    const pipelineId = await aPipeline();
    const other = await aPipeline();
    const photo = png(4, 4);
    const up = await ask(pipelineId, photo.length);
    const ctx = { value: up.asset.value, other, put: () => w.objects.completeUpload(up.upload_url, photo) };

    // Act
    const own = await act(ctx);
    const e = await (own?.refused ?? refusal(run(pipelineId, { photo: up.asset.value })));

    // Assess
    expect(e.status).toBe(400);
    expect(detailText(e)).toMatch(detail);
  });

  it('refuses an upload whose bytes are not what the input accepts, sniffed whatever the upload said', async () => {
    const pipelineId = await aPipeline();
    const clip = mp4();
    const up = await ask(pipelineId, clip.length);
    w.objects.completeUpload(up.upload_url, clip);
    const e = await refusal(run(pipelineId, { photo: up.asset.value }));
    expect(e.status).toBe(400);
    expect(detailText(e)).toMatch(/input 'photo' is video\/mp4 \(sniffed from its bytes\) but accepts image\/png or image\/jpeg/);
  });

  it('refuses a PUT of another size (as S3 does with the signed Content-Length)', async () => {
    const pipelineId = await aPipeline();
    const up = await ask(pipelineId, 100);
    expect(w.objects.completeUpload(up.upload_url, Buffer.alloc(101))).toBe('wrong_size');
    expect(w.objects.completeUpload(up.upload_url, Buffer.alloc(99))).toBe('wrong_size');
  });

  it('keeps owners and callers apart: neither can use the other’s upload', async () => {
    // Prepare
    const pipelineId = await aPipeline();
    const auth = await aDeployment();
    const photo = png(5, 5);
    const owners = await ask(pipelineId, photo.length);
    w.objects.completeUpload(owners.upload_url, photo);
    const callers = await w.upload(auth, photo.length);
    w.objects.completeUpload(callers.upload_url, photo);

    // Act
    const byCaller = await refusal(callerSubmit(auth, owners.asset.value));
    const byOwner = await refusal(run(pipelineId, { photo: callers.asset.value }));
    // Each still serves its own side afterwards: the refusals claimed nothing.
    const ownRun = await run(pipelineId, { photo: owners.asset.value });
    const ownExecution = await callerSubmit(auth, callers.asset.value);

    // Assess
    expect(byCaller.status).toBe(422);
    expect(String(byCaller.detail)).toMatch(/input 'photo' names an upload that does not exist or has expired/);
    expect(byOwner.status).toBe(400);
    expect(detailText(byOwner)).toMatch(/input 'photo' names an upload that does not exist or has expired/);
    expect(ownRun.run_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(ownExecution.body.execution_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('will not let a claim for a caller take an owner’s upload (the conditional write checks the owner)', async () => {
    const pipelineId = await aPipeline();
    const up = await ask(pipelineId, 10);
    const id = up.asset.value.slice('upload:'.length);
    const deploymentOwner = { kind: 'deployment', deployment_id: randomUUID() } as const;
    expect(await w.d.uploads.consume(id, deploymentOwner, randomUUID(), w.now())).toBe(false);
    expect(await w.d.uploads.consume(id, { kind: 'pipeline', pipeline_id: `${pipelineId}-x` }, randomUUID(), w.now())).toBe(false);
    expect(await w.d.uploads.consume(id, { kind: 'pipeline', pipeline_id: pipelineId }, randomUUID(), w.now())).toBe(true);
  });

  it.each([
    ['no body', null, /body is required/],
    ['not JSON', '{', /body is not valid JSON/],
    ['an unknown field', JSON.stringify({ media_type: 'image/png', bytes: 5, name: 'x' }), /name/],
    ['a size of 0', JSON.stringify({ media_type: 'image/png', bytes: 0 }), /bytes.*must be at least 1/],
    [
      'a size over the largest upload',
      JSON.stringify({ media_type: 'image/png', bytes: 100 * 1024 * 1024 + 1 }),
      /must be at most 104857600/,
    ],
    [
      'a type no input takes',
      JSON.stringify({ media_type: 'text/plain', bytes: 5 }),
      /no asset input takes 5 bytes of text\/plain: 'photo' accepts image\/png or image\/jpeg, at most 500000 bytes/,
    ],
    [
      'a size no input takes',
      JSON.stringify({ media_type: 'image/png', bytes: 500_001 }),
      /no asset input takes 500001 bytes of image\/png/,
    ],
  ])('answers 400 to an upload request with %s', async (_name, body, detail) => {
    const pipelineId = await aPipeline();
    const e = await refusal(createPipelineUpload(w.d, pipelineId, body));
    expect(e.status).toBe(400);
    expect(e.code).toBe('InvalidRequest');
    expect(detailText(e)).toMatch(detail);
  });

  it('answers 400 for a pipeline without asset inputs, and 404 for an unknown or malformed pipeline', async () => {
    const plain = await aPipeline({ nodes: { a: { type: 'input', value_type: 'string', value: 'x' }, o: { type: 'output', from: 'a' } } });
    expect(detailText(await refusal(ask(plain, 5)))).toMatch(/this pipeline takes no asset inputs/);
    expect((await refusal(ask('no-such-pipeline', 5))).status).toBe(404);
    expect((await refusal(ask('Not_A_Pipeline', 5))).status).toBe(404);
  });

  it('refuses a malformed upload value in a run, naming the route', async () => {
    const pipelineId = await aPipeline();
    const e = await refusal(run(pipelineId, { photo: 'upload:not-an-id' }));
    expect(e.status).toBe(400);
    expect(detailText(e)).toMatch(/or an upload's value \\"upload:<id>\\" from POST \/v1\/pipelines\/\{pipeline_id\}\/uploads/);
  });
});
