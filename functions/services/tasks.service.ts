/** The state machine's tasks: MarkRunning, RunNodes and MarkFailed. */
import * as v from 'valibot';
import { runPipeline, timeoutMessage } from '../core/engine';
import { referencedSecretNames } from '../core/owner-secrets';
import { isTerminal } from '../core/transitions';
import type { CallbackDelivery, Execution } from '../core/types';
import type { Deps } from '../adapters/deps';
import { isStoreUnavailable } from '../core/ports';
import { afterTerminal } from './caller.service';
import { newDelivery } from './delivery';

export { ExecutionMessage } from './messages';

/**
 * MarkRunning: pending → running, once. A duplicate start, or a cancelled execution, does not
 * proceed. `workflowId` names the state-machine execution: when a retry of this very task finds
 * the execution already running by it (the first attempt's write landed, its reply was lost),
 * it proceeds, or the record would say `running` with nothing running it.
 */
export async function taskStart(d: Deps, executionId: string, workflowId?: string): Promise<{ proceed: boolean }> {
  const t = await d.executions.transition(executionId, 'running', {
    started_at: d.clock.now().toISOString(),
    ...(workflowId ? { run_by: workflowId } : {}),
  });
  if (t.ok) return { proceed: true };
  const mine = workflowId !== undefined && t.current?.status === 'running' && t.current.run_by === workflowId;
  return { proceed: mine };
}

const callbackFields = (e: Execution): { callback_delivery?: CallbackDelivery } =>
  e.callback ? { callback_delivery: newDelivery(e.execution_id) } : {};

/**
 * RunNodes: evaluates the version's DAG and records the outcome with a conditional write.
 * While it runs it watches for a cancel (a poll of the record), so cancelled work stops
 * promptly on AWS too, where stopping the state machine does not stop a running Lambda.
 */
export async function taskRun(d: Deps, executionId: string): Promise<{ status: string }> {
  const e = await whileUnavailable(() => d.executions.get(executionId, d.clock.now(), true));
  if (!e) return { status: 'missing' };
  if (e.status !== 'running') {
    if (isTerminal(e.status)) await afterTerminal(d, e);
    return { status: e.status };
  }
  const version = await whileUnavailable(() => d.pipelines.getVersion(e.pipeline_id, e.version));
  if (!version) return finish(d, e, 'failed', { error_message: `Pipeline version ${e.version} is no longer available` });

  // Only a pipeline that names secrets reads them (and the key material that opens them).
  const names = referencedSecretNames(version.definition);
  const secrets = names.length > 0 ? await whileUnavailable(() => d.ownerSecrets.values(names)) : undefined;

  const abort = new AbortController();
  const stopWatching = watchForCancel(d, executionId, abort);
  const result = await runPipeline(version.definition, e.inputs, {
    http: d.http,
    ...(secrets === undefined ? {} : { secrets }),
    timeoutMs: d.config.executionTimeoutMs,
    signal: abort.signal,
  }).finally(stopWatching);
  if (result.status === 'cancelled') return { status: 'cancelled' };
  if (result.status === 'completed') return finish(d, e, 'completed', { outputs: result.outputs });
  return finish(d, e, 'failed', { error_message: result.error_message });
}

/** Polls the record while the engine works and aborts it once the execution is no longer running. */
function watchForCancel(d: Deps, executionId: string, abort: AbortController): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const tick = async () => {
    const now = await d.executions.get(executionId, d.clock.now(), true).catch(() => null);
    if (stopped) return;
    if (now && now.status !== 'running') abort.abort();
    else timer = setTimeout(tick, d.config.cancelPollMs);
  };
  timer = setTimeout(tick, d.config.cancelPollMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

async function finish(
  d: Deps,
  e: Execution,
  to: 'completed' | 'failed',
  set: { outputs?: Execution['outputs']; error_message?: string },
): Promise<{ status: string; won: boolean }> {
  const completedAt = d.clock.now().toISOString();
  const t = await whileUnavailable(() => d.executions.transition(e.execution_id, to, { ...set, completed_at: completedAt, ...callbackFields(e) }));
  if (t.ok) {
    await afterTerminal(d, t.execution);
    return { status: to, won: true };
  }
  // Someone else (a cancel) reached a terminal status first; make sure its follow-ups happened.
  if (t.current && isTerminal(t.current.status)) await afterTerminal(d, t.current);
  return { status: t.current?.status ?? 'missing', won: false };
}

const FINISH_RETRY_DELAYS_MS = [100, 250, 500, 1000, 2000, 4000];

/**
 * A store that is briefly unreachable must not turn a run into a failed one: RunNodes' reads
 * and its final write wait for it (the state machine retries only the Lambda service's own
 * errors there, since re-running the engine would repeat its HTTP calls). Safe to repeat: reads,
 * and a write conditional on `running`.
 */
async function whileUnavailable<T>(write: () => Promise<T>): Promise<T> {
  for (const delay of FINISH_RETRY_DELAYS_MS) {
    try {
      return await write();
    } catch (err) {
      if (!isStoreUnavailable(err)) throw err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
  return write();
}

export const TaskError = v.object({
  Error: v.optional(v.string()),
  Cause: v.optional(v.string()),
});

/** A readable message from a state-machine error, without internals. */
export function failureMessage(d: Deps, err: v.InferOutput<typeof TaskError> | undefined): string {
  if (err?.Error === 'States.Timeout') {
    return timeoutMessage(d.config.executionTimeoutMs);
  }
  return `Execution failed: ${err?.Error ?? 'unknown error'}`;
}

/** MarkFailed: whatever state the execution was left in by a failing step, it ends failed, once. */
export async function taskFail(
  d: Deps,
  executionId: string,
  err: v.InferOutput<typeof TaskError> | undefined,
): Promise<{ status: string }> {
  const e = await d.executions.get(executionId, d.clock.now(), true);
  if (!e) return { status: 'missing' };
  if (isTerminal(e.status)) {
    await afterTerminal(d, e);
    return { status: e.status };
  }
  if (e.status === 'pending') {
    // pending → failed is not a legal move; a run that never started goes through running.
    await d.executions.transition(executionId, 'running', { started_at: d.clock.now().toISOString() });
  }
  return finish(d, e, 'failed', { error_message: failureMessage(d, err) });
}

/**
 * Interrupted work found at start-up (local runtime) or by a sweeper: a running execution
 * whose process died is finished as failed, saying so.
 */
export async function failInterrupted(d: Deps, e: Execution, by = 'a service restart'): Promise<void> {
  await failRunning(d, e, `Execution was interrupted by ${by} and did not finish`);
}

/** A running execution ends failed with this message (one conditional write), callbacks sent; false if it had already ended. */
export async function failRunning(d: Deps, e: Execution, message: string): Promise<boolean> {
  if (e.status !== 'running') return false;
  const out = await finish(d, e, 'failed', { error_message: message });
  return out.status === 'failed' && out.won;
}

