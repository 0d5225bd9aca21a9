/**
 * Live progress (server-sent events) on a started local runtime, read over real HTTP with
 * eventsource-parser. A gate server the test controls holds the pipeline's http node, so the
 * execution stays running exactly until the test lets it go: events that arrive before the
 * release prove they are sent while the execution runs, not all at the end. Run again against
 * `npm run start:synth` by test/e2e/synth/events.test.ts (the template's streaming integration).
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PipelineDefinition } from '../../functions/core/types';
import { sleep, startE2eRuntime, waitUntil, type E2eRuntime, type Published } from '../support/runtime';
import { runCli } from '../support/cli';
import { openSse, type Received } from '../support/sse';

let rt: E2eRuntime;
let gated: Published;
let hidden: Published;
let gate: Server;
const held: ServerResponse[] = [];

const gateUrl = (path = '/') => `http://127.0.0.1:${(gate.address() as AddressInfo).port}${path}`;
const answer = (res: ServerResponse) => {
  res.setHeader('content-type', 'application/json');
  res.end('{"word":"done"}');
};
const release = () => held.splice(0).forEach(answer);
let hold = false;
let failing = false;

const def = (url: string): PipelineDefinition => ({
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'x' },
    secret_in: { type: 'input', value_type: 'string', value: 'hush' },
    call: { type: 'http', url, inputs: ['name', 'secret_in'], timeout_ms: 30_000 },
    word: { type: 'transform', inputs: ['call'], expression: 'call.word' },
    out: { type: 'output', from: 'word' },
    secret_out: { type: 'output', from: 'secret_in' },
  },
});

beforeAll(async () => {
  gate = createServer((req, res) => {
    if (failing) {
      res.statusCode = 500;
      res.end('{}');
    } else if (hold) held.push(res);
    else answer(res);
  });
  await new Promise<void>((r) => gate.listen(0, '127.0.0.1', () => r()));
  rt = await startE2eRuntime({ env: { ...process.env, PIPEGATE_CANCEL_POLL_MS: '50' } });
  gated = await rt.publishPipeline('gated', def(gateUrl()));
  hidden = await rt.publishPipeline('hidden', def(gateUrl()), {
    inputs: { secret_in: { visible: false } },
    outputs: { secret_out: { visible: false } },
  });
});

afterEach(() => {
  hold = false;
  failing = false;
  release();
});

afterAll(async () => {
  release();
  await rt?.cleanup();
  gate?.closeAllConnections();
  await new Promise((r) => gate?.close(r));
});

const eventsUrl = (id: string) => `${rt.url}/v1/deployments/executions/${id}/events/`;
const submit = (p: Published) => rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {});

async function heldExecution(p: Published): Promise<string> {
  hold = true;
  const before = held.length;
  const accepted = await submit(p);
  expect(accepted.status).toBe(202);
  await waitUntil(
    async () => held.length,
    (n) => n > before,
  );
  return accepted.body.execution_id as string;
}

const names = (evs: Received[]) =>
  evs.map((e) =>
    e.event === 'node'
      ? `node:${String(e.data.node_id)}:${String(e.data.state)}`
      : e.event === 'status'
        ? `status:${String(e.data.status)}`
        : `${e.event}`,
  );
const hasDone = (evs: Received[]) => evs.some((e) => e.event === 'done');

describe('GET …/executions/{id}/events', () => {
  it('streams statuses and nodes while the execution runs, then its outputs and done (= the result body)', async () => {
    const id = await heldExecution(gated);
    const sse = await openSse(eventsUrl(id), { 'x-api-key': gated.apiKey });
    expect(sse.status).toBe(200);
    expect(sse.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await sse.waitFor((evs) => names(evs).includes('node:call:started'));
    await sleep(100);
    const releasedAt = Date.now();
    release();
    await sse.waitFor(hasDone);
    await sse.ended;

    expect(sse.retry).toBeGreaterThan(0);
    const seen = names(sse.events);
    expect(seen.slice(0, 2)).toEqual(['status:pending', 'status:running']);
    expect(seen).toEqual(
      expect.arrayContaining([
        'node:name:started',
        'node:name:finished',
        'node:call:started',
        'node:call:finished',
        'node:word:finished',
        'node:out:finished',
      ]),
    );
    expect(seen.slice(seen.indexOf('status:completed'))).toEqual(['status:completed', 'output', 'output', 'done']);
    expect(seen.indexOf('node:call:finished')).toBeGreaterThan(seen.indexOf('node:call:started'));
    // Ids order the events: 1, 2, 3, …
    expect(sse.events.map((e) => e.id)).toEqual(sse.events.map((_e, i) => String(i + 1)));
    // Timestamps: the call's start arrived while the node was held; its finish after the release.
    const at = (n: string) => sse.events[seen.indexOf(n)]?.at ?? NaN;
    expect(at('node:call:started')).toBeLessThan(releasedAt);
    expect(at('node:call:finished')).toBeGreaterThanOrEqual(releasedAt);
    const callDone = sse.events[seen.indexOf('node:call:finished')]?.data;
    expect(callDone).toMatchObject({ node_id: 'call', type: 'http', state: 'finished' });
    expect(typeof callDone?.duration_ms).toBe('number');
    // Ids, types and timings only: no values in node events.
    for (const e of sse.events.filter((x) => x.event === 'node'))
      expect(Object.keys(e.data).sort()).toEqual(expect.arrayContaining(['at', 'node_id', 'state', 'type']));
    expect(sse.events.filter((e) => e.event === 'output').map((e) => e.data)).toEqual([
      { output: 'out', value: 'done', value_type: 'RAW' },
      { output: 'secret_out', value: 'hush', value_type: 'RAW' },
    ]);

    const result = await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, gated.apiKey);
    expect(sse.events.at(-1)?.data).toEqual(result.body);
  });

  it('replays a finished execution at once and resumes after Last-Event-ID without repeats', async () => {
    const accepted = await submit(gated);
    const id = accepted.body.execution_id as string;
    await rt.waitForExecution(id, gated.apiKey);
    const all = await openSse(eventsUrl(id), { 'x-api-key': gated.apiKey });
    await all.ended;
    expect(names(all.events).at(-1)).toBe('done');
    for (const k of [1, 4, all.events.length - 1, all.events.length]) {
      const rest = await openSse(eventsUrl(id), { 'x-api-key': gated.apiKey, 'last-event-id': String(k) });
      await rest.ended;
      expect(rest.events.map((e) => [e.id, e.event])).toEqual(all.events.slice(k).map((e) => [e.id, e.event]));
    }
  });

  it('a reader that reconnects mid-run with Last-Event-ID misses nothing and sees nothing twice', async () => {
    const id = await heldExecution(gated);
    const first = await openSse(eventsUrl(id), { 'x-api-key': gated.apiKey });
    await first.waitFor((evs) => names(evs).includes('node:call:started'));
    first.close();
    const last = first.events.at(-1)?.id ?? '0';
    release();
    const second = await openSse(eventsUrl(id), { 'x-api-key': gated.apiKey, 'last-event-id': last });
    await second.ended;
    const joined = [...first.events, ...second.events];
    const replay = await openSse(eventsUrl(id), { 'x-api-key': gated.apiKey });
    await replay.ended;
    expect(joined.map((e) => [e.id, e.event, e.data.node_id])).toEqual(replay.events.map((e) => [e.id, e.event, e.data.node_id]));
  });

  it('a cancel ends the stream with done holding the cancelled status', async () => {
    const id = await heldExecution(gated);
    const sse = await openSse(eventsUrl(id), { 'x-api-key': gated.apiKey });
    await sse.waitFor((evs) => names(evs).includes('node:call:started'));
    expect((await rt.caller('POST', `/v1/deployments/executions/${id}/cancel/`, gated.apiKey)).status).toBe(200);
    await sse.ended;
    expect(names(sse.events).slice(-2)).toEqual(['status:cancelled', 'done']);
    expect(sse.events.at(-1)?.data).toMatchObject({ status: 'cancelled', response_data: {} });
  });

  it('a failure ends the stream with the failed node and done holding the failed status', async () => {
    failing = true;
    const target = gated;
    const r = await submit(target);
    expect(r.status).toBe(202);
    const id = r.body.execution_id as string;
    const sse = await openSse(eventsUrl(id), { 'x-api-key': target.apiKey });
    await sse.ended;
    expect(names(sse.events)).toContain('node:call:failed');
    expect(names(sse.events).slice(-2)).toEqual(['status:failed', 'done']);
    const result = await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, target.apiKey);
    expect(sse.events.at(-1)?.data).toEqual(result.body);
    expect(result.body.status).toBe('failed');
  });

  it('hidden inputs and outputs never appear', async () => {
    const r = await submit(hidden);
    const id = r.body.execution_id as string;
    const sse = await openSse(eventsUrl(id), { 'x-api-key': hidden.apiKey });
    await sse.ended;
    const text = JSON.stringify(sse.events);
    expect(text).not.toContain('secret_in');
    expect(text).not.toContain('secret_out');
    expect(text).not.toContain('hush');
    expect(names(sse.events)).toEqual(expect.arrayContaining(['node:name:finished', 'node:out:finished', 'output', 'done']));
  });

  it('with node detail off: node events carry only {done, total}; a republish keeps the choice until changed', async () => {
    const counted = await rt.publishPipeline('counted', def(gateUrl()), { events: { node_detail: false } });
    const view = await rt.owner('GET', '/v1/pipelines/counted/deployment');
    expect((view.body.deployment as Record<string, unknown>).events).toEqual({ node_detail: false });
    const id = (await submit(counted)).body.execution_id as string;
    const sse = await openSse(eventsUrl(id), { 'x-api-key': counted.apiKey });
    await sse.ended;
    const nodes = sse.events.filter((e) => e.event === 'node').map((e) => e.data);
    expect(nodes).toEqual([1, 2, 3, 4, 5, 6].map((done) => ({ done, total: 6 })));
    expect(names(sse.events).at(-1)).toBe('done');

    expect((await rt.owner('PUT', '/v1/pipelines/counted/deployment', {})).body.events).toEqual({ node_detail: false });
    expect((await rt.owner('PUT', '/v1/pipelines/counted/deployment', { events: { node_detail: 'no' } })).status).toBe(400);
    expect((await rt.owner('PUT', '/v1/pipelines/counted/deployment', { events: { node_detail: true } })).body.events).toEqual({
      node_detail: true,
    });
    const again = await openSse(eventsUrl(id), { 'x-api-key': counted.apiKey });
    await again.ended;
    expect(names(again.events)).toContain('node:call:finished');
  });

  it("answers 401 without a key, 404 for an unknown execution or another deployment's", async () => {
    const r = await submit(gated);
    const id = r.body.execution_id as string;
    expect((await rt.caller('GET', `/v1/deployments/executions/${id}/events/`, null)).status).toBe(401);
    const unknown = await rt.caller('GET', `/v1/deployments/executions/00000000-0000-4000-8000-000000000000/events/`, gated.apiKey);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: 'Execution Not Found' });
    expect((await rt.caller('GET', `/v1/deployments/executions/${id}/events/`, hidden.apiKey)).status).toBe(404);
  });
});

describe('pipegate execute --follow', () => {
  it('prints each node as it finishes, while the execution runs, then the result', async () => {
    // Prepare: the http node is held until the CLI has printed the input node's line.
    hold = true;
    let releasedOnLine = false;
    // Act
    const run = await runCli(['execute', gated.deploymentId, '--key', gated.apiKey, '--follow', '--timeout', '60'], {
      cwd: process.cwd(),
      env: { PIPEGATE_URL: rt.url, NO_COLOR: '1' },
      onStderr: (err) => {
        if (!releasedOnLine && /✓ name input/.test(err) && held.length > 0) {
          releasedOnLine = true;
          hold = false;
          release();
        }
      },
    });
    // Assess
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(releasedOnLine).toBe(true);
    const lines = run.stderr.split('\n').filter((l) => /^\s+[✓✗] /.test(l));
    expect(lines.map((l) => l.trim().split(' ').slice(0, 3).join(' '))).toEqual(
      expect.arrayContaining(['✓ name input', '✓ call http', '✓ word transform', '✓ out output']),
    );
    // Not a terminal: no spinner frames.
    expect(run.stderr).not.toMatch(/⠋|\r/);
    expect(run.stdout).toContain('done');
  });
});

describe('an owner run as events', () => {
  it('streams every node (hidden ones too, for the owner) and done holding the run as GET run shows it', async () => {
    hold = true;
    const before = held.length;
    const started = await rt.owner('POST', '/v1/pipelines/hidden/runs', {});
    expect(started.status).toBe(202);
    const runId = String(started.body.run_id);
    await waitUntil(
      async () => held.length,
      (n) => n > before,
    );
    const sse = await openSse(`${rt.url}/v1/pipelines/hidden/runs/${runId}/events`, { authorization: `Bearer ${rt.ownerToken}` });
    expect(sse.status).toBe(200);
    await sse.waitFor((evs) => names(evs).includes('node:call:started'));
    hold = false;
    release();
    await sse.ended;
    expect(names(sse.events)).toEqual(
      expect.arrayContaining(['node:secret_in:finished', 'node:secret_out:finished', 'status:completed', 'done']),
    );
    const run = await rt.owner('GET', `/v1/pipelines/hidden/runs/${runId}`);
    expect(sse.events.at(-1)?.data).toEqual(run.body);
    expect((await rt.owner('GET', `/v1/pipelines/gated/runs/${runId}/events`)).status).toBe(404);
    expect((await rt.caller('GET', `/v1/pipelines/hidden/runs/${runId}/events`, hidden.apiKey)).status).toBe(401);
  });

  it('pipegate run --follow prints each node as it finishes, then the outputs', async () => {
    const run = await runCli(['run', 'gated', '--follow', '--timeout', '60'], {
      cwd: process.cwd(),
      env: { PIPEGATE_URL: rt.url, PIPEGATE_OWNER_TOKEN: rt.ownerToken, NO_COLOR: '1' },
    });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.stringContaining('✓ call http') });
    expect(run.stderr).toContain('✓ secret_out output');
    expect(run.stdout).toContain('completed');
  });
});
