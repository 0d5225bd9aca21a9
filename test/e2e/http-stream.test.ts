/**
 * A big binary answer streamed to storage, over real HTTP on the local runtime (its S3
 * emulation included; again against start:synth, with IAM enforced, in
 * test/e2e/synth/http-stream.test.ts): an upstream answers 10 MB of PNG bytes in chunks, without
 * a Content-Length, and holds back its last megabyte until the bucket has received a part of the
 * answer, which only a streamed write does. The output's link serves exactly those bytes; a
 * second http node sends the stored answer on as its raw body, streamed from storage. The same
 * again in an owner's run, whose objects live under its pipeline (p/<pipeline>/r/<run>/) rather
 * than a deployment: on start:synth task-run writes both under its own role.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import type { PipelineDefinition } from '../../functions/core/types';
import { startTestServer, type TestServer } from '../support/http-server';
import { png } from '../support/media';
import { e2eMode, startE2eRuntime, waitUntil, type E2eRuntime } from '../support/runtime';
import { HANG_MS } from '../support/hang';

const TOTAL = 10_000_000;
const HELD_BACK = 1_000_000;
const CHUNK = 64 * 1024;
const answer = Buffer.alloc(TOTAL);
png(4, 4).copy(answer);
for (let i = 64; i < TOTAL; i++) answer[i] = (i * 131 + (i >> 9)) % 256;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

let rt: E2eRuntime;
let upstream: TestServer;
/** Whether the bucket held a part of the answer before its last megabyte was sent. */
let partSeenBeforeEnd: boolean | undefined;
let echoed: { bytes: number; sha256: string; content_type: string } | undefined;

/** A part file of a multipart upload under the runtime's object directory. */
function partStored(): boolean {
  const uploads = join(rt.dataDir, 'objects', '.uploads');
  if (!existsSync(uploads)) return false;
  return readdirSync(uploads).some((id) => readdirSync(join(uploads, id)).some((f) => f.startsWith('part-')));
}

async function write(res: ServerResponse, bytes: Buffer): Promise<void> {
  for (let at = 0; at < bytes.length; at += CHUNK) {
    if (!res.write(bytes.subarray(at, at + CHUNK))) await new Promise((ok) => res.once('drain', ok));
  }
}

beforeAll(async () => {
  upstream = await startTestServer((req, res) => {
    if (req.path === '/big.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      void (async () => {
        await write(res, answer.subarray(0, TOTAL - HELD_BACK));
        const until = Date.now() + HANG_MS;
        while (!partStored() && Date.now() < until) await new Promise((ok) => setTimeout(ok, 50));
        partSeenBeforeEnd = partStored();
        await write(res, answer.subarray(TOTAL - HELD_BACK));
        res.end();
      })();
    } else if (req.path === '/digest') {
      echoed = { bytes: req.raw.length, sha256: sha(req.raw), content_type: String(req.headers['content-type']) };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(echoed));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  rt = await startE2eRuntime();
});
afterAll(async () => {
  await rt?.cleanup();
  await upstream?.close();
});

/** Fetches the big answer, then sends it on as the raw body of a second http node. */
const bigAnswer = (): PipelineDefinition => ({
  nodes: {
    big: { type: 'http', url: `${upstream.origin}/big.png`, timeout_ms: 30_000 },
    digest: { type: 'http', method: 'POST', url: `${upstream.origin}/digest`, inputs: ['big'], body_asset: 'big', timeout_ms: 30_000 },
    sent: { type: 'transform', inputs: ['digest'], expression: 'digest.sha256' },
    image: { type: 'output', from: 'big' },
    sent_sha256: { type: 'output', from: 'sent' },
  },
});

describe(`a 10 MB binary answer (${e2eMode()})`, () => {
  it('goes to storage as it arrives; the output link serves exactly those bytes, and body_asset sends them on', async () => {
    // Prepare
    const p = await rt.publishPipeline('big-answer', bigAnswer());

    // Act
    const r = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, { workflow_input: {} });
    expect(r.status).toBe(202);
    const id = r.body.execution_id as string;
    await rt.waitForExecution(id, p.apiKey);
    const result = (await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, p.apiKey)).body as {
      status: string;
      error_message: string | null;
      response_data: { image: { value: string; media_type: string; bytes: number }; sent_sha256: { value: string } };
    };
    const served = await fetch(result.response_data.image.value);
    const bytes = Buffer.from(await served.arrayBuffer());

    // Assess
    expect({ status: result.status, error: result.error_message }).toEqual({ status: 'completed', error: null });
    expect(partSeenBeforeEnd).toBe(true);
    expect(result.response_data.image).toMatchObject({ media_type: 'image/png', bytes: TOTAL });
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(bytes.length).toBe(TOTAL);
    expect(bytes.equals(answer)).toBe(true);
    expect(echoed).toEqual({ bytes: TOTAL, sha256: sha(answer), content_type: 'image/png' });
    expect(result.response_data.sent_sha256.value).toBe(sha(answer));
    // Nothing of the upload is left behind once it completed.
    expect(partStored()).toBe(false);
  });

  it("goes to storage under an owner's run too (p/<pipeline>/r/<run>/), and the run's output link serves exactly those bytes", async () => {
    // Prepare
    partSeenBeforeEnd = undefined;
    echoed = undefined;
    expect((await rt.owner('PUT', '/v1/pipelines/big-answer-run', bigAnswer())).status).toBe(201);

    // Act
    const started = await rt.owner<{ run_id: string }>('POST', '/v1/pipelines/big-answer-run/runs', { inputs: {} });
    const run = await waitUntil(
      () =>
        rt.owner<{
          status: string;
          error_message: string | null;
          outputs: Record<string, unknown>;
          output_assets: Record<string, { value: string; media_type: string; bytes: number }> | null;
        }>('GET', `/v1/pipelines/big-answer-run/runs/${started.body.run_id}`),
      (r) => ['completed', 'failed', 'cancelled'].includes(r.body.status),
      HANG_MS,
      250,
    );
    const image = run.body.output_assets?.image;
    const served = await fetch(image?.value ?? '');
    const bytes = Buffer.from(await served.arrayBuffer());

    // Assess
    expect(started.status).toBe(202);
    expect({ status: run.body.status, error: run.body.error_message }).toEqual({ status: 'completed', error: null });
    expect(partSeenBeforeEnd).toBe(true);
    expect(image).toMatchObject({ media_type: 'image/png', bytes: TOTAL });
    expect(served.status).toBe(200);
    expect(bytes.equals(answer)).toBe(true);
    expect(echoed).toEqual({ bytes: TOTAL, sha256: sha(answer), content_type: 'image/png' });
    expect(run.body.outputs.sent_sha256).toBe(sha(answer));
    expect(partStored()).toBe(false);
  });
});
