/**
 * A kill -9 while an execution waits for an event, then a restart on the same data dir and
 * port: the resume URL still works, whoever posts to it (the job service's callback, retried
 * while pipegate was down, or a caller), the job is submitted once, and the execution ends
 * with the event as the node's value.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isTerminalStatus } from '../../functions/core/transitions';
import { startImageJobs, type ImageJobs } from '../support/image-jobs';
import { spawnRuntime, type RuntimeProcess } from '../support/process';
import { request, waitUntil, type Reply } from '../support/runtime';

jest.setTimeout(300_000);

/** Each wait here polls at most once a second: a restart is seconds of work on a loaded machine. */
const POLL_MS = 1000;

let dataDir: string;
let port: string;
let jobs: ImageJobs;
let runtime: RuntimeProcess;

async function freePort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: p } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return String(p);
}

/** The same port every time: the resume URLs the execution handed out name it. */
const start = () => spawnRuntime(dataDir, { PORT: port });

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'pipegate-wait-restart-'));
  port = await freePort();
  jobs = await startImageJobs();
  runtime = await start();
});

afterAll(async () => {
  await runtime?.stop();
  await jobs?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const owner = (m: string, p: string, b?: unknown): Promise<Reply<Record<string, unknown>>> =>
  request(`${runtime.url}${p}`, m, b, { authorization: `Bearer ${runtime.ownerToken}` });

interface Waiting {
  node_id: string;
  resume_url: string;
}

/** A run of `id` (pushed with `def`), once its view lists a wait (or it ended). */
async function runUntilWaiting(id: string, def: unknown, inputs: Record<string, unknown> = {}) {
  expect((await owner('PUT', `/v1/pipelines/${id}`, def)).status).toBe(201);
  const run = await owner('POST', `/v1/pipelines/${id}/runs`, { inputs });
  const runId = run.body.run_id as string;
  const view = await waitUntil(
    () => owner('GET', `/v1/pipelines/${id}/runs/${runId}`),
    (r) => Array.isArray(r.body.waiting) || isTerminalStatus(r.body.status),
    120_000,
    POLL_MS,
  );
  return { runId, waiting: (view.body.waiting as Waiting[] | undefined) ?? [] };
}

const finished = (id: string, runId: string) =>
  waitUntil(
    () => owner('GET', `/v1/pipelines/${id}/runs/${runId}`),
    (r) => isTerminalStatus(r.body.status),
    180_000,
    POLL_MS,
  ).then((r) => r.body);

it("lets a job's callback resume the execution after a kill -9: retried while pipegate was down, taken after the restart, one submit", async () => {
  // Prepare
  const { runId, waiting } = await runUntilWaiting('hooked', {
    timeout_ms: 600_000,
    nodes: {
      submit: {
        type: 'http',
        method: 'POST',
        url: `${jobs.url}/v1/jobs`,
        body: "{ 'prompt': 'a restart', 'seconds': 2, 'size': 8, 'callback_url': $resume_url('rendered') }",
      },
      rendered: { type: 'wait', inputs: ['submit'], timeout_ms: 600_000 },
      state: { type: 'transform', inputs: ['rendered'], expression: 'rendered.status' },
      out: { type: 'output', from: 'state' },
    },
  });
  expect(waiting.map((w) => w.node_id)).toEqual(['rendered']);
  const key = `${runId}.submit`;
  const job = await jobs.jobOf(key);

  // Act: down before the job ends; up again once its callback has failed at least once.
  await runtime.kill9();
  await waitUntil(
    async () => (await jobs.stats()).callbacks.filter((c) => c.job === job?.id && c.error !== undefined).length,
    (n) => n >= 1,
    120_000,
    POLL_MS,
  );
  runtime = await start();
  const run = await finished('hooked', runId);

  // Assess
  expect(run).toMatchObject({ status: 'completed', outputs: { out: 'succeeded' } });
  const stats = await jobs.stats();
  expect(stats.submits[key]).toBe(1);
  const attempts = stats.callbacks.filter((c) => c.job === job?.id);
  expect(attempts.at(-1)).toMatchObject({ status: 202 });
  expect(attempts.slice(0, -1).every((a) => a.error !== undefined)).toBe(true);
});

it('keeps a waiting execution through a kill -9: its resume URL, given before, works after the restart', async () => {
  // Prepare
  const { runId, waiting } = await runUntilWaiting('approve', {
    nodes: {
      name: { type: 'input', value_type: 'string', value: 'world' },
      approval: { type: 'wait', inputs: ['name'], timeout_ms: 600_000 },
      said: { type: 'transform', inputs: ['approval', 'name'], expression: "name & ': ' & approval.answer" },
      out: { type: 'output', from: 'said' },
    },
  });
  const url = waiting[0]?.resume_url ?? '';

  // Act
  await runtime.kill9();
  runtime = await start();
  const resumed = await request<Record<string, unknown>>(url, 'POST', { answer: 'after the restart' }, {});
  const run = await finished('approve', runId);
  const again = await request<Record<string, unknown>>(url, 'POST', { answer: 'twice' }, {});

  // Assess
  expect(url.startsWith(runtime.url)).toBe(true);
  expect(resumed.status).toBe(202);
  expect(run).toMatchObject({ status: 'completed', outputs: { out: 'world: after the restart' } });
  expect(again.status).toBe(409);
});
