/**
 * Control flow (contract §2, conditions and merged outputs): `if` skips a node and what reads
 * it, `join: "any"` runs on any one of its inputs, an output's list of `from` takes the first
 * that ran and is absent when none did, and a push names every problem of the kind. The
 * skipped set of random pipelines is held to a model written apart from the engine.
 */
import fc from 'fast-check';
import { runPipelineTraced, type EngineOptions } from '../../../functions/core/engine';
import { skippableNodes } from '../../../functions/core/flow';
import { validateDefinition } from '../../../functions/core/pipeline';
import type { HttpPort } from '../../../functions/core/ports';
import type { PipelineDefinition } from '../../../functions/core/types';

function definition(nodes: Record<string, unknown>): PipelineDefinition {
  const result = validateDefinition({ nodes });
  if (!result.ok) throw new Error(`test definition is invalid: ${JSON.stringify(result.problems)}`);
  return result.definition;
}

const problemsOf = (nodes: Record<string, unknown>) => {
  const r = validateDefinition({ nodes });
  return r.ok ? [] : r.problems;
};

const noHttp: HttpPort = async () => {
  throw new Error('no http expected in this test');
};
const opts = (over: Partial<EngineOptions> = {}): EngineOptions => ({ http: noHttp, timeoutMs: 60_000, ...over });

const outcomes = (trace: { node: string; outcome: string }[]) => Object.fromEntries(trace.map((t) => [t.node, t.outcome]));

/** A photo's verdict, then one branch each way, a join and merged outputs. */
const branches = (score: number) =>
  definition({
    score: { type: 'input', value_type: 'integer', value: score },
    passed: { type: 'transform', inputs: ['score'], if: 'score >= 5', expression: "'kept (' & score & ')'" },
    refused: { type: 'transform', inputs: ['score'], if: 'score < 5', expression: "'refused (' & score & ')'" },
    shout: { type: 'transform', inputs: ['passed'], expression: '$uppercase(passed)' },
    either: { type: 'transform', inputs: ['passed', 'refused'], join: 'any', expression: '$keys($)[0]' },
    verdict: { type: 'output', from: ['shout', 'refused'] },
    loud: { type: 'output', from: 'shout' },
    which: { type: 'output', from: 'either' },
  });

describe('conditions', () => {
  it('runs the branch whose if is true and skips the other, with what reads it', async () => {
    // Act
    const { result, trace } = await runPipelineTraced(branches(7), {}, opts());

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { verdict: 'KEPT (7)', loud: 'KEPT (7)', which: 'passed' } });
    expect(outcomes(trace)).toMatchObject({ passed: 'completed', refused: 'skipped', shout: 'completed', either: 'completed' });
  });

  it('goes the other way, and an output whose only node was skipped is absent', async () => {
    // Act
    const { result, trace } = await runPipelineTraced(branches(2), {}, opts());

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { verdict: 'refused (2)', which: 'refused' } });
    expect(outcomes(trace)).toMatchObject({ passed: 'skipped', refused: 'completed', shout: 'skipped', loud: 'skipped' });
    const skipped = trace.find((t) => t.node === 'shout');
    expect(skipped).toMatchObject({ preview: null, error: null, duration_ms: 0 });
  });

  it('shows a join only the inputs that ran', async () => {
    // Prepare
    const def = definition({
      a: { type: 'input', value_type: 'string', value: 'A' },
      left: { type: 'transform', inputs: ['a'], if: 'false', expression: "'L'" },
      right: { type: 'transform', inputs: ['a'], expression: "'R'" },
      both: { type: 'transform', inputs: ['left', 'right'], join: 'any', expression: '$string($)' },
      out: { type: 'output', from: 'both' },
    });

    // Act
    const { result } = await runPipelineTraced(def, {}, opts());

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { out: '{"right":"R"}' } });
  });

  it('skips a join whose inputs were all skipped, and a node that reads a skipped one without joining', async () => {
    // Prepare
    const def = definition({
      a: { type: 'input', value_type: 'string', value: 'A' },
      left: { type: 'transform', inputs: ['a'], if: 'false', expression: "'L'" },
      right: { type: 'transform', inputs: ['a'], if: "a = 'B'", expression: "'R'" },
      any: { type: 'transform', inputs: ['left', 'right'], join: 'any', expression: "'ran'" },
      all: { type: 'transform', inputs: ['a', 'left'], expression: "'ran'" },
      out: { type: 'output', from: ['any', 'all'] },
      fallback: { type: 'output', from: ['any', 'a'] },
    });

    // Act
    const { result, trace } = await runPipelineTraced(def, {}, opts());

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { fallback: 'A' } });
    expect(outcomes(trace)).toMatchObject({ any: 'skipped', all: 'skipped', out: 'skipped', fallback: 'completed' });
  });

  it('merges an output from the first node listed that ran, not the first to finish', async () => {
    // Prepare
    const def = definition({
      a: { type: 'input', value_type: 'string', value: 'A' },
      slow: { type: 'delay', inputs: ['a'], ms: 30 },
      fast: { type: 'transform', inputs: ['a'], expression: "'fast'" },
      first: { type: 'output', from: ['slow', 'fast'] },
    });

    // Act
    const { result } = await runPipelineTraced(def, {}, opts());

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { first: 'A' } });
  });

  it('fails the node when its if fails or gives anything but true or false', async () => {
    // Prepare
    const failing = definition({
      a: { type: 'input', value_type: 'string', value: 'A' },
      t: { type: 'transform', inputs: ['a'], if: '$number(a) > 1', expression: 'a' },
      out: { type: 'output', from: 't' },
    });
    const vague = definition({
      a: { type: 'input', value_type: 'string', value: 'A' },
      t: { type: 'transform', inputs: ['a'], if: 'a', expression: 'a' },
      out: { type: 'output', from: 't' },
    });

    // Act
    const failed = await runPipelineTraced(failing, {}, opts());
    const unclear = await runPipelineTraced(vague, {}, opts());

    // Assess
    expect(failed.result).toMatchObject({
      status: 'failed',
      error_message: expect.stringMatching(/^Node 't' failed: its if failed: /),
      caller_message: "Node 't' failed: its condition failed",
    });
    expect(unclear.result).toEqual({
      status: 'failed',
      error_message: "Node 't' failed: its if must give true or false, got a string",
      caller_message: "Node 't' failed: its condition failed",
    });
    expect(outcomes(failed.trace)).toMatchObject({ t: 'failed', out: 'not_run' });
  });

  it('never calls an http node that is skipped, and an output may carry its own if', async () => {
    // Prepare
    const calls: string[] = [];
    const http: HttpPort = async (req) => {
      calls.push(req.url);
      return { status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok": true}' };
    };
    const def = definition({
      n: { type: 'input', value_type: 'integer', value: 1 },
      call: { type: 'http', url: 'https://api.example/x', inputs: ['n'], if: 'n > 1' },
      echo: { type: 'transform', inputs: ['n'], expression: 'n' },
      shown: { type: 'output', from: 'echo', if: 'echo > 1' },
      kept: { type: 'output', from: 'echo' },
    });

    // Act
    const { result } = await runPipelineTraced(def, {}, opts({ http }));

    // Assess
    expect(calls).toEqual([]);
    expect(result).toEqual({ status: 'completed', outputs: { kept: 1 } });
  });

  it('tells progress that a node was skipped, never that it started', async () => {
    // Prepare
    const seen: string[] = [];

    // Act
    await runPipelineTraced(branches(2), {}, opts({ onNode: (p) => seen.push(`${p.node}:${p.state}`) }));

    // Assess
    expect(seen).toContain('passed:skipped');
    expect(seen).toContain('shout:skipped');
    expect(seen.filter((s) => s.startsWith('passed:') || s.startsWith('shout:'))).toEqual(['passed:skipped', 'shout:skipped']);
  });
});

describe('push validation of control flow', () => {
  it('names every problem at once: an if on an input, a join nothing can skip, a map of a map, a cycle through a map', () => {
    // Act
    const problems = problemsOf({
      n: { type: 'input', value_type: 'integer', value: 3, if: 'n > 1' },
      plain: { type: 'transform', inputs: ['n'], join: 'any', expression: 'n' },
      nested: {
        type: 'map',
        inputs: ['n'],
        items: '[1..n]',
        node: { type: 'map', items: 'item', node: { type: 'transform', expression: 'item' } },
      },
      delayed: { type: 'map', inputs: ['n'], items: '[1..n]', node: { type: 'delay', ms: 5 } },
      loop: { type: 'map', inputs: ['n', 'after'], items: '[1..n]', node: { type: 'transform', expression: 'item' } },
      after: { type: 'transform', inputs: ['loop'], expression: '$count(loop)' },
      out: { type: 'output', from: 'plain', join: 'any' },
    });

    // Assess
    expect(problems).toEqual(
      expect.arrayContaining([
        {
          path: 'nodes.n.if',
          reason: 'an input cannot carry `if`: its value is always there (put the condition on the nodes that read it)',
        },
        {
          path: 'nodes.plain.join',
          reason:
            '`join: "any"` needs an input that may be skipped (one with `if`, or reading one), and none of \'n\' may be: leave `join` out',
        },
        {
          path: 'nodes.nested.node.type',
          reason:
            "cannot be a map node: maps nest one level at most: a map's node is one http or transform node (to map over a map's items, give the outer map's value as a later map's items)",
        },
        { path: 'nodes.delayed.node.type', reason: 'must be an http or transform node, got a delay node' },
        { path: 'nodes.loop', reason: 'cycle: loop → after → loop' },
        {
          path: 'nodes.out.join',
          reason: 'an output takes the first of its `from` that ran (list several to merge branches): leave `join` out',
        },
      ]),
    );
    expect(problems).toHaveLength(6);
  });

  it("refuses a map's node that hands out a wait's resume URL (one event, many items), and takes a wait under an if", () => {
    // Act
    const problems = problemsOf({
      name: { type: 'input', value_type: 'string', value: 'x' },
      done: { type: 'wait', timeout_ms: 60_000 },
      m: {
        type: 'map',
        inputs: ['name'],
        items: '[name]',
        node: { type: 'http', method: 'POST', url: 'https://api.example/', body: "{ 'callback': $resume_url('done') }" },
      },
      approval: { type: 'wait', inputs: ['name'], if: "name = 'x'", timeout_ms: 60_000 },
    });

    // Assess
    expect(problems).toEqual([
      {
        path: 'nodes.m.node.body',
        reason:
          "names the resume URL of 'done', but a map's node runs once per item and a wait node is resumed once; poll the job instead (poll) or wait after the map",
      },
    ]);
  });

  it("names what a map's node may not carry, and an input named as what items see", () => {
    // Act
    const problems = problemsOf({
      item: { type: 'input', value_type: 'string', value: 'x' },
      m: {
        type: 'map',
        inputs: ['item'],
        items: '[item]',
        node: {
          type: 'http',
          url: 'https://api.example/',
          inputs: ['item'],
          if: 'true',
          colour: 'blue',
          body: 'item',
          poll: { url: '(', done: 'true' },
        },
      },
    });

    // Assess
    expect(problems).toEqual([
      {
        path: 'nodes.m.inputs[0]',
        reason: "a map's node sees `item` and `index` beside the map's inputs: an input named 'item' would be hidden; rename that node",
      },
      { path: 'nodes.m.node.inputs', reason: "a map's node reads the map's inputs by id, `item` and `index`: leave `inputs` out" },
      { path: 'nodes.m.node.if', reason: "a map's node runs for every item: choose the items in `items` instead of `if`" },
      {
        path: 'nodes.m.node.colour',
        reason:
          'unknown field for an http node; allowed: type, method, url, headers, body, body_asset, timeout_ms, retry_interrupted, poll, description',
      },
      { path: 'nodes.m.node.body', reason: 'a GET request cannot carry a body; use POST, PUT, PATCH or DELETE' },
      expect.objectContaining({ path: 'nodes.m.node.poll.url' }),
    ]);
  });

  it('holds concurrency to 1 to 32, and takes a join whose input may be skipped through another node', () => {
    // Prepare
    const map = (concurrency: number) => ({
      n: { type: 'input', value_type: 'integer', value: 3 },
      m: { type: 'map', inputs: ['n'], items: '[1..n]', concurrency, node: { type: 'transform', expression: 'item' } },
    });

    // Act
    const edges = [0, 1, 32, 33].map((c) => problemsOf(map(c)));
    const indirect = problemsOf({
      n: { type: 'input', value_type: 'integer', value: 3 },
      maybe: { type: 'transform', inputs: ['n'], if: 'n > 2', expression: 'n' },
      after: { type: 'transform', inputs: ['maybe'], expression: 'maybe' },
      j: { type: 'transform', inputs: ['n', 'after'], join: 'any', expression: '1' },
    });

    // Assess
    expect(edges).toEqual([
      [{ path: 'nodes.m.concurrency', reason: 'must be at least 1' }],
      [],
      [],
      [{ path: 'nodes.m.concurrency', reason: 'must be at most 32' }],
    ]);
    expect(indirect).toEqual([]);
  });

  it('marks as skippable what an if can reach, and an output listing branches only when every one may be skipped', () => {
    // Act
    const skippable = skippableNodes(branches(1).nodes);

    // Assess
    expect([...skippable].sort()).toEqual(['either', 'loud', 'passed', 'refused', 'shout', 'verdict', 'which'].sort());
    expect([
      ...skippableNodes(definition({ a: { type: 'input', value_type: 'string', value: 'A' }, o: { type: 'output', from: 'a' } }).nodes),
    ]).toEqual([]);
  });
});

/* ------------------------------------------------------------------ random pipelines against a model */

interface ModelNode {
  inputs: number[];
  condition: boolean | null;
  joinAny: boolean;
}

/** The skipped set as the contract words it, written apart from the engine: in order, from the inputs' fates. */
function modelSkipped(nodes: ModelNode[]): Set<number> {
  const skipped = new Set<number>();
  nodes.forEach((n, i) => {
    const fates = n.inputs.map((d) => skipped.has(d));
    const fromInputs = n.joinAny ? fates.length > 0 && fates.every((f) => f) : fates.some((f) => f);
    if (fromInputs || n.condition === false) skipped.add(i);
  });
  return skipped;
}

/** A static model of what may be skipped, from conditions alone, for the join rule at push. */
function modelMaybe(nodes: ModelNode[]): Set<number> {
  const maybe = new Set<number>();
  nodes.forEach((n, i) => {
    const m = n.inputs.map((d) => maybe.has(d));
    if (n.condition !== null || (n.joinAny ? m.length > 0 && m.every((x) => x) : m.some((x) => x))) maybe.add(i);
  });
  return maybe;
}

const dag = fc.integer({ min: 1, max: 9 }).chain((count) =>
  fc.tuple(
    ...Array.from({ length: count }, (_, i) =>
      fc.record({
        // Node 0 is the input; every other node reads some earlier ones.
        inputs: fc.uniqueArray(fc.integer({ min: 0, max: i }), { minLength: 1, maxLength: Math.min(3, i + 1) }),
        condition: fc.constantFrom(null, true, false),
        joinAny: fc.boolean(),
      }),
    ),
  ),
);

describe('random pipelines with conditions', () => {
  it('skip exactly the nodes a model of the contract skips, and answer exactly the outputs that ran', async () => {
    await fc.assert(
      fc.asyncProperty(
        dag,
        fc.array(fc.uniqueArray(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 3 }), { maxLength: 3 }),
        async (raw, outs) => {
          // Node ids: x (the input) is model node 0; n1… are model nodes 1….
          const model: ModelNode[] = [{ inputs: [], condition: null, joinAny: false }, ...raw.map((n) => ({ ...n }))];
          const name = (i: number) => (i === 0 ? 'x' : `n${i}`);
          const nodes: Record<string, unknown> = { x: { type: 'input', value_type: 'integer', value: 1 } };
          model.forEach((n, i) => {
            if (i === 0) return;
            nodes[name(i)] = {
              type: 'transform',
              inputs: n.inputs.map(name),
              expression: `'${name(i)}'`,
              ...(n.condition === null ? {} : { if: String(n.condition) }),
              ...(n.joinAny ? { join: 'any' } : {}),
            };
          });
          const outputs = outs.map((list) => [...new Set(list.filter((i) => i < model.length))]).filter((l) => l.length > 0);
          outputs.forEach((list, k) => {
            nodes[`out${k}`] = { type: 'output', from: list.length === 1 ? name(list[0] ?? 0) : list.map(name) };
          });
          const validated = validateDefinition({ nodes });
          const maybe = modelMaybe(model);
          const needless = model.flatMap((n, i) => (i > 0 && n.joinAny && !n.inputs.some((d) => maybe.has(d)) ? [i] : []));
          if (!validated.ok) {
            // The only refusals are joins that nothing could make matter, and every such join is refused.
            expect(validated.problems.map((p) => p.path).sort()).toEqual(needless.map((i) => `nodes.${name(i)}.join`).sort());
            return;
          }
          expect(needless).toEqual([]);

          const { result, trace } = await runPipelineTraced(validated.definition, {}, opts());

          const expected = modelSkipped(model);
          const engine = new Set(trace.filter((t) => t.outcome === 'skipped' && t.type === 'transform').map((t) => t.node));
          expect([...engine].sort()).toEqual([...expected].map(name).sort());
          const answered = outputs.flatMap((list, k) => {
            const ran = list.find((i) => !expected.has(i));
            return ran === undefined ? [] : [[`out${k}`, ran === 0 ? 1 : name(ran)]];
          });
          expect(result).toEqual({ status: 'completed', outputs: Object.fromEntries(answered) });
        },
      ),
      { numRuns: 200 },
    );
  });
});
