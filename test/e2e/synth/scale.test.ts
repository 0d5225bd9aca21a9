/**
 * start:synth under the scale model (PIPEGATE_SCALE): the stage's method throttle and each
 * function's reserved concurrency, from the template and times the factor, answered as AWS
 * answers them with the template's gateway responses: 429 and 503, each with Retry-After.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSynthRuntime, type SynthRuntime } from '../../../lib/synth/runtime';
import { greeting, request, waitUntil } from '../../support/runtime';
import { SYNTH_TIMEOUT_MS, testAssembly } from '../../support/synth';
import { reserving, withTemplate } from '../../synth/synth-helpers';

jest.setTimeout(60_000);

let rt: SynthRuntime;
let dataDir: string;
let deploymentId: string;
let apiKey: string;

const owner = (method: string, path: string, body?: unknown) =>
  request<Record<string, unknown>>(`${rt.url}${path}`, method, body, { authorization: `Bearer ${rt.ownerToken}` });
/** An owner call sent again while the stage throttles it, as a client honouring Retry-After would. */
async function ownerCall(method: string, path: string, body?: unknown) {
  for (;;) {
    const r = await owner(method, path, body);
    if (r.status !== 429) return r;
    await new Promise((res) => setTimeout(res, Number(r.headers.get('retry-after') ?? '1') * 1000));
  }
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'pipegate-synth-scale-'));
  // As deployed with `-c reservedConcurrency=900 -c maxAccountShare=100`: each function capped at its own share.
  const assembly = withTemplate(await testAssembly(), 'Pipegate', reserving(900, 100));
  rt = await startSynthRuntime({ port: 0, inMemory: true, log: false, dataDir, assembly, scale: 0.01 });
  await ownerCall('PUT', '/v1/pipelines/greeting', greeting);
  const run = await ownerCall('POST', '/v1/pipelines/greeting/runs', {});
  await waitUntil(
    () => ownerCall('GET', `/v1/pipelines/greeting/runs/${String(run.body.run_id)}`),
    (r) => r.body.status === 'completed',
    30_000,
    500,
  );
  const pub = await ownerCall('PUT', '/v1/pipelines/greeting/deployment', {});
  deploymentId = String(pub.body.deployment_id);
  apiKey = String(pub.body.api_key);
  // The owner routes' buckets are their own; the caller routes' start full.
}, SYNTH_TIMEOUT_MS);

afterAll(async () => {
  await rt?.stop({ drainMs: 0 });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const submit = () =>
  request<Record<string, unknown>>(`${rt.url}/v1/deployments/${deploymentId}/executions/`, 'POST', {}, { 'x-api-key': apiKey });

/** Polls an execution's status until it has finished (completed or failed), or `timeoutMs`. */
const finished = (id: string, timeoutMs: number) =>
  waitUntil(
    () => request<Record<string, unknown>>(`${rt.url}/v1/deployments/executions/${id}/status/`, 'GET', undefined, { 'x-api-key': apiKey }),
    (r) => r.body.status === 'completed' || r.body.status === 'failed',
    timeoutMs,
    1_100,
  );

it("answers past the stage's method throttle (100/s, burst 200 at 1/100: 1/s, burst 2) with THROTTLED: 429 and Retry-After", async () => {
  // Act: a burst of 5 to one method, none of which reaches a function.
  const answers = await Promise.all(
    Array.from({ length: 5 }, () =>
      request<Record<string, unknown>>(`${rt.url}/v1/deployments/executions/unknown/status/`, 'GET', undefined, {
        'x-api-key': 'pg_wrong',
      }),
    ),
  );

  // Assess
  const throttled = answers.filter((a) => a.status === 429);
  expect(throttled.length).toBeGreaterThanOrEqual(3);
  for (const a of throttled) {
    expect(a.headers.get('retry-after')).toBe('1');
    expect(a.body).toEqual({ error: 'Too Many Requests' });
  }
  expect(Object.values(rt.scale?.stats.stage ?? {}).reduce((x, y) => x + y, 0)).toBeGreaterThanOrEqual(3);
});

it('answers a call to a function at its reserved concurrency with INTEGRATION_FAILURE: 503 and Retry-After, and takes it once a slot is free', async () => {
  // Prepare: every slot of every function but the authorizer's taken, as a load would take them.
  await new Promise((res) => setTimeout(res, 2_000));
  const model = rt.scale;
  if (!model) throw new Error('no scale model');
  const held = [...rt.functions.keys()]
    .filter((name) => !/authorizer/i.test(name))
    .flatMap((name) => Array.from({ length: model.lambda.limitOf(name) }, () => model.lambda.acquire(name)));

  // Act
  const refused = await submit();
  for (const release of held) release?.();
  await new Promise((res) => setTimeout(res, 1_000));
  const taken = await submit();

  // Assess
  expect(refused.status).toBe(503);
  expect(refused.headers.get('retry-after')).toBe('1');
  expect(refused.body).toMatchObject({ error: 'Service Unavailable' });
  expect(taken.status).toBe(202);
  const id = String(taken.body.execution_id);
  const done = await finished(id, 30_000);
  expect(done.body.status).toBe('completed');
});

it("lets a workflow task throttled at its reservation be retried by the state machine's own Retry", async () => {
  // Prepare: task-run's slots all taken for 1.5 s, less than RunNodes' retries wait (1 s, then 2 s).
  await new Promise((res) => setTimeout(res, 2_000));
  const model = rt.scale;
  if (!model) throw new Error('no scale model');
  const taskRun = [...rt.functions.keys()].find((n) => /TaskRun/i.test(n)) ?? '';
  const held = Array.from({ length: model.lambda.limitOf(taskRun) }, () => model.lambda.acquire(taskRun));
  setTimeout(() => held.forEach((release) => release?.()), 1_500);
  const before = model.stats.lambda[taskRun] ?? 0;

  // Act
  const accepted = await submit();
  const id = String(accepted.body.execution_id);
  const done = await finished(id, 30_000);

  // Assess
  expect(accepted.status).toBe(202);
  expect(model.stats.lambda[taskRun] ?? 0).toBeGreaterThan(before);
  expect(done.body.status).toBe('completed');
});

it('completes an execution whose MarkRunning is throttled for 4 s, longer than two retries (1 s, 2 s) would wait', async () => {
  // Prepare: task-start's slots all taken for 4 s.
  await new Promise((res) => setTimeout(res, 2_000));
  const model = rt.scale;
  if (!model) throw new Error('no scale model');
  const taskStart = [...rt.functions.keys()].find((n) => /TaskStart/i.test(n)) ?? '';
  const held = Array.from({ length: model.lambda.limitOf(taskStart) }, () => model.lambda.acquire(taskStart));
  setTimeout(() => held.forEach((release) => release?.()), 4_000);
  const before = model.stats.lambda[taskStart] ?? 0;

  // Act
  const accepted = await submit();
  const id = String(accepted.body.execution_id);
  const done = await finished(id, 40_000);

  // Assess
  expect(model.stats.lambda[taskStart] ?? 0).toBeGreaterThanOrEqual(before + 3);
  expect(done.body.status).toBe('completed');
});

it("completes an execution whose StartExecution meets Step Functions' throttle for 1.5 s: the runner's retries wait it out", async () => {
  // Prepare: every StartExecution refused for 1.5 s, as an emptied account bucket refuses them.
  await new Promise((res) => setTimeout(res, 2_000));
  const model = rt.scale;
  if (!model) throw new Error('no scale model');
  const until = Date.now() + 1_500;
  let refused = 0;
  const admit = model.states.admit.bind(model.states);
  const spy = jest.spyOn(model.states, 'admit').mockImplementation((type) => {
    if (Date.now() >= until) return admit(type);
    refused += 1;
    return false;
  });

  // Act
  const accepted = await submit();
  const id = String(accepted.body.execution_id);
  const done = await finished(id, 40_000);
  spy.mockRestore();

  // Assess
  expect(accepted.status).toBe(202);
  expect(refused).toBeGreaterThan(0);
  expect(done.body.status).toBe('completed');
});
