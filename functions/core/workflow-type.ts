/**
 * Which state machine a pipeline version's executions run on, decided once when the version is
 * pushed and stored with it. Express costs a dollar per million executions but ends every
 * execution at five minutes; Standard runs up to a year, is billed per state transition, and
 * can be stopped. A version runs on Standard when anything in it could outlast what Express
 * leaves an execution (`expressMaxMs`, lib/workflow-budget.ts): a node that may wait for the
 * state machine (the registry's `waits`: a poll, a delay past a second, a wait for an event), a
 * chain of nodes whose longest times (the registry's `longestMs`) add up past it, or a
 * definition's own `timeout_ms` past it. New node kinds are covered by their registry entries.
 */
import { kindOf, nodeDependencies } from './nodes';
import type { PipelineDefinition, WorkflowType } from './types';

export const WORKFLOW_TYPES = ['express', 'standard'] as const satisfies readonly WorkflowType[];

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
  const waiting = Object.entries(def.nodes).find(([, node]) => kindOf(node).waits(node));
  if (waiting) {
    const [id, node] = waiting;
    return { type: 'standard', reason: `node '${id}' (${node.type}) may wait for the state machine` };
  }
  if (def.timeout_ms !== undefined && def.timeout_ms > expressMaxMs) {
    return { type: 'standard', reason: `timeout_ms ${def.timeout_ms} is more than an Express execution allows (${expressMaxMs} ms)` };
  }
  const path = longestPathMs(def);
  if (path > expressMaxMs) {
    return {
      type: 'standard',
      reason: `its nodes may take ${path} ms one after another, more than an Express execution allows (${expressMaxMs} ms)`,
    };
  }
  return { type: 'express', reason: `no node waits and it ends within ${expressMaxMs} ms` };
}

/**
 * An execution's time-out: its definition's `timeout_ms`, else the configured default, and on
 * Express never past what an Express execution allows (a default raised after the version was
 * pushed does not make an Express execution outlive its state machine).
 */
export function executionTimeoutMsOf(
  def: Pick<PipelineDefinition, 'timeout_ms'>,
  workflow: WorkflowType,
  defaultMs: number,
  expressMaxMs: number,
): number {
  const asked = def.timeout_ms ?? defaultMs;
  return workflow === 'express' ? Math.min(asked, expressMaxMs) : asked;
}
