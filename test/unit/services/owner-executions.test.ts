/**
 * The owner's view of a live API on in-memory stores: listing (newest first, status filter,
 * cursor), the execution view (hidden inputs, failed node, trace), cancel, redelivery and usage.
 */
import { packTrace, unpackTrace } from '../../../functions/core/trace-codec';
import { capTrace, previewOf, runPipelineTraced, TRACE_PREVIEW_CHARS } from '../../../functions/core/engine';
import type { HttpPort } from '../../../functions/core/ports';
import type { Execution, NodeTrace, PipelineDefinition } from '../../../functions/core/types';
import {
  addUsageAttribute,
  binOf,
  bucketOf,
  DURATION_BOUNDS_MS,
  summarize,
  usageAttributes,
  usageIncrement,
  type UsageBucket,
} from '../../../functions/core/usage';
import { execute } from '../../../functions/services/caller.service';
import { dispatchCallback } from '../../../functions/services/dispatch.service';
import { startRun } from '../../../functions/services/runs.service';
import { cancel, getExecution, listExecutions, redeliver, usage } from '../../../functions/services/owner-executions.service';
import { push } from '../../../functions/services/push.service';
import { taskRun, taskStart } from '../../../functions/services/tasks.service';
import { testDeps, type TestDeps } from '../../support/fakes';
import { publishPipeline } from '../../support/published';
import { memoryStores } from '../../support/memory-stores';

const BASE = 'https://api.example';

const shout: PipelineDefinition = {
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    secret_word: { type: 'input', value_type: 'string', value: 'sesame' },
    loud: { type: 'transform', inputs: ['name'], expression: '$uppercase(name)' },
    checked: { type: 'transform', inputs: ['loud', 'secret_word'], expression: "loud = 'BOOM' ? $error('no booms') : loud & secret_word" },
    message: { type: 'output', from: 'checked' },
  },
};

/** A live deployment of `shout` with `secret_word` hidden. */
const live = (d: TestDeps) =>
  publishPipeline(d, 'shout', {
    definition: shout,
    publishBody: JSON.stringify({ inputs: { secret_word: { visible: false } } }),
    base: BASE,
  });

async function submit(d: TestDeps, auth: Awaited<ReturnType<typeof live>>['auth'], name: string, callback?: string): Promise<string> {
  const body = JSON.stringify({ workflow_input: { name: { value: name, value_type: 'RAW' } }, ...(callback ? { callback } : {}) });
  const accepted = await execute(d, auth, {
    deploymentId: auth.deploymentId,
    body,
    contentType: 'application/json',
    idempotencyKey: undefined,
    baseUrl: BASE,
  });
  return (accepted.body as { execution_id: string }).execution_id;
}

async function runToEnd(d: TestDeps, id: string): Promise<void> {
  await taskStart(d, id);
  await taskRun(d, id);
}

describe("the owner's list of a live deployment's executions", () => {
  it('lists newest first, filters by status, and pages with the cursor it returns', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const { auth } = await live(d);
    const ids: string[] = [];
    for (const name of ['a', 'BOOM', 'c', 'BOOM', 'e']) {
      const id = await submit(d, auth, name);
      await runToEnd(d, id);
      ids.push(id);
    }
    // Act
    const all = await listExecutions(d, 'shout', {});
    const failed = await listExecutions(d, 'shout', { status: 'failed', limit: '1' });
    const next = await listExecutions(d, 'shout', { status: 'failed', limit: '1', cursor: failed.next_cursor ?? '' });
    // Assess
    expect(new Set(all.executions.map((e) => e.execution_id))).toEqual(new Set(ids));
    const created = all.executions.map((e) => e.created_at);
    expect(created).toEqual([...created].sort().reverse());
    expect(failed.executions).toHaveLength(1);
    expect(failed.executions[0]).toMatchObject({ status: 'failed', error_message: expect.stringContaining('no booms') });
    expect(next.executions).toHaveLength(1);
    expect(next.executions[0]?.execution_id).not.toBe(failed.executions[0]?.execution_id);
    expect(all.executions.every((e) => e.callback === null)).toBe(true);
  });

  it('refuses a bad status, limit, since or cursor with every problem, and 404s an unpublished pipeline', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    await live(d);
    await push(d, 'draft', JSON.stringify(shout));
    // Act
    const bad = listExecutions(d, 'shout', { status: 'done', limit: '0', since: 'yesterday' });
    const cursor = listExecutions(d, 'shout', { cursor: 'bm90LWEtY3Vyc29y' });
    // Assess
    await expect(bad).rejects.toMatchObject({ status: 400, detail: [{ path: 'limit' }, { path: 'status' }, { path: 'since' }] });
    await expect(cursor).rejects.toMatchObject({ status: 400, detail: [{ path: 'cursor' }] });
    await expect(listExecutions(d, 'draft', {})).rejects.toMatchObject({ status: 404, message: 'Deployment Not Found' });
    await expect(usage(d, 'nope')).rejects.toMatchObject({ status: 404, message: 'Pipeline Not Found' });
  });
});

describe("the owner's view of one execution", () => {
  it('marks hidden inputs, names the failed node with its reason, and traces every node', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const { auth } = await live(d);
    const id = await submit(d, auth, 'BOOM');
    await runToEnd(d, id);
    // Act
    const view = await getExecution(d, 'shout', id);
    // Assess
    expect(view.hidden_inputs).toEqual(['secret_word']);
    expect(view.failed_node).toMatchObject({ node: 'checked', type: 'transform', error: expect.stringContaining('no booms') });
    expect(view.trace?.map((t) => [t.node, t.outcome])).toEqual([
      ['name', 'completed'],
      ['secret_word', 'completed'],
      ['loud', 'completed'],
      ['checked', 'failed'],
      ['message', 'not_run'],
    ]);
    expect(view.trace?.find((t) => t.node === 'loud')?.preview).toBe('"BOOM"');
    await expect(getExecution(d, 'other', id)).rejects.toMatchObject({ status: 404 });
  });
});

describe('owner cancel', () => {
  it('cancels a pending API execution and a pending run, and refuses a finished one (409 with its status)', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const { auth } = await live(d);
    const id = await submit(d, auth, 'x');
    const run = await startRun(d, 'shout', null, BASE);
    const done = await submit(d, auth, 'y');
    await runToEnd(d, done);
    // Act
    const cancelled = await cancel(d, 'shout', id);
    const cancelledRun = await cancel(d, 'shout', run.run_id);
    // Assess
    expect(cancelled).toMatchObject({ status: 'cancelled', kind: 'api' });
    expect(cancelledRun).toMatchObject({ status: 'cancelled', kind: 'run', workflow: 'express' });
    // Both run on Express, which cannot be stopped: their next step stands down instead.
    expect(d.workflow.stopped).toEqual([]);
    await expect(cancel(d, 'shout', done)).rejects.toMatchObject({ status: 409, fields: { status: 'completed' } });
  });
});

describe('callback redelivery', () => {
  it('sends a settled callback again as one attempt with the same webhook id, and refuses while nothing is settled', async () => {
    // Prepare: a receiver that refuses every delivery; a one-retry schedule, so it dead-letters.
    const stores = memoryStores();
    let answer = 500;
    const seen: string[] = [];
    const http: HttpPort = async (req) => {
      if (req.url.startsWith('https://hooks.example/')) {
        seen.push(req.headers['webhook-id'] ?? '');
        return { status: answer, headers: {}, body: '' };
      }
      throw new Error('no network here');
    };
    const base = testDeps(stores);
    const d = testDeps(stores, { http, config: { ...base.config, callbackScheduleSeconds: [0] } });
    const { auth } = await live(d);
    const id = await submit(d, auth, 'x', 'https://hooks.example/done');
    const plain = await submit(d, auth, 'y');
    await runToEnd(d, plain);
    await expect(redeliver(d, 'shout', id)).rejects.toMatchObject({ status: 409, detail: expect.stringContaining('not finished') });
    await runToEnd(d, id);
    expect(await dispatchCallback(d, { execution_id: id })).toBe('retry');
    expect(await dispatchCallback(d, { execution_id: id })).toBe('dead_lettered');
    answer = 204;
    // Act
    const first = await redeliver(d, 'shout', id);
    const repeat = await redeliver(d, 'shout', id);
    const outcome = await dispatchCallback(d, { execution_id: id });
    // Assess
    expect(first.status).toBe(202);
    expect(repeat).toEqual(first);
    expect(outcome).toBe('delivered');
    expect(new Set(seen).size).toBe(1);
    expect(seen).toHaveLength(3);
    const view = await getExecution(d, 'shout', id);
    expect(view.callback_delivery).toMatchObject({ outcome: 'delivered', attempts: 3, redelivery: false });
    expect(view.callback_delivery?.log.map((a) => [a.status, a.redelivery])).toEqual([
      [500, false],
      [500, false],
      [204, true],
    ]);
    await expect(redeliver(d, 'shout', plain)).rejects.toMatchObject({
      status: 409,
      detail: expect.stringContaining('without a callback'),
    });
  });
});

describe('redeliver during the retry schedule', () => {
  it("brings the next attempt forward once, through the same claim; the schedule's own message then finds it taken", async () => {
    // Prepare: the first attempt fails; the next is an hour away.
    const stores = memoryStores();
    let answer = 500;
    const seen: string[] = [];
    const http: HttpPort = async (req) => {
      seen.push(req.headers['webhook-id'] ?? '');
      return { status: answer, headers: {}, body: '' };
    };
    const base = testDeps(stores);
    const d = testDeps(stores, { http, config: { ...base.config, callbackScheduleSeconds: [3600, 3600] } });
    const { auth } = await live(d);
    const id = await submit(d, auth, 'x', 'https://hooks.example/done');
    await runToEnd(d, id);
    expect(await dispatchCallback(d, { execution_id: id })).toBe('retry');
    const scheduled = d.queue.on('callbacks').at(-1);
    expect(scheduled?.delaySeconds).toBeGreaterThan(600);
    answer = 204;
    const sentBefore = d.queue.on('callbacks').length;

    // Act: the owner fixed the receiver and says "now", twice.
    const first = await redeliver(d, 'shout', id);
    const repeat = await redeliver(d, 'shout', id);
    const now = d.queue.on('callbacks').slice(sentBefore);
    const outcomes = [];
    for (const m of now) outcomes.push(await dispatchCallback(d, m.body as { execution_id: string }, Math.random, 'now-message'));
    // The schedule's message, an hour later.
    const late = await dispatchCallback(d, { execution_id: id }, Math.random, 'scheduled-message');

    // Assess
    expect(first.status).toBe(202);
    expect(Date.parse(String(first.body?.next_attempt_at))).toBeLessThanOrEqual(Date.now());
    expect(repeat.status).toBe(202);
    expect(now).toEqual([{ queue: 'callbacks', body: { execution_id: id }, delaySeconds: undefined }]);
    expect(outcomes).toEqual(['delivered']);
    expect(late).toBe('skipped');
    expect(seen).toHaveLength(2);
    const view = await getExecution(d, 'shout', id);
    expect(view.callback_delivery).toMatchObject({ outcome: 'delivered', attempts: 2, redelivery: false });
  });
});

describe('usage', () => {
  it('counts each finished API execution once, by status, with percentiles from the duration bins', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const { auth } = await live(d);
    for (const name of ['a', 'b', 'BOOM']) await runToEnd(d, await submit(d, auth, name));
    await cancel(d, 'shout', await submit(d, auth, 'c'));
    // Act
    const u = await usage(d, 'shout');
    // Assess: the owner's run that made the pipeline publishable is not an API execution.
    expect(u.last_hour).toMatchObject({ total: 4, by_status: { completed: 2, failed: 1, cancelled: 1 } });
    expect(u.last_day.total).toBe(4);
    expect(u.last_hour.p50_ms).not.toBeNull();
  });

  it('reads percentiles as the upper bound of the bin they fall in, and leaves out buckets before the window', () => {
    // Prepare
    const now = new Date('2026-11-22T12:00:00Z');
    const bins: Record<number, number> = {};
    for (const ms of [...Array<number>(90).fill(40), ...Array<number>(10).fill(3000)]) bins[binOf(ms)] = (bins[binOf(ms)] ?? 0) + 1;
    const old = { bucket: bucketOf(new Date(now.getTime() - 2 * 3600_000)), counts: { failed: 7 }, bins: { [binOf(999_999)]: 7 } };
    // Act
    const hour = summarize([{ bucket: bucketOf(now), counts: { completed: 100 }, bins }, old], new Date(now.getTime() - 3600_000), now);
    const empty = summarize([], now, now);
    // Assess
    expect(hour).toMatchObject({ total: 100, by_status: { completed: 100, failed: 0, cancelled: 0 }, p50_ms: 50, p95_ms: 5000 });
    expect(empty).toMatchObject({ total: 0, p50_ms: null, p95_ms: null });
    expect(binOf(999_999)).toBe(DURATION_BOUNDS_MS.length);
  });

  it("counts finished executions by where they came from: the REST API, the web form, MCP clients' calls", () => {
    // Prepare: the attributes each execution adds (as every store writes them), read back.
    const now = new Date('2026-11-22T12:00:00Z');
    const bucket: UsageBucket = { bucket: bucketOf(now), counts: {}, bins: {} };
    const finished = (source: Execution['source'], consumer: string | null) =>
      usageIncrement({
        execution_id: 'e',
        kind: 'api',
        pipeline_id: 'p',
        version: 1,
        deployment_id: 'd',
        consumer_id: consumer,
        status: 'completed',
        inputs: {},
        outputs: {},
        visible_outputs: [],
        ...(source === undefined ? {} : { source }),
        callback: null,
        callback_delivery: null,
        error_message: null,
        created_at: now.toISOString(),
        started_at: now.toISOString(),
        completed_at: now.toISOString(),
        expires_at: null,
      });
    for (const [source, consumer] of [
      ['mcp', 'c1'],
      ['mcp', null],
      ['form', null],
      [undefined, null],
    ] as const) {
      const inc = finished(source, consumer);
      if (inc) for (const name of usageAttributes(inc)) addUsageAttribute(bucket, name, 1);
    }
    // Act
    const window = summarize(
      [bucket, { bucket: bucketOf(now), counts: { completed: 3 }, bins: {} }],
      new Date(now.getTime() - 60_000),
      now,
    );
    // Assess: a bucket from before sources were counted adds to none; a consumer's counters are apart.
    expect(window.by_source).toEqual({ api: 1, form: 1, mcp: 2 });
    expect(window.total).toBe(7);
    expect(bucket.callers?.c1?.counts).toEqual({ completed: 1 });
  });
});

describe('the node trace', () => {
  it('never holds an owner secret or a credential, and caps previews', async () => {
    // Prepare: an upstream that echoes the bearer token it was sent, and a long value.
    const def: PipelineDefinition = {
      nodes: {
        q: { type: 'input', value_type: 'string', value: 'a word '.repeat(150) },
        call: {
          type: 'http',
          method: 'GET',
          url: 'https://api.example/echo',
          headers: { authorization: 'Bearer {{secrets.TOKEN}}' },
          inputs: ['q'],
        },
        text: { type: 'transform', inputs: ['call'], expression: '$string(call)' },
        out: { type: 'output', from: 'text' },
        long: { type: 'output', from: 'q' },
      },
    };
    const http: HttpPort = async (req) => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ echoed: req.headers.authorization, api_key: 'pgk_0123456789abcdef0123456789abcdef' }),
    });
    // Act
    const { result, trace } = await runPipelineTraced(
      def,
      {},
      { http, timeoutMs: 60_000, secrets: new Map([['TOKEN', 's3cr3t-value-!"\\']]) },
    );
    // Assess
    expect(result).toMatchObject({ status: 'completed' });
    const text = JSON.stringify(trace);
    expect(text).not.toContain('s3cr3t');
    expect(text).not.toContain('pgk_0123456789abcdef');
    const call = trace.find((t) => t.node === 'call');
    expect(call?.preview).toContain('[redacted]');
    expect(JSON.stringify(result)).not.toContain('s3cr3t');
    const q = trace.find((t) => t.node === 'q');
    expect(q?.preview?.length).toBe(TRACE_PREVIEW_CHARS + 1);
    expect(previewOf(undefined)).toBeNull();
  });

  it('fits a stored trace within its byte budget, previews first, and says so', () => {
    // Prepare
    const node = (i: number): NodeTrace => ({
      node: `n${i}`,
      type: 'transform',
      outcome: 'completed',
      started_at: null,
      completed_at: null,
      duration_ms: 1,
      error: 'e'.repeat(500),
      http_status: null,
      preview: 'p'.repeat(200),
    });
    const trace = Array.from({ length: 64 }, (_, i) => node(i));
    // Act
    const roomy = capTrace(trace, 1_000_000);
    const tight = capTrace(trace, 20_000);
    // Assess
    expect(roomy.truncated).toBe(false);
    expect(tight.truncated).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(tight.trace))).toBeLessThanOrEqual(20_000);
    expect(tight.trace.every((t) => t.preview === null)).toBe(true);
  });
});

describe('the stored trace', () => {
  it('round-trips through its compact form, which stays small', () => {
    // Prepare
    const trace: NodeTrace[] = [
      {
        node: 'name',
        type: 'input',
        outcome: 'completed',
        started_at: '2026-11-22T10:00:00.005Z',
        completed_at: '2026-11-22T10:00:00.005Z',
        duration_ms: 0,
        error: null,
        http_status: null,
        preview: '"Ada"',
      },
      {
        node: 'rates',
        type: 'http',
        outcome: 'failed',
        started_at: '2026-11-22T10:00:00.007Z',
        completed_at: '2026-11-22T10:00:00.049Z',
        duration_ms: 42,
        error: 'HTTP 502 from https://rates.example/: down',
        http_status: 502,
        preview: null,
      },
      {
        node: 'wait',
        type: 'delay',
        outcome: 'stopped',
        started_at: '2026-11-22T10:00:00.007Z',
        completed_at: null,
        duration_ms: null,
        error: null,
        http_status: null,
        preview: null,
      },
      {
        node: 'out',
        type: 'output',
        outcome: 'not_run',
        started_at: null,
        completed_at: null,
        duration_ms: null,
        error: null,
        http_status: null,
        preview: null,
      },
    ];
    // Act
    const packed = packTrace(trace);
    // Assess
    expect(unpackTrace(packed)).toEqual(trace);
    expect(packed.length).toBeLessThan(JSON.stringify(trace).length / 3);
    expect(unpackTrace(trace)).toEqual(trace);
    expect([unpackTrace(null), unpackTrace('not json'), unpackTrace('{"n":[]}')]).toEqual([null, null, null]);
    expect(unpackTrace(packTrace([]))).toEqual([]);
  });
});
