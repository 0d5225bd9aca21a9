/**
 * Wait nodes over real HTTP (functions/core/nodes/wait.ts, POST /v1/resume/{token}): a job of the
 * example image job service (examples/servers/image-jobs.mjs, its own process) that calls back
 * through `$resume_url` instead of being polled, a fast webhook that comes before the node waits,
 * a visible wait a caller resumes (status, result, `Prefer: wait` and the event stream carrying
 * its URL), cancel while waiting, time-outs with and without `on_timeout`, and every refusal of
 * the resume route. The waits are real: the state machine sleeps, nothing is scaled.
 */
import { isTerminalStatus } from '../../functions/core/transitions';
import type { PipelineDefinition } from '../../functions/core/types';
import { startImageJobs, type ImageJobs } from '../support/image-jobs';
import { openSse } from '../support/sse';
import { request, startE2eRuntime, waitUntil, type E2eRuntime, type Published } from '../support/runtime';

jest.setTimeout(180_000);

let rt: E2eRuntime;
let jobs: ImageJobs;
let approval: Published;
let hook: Published;

interface Waiting {
  node_id: string;
  resume_url: string;
  expires_at: string;
}

/** A job that calls back: its submit hands the service the `rendered` wait node's resume URL. */
const callbackJob = (jobsUrl: string, extra: Record<string, unknown> = {}): PipelineDefinition =>
  ({
    timeout_ms: 600_000,
    nodes: {
      prompt: { type: 'input', value_type: 'string', value: 'a heron' },
      seconds: { type: 'input', value_type: 'float', value: 1 },
      submit: {
        type: 'http',
        method: 'POST',
        url: `${jobsUrl}/v1/jobs`,
        inputs: ['prompt', 'seconds'],
        body: "{ 'prompt': prompt, 'seconds': seconds, 'size': 16, 'callback_url': $resume_url('rendered') }",
      },
      rendered: { type: 'wait', inputs: ['submit'], timeout_ms: 600_000 },
      state: { type: 'transform', inputs: ['rendered'], expression: 'rendered.status' },
      sha: { type: 'transform', inputs: ['rendered'], expression: 'rendered.output.sha256' },
      job_status: { type: 'output', from: 'state' },
      image_sha: { type: 'output', from: 'sha' },
      ...extra,
    },
  }) as unknown as PipelineDefinition;

/** A person's approval: a visible wait with fields, after a short delay. */
const approvalPipeline = (wait: Record<string, unknown> = {}): PipelineDefinition =>
  ({
    timeout_ms: 600_000,
    nodes: {
      name: { type: 'input', value_type: 'string', value: 'world' },
      approval: {
        type: 'wait',
        inputs: ['name'],
        timeout_ms: 600_000,
        label: 'Approve the greeting',
        fields: { approved: { value_type: 'boolean' }, note: { value_type: 'string' } },
        ...wait,
      },
      verdict: {
        type: 'transform',
        inputs: ['approval', 'name'],
        expression: "name & ': ' & (approval.approved ? 'yes' : 'no') & ' (' & approval.note & ')'",
      },
      out: { type: 'output', from: 'verdict' },
    },
  }) as unknown as PipelineDefinition;

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  request<Record<string, unknown>>(url, 'POST', body, headers);

/** An owner's run of `id`, resumed by the owner through the run view's waiting list until it ends. */
async function ownerRunResumed(id: string, event: Record<string, unknown>): Promise<Record<string, unknown>> {
  const started = await rt.owner('POST', `/v1/pipelines/${id}/runs`, {});
  const runId = started.body.run_id as string;
  const path = `/v1/pipelines/${id}/runs/${runId}`;
  const waiting = await waitUntil(
    () => rt.owner('GET', path),
    (r) => Array.isArray(r.body.waiting) || isTerminalStatus(r.body.status),
  );
  const url = (waiting.body.waiting as Waiting[] | undefined)?.[0]?.resume_url;
  if (url === undefined) throw new Error(`the run did not wait: ${waiting.text}`);
  expect((await post(url, event)).status).toBe(202);
  return (
    await waitUntil(
      () => rt.owner('GET', path),
      (r) => isTerminalStatus(r.body.status),
    )
  ).body;
}

async function publishWithRun(
  id: string,
  def: PipelineDefinition,
  event: Record<string, unknown>,
  visibility: unknown = {},
): Promise<Published> {
  expect((await rt.owner('PUT', `/v1/pipelines/${id}`, def)).status).toBe(201);
  expect(await ownerRunResumed(id, event)).toMatchObject({ status: 'completed' });
  const pub = await rt.owner('PUT', `/v1/pipelines/${id}/deployment`, visibility);
  expect(pub.status).toBe(201);
  return {
    deploymentId: pub.body.deployment_id as string,
    apiKey: pub.body.api_key as string,
    signingSecret: pub.body.signing_secret as string,
    body: pub.body,
  };
}

async function submit(to: Published, workflowInput: Record<string, unknown> = {}): Promise<string> {
  const r = await rt.caller('POST', `/v1/deployments/${to.deploymentId}/executions/`, to.apiKey, { workflow_input: workflowInput });
  expect(r.status).toBe(202);
  return r.body.execution_id as string;
}

const statusOf = (to: Published, id: string, headers: Record<string, string> = {}) =>
  rt.caller('GET', `/v1/deployments/executions/${id}/status/`, to.apiKey, undefined, headers);

/** The caller's status once the execution waits (its waiting list there). */
const waitingStatus = (to: Published, id: string) =>
  waitUntil(
    () => statusOf(to, id),
    (r) => Array.isArray(r.body.waiting) || isTerminalStatus(r.body.status),
  );

beforeAll(async () => {
  jobs = await startImageJobs();
  rt = await startE2eRuntime();
  approval = await publishWithRun('approval', approvalPipeline(), { approved: true, note: 'owner' });
  hook = await rt.publishPipeline('callback-job', callbackJob(jobs.url), { waits: { rendered: { visible: false } } });
}, 180_000);

afterAll(async () => {
  await rt?.cleanup();
  await jobs?.close();
});

describe('a job that calls back through $resume_url', () => {
  it('submits once, waits with nothing polling, and goes on with the finished job the service posted', async () => {
    const id = await submit(hook, { seconds: { value: 2, value_type: 'RAW' } });
    await rt.waitForExecution(id, hook.apiKey);
    const result = (await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, hook.apiKey)).body;
    const job = await jobs.jobOf(`${id}.submit`);
    const stats = await jobs.stats();

    expect(result).toMatchObject({
      status: 'completed',
      response_data: { job_status: { value: 'succeeded' }, image_sha: { value: job?.output?.sha256 } },
    });
    expect(stats.submits[`${id}.submit`]).toBe(1);
    // Nobody polled it: the service called back once, and the resume took it (202).
    expect(stats.polls[job?.id ?? '']).toBeUndefined();
    expect(stats.callbacks.filter((c) => c.job === job?.id)).toEqual([{ job: job?.id, attempt: 1, status: 202 }]);
  });

  it('keeps a callback that comes before the node waits (a fast webhook), and the node takes it at once', async () => {
    const fast = await rt.publishPipeline(
      'fast-hook',
      callbackJob(jobs.url, {
        // The job of 0 s calls back while the execution still sleeps in the delay before the wait.
        later: { type: 'delay', inputs: ['submit'], ms: 3000 },
        rendered: { type: 'wait', inputs: ['later'], timeout_ms: 600_000 },
      }),
    );
    const id = await submit(fast, { seconds: { value: 0, value_type: 'RAW' } });
    const job = await waitUntil(
      () => jobs.jobOf(`${id}.submit`),
      (j) => j !== undefined,
    );
    const callback = await waitUntil(
      async () => (await jobs.stats()).callbacks.find((c) => c.job === job?.id),
      (c) => c !== undefined,
    );
    const whenCalledBack = await statusOf(fast, id);
    await rt.waitForExecution(id, fast.apiKey);
    const result = (await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, fast.apiKey)).body;

    expect(callback?.status).toBe(202);
    expect(whenCalledBack.body).toMatchObject({ status: 'running' });
    expect(whenCalledBack.body.waiting).toBeUndefined();
    expect(result).toMatchObject({ status: 'completed', response_data: { job_status: { value: 'succeeded' } } });
  });

  it("hides a wait the owner published hidden: the caller's views never show its URL, the owner's do", async () => {
    const id = await submit(hook, { seconds: { value: 3, value_type: 'RAW' } });
    // The owner sees the wait once the node waits...
    const owner = await waitUntil(
      () => rt.owner('GET', `/v1/pipelines/callback-job/executions/${id}`),
      (r) => Array.isArray(r.body.waiting) || isTerminalStatus(r.body.status),
    );
    // ... and at that moment the caller does not.
    const caller = await statusOf(hook, id);
    const contract = await rt.caller('GET', `/v1/deployments/${hook.deploymentId}/`, hook.apiKey);
    await rt.waitForExecution(id, hook.apiKey);

    expect(owner.body.waiting).toEqual([
      { node_id: 'rendered', resume_url: expect.stringContaining('/v1/resume/'), expires_at: expect.any(String) },
    ]);
    expect(caller.body).toMatchObject({ status: 'running' });
    expect(caller.body.waiting).toBeUndefined();
    expect(contract.body.waits).toEqual([]);
  });
});

describe('a visible wait a caller resumes', () => {
  it('shows its URL in the status, the 409 result, a waited answer and the event stream; the POST needs no key; the result follows', async () => {
    const id = await submit(approval, { name: { value: 'Ada', value_type: 'RAW' } });
    const events = await openSse(`${rt.url}/v1/deployments/executions/${id}/events/`, { 'x-api-key': approval.apiKey });
    const status = await waitingStatus(approval, id);
    const waiting = status.body.waiting as Waiting[];
    const url = waiting[0]?.resume_url ?? '';
    const early = await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, approval.apiKey);
    // A waited status answers at once: the next move is the caller's.
    const asked = Date.now();
    const waited = await statusOf(approval, id, { prefer: 'wait=20' });
    const waitedMs = Date.now() - asked;
    await events.waitFor((es) => es.some((e) => e.event === 'waiting'));
    const contract = await rt.caller('GET', `/v1/deployments/${approval.deploymentId}/`, approval.apiKey);

    const resumed = await post(url, { approved: true, note: 'looks right' });
    await rt.waitForExecution(id, approval.apiKey);
    const result = (await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, approval.apiKey)).body;
    await events.ended;

    expect(waiting).toEqual([
      {
        node_id: 'approval',
        resume_url: expect.stringMatching(new RegExp(`^${rt.url}/v1/resume/w1\\.${id}\\.approval\\.`)),
        expires_at: expect.any(String),
      },
    ]);
    expect(Date.parse(waiting[0]?.expires_at ?? '')).toBeGreaterThan(Date.now() + 500_000);
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ error: 'Execution not completed', status: 'running', waiting });
    expect([waited.body.waiting, waited.headers.get('preference-applied')]).toEqual([waiting, 'wait=20']);
    expect(waitedMs).toBeLessThan(20_000);
    expect(events.events.find((e) => e.event === 'waiting')?.data).toEqual({ waiting });
    expect(contract.body.waits).toEqual([
      {
        id: 'approval',
        timeout_ms: 600_000,
        label: 'Approve the greeting',
        fields: { approved: { value_type: 'boolean' }, note: { value_type: 'string' } },
      },
    ]);
    expect(resumed).toMatchObject({ status: 202, body: { status: 'resumed', execution_id: id, node_id: 'approval' } });
    expect(result).toMatchObject({ status: 'completed', response_data: { out: { value: 'Ada: yes (looks right)' } } });
    expect(events.events.at(-1)?.event).toBe('done');
  });

  it('answers 409 to a second resume, 404 to a token that never was, 400, 413 and 415 to bodies it cannot take', async () => {
    const id = await submit(approval);
    const url = ((await waitingStatus(approval, id)).body.waiting as Waiting[])[0]?.resume_url ?? '';
    const tampered = `${url.slice(0, -2)}${url.endsWith('AA') ? 'BB' : 'AA'}`;
    const unknown = await post(tampered, { approved: true, note: '' });
    const notObject = await post(url, [true]);
    const wrongFields = await post(url, { approved: 'yes' });
    const tooBig = await post(url, { approved: true, note: 'x'.repeat(300_000) });
    const notJson = await post(url, 'approved=yes', { 'content-type': 'application/x-www-form-urlencoded' });
    const first = await post(url, { approved: false, note: 'no' });
    const second = await post(url, { approved: true, note: 'changed my mind' });
    await rt.waitForExecution(id, approval.apiKey);
    const result = (await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, approval.apiKey)).body;

    expect([unknown.status, unknown.body.error]).toEqual([404, 'Resume URL Not Found']);
    expect([notObject.status, notObject.body.detail]).toEqual([
      400,
      [{ path: '(body)', reason: 'the body must be a JSON object, got an array' }],
    ]);
    expect([wrongFields.status, wrongFields.body.detail]).toEqual([
      400,
      [
        { path: 'approved', reason: 'must be true or false, got a string' },
        { path: 'note', reason: 'is required' },
      ],
    ]);
    expect(tooBig.status).toBe(413);
    expect(String(tooBig.body.detail)).toContain('262144 bytes (256 KiB)');
    expect(notJson.status).toBe(415);
    expect(first.status).toBe(202);
    expect([second.status, second.body.error]).toEqual([409, 'Resume URL Already Used']);
    expect(result).toMatchObject({ status: 'completed', response_data: { out: { value: 'world: no (no)' } } });
  });

  it('ends at once when cancelled while waiting, and the URL answers 410 after', async () => {
    const id = await submit(approval);
    const url = ((await waitingStatus(approval, id)).body.waiting as Waiting[])[0]?.resume_url ?? '';
    const cancelled = await rt.caller('POST', `/v1/deployments/executions/${id}/cancel/`, approval.apiKey);
    const gone = await post(url, { approved: true, note: '' });

    expect(cancelled.body).toMatchObject({ status: 'cancelled' });
    expect((await statusOf(approval, id)).body).toMatchObject({ status: 'cancelled' });
    expect((await statusOf(approval, id)).body.waiting).toBeUndefined();
    expect([gone.status, gone.body.error, gone.body.status]).toEqual([410, 'Resume URL Gone', 'cancelled']);
  });
});

describe('a wait that times out', () => {
  it('fails naming the time-out, and the URL answers 410', async () => {
    const p = await publishWithRun('short-wait', approvalPipeline({ timeout_ms: 2000 }), { approved: true, note: '' });
    const id = await submit(p);
    const url = ((await waitingStatus(p, id)).body.waiting as Waiting[])[0]?.resume_url ?? '';
    await rt.waitForExecution(id, p.apiKey);
    const result = (await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, p.apiKey)).body;
    const owner = (await rt.owner('GET', `/v1/pipelines/short-wait/executions/${id}`)).body;
    const gone = await post(url, { approved: true, note: '' });

    expect(result).toMatchObject({ status: 'failed', error_message: "Node 'approval' failed: no event came before its time-out" });
    expect(owner.error_message).toBe("Node 'approval' failed: no event came to its resume URL within 2000 ms (timeout_ms)");
    expect(gone.status).toBe(410);
  });

  it('takes on_timeout.value instead when it gives one', async () => {
    const p = await publishWithRun(
      'default-wait',
      approvalPipeline({ timeout_ms: 2000, on_timeout: { value: { approved: false, note: 'no answer' } } }),
      { approved: true, note: '' },
    );
    const started = Date.now();
    const result = await rt.executeToEnd(p, {});
    expect(result).toMatchObject({ status: 'completed', response_data: { out: { value: 'world: no (no answer)' } } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
  });
});
