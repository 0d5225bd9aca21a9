/** The asynchronous side: runner, state-machine tasks and callback delivery. */
import * as v from 'valibot';
import { openSecret } from '../core/api-key';
import { buildCallbackPayload, nextRetryDelayMs, signWebhook } from '../core/callback';
import { runPipeline } from '../core/engine';
import { isTerminal } from '../core/transitions';
import type { CallbackDelivery, Execution } from '../core/types';
import type { Deps } from '../adapters/deps';
import { epochSeconds } from '../adapters/dynamo';
import { afterTerminal } from './caller.service';
import { newDelivery } from './delivery';

export const ExecutionMessage = v.object({ execution_id: v.pipe(v.string(), v.uuid()) });
export const CallbackMessage = v.object({
  execution_id: v.pipe(v.string(), v.uuid()),
  /** When the next attempt is due (ms since epoch): SQS delays a message 15 minutes at most. */
  due_at: v.optional(v.number()),
});

/** Seconds the state machine allows the run task: the engine's own limit plus room to record it. */
export const workflowTimeoutSeconds = (d: Deps): number => Math.ceil(d.config.executionTimeoutMs / 1000) + 30;

/** One executions-queue message → one state-machine execution named by the execution id. */
export async function startWorkflow(d: Deps, executionId: string): Promise<'started' | 'skipped'> {
  const e = await d.executions.get(executionId, d.clock.now(), true);
  if (!e || e.status !== 'pending') return 'skipped';
  await d.workflow.start(executionId, { execution_id: executionId, timeout_seconds: workflowTimeoutSeconds(d) });
  return 'started';
}

/** MarkRunning: pending → running, once. A duplicate start, or a cancelled execution, does not proceed. */
export async function taskStart(d: Deps, executionId: string): Promise<{ proceed: boolean }> {
  const t = await d.executions.transition(executionId, 'running', { started_at: d.clock.now().toISOString() });
  return { proceed: t.ok };
}

const callbackFields = (e: Execution): { callback_delivery?: CallbackDelivery } =>
  e.callback ? { callback_delivery: newDelivery(e.execution_id) } : {};

/**
 * RunNodes: evaluates the version's DAG and records the outcome with a conditional write.
 * While it runs it watches for a cancel (a poll of the record), so cancelled work stops
 * promptly on AWS too, where stopping the state machine does not stop a running Lambda.
 */
export async function taskRun(d: Deps, executionId: string): Promise<{ status: string }> {
  const e = await d.executions.get(executionId, d.clock.now(), true);
  if (!e) return { status: 'missing' };
  if (e.status !== 'running') {
    if (isTerminal(e.status)) await afterTerminal(d, e);
    return { status: e.status };
  }
  const version = await d.pipelines.getVersion(e.pipeline_id, e.version);
  if (!version) return finish(d, e, 'failed', { error_message: `Pipeline version ${e.version} is no longer available` });

  const abort = new AbortController();
  const stopWatching = watchForCancel(d, executionId, abort);
  const result = await runPipeline(version.definition, e.inputs, {
    http: d.http,
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
): Promise<{ status: string }> {
  const t = await d.executions.transition(e.execution_id, to, {
    ...set,
    completed_at: d.clock.now().toISOString(),
    ...callbackFields(e),
  });
  if (t.ok) {
    await afterTerminal(d, t.execution);
    return { status: to };
  }
  // Someone else (a cancel) reached a terminal status first; make sure its follow-ups happened.
  if (t.current && isTerminal(t.current.status)) await afterTerminal(d, t.current);
  return { status: t.current?.status ?? 'missing' };
}

export const TaskError = v.object({
  Error: v.optional(v.string()),
  Cause: v.optional(v.string()),
});

/** A readable message from a state-machine error, without internals. */
export function failureMessage(d: Deps, err: v.InferOutput<typeof TaskError> | undefined): string {
  if (err?.Error === 'States.Timeout') {
    return `Execution timed out after ${Math.round(d.config.executionTimeoutMs / 1000)} s`;
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
export async function failInterrupted(d: Deps, e: Execution): Promise<void> {
  if (e.status !== 'running') return;
  await finish(d, e, 'failed', { error_message: 'Execution was interrupted by a service restart and did not finish' });
}

/** One attempt to deliver an execution's callback, and the bookkeeping that follows. */
export async function dispatchCallback(
  d: Deps,
  msg: v.InferOutput<typeof CallbackMessage>,
  random: () => number = Math.random,
): Promise<'delivered' | 'retry' | 'dead_lettered' | 'skipped' | 'deferred'> {
  const now = d.clock.now();
  if (msg.due_at !== undefined && msg.due_at > now.getTime() + 1000) {
    await d.queue.send('callbacks', msg, { delaySeconds: Math.ceil((msg.due_at - now.getTime()) / 1000) });
    return 'deferred';
  }
  const e = await d.executions.get(msg.execution_id, now, true);
  const delivery = e?.callback_delivery;
  if (!e || !e.callback || !delivery || delivery.outcome !== 'pending' || !isTerminal(e.status)) return 'skipped';
  if (delivery.next_attempt_at && Date.parse(delivery.next_attempt_at) > now.getTime() + 1000) {
    // A duplicate message arrived before the retry is due: the message that is due will come.
    return 'skipped';
  }

  const deployment = e.deployment_id ? await d.deployments.get(e.deployment_id) : null;
  const attempts = delivery.attempts + 1;
  const base = { ...delivery, attempts, last_attempt_at: now.toISOString() };
  if (!deployment || deployment.status !== 'live') {
    await d.executions.recordDelivery(e.execution_id, delivery.attempts, {
      ...base,
      outcome: 'dead_lettered',
      last_error: 'the deployment was deleted',
      next_attempt_at: null,
    });
    return 'dead_lettered';
  }
  const { masterKey } = await d.secrets.material();
  const nowSec = epochSeconds(now);
  const secrets = deployment.signing_secrets
    .filter((s) => s.expires_at === null || s.expires_at > nowSec)
    .map((s) => openSecret(s.sealed, masterKey));
  const body = JSON.stringify(buildCallbackPayload(e));
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'pipegate-callbacks/1',
    'x-pipegate-status': e.status,
    ...signWebhook(body, secrets, delivery.webhook_id, now),
  };

  let status: number | null = null;
  let error: string | null = null;
  try {
    const res = await d.http({ method: 'POST', url: e.callback, headers, body, timeoutMs: d.config.callbackTimeoutMs, maxResponseBytes: 65_536 });
    status = res.status;
    if (res.status < 200 || res.status > 299) error = `HTTP ${res.status}`;
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
  }

  if (error === null) {
    await d.executions.recordDelivery(e.execution_id, delivery.attempts, { ...base, outcome: 'delivered', last_status: status, last_error: null, next_attempt_at: null });
    return 'delivered';
  }
  const delay = nextRetryDelayMs(attempts, d.config.callbackScheduleSeconds, random);
  if (delay === null) {
    await d.executions.recordDelivery(e.execution_id, delivery.attempts, { ...base, outcome: 'dead_lettered', last_status: status, last_error: error, next_attempt_at: null });
    d.log.warn('callback dead-lettered', { execution_id: e.execution_id, attempts });
    return 'dead_lettered';
  }
  const due = now.getTime() + delay;
  const recorded = await d.executions.recordDelivery(e.execution_id, delivery.attempts, {
    ...base,
    outcome: 'pending',
    last_status: status,
    last_error: error,
    next_attempt_at: new Date(due).toISOString(),
  });
  // Only the dispatcher that recorded this attempt schedules the next one: no duplicate chains.
  if (recorded) await d.queue.send('callbacks', { execution_id: e.execution_id, due_at: due }, { delaySeconds: Math.ceil(delay / 1000) });
  return 'retry';
}
