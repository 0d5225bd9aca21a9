/**
 * Which state machine a version's executions run on (functions/core/workflow-type.ts): Express
 * unless anything could outlast what Express leaves an execution, read from the node registry,
 * so a kind added later is covered by its own `waits` and `longestMs`.
 */
import { kindOfType, NODE_KINDS, NODE_TYPES, type PipelineNode } from '../../../functions/core/nodes';
import { validateDefinition } from '../../../functions/core/pipeline';
import type { PipelineDefinition } from '../../../functions/core/types';
import { longestPathMs, workflowFor } from '../../../functions/core/workflow-choice';
import { executionTimeoutMsOf } from '../../../functions/core/workflow-type';
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
    expect(workflowFor(def, MAX)).toEqual({
      type: 'express',
      reason: `its nodes end within 0 ms one after another, which fits an Express execution (${MAX} ms)`,
    });
  });

  it.each([
    ['a delay past the allowance', { type: 'delay', inputs: ['x'], ms: MAX + 1 }, MAX + 1],
    [
      'a polled job (its own time-out: an hour by default)',
      {
        type: 'http',
        method: 'POST',
        url: 'https://api.example/v1/jobs',
        inputs: ['x'],
        poll: { url: "'https://api.example/v1/jobs/' & id", done: 'done' },
      },
      3_600_000,
    ],
  ])('runs a pipeline with %s on Standard, naming the node and how long it may wait', (_what, node, ms) => {
    const def = definition({ n: node, o: out('n') });
    expect(workflowFor(def, MAX)).toEqual({
      type: 'standard',
      reason: `its nodes may take ${ms} ms one after another, more than an Express execution allows (${MAX} ms): node 'n' (${node.type}) may wait up to ${ms} ms`,
    });
  });

  it("waits in an Express execution's Wait state when the wait fits it: a short delay, a job with a short time-out", () => {
    const delay = definition({ n: { type: 'delay', inputs: ['x'], ms: 2_000 }, o: out('n') });
    const job = definition({
      n: {
        type: 'http',
        method: 'POST',
        url: 'https://api.example/v1/jobs',
        inputs: ['x'],
        poll: { url: "'https://api.example/v1/jobs/' & id", done: 'done', timeout_ms: 120_000 },
      },
      o: out('n'),
    });
    expect(workflowFor(delay, MAX).type).toBe('express');
    expect(workflowFor(job, MAX).type).toBe('express');
  });

  it("follows the definition's own timeout_ms when it has one: past the allowance, Standard; within it, Express whatever its nodes", () => {
    const hourJob = {
      n: {
        type: 'http',
        method: 'POST',
        url: 'https://api.example/v1/jobs',
        inputs: ['x'],
        poll: { url: "'https://api.example/v1/jobs/' & id", done: 'done' },
      },
      o: out('n'),
    };
    expect(workflowFor(definition({ o: out('x') }, { timeout_ms: MAX + 1 }), MAX)).toEqual({
      type: 'standard',
      reason: `its timeout_ms ${MAX + 1} is more than an Express execution allows (${MAX} ms)`,
    });
    // The execution ends at its time-out, whatever its nodes could take.
    expect(workflowFor(definition(hourJob, { timeout_ms: MAX }), MAX)).toEqual({
      type: 'express',
      reason: `its timeout_ms ${MAX} fits an Express execution (${MAX} ms)`,
    });
  });

  it('runs on Standard a chain of calls whose time-outs add up past the allowance, the longest chain deciding, not the sum of all', () => {
    // Six calls of 30 s one after another: 180 s, past 170 s.
    const chain = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`c${i}`, http([i === 0 ? 'x' : `c${i - 1}`])]));
    expect(longestPathMs(definition({ ...chain, o: out('c5') }))).toBe(180_000);
    expect(workflowFor(definition({ ...chain, o: out('c5') }), MAX)).toMatchObject({
      type: 'standard',
      reason: expect.stringContaining('take up to 30000 ms') as unknown as string,
    });
    // Six calls of 30 s side by side: 30 s.
    const fan = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`c${i}`, http(['x'])]));
    expect(longestPathMs(definition({ ...fan, o: out('c5') }))).toBe(30_000);
    expect(workflowFor(definition({ ...fan, o: out('c5') }), MAX).type).toBe('express');
  });

  it("follows every registered kind's own longestMs (a kind added later is covered by its entry)", () => {
    for (const type of NODE_TYPES) {
      const example = NODE_KINDS[type].example as unknown as PipelineNode;
      const def = {
        nodes: {
          a: { type: 'input', value_type: 'string', value: 'x' },
          b: { type: 'input', value_type: 'string', value: 'y' },
          n: example,
        },
      } as unknown as PipelineDefinition;
      const expected = kindOfType(type).longestMs(example) > MAX ? 'standard' : 'express';
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
