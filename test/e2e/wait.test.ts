/**
 * Callers that wait instead of polling (`Prefer: wait=N`, RFC 7240) and the `Retry-After` poll
 * hint, on a started local runtime. The pipeline calls a gate server the test controls, so an
 * execution stays running exactly until the test lets it finish.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { InProcessCompletions } from '../../functions/adapters/completions';
import { request, startTestRuntime, waitUntil, type Published, type TestRuntime } from '../support/runtime';
import { gatedDef } from '../support/scenarios';

let rt: TestRuntime;
let gated: Published;
let gate: Server;
let open = true;
const held: ServerResponse[] = [];

const gateUrl = () => `http://127.0.0.1:${(gate.address() as AddressInfo).port}/`;
const answer = (res: ServerResponse) => {
  res.setHeader('content-type', 'application/json');
  res.end('{"word":"done"}');
};
const release = () => held.splice(0).forEach(answer);

beforeAll(async () => {
  gate = createServer((_req, res) => (open ? answer(res) : held.push(res)));
  await new Promise<void>((r) => gate.listen(0, '127.0.0.1', () => r()));
  const url = gateUrl();
  rt = await startTestRuntime({ env: { ...process.env, PIPEGATE_CANCEL_POLL_MS: '50' } });
  const def = gatedDef(url);
  gated = await rt.publishPipeline('gated', def);
});

afterEach(() => {
  release();
  open = true;
});

afterAll(async () => {
  release();
  await rt?.cleanup();
  gate?.closeAllConnections();
  await new Promise((r) => gate?.close(r));
});

const completions = () => rt.deps.completions as InProcessCompletions;
const submit = (headers: Record<string, string> = {}) =>
  rt.caller('POST', `/v1/deployments/${gated.deploymentId}/executions/`, gated.apiKey, {}, headers);
const statusOf = (id: string, headers: Record<string, string> = {}) =>
  rt.caller('GET', `/v1/deployments/executions/${id}/status/`, gated.apiKey, undefined, headers);
const resultOf = (id: string, headers: Record<string, string> = {}) =>
  rt.caller('GET', `/v1/deployments/executions/${id}/result/`, gated.apiKey, undefined, headers);

/** An execution held running at the gate. */
async function heldExecution(): Promise<string> {
  open = false;
  const before = held.length;
  const accepted = await submit();
  expect(accepted.status).toBe(202);
  await waitUntil(
    async () => held.length,
    (n) => n > before,
  );
  return accepted.body.execution_id as string;
}

describe('Prefer: wait', () => {
  it('POST answers 200 with the result and its URLs when the execution finishes within the wait', async () => {
    const r = await submit({ prefer: 'wait=20' });
    expect(r.status).toBe(200);
    expect(r.headers.get('preference-applied')).toBe('wait=20');
    expect(r.body).toMatchObject({
      status: 'completed',
      deployment_id: gated.deploymentId,
      response_data: { out: { value: 'done', value_type: 'RAW' } },
      output_artifacts: [],
      error_message: null,
    });
    const id = r.body.execution_id as string;
    expect(r.body.status_url).toMatch(new RegExp(`/v1/deployments/executions/${id}/status/$`));
    expect(r.body.result_url).toMatch(new RegExp(`/v1/deployments/executions/${id}/result/$`));
    expect(r.headers.get('location')).toBe(r.body.status_url);
  });

  it('changes nothing without the header', async () => {
    const r = await submit();
    expect(r.status).toBe(202);
    expect(r.body.status).toBe('queued');
    expect(r.headers.get('preference-applied')).toBeNull();
  });

  it('gives the usual answers, with a poll hint, when the wait runs out', async () => {
    open = false;
    const posted = await submit({ prefer: 'wait=1' });
    expect(posted.status).toBe(202);
    expect(posted.headers.get('preference-applied')).toBe('wait=1');
    const id = posted.body.execution_id as string;

    const s = await statusOf(id, { prefer: 'wait=1' });
    expect(s.status).toBe(200);
    expect(['pending', 'running']).toContain(s.body.status);
    expect(s.headers.get('preference-applied')).toBe('wait=1');
    expect(s.headers.get('retry-after')).toBe('1');

    const r = await resultOf(id, { prefer: 'wait=1' });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ error: 'Execution not completed' });
    expect(r.headers.get('preference-applied')).toBe('wait=1');
    expect(r.headers.get('retry-after')).toBe('1');
    expect(completions().watched).toBe(0);
  });

  it('wakes many waiters on one execution when it completes', async () => {
    const id = await heldExecution();
    // Each wait asks for longer than this test may take: only the completion can end them.
    const waiting = [
      ...Array.from({ length: 20 }, () => resultOf(id, { prefer: 'wait=60' })),
      ...Array.from({ length: 5 }, () => statusOf(id, { prefer: 'wait=60' })),
    ];
    await waitUntil(
      async () => completions().watched,
      (n) => n === 1,
    );
    release();
    const answers = await Promise.all(waiting);
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(a.body.status).toBe('completed');
      expect(a.headers.get('preference-applied')).toBe('wait=60');
      expect(a.headers.get('retry-after')).toBeNull();
    }
    expect(answers[0]?.body.response_data).toEqual({ out: { value: 'done', value_type: 'RAW' } });
    expect(completions().watched).toBe(0);
  });

  it('is cut short by a cancel', async () => {
    const id = await heldExecution();
    const waiting = resultOf(id, { prefer: 'wait=60' });
    await waitUntil(
      async () => completions().watched,
      (n) => n === 1,
    );
    const cancelled = await rt.caller('POST', `/v1/deployments/executions/${id}/cancel/`, gated.apiKey);
    expect(cancelled.status).toBe(200);
    const r = await waiting;
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'cancelled', response_data: {} });
    expect(completions().watched).toBe(0);
  });

  it('answers at once, as without the header, for values it cannot use', async () => {
    const id = await heldExecution();
    for (const prefer of ['wait', 'wait=', 'wait=abc', 'wait=-1', 'wait=1.5', 'wait=0', 'wait="x"', 'respond-async', 'wait=999999999999']) {
      const r = await resultOf(id, { prefer });
      expect({ prefer, status: r.status, applied: r.headers.get('preference-applied') }).toEqual({ prefer, status: 409, applied: null });
      expect(r.headers.get('retry-after')).toBe('1');
    }
  });

  it('shortens a wait longer than the maximum and says so', async () => {
    const r = await submit({ prefer: 'respond-async, wait=100000' });
    expect(r.status).toBe(200);
    expect(r.headers.get('preference-applied')).toBe(`wait=${rt.deps.config.maxWaitSeconds}`);
    expect(rt.deps.config.maxWaitSeconds).toBe(60);
  });
});

describe('Retry-After', () => {
  it('hints at a poll interval on open status and 409 result answers, not on finished ones', async () => {
    const id = await heldExecution();
    const s = await statusOf(id);
    expect(s.headers.get('retry-after')).toBe('1');
    expect(s.headers.get('preference-applied')).toBeNull();
    expect((await resultOf(id)).headers.get('retry-after')).toBe('1');
    release();
    await rt.waitForExecution(id, gated.apiKey);
    expect((await statusOf(id)).headers.get('retry-after')).toBeNull();
    const done = await resultOf(id);
    expect(done.status).toBe(200);
    expect(done.headers.get('retry-after')).toBeNull();
  });
});

describe('Prefer: wait on runs, and a publish while the first run is going', () => {
  const owner = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    request<Record<string, unknown>>(`${rt.url}${path}`, method, body, { authorization: `Bearer ${rt.ownerToken}`, ...headers });

  it('POST …/runs answers 200 with the finished run within the wait, so the publish that follows cannot race', async () => {
    await owner('PUT', '/v1/pipelines/gated-run', gatedDef(gateUrl()));
    const r = await owner('POST', '/v1/pipelines/gated-run/runs', {}, { prefer: 'wait=20' });
    expect(r.status).toBe(200);
    expect(r.headers.get('preference-applied')).toBe('wait=20');
    expect(r.body).toMatchObject({ pipeline_id: 'gated-run', status: 'completed', outputs: { out: 'done' } });
    expect(r.headers.get('location')).toMatch(new RegExp(`/v1/pipelines/gated-run/runs/${String(r.body.run_id)}$`));
    expect((await owner('PUT', '/v1/pipelines/gated-run/deployment', {})).status).toBe(201);
  });

  it('a publish before any run has finished says the run is still going and how to wait for it', async () => {
    await owner('PUT', '/v1/pipelines/gated-first', gatedDef(gateUrl()));
    open = false;
    const before = held.length;
    const started = await owner('POST', '/v1/pipelines/gated-first/runs', {});
    expect(started.status).toBe(202);
    expect(started.headers.get('preference-applied')).toBeNull();
    await waitUntil(
      async () => held.length,
      (n) => n > before,
    );
    const runId = String(started.body.run_id);

    const refused = await owner('PUT', '/v1/pipelines/gated-first/deployment', {});
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      error: 'To deploy the workflow, there must be at least one successful execution.',
      latest_run: { run_id: runId, status: 'running', version: 1 },
    });
    expect(String(refused.body.detail)).toMatch(
      new RegExp(`run ${runId} is still running.*GET /v1/pipelines/gated-first/runs/${runId} with the header "Prefer: wait=60"`),
    );

    // The wait it names: answers as soon as the run finishes.
    const waiting = owner('GET', `/v1/pipelines/gated-first/runs/${runId}`, undefined, { prefer: 'wait=20' });
    release();
    const done = await waiting;
    expect(done.status).toBe(200);
    expect(done.body.status).toBe('completed');
    expect(done.headers.get('preference-applied')).toBe('wait=20');
    expect((await owner('PUT', '/v1/pipelines/gated-first/deployment', {})).status).toBe(201);
  });

  it('a wait that runs out answers the usual 202 with a poll hint', async () => {
    await owner('PUT', '/v1/pipelines/gated-slow', gatedDef(gateUrl()));
    open = false;
    const r = await owner('POST', '/v1/pipelines/gated-slow/runs', {}, { prefer: 'wait=1' });
    expect(r.status).toBe(202);
    expect(r.body.status).toBe('pending');
    expect(r.headers.get('preference-applied')).toBe('wait=1');
    expect(r.headers.get('retry-after')).toBe('1');
  });
});
