/**
 * Media end to end against `npm run start:synth`, IAM enforced on every call: an upload created
 * through the API, its bytes PUT to the presigned URL (the emulated S3 checks the signature, so
 * another size is refused), an execution with the `upload:<id>` value and one with an inline
 * PNG, both completing; the URL the run hands the pipeline for its input (an asset link minted
 * by task-run with the key material, not a URL presigned by its role) serves the exact bytes
 * through the asset route, streamed from the asset function's worker (several MB, past
 * Lambda's 6 MB buffered answer), a range of them too; the asset function reads the object
 * with its own role. The functions that presign uploads hold PutObject on their upload keys
 * alone (upload-create and form-upload d/*\/u/*, pipeline-upload p/*\/u/*): a web form's upload
 * PUTs and runs, and a URL any of them signs for another key (the other side's upload, an
 * execution's input or output) is refused 403. */
import { randomUUID } from 'node:crypto';
import { createObjectStore } from '../../../functions/adapters/objects.store';
import { executionObjectKey, pipelineUploadKey, uploadKey } from '../../../functions/core/object-keys';
import { credentialsFor } from '../../../lib/synth/iam';
import type { SynthRuntime } from '../../../lib/synth/runtime';
import { assetValue as asset, noisyPng, photoInfoPipeline, png, sha256Hex as sha } from '../../support/media';
import {
  putOneByteShort,
  putUpload,
  request,
  startE2eRuntime,
  useE2eMode,
  type E2eRuntime,
  type Published,
  type UploadAnswer,
} from '../../support/runtime';
import { SYNTH_TIMEOUT_MS } from '../../support/synth';
import { functionRoleArn } from '../../synth/synth-helpers';

useE2eMode('synth');

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

const resultOf = (workflow_input: Record<string, unknown>) => rt.executeToEnd(p, workflow_input);

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

describe("callers' uploads on start:synth: their functions' URLs write callers' upload keys alone", () => {
  it('PUTs a web form upload to the URL form-upload presigned, and the run through the link completes with it', async () => {
    // Prepare
    const form = await rt.publishPipeline('photo-form-synth', photoPipeline, { form: { enabled: true } });
    const formUrl = form.body.form_url as string;
    const bytes = png(48, 48, (x, y) => [x * 5, y * 5, 90, 255]);

    // Act
    const created = await request<UploadAnswer>(`${formUrl}/uploads`, 'POST', { media_type: 'image/png', bytes: bytes.length }, {});
    const put = await putUpload(created.body, bytes);
    const accepted = await request<{ status_url: string }>(
      `${formUrl}/executions`,
      'POST',
      { workflow_input: { photo: asset(created.body.asset.value) } },
      {},
    );
    let r = await request<{ status: string; response_data: Record<string, { value: string }> }>(
      accepted.body.status_url,
      'GET',
      undefined,
      { prefer: 'wait=30' },
    );
    while (r.body.status === 'pending' || r.body.status === 'running')
      r = await request(accepted.body.status_url, 'GET', undefined, { prefer: 'wait=30' });

    // Assess
    expect(created.status).toBe(201);
    expect(new URL(created.body.upload_url).pathname).toMatch(new RegExp(`/d/${form.deploymentId}/u/[0-9a-f-]{36}$`));
    expect(put.status).toBe(200);
    expect(accepted.status).toBe(202);
    expect(r.body.status).toBe('completed');
    expect(r.body.response_data.info?.value).toBe(`image/png ${bytes.length} ${sha(bytes)}`);
  });

  it.each([
    ['upload-create', 'callers'],
    ['form-upload', 'callers'],
    ['pipeline-upload', 'owners'],
  ] as const)("PUTs a URL %s's role signs for one of its %s' upload keys, and refuses 403 any other key", async (fn, side) => {
    // Prepare: an execution whose inline input is stored under it (and served back by its `url` output).
    const original = png(8, 8);
    const done = await rt.caller<{ execution_id: string }>(
      'POST',
      `/v1/deployments/${p.deploymentId}/executions/`,
      p.apiKey,
      { workflow_input: { photo: asset(original.toString('base64')) } },
      { prefer: 'wait=30' },
    );
    const executionId = done.body.execution_id;
    const link = (done.body as unknown as { response_data: Record<string, { value: string }> }).response_data.url?.value ?? '';
    const synth = rt as unknown as SynthRuntime;
    const bucket = [...synth.functions.values()].map((h) => h.spec.env.PIPEGATE_BUCKET).find((b) => b !== undefined) ?? '';
    // Signed with the credentials start:synth hands the function's sandbox (its role's).
    const objects = createObjectStore(
      { region: synth.resolved.env.region, s3Endpoint: synth.endpoint.url, s3ForcePathStyle: true },
      bucket,
      credentialsFor(functionRoleArn(synth.resolved, fn)),
    );
    const bytes = png(4, 4, () => [255, 0, 0, 255]);
    const putAs = async (key: string): Promise<string> => {
      const signed = await objects.presignUpload(key, 'image/png', bytes.length, 60);
      const res = await fetch(signed.url, { method: 'PUT', headers: signed.headers, body: bytes });
      return `${res.status}${(await res.text()).includes('<Code>AccessDenied</Code>') ? ' AccessDenied' : ''}`;
    };
    const execution = { kind: 'api' as const, deployment_id: p.deploymentId, pipeline_id: 'photo-synth', execution_id: executionId };

    const callers = uploadKey(p.deploymentId, randomUUID());
    const owners = pipelineUploadKey('photo-synth', randomUUID());

    // Act
    const statuses = {
      own: await putAs(side === 'callers' ? callers : owners),
      otherSide: await putAs(side === 'callers' ? owners : callers),
      input: await putAs(executionObjectKey(execution, 'in.photo')),
      output: await putAs(executionObjectKey(execution, 'out.url')),
    };
    const served = await download(link);

    // Assess
    expect(done.status).toBe(200);
    expect(statuses).toEqual({ own: '200', otherSide: '403 AccessDenied', input: '403 AccessDenied', output: '403 AccessDenied' });
    expect(served.res.status).toBe(200);
    expect(served.bytes.equals(original)).toBe(true);
  });
});
