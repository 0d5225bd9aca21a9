import fc from 'fast-check';
import { runPipeline, runPipelineTraced, timeoutMessage, type EngineOptions } from '../../../functions/core/engine';
import * as pipeline from '../../../functions/core/pipeline';
import { validateDefinition } from '../../../functions/core/pipeline';

// Passes through, but counts: the node-order test below asks how often the order is worked out.
jest.mock('../../../functions/core/pipeline', () => {
  const actual = jest.requireActual<typeof import('../../../functions/core/pipeline')>('../../../functions/core/pipeline');
  return { ...actual, topologicalOrder: jest.fn(actual.topologicalOrder) };
});
import type { HttpPort, HttpRequest, HttpResponse } from '../../../functions/core/ports';
import type { PipelineDefinition, PipelineNode } from '../../../functions/core/types';

/** Validates first, as every caller of the engine does, so the tests run only definitions a user could push. */
function definition(nodes: Record<string, PipelineNode>): PipelineDefinition {
  const result = validateDefinition({ nodes });
  if (!result.ok) throw new Error(`test definition is invalid: ${JSON.stringify(result.problems)}`);
  return result.definition;
}

const noHttp: HttpPort = async () => {
  throw new Error('no http expected in this test');
};

const opts = (over: Partial<EngineOptions> = {}): EngineOptions => ({ http: noHttp, timeoutMs: 60_000, ...over });

const json = (status: number, body: unknown): HttpResponse => ({
  status,
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify(body),
});

/** An HttpPort whose calls wait until the test answers them, and that honours the abort signal. */
function heldPort() {
  const calls: { req: HttpRequest; answer: (r: HttpResponse) => void; fail: (e: Error) => void }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const waiters: { count: number; resolve: () => void }[] = [];
  const port: HttpPort = (req) =>
    new Promise<HttpResponse>((resolve, reject) => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const done = () => {
        inFlight -= 1;
      };
      req.signal?.addEventListener('abort', () => {
        done();
        reject(new Error('request aborted'));
      });
      calls.push({
        req,
        answer: (r) => {
          done();
          resolve(r);
        },
        fail: (e) => {
          done();
          reject(e);
        },
      });
      for (const w of waiters.filter((x) => calls.length >= x.count)) w.resolve();
    });
  const callsReached = (count: number) =>
    new Promise<void>((resolve) => {
      if (calls.length >= count) resolve();
      else waiters.push({ count, resolve });
    });
  const call = (url: string) => {
    const found = calls.find((c) => c.req.url === url);
    if (!found) throw new Error(`no call to ${url}`);
    return found;
  };
  return { port, calls, call, callsReached, maxInFlight: () => maxInFlight };
}

const greeting = () =>
  definition({
    name: { type: 'input', value_type: 'string', value: 'world' },
    greeting: { type: 'transform', inputs: ['name'], expression: "'Hello, ' & name & '!'" },
    message: { type: 'output', from: 'greeting' },
  });

describe('runPipeline: node types', () => {
  it('runs the greeting pipeline with the input value from the definition', async () => {
    // Prepare
    const def = greeting();

    // Act
    const result = await runPipeline(def, {}, opts());

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { message: 'Hello, world!' } });
  });

  it('uses given input values and ignores ids that are not input nodes', async () => {
    // Prepare
    const def = greeting();

    // Act
    const result = await runPipeline(def, { name: 'Ada', greeting: 'ignored', nobody: 1 }, opts());

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { message: 'Hello, Ada!' } });
  });

  it('evaluates transforms over their inputs and passes plain JSON on', async () => {
    // Prepare
    const def = definition({
      n: { type: 'input', value_type: 'integer', value: 3 },
      list: { type: 'transform', inputs: ['n'], expression: '[1..n].($ * 2)' },
      shape: { type: 'transform', inputs: ['list'], expression: '{"items": list, "count": $count(list)}' },
      total: { type: 'transform', inputs: ['shape'], expression: '$sum(shape.items) + shape.count' },
      empty: { type: 'transform', inputs: [], expression: '"no inputs"' },
      out_total: { type: 'output', from: 'total' },
      out_flag: { type: 'output', from: 'flag' },
      flag: { type: 'transform', inputs: ['list'], expression: '$type(list) = "array" and $string(list) = "[2,4,6]"' },
      out_empty: { type: 'output', from: 'empty' },
    });

    // Act
    const result = await runPipeline(def, {}, opts());

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { out_total: 15, out_flag: true, out_empty: 'no inputs' } });
  });

  it('keeps the outputs in declaration order', async () => {
    // Prepare
    const def = definition({
      a: { type: 'input', value_type: 'float', value: 1.5 },
      z_out: { type: 'output', from: 'a' },
      a_out: { type: 'output', from: 'a' },
    });

    // Act
    const result = await runPipeline(def, {}, opts());

    // Assess
    expect(result.status === 'completed' && Object.keys(result.outputs)).toEqual(['z_out', 'a_out']);
  });

  it('passes an undefined transform result on as no value, which an output refuses', async () => {
    // Prepare
    const def = definition({
      a: { type: 'input', value_type: 'string', value: 'x' },
      missing: { type: 'transform', inputs: ['a'], expression: 'nothing_here' },
      seen: { type: 'transform', inputs: ['missing'], expression: '$exists(missing) ? "present" : "absent"' },
      ok: { type: 'output', from: 'seen' },
      bad: { type: 'output', from: 'missing' },
    });

    // Act
    const result = await runPipeline(def, {}, opts());

    // Assess
    expect(result).toEqual({
      status: 'failed',
      error_message: "Node 'bad' failed: 'missing' produced no value",
      caller_message: "Node 'bad' failed: it produced no usable value",
    });
  });

  it.each([
    ['an object', '{"a": 1}', 'object'],
    [
      'an array of values',
      '[1, 2]',
      "array (a list reaches an output when each entry is an asset of this run or null; a list of values reaches it as text, through a transform such as $join(list, ', ') or $string(list))",
    ],
    ['null', 'null', 'null'],
  ])('fails the run when an output gets %s', async (_label, expression, got) => {
    // Prepare
    const def = definition({
      v: { type: 'transform', inputs: [], expression },
      result: { type: 'output', from: 'v' },
    });

    // Act
    const result = await runPipeline(def, {}, opts());

    // Assess
    expect(result).toEqual({
      status: 'failed',
      error_message: `Node 'result' failed: output must be a string, a finite number, a boolean or an asset of this run, got ${got}`,
      caller_message: "Node 'result' failed: it produced no usable value",
    });
  });

  it('names the failing node and the reason for a JSONata error', async () => {
    // Prepare
    const def = definition({
      a: { type: 'input', value_type: 'string', value: 'x' },
      broken: { type: 'transform', inputs: ['a'], expression: '$number(a) + 1' },
      out: { type: 'output', from: 'broken' },
    });

    // Act
    const result = await runPipeline(def, {}, opts());

    // Assess
    expect(result.status).toBe('failed');
    expect(result.status === 'failed' && result.error_message).toMatch(/^Node 'broken' failed: expression error/);
  });

  it('delays and passes its single input through', async () => {
    // Prepare
    const def = definition({
      a: { type: 'input', value_type: 'boolean', value: true },
      wait: { type: 'delay', inputs: ['a'], ms: 5 },
      out: { type: 'output', from: 'wait' },
    });

    // Act
    const result = await runPipeline(def, {}, opts());

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { out: true } });
  });
});

describe('runPipeline: http nodes', () => {
  it('sends the JSON body from its expression and reads a JSON response', async () => {
    // Prepare
    const seen: HttpRequest[] = [];
    const http: HttpPort = async (req) => {
      seen.push(req);
      return json(200, { greeting: `hi ${JSON.parse(String(req.body ?? '{}')).who}` });
    };
    const def = definition({
      who: { type: 'input', value_type: 'string', value: 'Ada' },
      call: {
        type: 'http',
        inputs: ['who'],
        method: 'POST',
        url: 'https://api.example.com/greet',
        headers: { 'x-trace': 't1' },
        body: '{"who": who}',
        timeout_ms: 2500,
      },
      text: { type: 'transform', inputs: ['call'], expression: 'call.greeting' },
      out: { type: 'output', from: 'text' },
    });

    // Act
    const result = await runPipeline(def, {}, opts({ http }));

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { out: 'hi Ada' } });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      method: 'POST',
      url: 'https://api.example.com/greet',
      headers: { 'x-trace': 't1', 'content-type': 'application/json' },
      body: '{"who":"Ada"}',
      timeoutMs: 2500,
      maxResponseBytes: 1_048_576,
    });
    expect(seen[0]?.signal).toBeInstanceOf(AbortSignal);
  });

  it('defaults to GET without a body, keeps a content type the owner set, and returns text that is not JSON', async () => {
    // Prepare
    const seen: HttpRequest[] = [];
    const http: HttpPort = async (req): Promise<HttpResponse> => {
      seen.push(req);
      if (req.url.endsWith('/text')) return { status: 200, headers: { 'content-type': 'text/plain' }, body: 'plain words' };
      return { status: 201, headers: {}, body: '[1, 2, 3]' };
    };
    const def = definition({
      get: { type: 'http', url: 'http://example.com/text' },
      put: {
        type: 'http',
        method: 'PUT',
        url: 'http://example.com/data',
        headers: { 'Content-Type': 'application/vnd.thing+json' },
        body: '42',
      },
      count: { type: 'transform', inputs: ['put'], expression: '$count(put)' },
      text_out: { type: 'output', from: 'get' },
      count_out: { type: 'output', from: 'count' },
    });

    // Act
    const result = await runPipeline(def, {}, opts({ http }));

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { text_out: 'plain words', count_out: 3 } });
    const get = seen.find((r) => r.method === 'GET');
    const put = seen.find((r) => r.method === 'PUT');
    expect(get?.body).toBeUndefined();
    expect(get?.headers).toEqual({});
    expect(get?.timeoutMs).toBe(10_000);
    expect(put?.headers).toEqual({ 'Content-Type': 'application/vnd.thing+json' });
    expect(put?.body).toBe('42');
  });

  it('fails the node on a non-2xx answer without showing the query string', async () => {
    // Prepare
    const http: HttpPort = async () => ({ status: 503, headers: {}, body: 'busy' });
    const def = definition({
      call: { type: 'http', url: 'https://user:pw@api.example.com/v1/items?token=s3cret#frag' },
      out: { type: 'output', from: 'call' },
    });

    // Act
    const result = await runPipeline(def, {}, opts({ http }));

    // Assess
    expect(result).toEqual({
      status: 'failed',
      error_message: "Node 'call' failed: HTTP 503 from https://api.example.com/v1/items: busy",
      caller_message: "Node 'call' failed: upstream answered 503",
    });
  });

  it('fails the node with the port message when the call itself fails', async () => {
    // Prepare
    const http: HttpPort = async () => {
      throw new Error('address 10.0.0.1 is not allowed');
    };
    const def = definition({
      call: { type: 'http', url: 'http://internal.example/' },
      out: { type: 'output', from: 'call' },
    });

    // Act
    const result = await runPipeline(def, {}, opts({ http }));

    // Assess
    expect(result).toEqual({
      status: 'failed',
      error_message: "Node 'call' failed: address 10.0.0.1 is not allowed",
      caller_message: "Node 'call' failed: the upstream request failed",
    });
  });
});

describe('runPipeline: scheduling', () => {
  it('runs independent http nodes at the same time', async () => {
    // Prepare: each call waits until both have arrived, so a one-at-a-time engine would only time out.
    const held = heldPort();
    const def = definition({
      a: { type: 'http', url: 'https://a.example/' },
      b: { type: 'http', url: 'https://b.example/' },
      sum: { type: 'transform', inputs: ['a', 'b'], expression: 'a + b' },
      out: { type: 'output', from: 'sum' },
    });
    void held.callsReached(2).then(() => {
      held.call('https://a.example/').answer(json(200, 1));
      held.call('https://b.example/').answer(json(200, 2));
    });

    // Act
    const result = await runPipeline(def, {}, opts({ http: held.port, timeoutMs: 60_000 }));

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { out: 3 } });
    expect(held.maxInFlight()).toBe(2);
  });

  it('starts a node as soon as its own dependencies are done, not level by level', async () => {
    // Prepare: `slow` is answered only once `second` (one level further down the fast branch) has been called.
    const held = heldPort();
    const def = definition({
      slow: { type: 'http', url: 'https://slow.example/' },
      first: { type: 'http', url: 'https://first.example/' },
      second: { type: 'http', inputs: ['first'], url: 'https://second.example/' },
      both: { type: 'transform', inputs: ['slow', 'second'], expression: 'slow & "/" & second' },
      out: { type: 'output', from: 'both' },
    });
    void held.callsReached(2).then(() => held.call('https://first.example/').answer(json(200, 'f')));
    void held.callsReached(3).then(() => {
      held.call('https://second.example/').answer(json(200, 's'));
      held.call('https://slow.example/').answer(json(200, 'slow'));
    });

    // Act
    const result = await runPipeline(def, {}, opts({ http: held.port, timeoutMs: 60_000 }));

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { out: 'slow/s' } });
    expect(held.calls.map((c) => c.req.url)).toEqual(['https://slow.example/', 'https://first.example/', 'https://second.example/']);
  });

  it('aborts in-flight work as soon as one node fails', async () => {
    // Prepare
    const held = heldPort();
    const def = definition({
      bad: { type: 'http', url: 'https://bad.example/' },
      busy: { type: 'http', url: 'https://busy.example/' },
      out: { type: 'output', from: 'busy' },
    });
    void held.callsReached(2).then(() => held.call('https://bad.example/').answer({ status: 500, headers: {}, body: '' }));

    // Act
    const result = await runPipeline(def, {}, opts({ http: held.port }));

    // Assess
    expect(result).toEqual({
      status: 'failed',
      error_message: "Node 'bad' failed: HTTP 500 from https://bad.example/",
      caller_message: "Node 'bad' failed: upstream answered 500",
    });
    expect(held.call('https://busy.example/').req.signal?.aborted).toBe(true);
  });
});

describe('runPipeline: time-out and cancellation', () => {
  it('words the time-out in seconds when it is a whole number of seconds, else in milliseconds', () => {
    expect(timeoutMessage(300_000)).toBe('Execution timed out after 300 s');
    expect(timeoutMessage(1000)).toBe('Execution timed out after 1 s');
    expect(timeoutMessage(1500)).toBe('Execution timed out after 1500 ms');
  });

  it('fails a run that outlives its time-out and aborts what is in flight', async () => {
    // Prepare
    const held = heldPort();
    const def = definition({
      call: { type: 'http', url: 'https://never.example/' },
      a: { type: 'input', value_type: 'integer', value: 1 },
      wait: { type: 'delay', inputs: ['a'], ms: 60_000 },
      out: { type: 'output', from: 'wait' },
    });

    // Act
    const result = await runPipeline(def, {}, opts({ http: held.port, timeoutMs: 50 }));

    // Assess
    expect(result).toEqual({
      status: 'failed',
      error_message: 'Execution timed out after 50 ms',
      caller_message: 'Execution timed out after 50 ms',
    });
    expect(held.calls[0]?.req.signal?.aborted).toBe(true);
  });

  it('is cancelled promptly by its signal, stopping a long delay and in-flight http', async () => {
    // Prepare
    const held = heldPort();
    const controller = new AbortController();
    const def = definition({
      a: { type: 'input', value_type: 'integer', value: 1 },
      wait: { type: 'delay', inputs: ['a'], ms: 60_000 },
      call: { type: 'http', url: 'https://slow.example/' },
      out: { type: 'output', from: 'wait' },
    });
    void held.callsReached(1).then(() => controller.abort());
    const started = Date.now();

    // Act
    const result = await runPipeline(def, {}, opts({ http: held.port, timeoutMs: 120_000, signal: controller.signal }));

    // Assess
    expect(result).toEqual({ status: 'cancelled' });
    // Well short of the delay's 60 s, however loaded the machine: cut short, not waited out.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(held.calls[0]?.req.signal?.aborted).toBe(true);
  });

  it('answers cancelled without running anything when the signal is already aborted', async () => {
    // Prepare
    const held = heldPort();
    const def = definition({ call: { type: 'http', url: 'https://x.example/' }, out: { type: 'output', from: 'call' } });

    // Act
    const result = await runPipeline(def, {}, opts({ http: held.port, signal: AbortSignal.abort() }));

    // Assess
    expect(result).toEqual({ status: 'cancelled' });
    expect(held.calls).toHaveLength(0);
  });
});

describe('runPipeline: no timer outlives a run', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  const longDelay = () =>
    definition({
      a: { type: 'input', value_type: 'integer', value: 1 },
      wait: { type: 'delay', inputs: ['a'], ms: 60_000 },
      out: { type: 'output', from: 'wait' },
    });

  it('after completing', async () => {
    // Act
    const run = runPipeline(longDelay(), {}, opts({ timeoutMs: 120_000 }));
    await jest.advanceTimersByTimeAsync(60_000);
    const result = await run;

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { out: 1 } });
    expect(jest.getTimerCount()).toBe(0);
  });

  it('after timing out', async () => {
    // Act
    const run = runPipeline(longDelay(), {}, opts({ timeoutMs: 30_000 }));
    await jest.advanceTimersByTimeAsync(30_000);
    const result = await run;

    // Assess
    expect(result).toEqual({
      status: 'failed',
      error_message: 'Execution timed out after 30 s',
      caller_message: 'Execution timed out after 30 s',
    });
    expect(jest.getTimerCount()).toBe(0);
  });

  it('after being cancelled', async () => {
    // Prepare
    const controller = new AbortController();

    // Act
    const run = runPipeline(longDelay(), {}, opts({ timeoutMs: 120_000, signal: controller.signal }));
    await jest.advanceTimersByTimeAsync(1000);
    controller.abort();
    const result = await run;

    // Assess
    expect(result).toEqual({ status: 'cancelled' });
    expect(jest.getTimerCount()).toBe(0);
  });
});

describe('runPipeline: runaway expressions', () => {
  const runaway = (expression: string) =>
    definition({
      a: { type: 'input', value_type: 'integer', value: 1 },
      spin: { type: 'transform', inputs: ['a'], expression },
      out: { type: 'output', from: 'spin' },
    });

  it('fails a node whose expression recurses forever in tail position (time limit)', async () => {
    // Act
    const result = await runPipeline(runaway('($f := function($x){$f($x)}; $f(a))'), {}, opts({ expressionTimeLimitMs: 100 }));

    // Assess
    expect(result).toEqual({
      status: 'failed',
      error_message: "Node 'spin' failed: expression ran for more than 100 ms (is there an endless loop or recursion?)",
      caller_message: "Node 'spin' failed: its expression failed",
    });
  });

  it('fails a node whose recursion grows without end (depth limit)', async () => {
    // Act: the expression's and the run's time limits far away, so that only the depth limit
    // can stop it, however loaded the machine (5,000 levels took over 5 s under a load of 20)
    const result = await runPipeline(
      runaway('($f := function($x){1 + $f($x)}; $f(a))'),
      {},
      opts({ expressionTimeLimitMs: 60_000, timeoutMs: 120_000 }),
    );

    // Assess
    expect(result.status).toBe('failed');
    expect(result.status === 'failed' && result.error_message).toMatch(/^Node 'spin' failed: expression error.*Stack overflow/);
  });

  it('reports the run time-out when the deadline passes inside an evaluation', async () => {
    // Act
    const result = await runPipeline(
      runaway('($f := function($x){$f($x)}; $f(a))'),
      {},
      opts({ timeoutMs: 60, expressionTimeLimitMs: 10_000 }),
    );

    // Assess
    expect(result).toEqual({
      status: 'failed',
      error_message: 'Execution timed out after 60 ms',
      caller_message: 'Execution timed out after 60 ms',
    });
  });

  it('bounds an endless expression by the default limit too', async () => {
    // Act
    const result = await runPipeline(runaway('($f := function($x){$f($x)}; $f(a))'), {}, opts());

    // Assess
    expect(result.status === 'failed' && result.error_message).toMatch(/^Node 'spin' failed: expression ran for more than 1000 ms/);
  });
});

describe('runPipeline: properties', () => {
  /** A random DAG: inputs first, then transforms that each add or multiply earlier nodes. */
  const dagArb = fc
    .record({
      inputs: fc.array(fc.integer({ min: -20, max: 20 }), { minLength: 1, maxLength: 4 }),
      transforms: fc.array(
        fc.record({
          picks: fc.uniqueArray(fc.nat({ max: 30 }), { minLength: 1, maxLength: 3 }),
          op: fc.constantFrom('+', '-'),
        }),
        { maxLength: 8 },
      ),
      overrides: fc.array(fc.option(fc.integer({ min: -5, max: 5 }), { nil: undefined }), { maxLength: 4 }),
    })
    .map(({ inputs, transforms, overrides }) => {
      const nodes: [string, PipelineNode][] = [];
      const ids: string[] = [];
      inputs.forEach((value, i) => {
        const id = `in${i}`;
        nodes.push([id, { type: 'input', value_type: 'integer', value }]);
        ids.push(id);
      });
      transforms.forEach(({ picks, op }, i) => {
        const chosen = [...new Set(picks.map((p) => ids[p % ids.length] as string))];
        const id = `t${i}`;
        nodes.push([id, { type: 'transform', inputs: chosen, expression: chosen.join(` ${op} `) }]);
        ids.push(id);
      });
      const last = ids[ids.length - 1] as string;
      nodes.push(['result', { type: 'output', from: last }]);
      nodes.push(['first', { type: 'output', from: ids[0] as string }]);
      const given: Record<string, number> = {};
      overrides.forEach((v, i) => {
        if (v !== undefined && i < inputs.length) given[`in${i}`] = v;
      });
      return { nodes, given };
    });

  it('gives the same result whatever order the nodes are declared in', async () => {
    await fc.assert(
      fc.asyncProperty(
        dagArb.chain((dag) => fc.tuple(fc.constant(dag), fc.shuffledSubarray(dag.nodes, { minLength: dag.nodes.length }))),
        async ([{ nodes, given }, shuffled]) => {
          // Prepare
          const inOrder = definition(Object.fromEntries(nodes));
          const reordered = definition(Object.fromEntries(shuffled));

          // Act
          const a = await runPipeline(inOrder, given, opts());
          const b = await runPipeline(reordered, given, opts());

          // Assess
          expect(a.status).toBe('completed');
          expect(b).toEqual(a);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('node order', () => {
  it('is worked out once per run, for the run and its trace alike', async () => {
    // Prepare
    const order = jest.mocked(pipeline.topologicalOrder);
    order.mockClear();
    const def = {
      nodes: { a: { type: 'input', value_type: 'string', value: 'x' }, b: { type: 'output', from: 'a' } },
    } as PipelineDefinition;

    // Act
    const { result, trace } = await runPipelineTraced(def, { a: 'x' }, opts());

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { b: 'x' } });
    expect(trace.map((t) => t.node)).toEqual(['a', 'b']);
    expect(order).toHaveBeenCalledTimes(1);
  });
});
