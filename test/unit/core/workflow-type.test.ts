/**
 * Which state machine a version's executions run on (functions/core/workflow-type.ts): Express
 * unless anything could outlast what Express leaves an execution, read from the node registry,
 * so a kind added later is covered by its own `waits` and `longestMs`.
 */
import { kindOfType, NODE_KINDS, NODE_TYPES, type PipelineNode } from '../../../functions/core/nodes';
import { validateDefinition } from '../../../functions/core/pipeline';
import type { PipelineDefinition } from '../../../functions/core/types';
import { executionTimeoutMsOf, longestPathMs, workflowFor } from '../../../functions/core/workflow-type';
import { EXPRESS_MAX_EXECUTION_TIMEOUT_MS } from '../../../lib/workflow-budget';

const MAX = EXPRESS_MAX_EXECUTION_TIMEOUT_MS;

function definition(nodes: Record<string, unknown>, extra: Record<string, unknown> = {}): PipelineDefinition {
  const checked = validateDefinition({ ...extra, nodes: { x: { type: 'input', value_type: 'string', value: 'a' }, ...nodes } });
  if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
  return checked.definition;
}

const http = (inputs: string[], timeoutMs = 30_000) => ({
  type: 'http',
  method: 'GET',
  url: 'https://api.example/v1',
  inputs,
  timeout_ms: timeoutMs,
});
const out = (from: string) => ({ type: 'output', from });

describe('workflowFor', () => {
  it('runs a pipeline that never waits and ends well within the allowance on Express', () => {
    const def = definition({ t: { type: 'transform', inputs: ['x'], expression: "'Hello, ' & x" }, o: out('t') });
    expect(workflowFor(def, MAX)).toEqual({ type: 'express', reason: `no node waits and it ends within ${MAX} ms` });
  });

  it.each([
    ['a delay past a second', { type: 'delay', inputs: ['x'], ms: 1_001 }],
    [
      'a polled job',
      {
        type: 'http',
        method: 'POST',
        url: 'https://api.example/v1/jobs',
        inputs: ['x'],
        poll: { url: "'https://api.example/v1/jobs/' & id", done: 'done' },
      },
    ],
  ])('runs a pipeline with %s on Standard, naming the node', (_what, node) => {
    const def = definition({ n: node, o: out('n') });
    expect(workflowFor(def, MAX)).toEqual({ type: 'standard', reason: expect.stringContaining("node 'n'") as unknown as string });
  });

  it('keeps a delay of a second or less inside the step, on Express', () => {
    expect(workflowFor(definition({ n: { type: 'delay', inputs: ['x'], ms: 1_000 }, o: out('n') }), MAX).type).toBe('express');
  });

  it('runs on Standard a definition whose timeout_ms is past the allowance, and on Express one at it', () => {
    const nodes = { o: out('x') };
    expect(workflowFor(definition(nodes, { timeout_ms: MAX + 1 }), MAX)).toMatchObject({
      type: 'standard',
      reason: `timeout_ms ${MAX + 1} is more than an Express execution allows (${MAX} ms)`,
    });
    expect(workflowFor(definition(nodes, { timeout_ms: MAX }), MAX).type).toBe('express');
  });

  it('runs on Standard a chain of calls whose time-outs add up past the allowance, the longest chain deciding, not the sum of all', () => {
    // Six calls of 30 s one after another: 180 s, past 170 s.
    const chain = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`c${i}`, http([i === 0 ? 'x' : `c${i - 1}`])]));
    expect(longestPathMs(definition({ ...chain, o: out('c5') }))).toBe(180_000);
    expect(workflowFor(definition({ ...chain, o: out('c5') }), MAX)).toMatchObject({
      type: 'standard',
      reason: expect.stringContaining('180000 ms'),
    });
    // Six calls of 30 s side by side: 30 s.
    const fan = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`c${i}`, http(['x'])]));
    expect(longestPathMs(definition({ ...fan, o: out('c5') }))).toBe(30_000);
    expect(workflowFor(definition({ ...fan, o: out('c5') }), MAX).type).toBe('express');
  });

  it("follows every registered kind's own waits and longestMs (a kind added later is covered by its entry)", () => {
    for (const type of NODE_TYPES) {
      const example = NODE_KINDS[type].example as unknown as PipelineNode;
      const def = {
        nodes: {
          a: { type: 'input', value_type: 'string', value: 'x' },
          b: { type: 'input', value_type: 'string', value: 'y' },
          n: example,
        },
      } as unknown as PipelineDefinition;
      const kind = kindOfType(type);
      const expected = kind.waits(example) || kind.longestMs(example) > MAX ? 'standard' : 'express';
      expect([type, workflowFor(def, MAX).type]).toEqual([type, expected]);
    }
  });
});

describe('executionTimeoutMsOf', () => {
  it('takes the definition’s own time-out, else the default, and holds an Express execution within the allowance', () => {
    expect(executionTimeoutMsOf({ timeout_ms: 60_000 }, 'express', 300_000, MAX)).toBe(60_000);
    expect(executionTimeoutMsOf({}, 'express', 300_000, MAX)).toBe(MAX);
    expect(executionTimeoutMsOf({}, 'standard', 300_000, MAX)).toBe(300_000);
    expect(executionTimeoutMsOf({ timeout_ms: 86_400_000 }, 'standard', 300_000, MAX)).toBe(86_400_000);
    // A default raised after an Express version was pushed does not outlive the machine.
    expect(executionTimeoutMsOf({}, 'express', 3_600_000, MAX)).toBe(MAX);
  });
});
