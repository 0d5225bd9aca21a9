/**
 * Which state machine a pipeline version's executions run on, decided once when the version is
 * pushed and stored with it. Express costs a dollar per million executions and its duration, but
 * ends every execution at five minutes; Standard runs up to a year, can be stopped, and bills
 * every state transition. A version runs on Standard when its executions could outlast what
 * Express leaves an execution (`expressMaxMs`, lib/workflow-budget.ts): when its definition asks
 * for a longer `timeout_ms`, or, without one, when its nodes one after another could take longer,
 * each at its registry's `longestMs` (a poll's own time-out, a wait's, a delay, a call's). A node
 * that waits (the registry's `waits`) within that time waits in an Express execution's Wait
 * state, billed by the second; new node kinds are covered by their registry entries.
 */
import { kindOf, nodeDependencies } from './nodes';
import type { PipelineDefinition, WorkflowType } from './types';

export interface WorkflowChoice {
  type: WorkflowType;
  /** Why, in an owner's words (the push answer carries it). */
  reason: string;
}

/** The longest the pipeline's nodes can take one after another: the longest dependency chain, each node at its `longestMs`. */
export function longestPathMs(def: PipelineDefinition): number {
  const memo = new Map<string, number>();
  const longest = (id: string, depth: number): number => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    const node = def.nodes[id];
    // A validated definition has no cycle and no missing reference; the depth guard holds anyway.
    if (node === undefined || depth > Object.keys(def.nodes).length) return 0;
    const before = Math.max(0, ...nodeDependencies(node).map((dep) => longest(dep, depth + 1)));
    const total = before + kindOf(node).longestMs(node);
    memo.set(id, total);
    return total;
  };
  return Math.max(0, ...Object.keys(def.nodes).map((id) => longest(id, 0)));
}

/** Express unless the pipeline could outlast `expressMaxMs`; the reason names what decided it. */
export function workflowFor(def: PipelineDefinition, expressMaxMs: number): WorkflowChoice {
  if (def.timeout_ms !== undefined) {
    return def.timeout_ms > expressMaxMs
      ? { type: 'standard', reason: `its timeout_ms ${def.timeout_ms} is more than an Express execution allows (${expressMaxMs} ms)` }
      : { type: 'express', reason: `its timeout_ms ${def.timeout_ms} fits an Express execution (${expressMaxMs} ms)` };
  }
  const path = longestPathMs(def);
  if (path <= expressMaxMs) {
    return {
      type: 'express',
      reason: `its nodes end within ${path} ms one after another, which fits an Express execution (${expressMaxMs} ms)`,
    };
  }
  // Name the node that makes it long: the longest of all.
  const [id, node] = Object.entries(def.nodes).reduce((a, b) => (kindOf(b[1]).longestMs(b[1]) > kindOf(a[1]).longestMs(a[1]) ? b : a));
  return {
    type: 'standard',
    reason:
      `its nodes may take ${path} ms one after another, more than an Express execution allows (${expressMaxMs} ms): ` +
      `node '${id}' (${node.type}) may ${kindOf(node).waits(node) ? 'wait' : 'take'} up to ${kindOf(node).longestMs(node)} ms`,
  };
}
