/**
 * Jobs by poll over real HTTP: examples/render-job.json against the example image job service
 * (examples/servers/image-jobs.mjs, its own process), published and executed by a caller. The
 * waits are real: the service takes as long as it is asked, and the execution waits in the
 * state machine between polls. One job lasts three minutes; it starts before the first test
 * and runs beside all of them, so the file takes about as long as that job. The service's
 * default time-out is 20 s here: a pipeline's own `timeout_ms` is what bounds its executions.
 */
import { createHash } from 'node:crypto';
import { isTerminalStatus } from '../../functions/core/transitions';
import { startCallbackReceiver, startImageJobs, pngSize, renderJob, type CallbackReceiver, type ImageJobs } from '../support/image-jobs';
import { openSse } from '../support/sse';
import { sleep, startE2eRuntime, waitUntil, type E2eRuntime, type Published } from '../support/runtime';

const THREE_MINUTES_S = 180;
/** For a hang only: the long job's three minutes, its last Retry-After (up to a minute) and a loaded machine. */
const LONG_JOB_LIMIT_MS = 420_000;
jest.setTimeout(120_000);

let rt: E2eRuntime;
let jobs: ImageJobs;
/** A second service that asks to be polled every second (Retry-After: 1). */
let eager: ImageJobs;
let render: Published;
let receiver: CallbackReceiver;
let long: { id: string; accepted: number };

type Inputs = Record<string, string | number>;
const workflowInput = (inputs: Inputs) => Object.fromEntries(Object.entries(inputs).map(([k, value]) => [k, { value, value_type: 'RAW' }]));

async function submit(to: Published, inputs: Inputs, callback?: string): Promise<string> {
  const r = await rt.caller('POST', `/v1/deployments/${to.deploymentId}/executions/`, to.apiKey, {
    workflow_input: workflowInput(inputs),
    ...(callback === undefined ? {} : { callback }),
  });
  if (r.status !== 202) throw new Error(`execution refused: ${r.status} ${r.text}`);
  return r.body.execution_id as string;
}
const statusOf = (to: Published, id: string) => rt.caller('GET', `/v1/deployments/executions/${id}/status/`, to.apiKey);
const resultOf = (to: Published, id: string) => rt.caller('GET', `/v1/deployments/executions/${id}/result/`, to.apiKey);
const finished = async (to: Published, id: string, limitMs = 90_000) => {
  await rt.waitForExecution(id, to.apiKey, undefined, limitMs);
  return (await resultOf(to, id)).body;
};

interface AssetValue {
  value: string;
  value_type: string;
  media_type: string;
  bytes: number;
}

beforeAll(async () => {
  [jobs, eager] = await Promise.all([startImageJobs(), startImageJobs({ RETRY_AFTER_MAX_S: '1' })]);
  // A service default of 20 s, swept every 2 s: the pipelines here set their own timeout_ms (an
  // hour), and that, not the default, must bound them.
  rt = await startE2eRuntime({
    env: { PIPEGATE_EXECUTION_TIMEOUT_MS: '20000', PIPEGATE_SWEEP_INTERVAL_SECONDS: '2', PIPEGATE_SWEEP_GRACE_SECONDS: '1' },
  });
  render = await rt.publishPipeline('render-job', renderJob(jobs.url));
  receiver = await startCallbackReceiver(render.signingSecret);
  long = { id: await submit(render, { prompt: 'a slow sunrise', seconds: THREE_MINUTES_S, size: 48 }), accepted: Date.now() };
}, 120_000);

afterAll(async () => {
  await rt?.cleanup();
  await Promise.all([jobs?.close(), eager?.close(), receiver?.close()]);
});

it('polls a job to its end: one submit keyed <execution>.render, waiting between polls, the PNG the service made as an asset, the signed callback', async () => {
  // Act
  const id = await submit(render, { prompt: 'a red kite', seconds: 4, size: 40 }, `${receiver.url}/render`);
  const key = `${id}.render`;
  // Submitted and polled once, not done yet: the execution runs, waiting for its next poll.
  const polledOnce = await waitUntil(
    async () => {
      const job = await jobs.jobOf(key);
      return { job, polls: job ? ((await jobs.stats()).polls[job.id] ?? 0) : 0, status: (await statusOf(render, id)).body.status };
    },
    (s) => s.polls >= 1 || isTerminalStatus(s.status),
    60_000,
  );
  const result = await finished(render, id);
  const picture = (result.response_data as Record<string, AssetValue>).picture;
  const served = await fetch(picture?.value ?? '');
  const bytes = Buffer.from(await served.arrayBuffer());
  const job = await jobs.jobOf(key);
  const stats = await jobs.stats();
  const stream = await openSse(`${rt.url}/v1/deployments/executions/${id}/events`, { 'x-api-key': render.apiKey });
  await stream.ended;
  const renderStates = stream.events.filter((e) => e.event === 'node' && e.data.node_id === 'render').map((e) => e.data.state);
  const callbacks = await waitUntil(
    async () => (await receiver.received()).filter((c) => c.body.includes(id)),
    (cs) => cs.length > 0,
    60_000,
  );
  const calledLink = (JSON.parse(callbacks[0]?.body ?? '{}') as { picture?: string[] }).picture?.[0] ?? '';
  const called = Buffer.from(await (await fetch(calledLink)).arrayBuffer());

  // Assess
  expect(polledOnce.job?.status).toMatch(/^(queued|running)$/);
  expect(polledOnce.status).toBe('running');
  expect(result).toMatchObject({ status: 'completed', error_message: null });
  expect(picture).toMatchObject({ value_type: 'ASSET', media_type: 'image/png', bytes: bytes.length });
  expect((result.response_data as Record<string, unknown>).picture_type).toEqual({ value: 'image/png', value_type: 'RAW' });
  expect(served.headers.get('content-type')).toBe('image/png');
  expect(pngSize(bytes)).toEqual({ width: 40, height: 40 });
  expect(createHash('sha256').update(bytes).digest('hex')).toBe(job?.output?.sha256);
  expect(stats.submits[key]).toBe(1);
  expect(renderStates[0]).toBe('started');
  expect(renderStates).toContain('waiting');
  expect(renderStates.at(-1)).toBe('finished');
  expect(callbacks[0]).toMatchObject({ path: '/render', status: 'completed', signature: 'valid' });
  expect(JSON.parse(callbacks[0]?.body ?? '{}')).toEqual({
    execution_id: id,
    picture: [expect.stringContaining('/v1/assets/')],
    picture_type: ['image/png'],
  });
  expect(createHash('sha256').update(called).digest('hex')).toBe(job?.output?.sha256);
});

it("fails the execution with the job's own words for the owner, and a safe reason for the caller", async () => {
  // Prepare: the example with a `fail` input it passes on (empty: the job succeeds).
  const failing = await rt.publishPipeline(
    'render-fails',
    renderJob(jobs.url, (d) => {
      d.nodes.fail = { type: 'input', value_type: 'string', value: '' };
      d.nodes.render.inputs = ['prompt', 'seconds', 'size', 'fail'];
      d.nodes.render.body = "$merge([{ 'prompt': prompt, 'seconds': seconds, 'size': size }, fail = '' ? {} : { 'fail': fail }])";
    }),
  );

  // Act
  const id = await submit(failing, { seconds: 1, fail: 'the render farm is out of credits' });
  const caller = await finished(failing, id);
  const owner = await rt.owner('GET', `/v1/pipelines/render-fails/executions/${id}`);

  // Assess
  expect(caller).toMatchObject({ status: 'failed', error_message: "Node 'render' failed: the job failed" });
  expect(owner.body).toMatchObject({
    status: 'failed',
    error_message: "Node 'render' failed: the job failed: the render farm is out of credits",
  });
  expect((await jobs.stats()).submits[`${id}.render`]).toBe(1);
});

it('fails the node naming poll.timeout_ms when the job outlasts it, after polling it', async () => {
  // Prepare
  const pushed = await rt.owner(
    'PUT',
    '/v1/pipelines/render-timeout',
    renderJob(eager.url, (d) => {
      d.nodes.render.poll.timeout_ms = 3000;
    }),
  );
  expect(pushed.status).toBe(201);

  // Act
  const run = await rt.runToEnd('render-timeout', { seconds: 60 });

  // Assess
  expect(run.status).toBe('failed');
  expect(run.error_message).toMatch(/^Node 'render' failed: the job did not finish within 3000 ms \(poll\.timeout_ms\), after \d+ polls?$/);
});

it('runs many jobs at once: a waiting execution holds nothing, so eight jobs run side by side', async () => {
  // Act
  const ids = await Promise.all(Array.from({ length: 8 }, (_, i) => submit(render, { prompt: `kite ${i}`, seconds: 15, size: 16 })));
  const together = await waitUntil(
    async () => (await Promise.all(ids.map((id) => jobs.jobOf(`${id}.render`)))).map((j) => j?.status ?? 'not submitted'),
    (states) => states.every((s) => s === 'running') || states.some((s) => s === 'succeeded'),
    60_000,
  );
  const results = await Promise.all(ids.map((id) => finished(render, id)));
  const stats = await jobs.stats();

  // Assess
  expect(together).toEqual(Array(8).fill('running'));
  expect(results.map((r) => r.status)).toEqual(Array(8).fill('completed'));
  for (const id of ids) expect(stats.submits[`${id}.render`]).toBe(1);
  expect(stats.max_running).toBeGreaterThanOrEqual(8);
});

it('stops polling at once when the caller cancels', async () => {
  // Prepare: a job polled every second.
  const often = await rt.publishPipeline('render-often', renderJob(eager.url));
  const id = await submit(often, { prompt: 'a patient heron', seconds: 60, size: 16 });
  const key = `${id}.render`;
  const pollsOf = async () => {
    const job = await eager.jobOf(key);
    return job ? ((await eager.stats()).polls[job.id] ?? 0) : 0;
  };
  await waitUntil(pollsOf, (n) => n >= 2, 60_000);

  // Act
  const cancelled = await rt.caller('POST', `/v1/deployments/executions/${id}/cancel`, often.apiKey);
  const status = (await statusOf(often, id)).body.status;
  // A poll already on its way when the cancel came may still arrive; none after it.
  await sleep(2000);
  const settled = await pollsOf();
  await sleep(5000);
  const later = await pollsOf();

  // Assess
  expect(cancelled.status).toBe(200);
  expect(status).toBe('cancelled');
  expect(later).toBe(settled);
  expect((await eager.stats()).submits[key]).toBe(1);
});

it(
  "polls a job of three minutes to its end, past the service's default time-out, as often as the service asks (Retry-After) and no more",
  async () => {
    // Act: submitted before the first test.
    const result = await finished(render, long.id, LONG_JOB_LIMIT_MS);
    const key = `${long.id}.render`;
    const job = await jobs.jobOf(key);
    const stats = await jobs.stats();
    const picture = (result.response_data as Record<string, AssetValue>).picture;
    const bytes = Buffer.from(await (await fetch(picture?.value ?? '')).arrayBuffer());

    // Assess
    expect(result).toMatchObject({ status: 'completed', error_message: null });
    expect(Date.now() - long.accepted).toBeGreaterThanOrEqual(THREE_MINUTES_S * 1000);
    expect(job?.status).toBe('succeeded');
    expect(pngSize(bytes)).toEqual({ width: 48, height: 48 });
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(job?.output?.sha256);
    expect(stats.submits[key]).toBe(1);
    // Retry-After gives the time the job still needs, at most a minute: the submit's poll, then
    // one a minute. Polling every_ms (2 s) for a minute and backing off after would be about 40.
    expect(stats.polls[job?.id ?? '']).toBeGreaterThanOrEqual(4);
    expect(stats.polls[job?.id ?? '']).toBeLessThanOrEqual(6);
  },
  LONG_JOB_LIMIT_MS + 30_000,
);
