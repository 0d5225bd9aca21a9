/**
 * Checkpointed steps (functions/core/engine.ts runStep): what runs in a step, what is recorded,
 * what a later step reads instead of running again, jobs polled across steps, calls cut short
 * by a crash. The clock is the test's: a step is a call, the state machine's wait is moving it.
 */
import { MemoryJournal, runStep, type NodeRecord, type StepOptions, type StepResult } from '../../../functions/core/engine';
import { nextPollDelayMs } from '../../../functions/core/nodes/http';
import { validateDefinition } from '../../../functions/core/pipeline';
import type { HttpPort, HttpRequest, HttpResponse } from '../../../functions/core/ports';
import type { PipelineDefinition } from '../../../functions/core/types';

function definition(nodes: Record<string, unknown>, extra: Record<string, unknown> = {}): PipelineDefinition {
  const result = validateDefinition({ nodes, ...extra });
  if (!result.ok) throw new Error(`test definition is invalid: ${JSON.stringify(result.problems)}`);
  return result.definition;
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  status,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

/** An upstream answering by URL, recording every request. */
function upstream(answer: (req: HttpRequest, n: number) => HttpResponse | Promise<HttpResponse>) {
  const calls: HttpRequest[] = [];
  const port: HttpPort = async (req) => {
    calls.push(req);
    return answer(req, calls.length);
  };
  return { port, calls };
}

/** A world of one execution: its journal, a clock the test moves, and steps run one at a time. */
function world(def: PipelineDefinition, http: HttpPort, over: Partial<StepOptions> = {}) {
  let t = Date.parse('2026-11-27T10:00:00Z');
  const journal = new MemoryJournal();
  const startedAt = t;
  const step = async (): Promise<StepResult> =>
    (await runStep(def, {}, { http, timeoutMs: 86_400_000, startedAt, now: () => t, journal, executionId: 'e-1', ...over })).result;
  return {
    journal,
    step,
    advance: (ms: number) => {
      t += ms;
    },
    now: () => t,
    record: (id: string): NodeRecord | undefined => journal.nodes.get(id),
  };
}

const jobPipeline = (poll: Record<string, unknown> = {}, node: Record<string, unknown> = {}) =>
  definition({
    prompt: { type: 'input', value_type: 'string', value: 'a cat' },
    render: {
      type: 'http',
      method: 'POST',
      url: 'https://api.example/v1/jobs',
      inputs: ['prompt'],
      body: '{"prompt": prompt}',
      poll: {
        url: "'https://api.example/v1/jobs/' & id",
        every_ms: 5000,
        done: "status in ['succeeded', 'failed']",
        failed: "status = 'failed'",
        error: 'error',
        value: 'output',
        ...poll,
      },
      ...node,
    },
    image: { type: 'output', from: 'render' },
  });

describe('runStep', () => {
  it('runs a pipeline of pure nodes in one step and records nothing', async () => {
    const w = world(
      definition({
        name: { type: 'input', value_type: 'string', value: 'world' },
        greeting: { type: 'transform', inputs: ['name'], expression: "'Hello, ' & name" },
        message: { type: 'output', from: 'greeting' },
      }),
      upstream(() => json(500, {})).port,
    );
    expect(await w.step()).toEqual({ status: 'completed', outputs: { message: 'Hello, world' } });
    expect(w.journal.nodes.size).toBe(0);
  });

  it('waits for a long delay in the state machine, recording what it computed, and finishes after it', async () => {
    const up = upstream(() => json(200, { ok: true }));
    const w = world(
      definition({
        name: { type: 'input', value_type: 'string', value: 'world' },
        call: { type: 'http', url: 'https://api.example/ping', inputs: ['name'] },
        shout: { type: 'transform', inputs: ['name'], expression: '$uppercase(name)' },
        later: { type: 'delay', inputs: ['shout'], ms: 3_600_000 },
        out: { type: 'output', from: 'later' },
        okv: { type: 'transform', inputs: ['call'], expression: 'call.ok' },
        ok: { type: 'output', from: 'okv' },
      }),
      up.port,
    );
    const first = await w.step();
    expect(first).toMatchObject({ status: 'waiting', wake: w.now() + 3_600_000 });
    expect((first as { waiting: unknown[] }).waiting).toEqual([expect.objectContaining({ node: 'later', type: 'delay' })]);
    expect(w.record('later')).toMatchObject({ state: 'waiting', until: w.now() + 3_600_000 });
    expect(w.record('shout')).toMatchObject({ state: 'done', value: 'WORLD' });
    expect(w.record('call')).toMatchObject({ state: 'done' });
    // Early: still waiting, nothing called again.
    w.advance(1_000);
    expect(await w.step()).toMatchObject({ status: 'waiting', wake: w.now() + 3_599_000 });
    w.advance(3_599_000);
    expect(await w.step()).toEqual({ status: 'completed', outputs: { out: 'WORLD', ok: true } });
    expect(up.calls).toHaveLength(1);
  });

  it('never calls a finished node again: a later step reads its recorded value', async () => {
    const up = upstream(() => json(200, { n: 41 }));
    const w = world(
      definition({
        call: { type: 'http', method: 'POST', url: 'https://api.example/count' },
        wait: { type: 'delay', inputs: ['call'], ms: 5_000 },
        plus: { type: 'transform', inputs: ['wait'], expression: 'wait.n + 1' },
        out: { type: 'output', from: 'plus' },
      }),
      up.port,
    );
    expect((await w.step()).status).toBe('waiting');
    w.advance(5_000);
    expect(await w.step()).toEqual({ status: 'completed', outputs: { out: 42 } });
    expect(up.calls).toHaveLength(1);
  });

  it('sends Idempotency-Key <execution>.<node> on every call, and keeps one the node sets', async () => {
    const up = upstream(() => json(200, {}));
    const w = world(
      definition({
        a: { type: 'http', method: 'POST', url: 'https://api.example/a' },
        b: { type: 'http', method: 'POST', url: 'https://api.example/b', headers: { 'idempotency-key': 'mine' } },
        out: { type: 'output', from: 'a' },
        out2: { type: 'output', from: 'b' },
      }),
      up.port,
    );
    await w.step();
    const keyOf = (url: string) => up.calls.find((c) => c.url === url)?.headers;
    expect(keyOf('https://api.example/a')).toMatchObject({ 'Idempotency-Key': 'e-1.a' });
    expect(keyOf('https://api.example/b')).toEqual({ 'idempotency-key': 'mine' });
  });
});

describe('runStep: a call cut short by a crash', () => {
  const post = (node: Record<string, unknown> = {}) =>
    definition({
      call: { type: 'http', method: 'POST', url: 'https://api.example/charge', ...node },
      out: { type: 'output', from: 'call' },
    });

  it('claims a POST before calling it, and fails it naming the node when a crash left it unanswered', async () => {
    const up = upstream(() => json(200, 'paid'));
    const w = world(post(), up.port);
    // The step that crashed: its claim is there, its answer never recorded.
    await w.journal.save('call', { state: 'calling', rev: 1, started_at: w.now(), lease_until: w.now() + 40_000 }, undefined);
    // While the claim holds, another step leaves the node alone and waits for it.
    expect(await w.step()).toMatchObject({ status: 'waiting', wake: w.now() + 40_000 });
    w.advance(40_000);
    const failed = await w.step();
    expect(failed).toMatchObject({ status: 'failed' });
    expect((failed as { error_message: string }).error_message).toMatch(
      /^Node 'call' failed: it was interrupted in the middle of its call .*retry_interrupted/,
    );
    expect((failed as { caller_message: string }).caller_message).toBe("Node 'call' failed: it was interrupted in the middle of its call");
    expect(up.calls).toHaveLength(0);
  });

  it('calls again a POST that says retry_interrupted, and a PUT, with the same Idempotency-Key', async () => {
    for (const node of [{ retry_interrupted: true }, { method: 'PUT' }]) {
      const up = upstream(() => json(200, 'paid'));
      const w = world(post(node), up.port);
      await w.journal.save('call', { state: 'calling', rev: 1, started_at: w.now(), lease_until: w.now() }, undefined);
      expect(await w.step()).toEqual({ status: 'completed', outputs: { out: 'paid' } });
      expect(up.calls.map((c) => c.headers['Idempotency-Key'])).toEqual(['e-1.call']);
    }
  });

  it('records the claim of a POST first and its answer after: a repeat of the step finds it done', async () => {
    const up = upstream(() => json(200, 'paid'));
    const saves: string[] = [];
    const w = world(post(), up.port);
    const save = w.journal.save.bind(w.journal);
    w.journal.save = async (id, rec, prev) => {
      saves.push(`${id}:${rec.state}`);
      return save(id, rec, prev);
    };
    await w.step();
    expect(saves).toEqual(['call:calling', 'call:done']);
    expect(await w.step()).toEqual({ status: 'completed', outputs: { out: 'paid' } });
    expect(up.calls).toHaveLength(1);
  });

  it('leaves a node to the step that recorded it first', async () => {
    const up = upstream(() => json(200, 'x'));
    const w = world(post({ method: 'GET' }), up.port);
    w.journal.save = async () => false;
    expect(await w.step()).toEqual({ status: 'continue' });
  });
});

describe('runStep: jobs', () => {
  it('submits once, polls until the job is done, and takes the value the node names', async () => {
    const up = upstream((req, n) => {
      if (req.method === 'POST') return json(202, { id: 'j1', status: 'queued' });
      return json(200, n < 5 ? { id: 'j1', status: 'running' } : { id: 'j1', status: 'succeeded', output: 'https://cdn.example/cat.png' });
    });
    const w = world(jobPipeline(), up.port);
    // The submit, and a first poll at once (the job might be done already).
    const first = await w.step();
    expect(first).toMatchObject({ status: 'waiting', wake: w.now() + 5_000 });
    expect(w.record('render')).toMatchObject({ state: 'waiting', polls: 1, status: 'running' });
    for (let i = 0; i < 2; i++) {
      w.advance(5_000);
      expect((await w.step()).status).toBe('waiting');
    }
    w.advance(5_000);
    expect(await w.step()).toEqual({ status: 'completed', outputs: { image: 'https://cdn.example/cat.png' } });
    expect(up.calls.map((c) => `${c.method} ${c.url}`)).toEqual([
      'POST https://api.example/v1/jobs',
      'GET https://api.example/v1/jobs/j1',
      'GET https://api.example/v1/jobs/j1',
      'GET https://api.example/v1/jobs/j1',
      'GET https://api.example/v1/jobs/j1',
    ]);
    expect(new Set(up.calls.map((c) => c.headers['Idempotency-Key']))).toEqual(new Set(['e-1.render']));
  });

  it("fails the node with the job's own words when it says it failed", async () => {
    const up = upstream((req) =>
      req.method === 'POST' ? json(202, { id: 'j2' }) : json(200, { status: 'failed', error: 'GPU out of memory' }),
    );
    const r = await world(jobPipeline(), up.port).step();
    expect(r).toMatchObject({ status: 'failed', error_message: "Node 'render' failed: the job failed: GPU out of memory" });
    expect((r as { caller_message: string }).caller_message).toBe("Node 'render' failed: the job failed");
  });

  it('tries a poll answered 5xx or not at all again at the next interval, and fails on a 4xx', async () => {
    let pollAnswers: (HttpResponse | Error)[] = [json(503, {}), new Error('socket hang up'), json(200, { status: 'succeeded', output: 7 })];
    const up = upstream((req) => {
      if (req.method === 'POST') return json(202, { id: 'j3' });
      const next = pollAnswers.shift();
      if (next instanceof Error) throw next;
      return next ?? json(500, {});
    });
    const w = world(jobPipeline(), up.port);
    expect((await w.step()).status).toBe('waiting');
    w.advance(5_000);
    expect((await w.step()).status).toBe('waiting');
    w.advance(5_000);
    expect(await w.step()).toEqual({ status: 'completed', outputs: { image: 7 } });

    pollAnswers = [json(404, { message: 'no such job' })];
    const r = await world(jobPipeline(), up.port).step();
    expect(r).toMatchObject({ status: 'failed', caller_message: "Node 'render' failed: upstream answered 404" });
  });

  it('honours a Retry-After on a poll answer within its bounds', async () => {
    const up = upstream((req) =>
      req.method === 'POST' ? json(202, { id: 'j4' }) : json(200, { status: 'running' }, { 'retry-after': '120' }),
    );
    const w = world(jobPipeline(), up.port);
    expect(await w.step()).toMatchObject({ status: 'waiting', wake: w.now() + 120_000 });
  });

  it('fails the node once poll.timeout_ms has passed, naming the limit', async () => {
    const up = upstream((req) => (req.method === 'POST' ? json(202, { id: 'j5' }) : json(200, { status: 'running' })));
    const w = world(jobPipeline({ timeout_ms: 12_000 }), up.port);
    expect((await w.step()).status).toBe('waiting');
    w.advance(5_000);
    expect((await w.step()).status).toBe('waiting');
    w.advance(5_000);
    // The last wait is cut to the time-out.
    expect(await w.step()).toMatchObject({ status: 'waiting', wake: w.now() + 2_000 });
    w.advance(2_000);
    expect(await w.step()).toMatchObject({
      status: 'failed',
      error_message: "Node 'render' failed: the job did not finish within 12000 ms (poll.timeout_ms), after 3 polls",
      caller_message: "Node 'render' failed: the job did not finish in time",
    });
  });

  it('backs off: every interval for a minute, then 1.5 times the last, up to a minute', () => {
    const since = 0;
    const delays: number[] = [];
    let t = since;
    for (let polls = 1; t < 10 * 60_000; polls++) {
      const d = nextPollDelayMs(5_000, polls, since, t);
      delays.push(d);
      t += d;
    }
    expect(delays.slice(0, 12).every((d) => d === 5_000)).toBe(true);
    expect(delays[12]).toBe(7_500);
    expect(Math.max(...delays)).toBe(60_000);
    // A ten-minute job: about two dozen polls, not the 120 a fixed 5 s would take.
    expect(delays.length).toBeLessThan(30);
    expect(nextPollDelayMs(5_000, 3, since, 0, 500)).toBe(1_000);
    expect(nextPollDelayMs(5_000, 3, since, 0, 7_200_000)).toBe(3_600_000);
  });
});
