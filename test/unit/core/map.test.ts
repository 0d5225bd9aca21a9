/**
 * The map node (functions/core/nodes/map.ts) in the step engine: items in item order whatever
 * order they finish in, at most `concurrency` under way (a job between polls counts), the items
 * limit at its edge, each item error policy, lists of files as one ASSET output, item progress,
 * and each item a checkpointed step: a later step (or a restart) reads finished items from the
 * journal and calls their upstream no more.
 */
import { createHash } from 'node:crypto';
import {
  ITEM_PROGRESS_STEPS,
  MemoryJournal,
  runPipelineTraced,
  runStep,
  type EngineObjects,
  type EngineOptions,
  type StepOptions,
  type StepResult,
} from '../../../functions/core/engine';
import { MAP_MAX_ITEMS } from '../../../functions/core/nodes/map';
import { validateDefinition } from '../../../functions/core/pipeline';
import type { NodeProgress } from '../../../functions/core/progress';
import type { HttpPort, HttpRequest, HttpResponse } from '../../../functions/core/ports';
import type { PipelineDefinition } from '../../../functions/core/types';
import { png } from '../../support/media';

function definition(nodes: Record<string, unknown>, extra: Record<string, unknown> = {}): PipelineDefinition {
  const result = validateDefinition({ nodes, ...extra });
  if (!result.ok) throw new Error(`test definition is invalid: ${JSON.stringify(result.problems)}`);
  return result.definition;
}

const json = (status: number, body: unknown): HttpResponse => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

const noHttp: HttpPort = async () => {
  throw new Error('no http expected in this test');
};
const opts = (over: Partial<EngineOptions> = {}): EngineOptions => ({ http: noHttp, timeoutMs: 60_000, ...over });

/** An upstream that answers each request after a delay of its own, counting how many are in flight. */
function slowUpstream(answer: (req: HttpRequest) => HttpResponse, delayOf: (req: HttpRequest) => number) {
  const calls: HttpRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const port: HttpPort = (req) =>
    new Promise((resolve, reject) => {
      calls.push(req);
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const timer = setTimeout(() => {
        inFlight -= 1;
        resolve(answer(req));
      }, delayOf(req));
      req.signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        inFlight -= 1;
        reject(new Error('request aborted'));
      });
    });
  return { port, calls, maxInFlight: () => maxInFlight };
}

const bodyOf = (req: HttpRequest): Record<string, unknown> =>
  JSON.parse(typeof req.body === 'string' ? req.body : '{}') as Record<string, unknown>;

/** A map of `count` items over an http node that POSTs each item. */
const postEach = (count: number, map: Record<string, unknown> = {}) =>
  definition({
    n: { type: 'input', value_type: 'integer', value: count },
    each: {
      type: 'map',
      inputs: ['n'],
      items: '[1..n]',
      node: { type: 'http', method: 'POST', url: 'https://api.example/v1/render', body: "{'item': item, 'index': index, 'of': n}" },
      ...map,
    },
    joined: { type: 'transform', inputs: ['each'], expression: "$join(each.($string(got)), ',')" },
    out: { type: 'output', from: 'joined' },
  });

describe('map: items', () => {
  it("gives the items' values in item order, whatever order they finish in, with at most `concurrency` under way", async () => {
    // Prepare: later items answer sooner.
    const up = slowUpstream(
      (req) => json(200, { got: bodyOf(req).item }),
      (req) => 5 + (12 - Number(bodyOf(req).index)) * 3,
    );

    // Act
    const { result, trace } = await runPipelineTraced(postEach(12, { concurrency: 3 }), {}, opts({ http: up.port, executionId: 'e-1' }));

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { out: '1,2,3,4,5,6,7,8,9,10,11,12' } });
    expect(up.calls).toHaveLength(12);
    expect(up.maxInFlight()).toBe(3);
    // Each item's call is its own step: its own Idempotency-Key.
    expect(up.calls.map((c) => c.headers['Idempotency-Key']).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `e-1.each.${i}`).sort());
    expect(trace.find((t) => t.node === 'each')).toMatchObject({ outcome: 'completed', preview: expect.stringContaining('{"got":1}') });
  });

  it.each([
    [1, 5, 1],
    [4, 9, 4],
    [32, 40, 32],
  ])('takes concurrency %i at its edge: %i items, at most %i at once', async (concurrency, items, most) => {
    // Prepare
    const up = slowUpstream(
      (req) => json(200, { got: bodyOf(req).item }),
      () => 10,
    );

    // Act
    const { result } = await runPipelineTraced(postEach(items, { concurrency }), {}, opts({ http: up.port }));

    // Assess
    expect(result.status).toBe('completed');
    expect(up.maxInFlight()).toBe(most);
  });

  it('runs four at a time by default', async () => {
    const up = slowUpstream(
      (req) => json(200, { got: bodyOf(req).item }),
      () => 10,
    );
    await runPipelineTraced(postEach(10), {}, opts({ http: up.port }));
    expect(up.maxInFlight()).toBe(4);
  });

  it(`takes ${MAP_MAX_ITEMS} items and fails the node naming the limit at one more`, async () => {
    // Prepare
    const def = (n: number) =>
      definition({
        n: { type: 'input', value_type: 'integer', value: n },
        m: { type: 'map', inputs: ['n'], items: '[1..n]', concurrency: 32, node: { type: 'transform', expression: 'item * 2' } },
        total: { type: 'transform', inputs: ['m'], expression: '$count(m) & ":" & $sum(m)' },
        out: { type: 'output', from: 'total' },
      });

    // Act
    const at = await runPipelineTraced(def(MAP_MAX_ITEMS), {}, opts());
    const past = await runPipelineTraced(def(MAP_MAX_ITEMS + 1), {}, opts());

    // Assess
    expect(at.result).toEqual({ status: 'completed', outputs: { out: `${MAP_MAX_ITEMS}:${MAP_MAX_ITEMS * (MAP_MAX_ITEMS + 1)}` } });
    expect(past.result).toEqual({
      status: 'failed',
      error_message: `Node 'm' failed: items gave ${MAP_MAX_ITEMS + 1} items; a map takes at most ${MAP_MAX_ITEMS} (the map items limit)`,
      caller_message: `Node 'm' failed: its items were more than a map takes (${MAP_MAX_ITEMS})`,
    });
  });

  it("takes a single value as a list of one, no value as no item, and sees the map's inputs, item and index", async () => {
    // Prepare
    const def = (items: string) =>
      definition({
        word: { type: 'input', value_type: 'string', value: 'ab' },
        m: { type: 'map', inputs: ['word'], items, node: { type: 'transform', expression: "word & ':' & item & ':' & index" } },
        shown: { type: 'transform', inputs: ['m'], expression: '$string(m)' },
        text: { type: 'output', from: 'shown' },
      });

    // Act
    const one = await runPipelineTraced(def('$substring(word, 0, 1)'), {}, opts());
    const none = await runPipelineTraced(def('$filter([1,2], function($v){ $v > 5 })'), {}, opts());

    // Assess
    expect(one.trace.find((t) => t.node === 'shown')?.preview).toBe(JSON.stringify('["ab:a:0"]'));
    expect(none.trace.find((t) => t.node === 'shown')?.preview).toBe(JSON.stringify('[]'));
  });

  it('is skipped whole by its if: no item runs', async () => {
    const up = slowUpstream(
      (req) => json(200, { got: bodyOf(req).item }),
      () => 1,
    );
    const { result, trace } = await runPipelineTraced(postEach(3, { if: 'n > 5' }), {}, opts({ http: up.port }));
    expect(up.calls).toHaveLength(0);
    expect(result).toEqual({ status: 'completed', outputs: {} });
    expect(trace.find((t) => t.node === 'each')?.outcome).toBe('skipped');
  });
});

describe('map: items that fail', () => {
  it('fails the map at the first failed item under "fail", stopping the items under way and starting no more', async () => {
    // Prepare
    const up = slowUpstream(
      (req) => (bodyOf(req).index === 2 ? json(500, { error: 'out of paint' }) : json(200, { got: bodyOf(req).item })),
      (req) => (bodyOf(req).index === 2 ? 5 : 200),
    );

    // Act
    const { result, trace } = await runPipelineTraced(postEach(10, { concurrency: 4 }), {}, opts({ http: up.port }));

    // Assess
    expect(result).toEqual({
      status: 'failed',
      error_message: expect.stringMatching(
        /^Node 'each' failed: the item at index 2 failed: HTTP 500 from https:\/\/api\.example\/v1\/render/,
      ),
      caller_message: "Node 'each' failed: the item at index 2 failed: upstream answered 500",
    });
    expect(up.calls).toHaveLength(4);
    expect(trace.find((t) => t.node === 'each')?.outcome).toBe('failed');
  });

  it('holds null in a failed item\'s place under "skip", and the trace says why', async () => {
    // Prepare
    const up = slowUpstream(
      (req) => ([1, 3].includes(Number(bodyOf(req).index)) ? json(503, { error: 'busy' }) : json(200, { got: bodyOf(req).item })),
      () => 2,
    );
    const def = definition({
      n: { type: 'input', value_type: 'integer', value: 5 },
      each: {
        type: 'map',
        inputs: ['n'],
        items: '[1..n]',
        on_item_error: 'skip',
        node: { type: 'http', method: 'PUT', url: 'https://api.example/v1/render', body: "{'item': item, 'index': index}" },
      },
      shown: { type: 'transform', inputs: ['each'], expression: '$string(each)' },
      out: { type: 'output', from: 'shown' },
    });

    // Act
    const { result, trace } = await runPipelineTraced(def, {}, opts({ http: up.port }));

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { out: '[{"got":1},null,{"got":3},null,{"got":5}]' } });
    expect(trace.find((t) => t.node === 'each')?.item_errors).toEqual([
      { index: 1, error: expect.stringMatching(/^HTTP 503 from https:\/\/api\.example\/v1\/render/) },
      { index: 3, error: expect.stringMatching(/^HTTP 503/) },
    ]);
  });
});

/* ------------------------------------------------------------------ steps: jobs, restarts */

/** A job service: a submit answers an id; a job is done once `polls` polls have seen it. */
function jobService(pollsToFinish = 2) {
  const submits = new Map<number, number>();
  const polls = new Map<string, number>();
  let open = 0;
  let maxOpen = 0;
  const port: HttpPort = async (req) => {
    if (req.method === 'POST') {
      const index = Number(bodyOf(req).index);
      submits.set(index, (submits.get(index) ?? 0) + 1);
      open += 1;
      maxOpen = Math.max(maxOpen, open);
      return json(202, { id: `job${index}` });
    }
    const id = req.url.split('/').pop() ?? '';
    const n = (polls.get(id) ?? 0) + 1;
    polls.set(id, n);
    if (n < pollsToFinish) return json(200, { status: 'running' });
    if (n === pollsToFinish) open -= 1;
    return json(200, { status: 'done', output: `picture of ${id}` });
  };
  return { port, submits, maxOpen: () => maxOpen };
}

const renders = (count: number, concurrency: number) =>
  definition({
    n: { type: 'input', value_type: 'integer', value: count },
    renders: {
      type: 'map',
      inputs: ['n'],
      items: '[1..n]',
      concurrency,
      node: {
        type: 'http',
        method: 'POST',
        url: 'https://api.example/v1/jobs',
        body: "{'index': index}",
        poll: { url: "'https://api.example/v1/jobs/' & id", every_ms: 5000, done: "status = 'done'", value: 'output' },
      },
    },
    shown: { type: 'transform', inputs: ['renders'], expression: "$join(renders, '|')" },
    out: { type: 'output', from: 'shown' },
  });

/** A world of one execution: steps one at a time over one journal, and a clock the test moves. */
function world(def: PipelineDefinition, http: HttpPort, over: Partial<StepOptions> = {}) {
  let t = Date.parse('2026-11-27T10:00:00Z');
  const journal = new MemoryJournal();
  const startedAt = t;
  const progress: NodeProgress[] = [];
  const step = async (port: HttpPort = http): Promise<StepResult> =>
    (
      await runStep(
        def,
        {},
        {
          http: port,
          timeoutMs: 86_400_000,
          startedAt,
          now: () => t,
          journal,
          executionId: 'e-1',
          onNode: (p) => progress.push(p),
          ...over,
        },
      )
    ).result;
  return { journal, step, progress, advance: (ms: number) => (t += ms), now: () => t };
}

/** Steps until the execution ends, moving the clock to each wake. */
async function untilDone(w: ReturnType<typeof world>, max = 100): Promise<StepResult> {
  for (let i = 0; i < max; i++) {
    const r = await w.step();
    if (r.status !== 'waiting' && r.status !== 'continue') return r;
    if (r.status === 'waiting') w.advance(Math.max(0, (r.wake ?? w.now()) - w.now()));
  }
  throw new Error('the execution did not end');
}

describe('map: items as checkpointed steps', () => {
  it('polls its jobs across steps, waiting in the state machine, with at most `concurrency` jobs open', async () => {
    // Prepare
    const jobs = jobService(2);
    const w = world(renders(7, 3), jobs.port);

    // Act
    const first = await w.step();
    const result = await untilDone(w);

    // Assess
    expect(first).toMatchObject({ status: 'waiting', waiting: [expect.objectContaining({ node: 'renders', type: 'map' })] });
    expect(result).toEqual({
      status: 'completed',
      outputs: { out: Array.from({ length: 7 }, (_, i) => `picture of job${i}`).join('|') },
    });
    expect([...jobs.submits.values()]).toEqual(Array(7).fill(1));
    expect(jobs.maxOpen()).toBe(3);
    expect(w.journal.nodes.get('renders.6')).toMatchObject({ state: 'done', value: 'picture of job6' });
    expect(w.journal.nodes.get('renders')).toMatchObject({ state: 'done' });
  });

  it('resumes after a crash from the journal: finished items are read, their upstream never called again', async () => {
    // Prepare: the first process runs two steps and dies; the second reads the same journal.
    const jobs = jobService(2);
    const w = world(renders(6, 2), jobs.port);
    await w.step();
    w.advance(5000);
    await w.step();
    const doneBefore = [...w.journal.nodes.entries()]
      .filter(([id, r]) => id.startsWith('renders.') && r.state === 'done')
      .map(([id]) => id);
    const after: HttpRequest[] = [];
    const watching: HttpPort = (req) => {
      after.push(req);
      return jobs.port(req);
    };

    // Act
    w.advance(5000);
    let result = await w.step(watching);
    for (let i = 0; i < 50 && (result.status === 'waiting' || result.status === 'continue'); i++) {
      if (result.status === 'waiting') w.advance(Math.max(0, (result.wake ?? w.now()) - w.now()));
      result = await w.step(watching);
    }

    // Assess
    expect(doneBefore.length).toBeGreaterThan(0);
    expect(result).toMatchObject({ status: 'completed' });
    expect([...jobs.submits.values()]).toEqual(Array(6).fill(1));
    for (const id of doneBefore) {
      const job = `job${id.split('.')[1]}`;
      expect(after.filter((r) => r.url.endsWith(`/${job}`) || bodyOf(r).index === Number(id.split('.')[1]))).toEqual([]);
    }
  });

  it('leaves a POST item cut short by a crash to its lease, then fails naming the item unless it may repeat', async () => {
    // Prepare: item 0's submit was recorded as under way (a crash in the middle of the call).
    const jobs = jobService(1);
    const w = world(renders(2, 2), jobs.port);
    const journal = w.journal;
    await journal.save('renders', { state: 'waiting', rev: 1, started_at: w.now(), memo: { items: [1, 2] }, until: w.now() }, undefined);
    await journal.save('renders.0', { state: 'calling', rev: 1, started_at: w.now(), lease_until: w.now() + 40_000 }, undefined);

    // Act
    const held = await w.step();
    w.advance(41_000);
    const failed = await w.step();

    // Assess
    expect(held).toMatchObject({ status: 'waiting' });
    expect(failed).toEqual({
      status: 'failed',
      error_message: expect.stringMatching(
        /^Node 'renders' failed: the item at index 0 failed: it was interrupted in the middle of its call/,
      ),
      caller_message: "Node 'renders' failed: the item at index 0 failed: it was interrupted in the middle of its call",
    });
    expect(jobs.submits.get(0)).toBeUndefined();
  });

  it('starts no item once the step has spent its time, and the next step goes on', async () => {
    // Prepare
    const up = slowUpstream(
      (req) => json(200, { got: bodyOf(req).item }),
      () => 1,
    );
    const w = world(postEach(3), up.port, { budgetMs: 0 });

    // Act
    const first = await w.step();

    // Assess
    expect(first).toEqual({ status: 'continue' });
    expect(up.calls).toHaveLength(0);
  });

  it('counts items in progress: every item of a small map, at most twenty steps of a large one', async () => {
    // Prepare
    const small = world(renders(3, 3), jobService(1).port);
    const large = definition({
      n: { type: 'input', value_type: 'integer', value: 100 },
      m: { type: 'map', inputs: ['n'], items: '[1..n]', node: { type: 'transform', expression: 'item' } },
      c: { type: 'transform', inputs: ['m'], expression: '$count(m)' },
      out: { type: 'output', from: 'c' },
    });
    const seen: NodeProgress[] = [];

    // Act
    await untilDone(small);
    await runPipelineTraced(large, {}, opts({ onNode: (p) => seen.push(p) }));

    // Assess
    const counts = (ps: NodeProgress[]) => ps.filter((p) => p.state === 'items').map((p) => `${p.done}/${p.total}`);
    expect(counts(small.progress)).toEqual(['1/3', '2/3', '3/3']);
    expect(counts(seen)).toHaveLength(ITEM_PROGRESS_STEPS);
    expect(counts(seen).at(-1)).toBe('100/100');
  });
});

describe('map: lists of files', () => {
  const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

  it('passes a list of files on as one ASSET output, in item order, a failed item null', async () => {
    // Prepare
    const stored: string[] = [];
    const objects: EngineObjects = {
      async store(name, body) {
        const parts: Uint8Array[] = [];
        for await (const c of body) parts.push(c);
        const bytes = Buffer.concat(parts);
        stored.push(name);
        const ref = { key: `d/dep/e/exec/${name}`, media_type: 'image/png', bytes: bytes.length, sha256: sha(bytes) };
        return {
          ref,
          view: {
            url: `http://127.0.0.1:9/${name}?sig=1`,
            media_type: 'image/png',
            bytes: bytes.length,
            sha256: ref.sha256,
            expires_at: '2030-01-01T00:00:00.000Z',
          },
        };
      },
      async open() {
        throw new Error('nothing to open');
      },
    };
    const http: HttpPort = async (req) => {
      const i = Number(bodyOf(req).i);
      if (i === 2) return json(500, { error: 'no' });
      const bytes = png(i + 1, 1);
      return {
        status: 200,
        headers: { 'content-type': 'image/png' },
        body: '',
        stream: (async function* () {
          yield bytes;
        })(),
      };
    };
    const def = definition({
      n: { type: 'input', value_type: 'integer', value: 4 },
      shots: {
        type: 'map',
        inputs: ['n'],
        items: '[0..n-1]',
        on_item_error: 'skip',
        node: { type: 'http', method: 'POST', url: 'https://api.example/shot', body: "{'i': item}" },
      },
      gallery: { type: 'output', from: 'shots' },
    });

    // Act
    const { result } = await runPipelineTraced(def, {}, opts({ http, objects }));

    // Assess
    expect(result.status).toBe('completed');
    const refs = result.status === 'completed' ? result.output_assets?.gallery : undefined;
    expect(Array.isArray(refs)).toBe(true);
    expect((refs as unknown[]).map((r) => (r === null ? null : (r as { key: string }).key))).toEqual([
      'd/dep/e/exec/node.shots.0',
      'd/dep/e/exec/node.shots.1',
      null,
      'd/dep/e/exec/node.shots.3',
    ]);
    expect(result.status === 'completed' ? result.outputs : null).toEqual({});
  });
});
