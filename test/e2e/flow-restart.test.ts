/**
 * A kill -9 in the middle of a map, then a restart on the same data dir: the map goes on with its
 * unfinished items only. The example image job service (a process of its own, living through
 * pipegate's restart) counts each item's submits by its Idempotency-Key and each job's polls:
 * every item is submitted exactly once in all, the items finished before the kill are never
 * polled again, and the gallery holds every item's picture in item order. The same against
 * start:synth in test/e2e/synth/flow-restart.test.ts.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isTerminalStatus } from '../../functions/core/transitions';
import { startImageJobs, type ImageJobs } from '../support/image-jobs';
import { spawnRuntime, type RuntimeProcess } from '../support/process';
import { request, sleep, waitUntil, type Reply } from '../support/runtime';

jest.setTimeout(300_000);

/** Each wait here polls at most once a second: a restart is seconds of work on a loaded machine. */
const POLL_MS = 1000;
const ITEMS = 12;
const JOB_SECONDS = 6;

let dataDir: string;
let jobs: ImageJobs;
let runtime: RuntimeProcess;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'pipegate-flow-restart-'));
  jobs = await startImageJobs({ RETRY_AFTER_MAX_S: '1' });
  runtime = await spawnRuntime(dataDir);
});

afterAll(async () => {
  await runtime?.stop();
  await jobs?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const owner = (m: string, p: string, b?: unknown): Promise<Reply<Record<string, unknown>>> =>
  request(`${runtime.url}${p}`, m, b, { authorization: `Bearer ${runtime.ownerToken}` });
const caller = (key: string, m: string, p: string, b?: unknown): Promise<Reply<Record<string, unknown>>> =>
  request(`${runtime.url}${p}`, m, b, { 'x-api-key': key });

const definition = () => ({
  timeout_ms: 600_000,
  nodes: {
    n: { type: 'input', value_type: 'integer', value: 2 },
    seconds: { type: 'input', value_type: 'float', value: 0.5 },
    renders: {
      type: 'map',
      inputs: ['n', 'seconds'],
      items: '[1..n]',
      concurrency: 4,
      node: {
        type: 'http',
        method: 'POST',
        url: `${jobs.url}/v1/jobs`,
        headers: { accept: 'image/png, application/json' },
        body: "{'prompt': 'restart ' & $string(index), 'seconds': seconds, 'size': 16}",
        poll: { url: 'url', every_ms: 1000, done: "status in ['succeeded', 'failed']", failed: "status = 'failed'", error: 'error' },
      },
    },
    gallery: { type: 'output', from: 'renders' },
  },
});

async function publish(id: string) {
  expect((await owner('PUT', `/v1/pipelines/${id}`, definition())).status).toBe(201);
  const run = await owner('POST', `/v1/pipelines/${id}/runs`, {});
  await waitUntil(
    () => owner('GET', `/v1/pipelines/${id}/runs/${String(run.body.run_id)}`),
    (r) => r.body.status === 'completed',
    120_000,
    POLL_MS,
  );
  const pub = await owner('PUT', `/v1/pipelines/${id}/deployment`, {});
  expect(pub.status).toBe(201);
  return { dep: pub.body.deployment_id as string, key: pub.body.api_key as string };
}

const keyOf = (id: string, i: number) => `${id}.renders.${i}`;
const submitted = async (id: string) => {
  const s = (await jobs.stats()).submits;
  return Array.from({ length: ITEMS }, (_, i) => s[keyOf(id, i)] ?? 0);
};

it('takes a map up after a kill -9 with its unfinished items only: each item submitted once in all, finished ones never polled again', async () => {
  // Prepare: four jobs of six seconds at a time; the kill comes once the second four are submitted
  // and nothing more is due for seconds (so no request is cut short: the point is what resumes).
  const { dep, key } = await publish('map-restart');
  const r = await caller(key, 'POST', `/v1/deployments/${dep}/executions/`, {
    workflow_input: { n: { value: ITEMS, value_type: 'RAW' }, seconds: { value: JOB_SECONDS, value_type: 'RAW' } },
  });
  expect(r.status).toBe(202);
  const id = r.body.execution_id as string;
  const eight = await waitUntil(
    () => submitted(id),
    (s) => s.filter((n) => n > 0).length >= 8,
    180_000,
    250,
  );
  await sleep(1500);
  const firstFour = await Promise.all([0, 1, 2, 3].map((i) => jobs.jobOf(keyOf(id, i))));
  const stats = await jobs.stats();
  const pollsBefore = firstFour.map((j) => stats.polls[j?.id ?? ''] ?? 0);

  // Act
  await runtime.kill9();
  runtime = await spawnRuntime(dataDir);
  await waitUntil(
    () => caller(key, 'GET', `/v1/deployments/executions/${id}/status/`),
    (s) => isTerminalStatus(s.body.status),
    240_000,
    POLL_MS,
  );
  const result = (await caller(key, 'GET', `/v1/deployments/executions/${id}/result/`)).body;
  const after = await jobs.stats();
  const made = await Promise.all(Array.from({ length: ITEMS }, (_, i) => jobs.jobOf(keyOf(id, i))));
  const links = (result.response_data as Record<string, { value: string[] }>).gallery?.value ?? [];
  const shas = await Promise.all(
    links.map(async (u) =>
      createHash('sha256')
        .update(Buffer.from(await (await fetch(u)).arrayBuffer()))
        .digest('hex'),
    ),
  );

  // Assess
  expect(eight.slice(0, 8)).toEqual(Array(8).fill(1));
  expect(firstFour.map((j) => j?.status)).toEqual(Array(4).fill('succeeded'));
  expect(result).toMatchObject({ status: 'completed', error_message: null });
  expect(await submitted(id)).toEqual(Array(ITEMS).fill(1));
  expect(firstFour.map((j) => after.polls[j?.id ?? ''] ?? 0)).toEqual(pollsBefore);
  expect(shas).toEqual(made.map((j) => j?.output?.sha256));
  expect(after.max_open).toBeLessThanOrEqual(4);
});
