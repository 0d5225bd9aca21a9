/**
 * The one execution lifecycle: every move of an execution (pending → running → completed |
 * failed | cancelled) and what must follow a terminal move (the run pointer, the callback, a
 * waiting caller's wake-up, the workflow's stop). Callers' cancel, the owner's cancel, the
 * state machine's tasks, restart recovery and the sweeper all come here, so a repair goes
 * through exactly the conditional writes the normal path uses.
 */
import { isStoreUnavailable } from '../core/ports';
import { isTerminal, type ExecutionStatus } from '../core/transitions';
import type { CallbackDelivery, Execution } from '../core/types';
import type { Deps } from '../adapters/deps';
import { errorFields } from '../adapters/logger';
import { newDelivery } from './delivery';
import { stopWorkflows } from './workflows';

export type Finished = { ok: true; execution: Execution } | { ok: false; status: ExecutionStatus | 'missing' };

/** The delivery record a terminal move writes when the execution has a callback. */
const callbackFields = (e: Execution): { callback_delivery?: CallbackDelivery } =>
  e.callback ? { callback_delivery: newDelivery(e.execution_id) } : {};

/**
 * pending → running, once. A duplicate start, or a cancelled execution, does not proceed;
 * a retry by the same workflow (`runBy`) whose first write landed does.
 */
export async function markRunning(d: Deps, executionId: string, runBy?: string, gen = 0): Promise<{ proceed: boolean }> {
  const at = d.clock.now().toISOString();
  if (gen > 0) {
    // A workflow of a later generation (a wake): the execution is running already; it proceeds
    // unless a still later wake came first (one workflow name per generation).
    const e = await d.executions.get(executionId, d.clock.now(), true);
    if (e?.status !== 'running' || (e.gen ?? 0) > gen) return { proceed: false };
    // A re-run owed after a crash (the sweeper at a local start-up) is claimed as any other.
    if (e.rerun_at && runBy !== undefined) return { proceed: await d.sweep.claimRerun(executionId, runBy) };
    return { proceed: true };
  }
  const t = await d.executions.transition(executionId, 'running', { started_at: at, ...(runBy ? { run_by: runBy } : {}) });
  if (t.ok) {
    // Event streams show the move at once; waiters for a terminal status just read again.
    d.completions.notify(executionId);
    return { proceed: true };
  }
  if (runBy === undefined || t.current?.status !== 'running') return { proceed: false };
  if (t.current.run_by === runBy) return { proceed: true };
  // A re-run owed after a crash (sweeper, startup): the first workflow to claim it runs it.
  return { proceed: Boolean(t.current.rerun_at) && (await d.sweep.claimRerun(executionId, runBy)) };
}

/**
 * running → completed | failed, with one conditional write that waits out a briefly
 * unreachable store. When another move won first (a cancel), its follow-ups are made sure of.
 */
export async function finishExecution(
  d: Deps,
  e: Execution,
  to: 'completed' | 'failed',
  set: {
    outputs?: Execution['outputs'];
    output_assets?: Execution['output_assets'];
    error_message?: string;
    caller_error_message?: string;
    trace?: Execution['trace'];
    trace_truncated?: boolean;
    progress?: string;
  },
): Promise<Finished> {
  const completedAt = d.clock.now().toISOString();
  const t = await whileStoreUnavailable(() =>
    d.executions.transition(e.execution_id, to, { ...set, completed_at: completedAt, ...callbackFields(e) }),
  );
  if (t.ok) {
    await afterTerminal(d, t.execution);
    await countUsage(d, t.execution);
    return t;
  }
  if (t.current && isTerminal(t.current.status)) await afterTerminal(d, t.current);
  return { ok: false, status: t.current?.status ?? 'missing' };
}

/**
 * Fails an open execution with `message`, whatever left it open: a failing step, a time-out,
 * a process that died, a sweeper that found it past its deadline. A pending execution goes
 * through running first (pending → failed is not a legal move). A terminal one is left as it
 * is, its follow-ups made sure of.
 */
export async function failExecution(d: Deps, e: Execution, message: string): Promise<Finished> {
  if (isTerminal(e.status)) {
    await afterTerminal(d, e);
    return { ok: false, status: e.status };
  }
  if (e.status === 'pending') await markRunning(d, e.execution_id);
  return finishExecution(d, e, 'failed', { error_message: message });
}

/** A running execution ends failed with this message, callbacks sent; false if it was not running or another move won. */
export async function failRunning(d: Deps, e: Execution, message: string): Promise<boolean> {
  if (e.status !== 'running') return false;
  return (await finishExecution(d, e, 'failed', { error_message: message })).ok;
}

/** A running execution whose process died (a restart, a shutdown past its drain time). */
export const failInterrupted = (d: Deps, e: Execution, by = 'a service restart', why?: string): Promise<boolean> =>
  failRunning(d, e, `Execution was interrupted by ${by} and did not finish${why ? `; ${why}` : ''}`);

/**
 * Cancels a pending or running execution at once (one conditional write), then stops its
 * work: a Standard workflow is stopped (asleep in a Wait between polls or waiting for an event,
 * it bills no further transition), and a running engine sees the status and aborts. An Express
 * workflow cannot be stopped: its next step finds the execution cancelled and ends it.
 */
export async function cancelExecution(d: Deps, e: Execution): Promise<Finished> {
  const t = await d.executions.transition(e.execution_id, 'cancelled', {
    completed_at: d.clock.now().toISOString(),
    ...callbackFields(e),
  });
  if (!t.ok) return { ok: false, status: t.current?.status ?? 'missing' };
  await afterTerminal(d, t.execution);
  await countUsage(d, t.execution);
  await stopWorkflows(d, { ...e, ...t.execution }, 'cancelled');
  return t;
}

/**
 * What follows any terminal write: waiting callers wake, a run's pointer on its pipeline moves,
 * an owed callback is queued. Idempotent, so whoever finds a terminal execution may call it.
 */
export async function afterTerminal(d: Deps, e: Execution): Promise<void> {
  d.completions.notify(e.execution_id);
  if (e.kind === 'run' && isTerminal(e.status)) {
    await d.pipelines.recordRunFinished(e.pipeline_id, {
      run_id: e.execution_id,
      status: e.status,
      version: e.version,
      created_at: e.created_at,
    });
  }
  if (e.callback && e.callback_delivery?.outcome === 'pending') {
    await d.queue.send('callbacks', { execution_id: e.execution_id });
  }
}

/**
 * The usage counter of a finished API execution. Only the writer that won the terminal move
 * counts (never a repair that follows up someone else's), so nothing is counted twice. A store
 * that refuses the write for now (throttled, unavailable: the ADD did not happen, so a retry
 * cannot count twice) is waited out like the terminal write; one that still refuses is an
 * error in the log, naming the execution the deployment's usage now misses, not a warning.
 */
async function countUsage(d: Deps, e: Execution): Promise<void> {
  await whileStoreUnavailable(() => d.usage.countFinished(e)).catch((err: unknown) =>
    d.log.error("usage not counted: the deployment's usage misses this execution", {
      execution_id: e.execution_id,
      deployment_id: e.deployment_id,
      ...errorFields(err),
    }),
  );
}

const STORE_RETRY_DELAYS_MS = [100, 250, 500, 1000, 2000, 4000];

/**
 * A store that is briefly unreachable must not turn a run into a failed one: the engine's reads
 * and its final write wait for it (the state machine retries only the Lambda service's own
 * errors around RunNodes, since re-running the engine would repeat its HTTP calls). Safe to
 * repeat: reads, and writes conditional on the status.
 */
export async function whileStoreUnavailable<T>(op: () => Promise<T>): Promise<T> {
  for (const delay of STORE_RETRY_DELAYS_MS) {
    try {
      return await op();
    } catch (err) {
      if (!isStoreUnavailable(err)) throw err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
  return op();
}
