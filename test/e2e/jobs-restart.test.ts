/**
 * A kill -9 in the middle of a job or a long delay, then a restart on the same data dir: the
 * execution goes on where it was. The job is submitted once (the example image job service, a
 * process of its own that lives through pipegate's restarts, counts submits by their
 * Idempotency-Key), its polls go on after the restart, and the result is the job's; a delay
 * ends when it was due, not a whole delay after the restart.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PipelineDefinition } from '../../functions/core/types';
import { isTerminalStatus } from '../../functions/core/transitions';
import { startCallbackReceiver, startImageJobs, pngSize, renderJob, type ImageJobs } from '../support/image-jobs';
import { spawnRuntime, type RuntimeProcess } from '../support/process';
import { request, waitUntil, type Reply } from '../support/runtime';

jest.setTimeout(300_000);

/** Each wait here polls at most once a second: a restart is seconds of work on a loaded machine. */
const POLL_MS = 1000;

let dataDir: string;
let jobs: ImageJobs;
let runtime: RuntimeProcess;
/** Servers a test started, stopped after the file whether it passed or not. */
const servers: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'pipegate-jobs-restart-'));
  jobs = await startImageJobs({ RETRY_AFTER_MAX_S: '2' });
  runtime = await spawnRuntime(dataDir);
});

afterAll(async () => {
  await runtime?.stop();
  await jobs?.close();
  await Promise.all(servers.map((s) => s.close()));
  rmSync(dataDir, { recursive: true, force: true });
});

const owner = (m: string, p: string, b?: unknown): Promise<Reply<Record<string, unknown>>> =>
  request(`${runtime.url}${p}`, m, b, { authorization: `Bearer ${runtime.ownerToken}` });
const caller = (key: string, m: string, p: string, b?: unknown): Promise<Reply<Record<string, unknown>>> =>
  request(`${runtime.url}${p}`, m, b, { 'x-api-key': key });

async function publish(id: string, def: PipelineDefinition) {
  expect((await owner('PUT', `/v1/pipelines/${id}`, def)).status).toBe(201);
  const run = await owner('POST', `/v1/pipelines/${id}/runs`, {});
  await waitUntil(
    () => owner('GET', `/v1/pipelines/${id}/runs/${String(run.body.run_id)}`),
    (r) => r.body.status === 'completed',
    120_000,
    POLL_MS,
  );
  const pub = await owner('PUT', `/v1/pipelines/${id}/deployment`, {});
  expect(pub.status).toBe(201);
  return { dep: pub.body.deployment_id as string, key: pub.body.api_key as string, secret: pub.body.signing_secret as string };
}

async function execute(p: { dep: string; key: string }, inputs: Record<string, string | number>, callback?: string) {
  const workflow_input = Object.fromEntries(Object.entries(inputs).map(([k, value]) => [k, { value, value_type: 'RAW' }]));
  const r = await caller(p.key, 'POST', `/v1/deployments/${p.dep}/executions/`, {
    workflow_input,
    ...(callback === undefined ? {} : { callback }),
  });
  expect(r.status).toBe(202);
  return r.body.execution_id as string;
}

async function resultOf(p: { key: string }, id: string, limitMs = 180_000) {
  await waitUntil(
    () => caller(p.key, 'GET', `/v1/deployments/executions/${id}/status/`),
    (r) => isTerminalStatus(r.body.status),
    limitMs,
    POLL_MS,
  );
  return (await caller(p.key, 'GET', `/v1/deployments/executions/${id}/result/`)).body;
}

/** Polls the job service answered for the job this key submitted. */
async function pollsOf(key: string): Promise<number> {
  const job = await jobs.jobOf(key);
  return job ? ((await jobs.stats()).polls[job.id] ?? 0) : 0;
}

async function restart(): Promise<number> {
  await runtime.kill9();
  runtime = await spawnRuntime(dataDir);
  return Date.now();
}

it('goes on polling a job after a kill -9: one submit, more polls after the restart, the picture the job made, its callback', async () => {
  // Prepare
  const render = await publish('render-job', renderJob(jobs.url));
  const receiver = await startCallbackReceiver(render.secret);
  servers.push(receiver);
  const id = await execute(render, { prompt: 'a lighthouse in a storm', seconds: 20, size: 24 }, `${receiver.url}/storm`);
  const key = `${id}.render`;
  const before = await waitUntil(
    () => pollsOf(key),
    (n) => n >= 2,
    120_000,
    POLL_MS,
  );

  // Act
  await restart();
  const result = await resultOf(render, id);
  const job = await jobs.jobOf(key);
  const bytes = Buffer.from(
    await (await fetch((result.response_data as Record<string, { value: string }>).picture?.value ?? '')).arrayBuffer(),
  );
  const callbacks = await waitUntil(
    () => receiver.received(),
    (cs) => cs.length > 0,
    60_000,
    POLL_MS,
  );

  // Assess
  expect(result).toMatchObject({ status: 'completed', error_message: null });
  expect((await jobs.stats()).submits[key]).toBe(1);
  expect(await pollsOf(key)).toBeGreaterThan(before);
  expect(job?.status).toBe('succeeded');
  expect(pngSize(bytes)).toEqual({ width: 24, height: 24 });
  expect(createHash('sha256').update(bytes).digest('hex')).toBe(job?.output?.sha256);
  expect(callbacks[0]).toMatchObject({ path: '/storm', status: 'completed', signature: 'valid' });
  expect(JSON.parse(callbacks[0]?.body ?? '{}')).toMatchObject({ execution_id: id, picture_type: ['image/png'] });
});

it('lives through a kill -9 at every other poll of one job: still one submit and the right result', async () => {
  // Prepare
  const render = await publish('render-often', renderJob(jobs.url));
  const id = await execute(render, { prompt: 'three storms', seconds: 60, size: 16 });
  const key = `${id}.render`;

  // Act: three restarts, each once the job was polled again since the last.
  let seen = await waitUntil(
    () => pollsOf(key),
    (n) => n >= 1,
    120_000,
    POLL_MS,
  );
  for (let i = 0; i < 3; i++) {
    const now = seen;
    seen = await waitUntil(
      () => pollsOf(key),
      (n) => n >= now + 1,
      120_000,
      POLL_MS,
    );
    await restart();
  }
  const result = await resultOf(render, id);

  // Assess
  expect(result).toMatchObject({ status: 'completed', error_message: null });
  expect((await jobs.stats()).submits[key]).toBe(1);
  expect((await jobs.jobOf(key))?.status).toBe('succeeded');
});

it('ends a long delay when it was due after a kill -9, not a whole delay after the restart', async () => {
  // Prepare: an owner's run, which goes through the same queue and state machine as a caller's.
  const DELAY_MS = 30_000;
  const pushed = await owner('PUT', '/v1/pipelines/slow', {
    nodes: {
      name: { type: 'input', value_type: 'string', value: 'later' },
      pause: { type: 'delay', inputs: ['name'], ms: DELAY_MS },
      out: { type: 'output', from: 'pause' },
    },
  });
  expect(pushed.status).toBe(201);
  const started = await owner('POST', '/v1/pipelines/slow/runs', {});
  const runId = started.body.run_id as string;
  const runOf = () => owner('GET', `/v1/pipelines/slow/runs/${runId}`);
  await waitUntil(runOf, (r) => r.body.status === 'running', 60_000, POLL_MS);
  // Well into the delay: a restart that began it again would end it past restarted + DELAY_MS.
  await new Promise((r) => setTimeout(r, 8000));

  // Act
  const restarted = await restart();
  const run = (await waitUntil(runOf, (r) => isTerminalStatus(r.body.status), 120_000, POLL_MS)).body;

  // Assess
  expect(run).toMatchObject({ status: 'completed', outputs: { out: 'later' } });
  const created = Date.parse(String(run.created_at));
  const completed = Date.parse(String(run.completed_at));
  expect(completed - created).toBeGreaterThanOrEqual(DELAY_MS);
  expect(completed).toBeLessThan(restarted + DELAY_MS);
});
