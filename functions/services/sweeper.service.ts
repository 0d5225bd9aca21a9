/**
 * The sweeper: finds executions left open by a lost message, a dead-lettered one, a state
 * machine that ended early or a process that died, and carries each to where the normal path
 * would have. It reads the sparse `sweep` index (never a Scan), looks at a bounded number of
 * entries per pass, and repairs only through the same conditional writes as the normal path,
 * so it is safe to run beside it, twice at once, or again after a crash. The same use case
 * runs on AWS (a scheduled Lambda) and in the local runtime (a timer, and at start-up).
 */
import { isTerminal } from '../core/transitions';
import type { Execution } from '../core/types';
import type { Deps } from '../adapters/deps';
import type { SweepKind } from '../core/ports';
import { errorFields } from '../adapters/logger';
import { EXPRESS_MAX_EXECUTION_TIMEOUT_MS, INTERRUPTED_RERUNS } from '../../lib/workflow-budget';
import { failInterrupted, failRunning } from './lifecycle.service';
import { executionMessage } from './enqueue';
import { executionTimeoutMs } from './execution-timeout';
import { workflowOf } from './workflows';

export interface SweepReport {
  /** Index entries looked at. */
  examined: number;
  /** `pending` executions with no progress, queued again. */
  requeued: number;
  /** `running` executions past their time-out plus grace, failed as timed out. */
  timedOut: number;
  /** `running` executions found at a local start-up, whose process had died, queued to run again from the start. */
  rerun: number;
  /** Of those, the ones out of re-runs (or whose pipeline opted out): failed as interrupted. */
  interrupted: number;
  /** Owed callbacks whose message was lost, queued again. */
  callbacksRequeued: number;
  /** Settled executions whose index marker a crash had left behind, taken off. */
  markersCleared: number;
  /** Entries whose repair failed (left for the next pass). */
  errors: number;
  /** True when this pass reached the end of the index (the next one starts from the beginning). */
  complete: boolean;
  /** Kinds whose end this pass did not reach. */
  unfinished: SweepKind[];
}

export interface SweepOptions {
  /**
   * The local runtime's start-up, before anything runs: every `running` execution was
   * interrupted by the process's death and every `pending` one or owed callback is queued at
   * once, whatever its age.
   */
  startup?: boolean;
  /** Index entries to look at, at most, shared between the kinds (default: PIPEGATE_SWEEP_LIMIT). */
  limit?: number;
  /** The parts of the index to look at (default both). */
  kinds?: readonly SweepKind[];
}

const KINDS: readonly SweepKind[] = ['open', 'callback'];

/** Where the previous pass stopped, per store and kind, so successive passes cover the whole index. */
const cursors = new WeakMap<object, Map<SweepKind, Record<string, unknown> | undefined>>();

const emptyReport = (): SweepReport => ({
  examined: 0,
  requeued: 0,
  timedOut: 0,
  rerun: 0,
  interrupted: 0,
  callbacksRequeued: 0,
  markersCleared: 0,
  errors: 0,
  complete: true,
  unfinished: [],
});

/** One bounded pass over the sweep index. */
export async function sweepOnce(d: Deps, opts: SweepOptions = {}): Promise<SweepReport> {
  const report = emptyReport();
  const now = d.clock.now();
  const kinds = opts.kinds ?? KINDS;
  // Split, so a long backlog of one kind cannot starve the other.
  const perKind = Math.max(1, Math.ceil((opts.limit ?? d.config.sweepLimit) / kinds.length));
  const positions = cursors.get(d.executions) ?? new Map<SweepKind, Record<string, unknown> | undefined>();
  cursors.set(d.executions, positions);
  // Nothing younger than the shortest threshold can need a repair yet (at start-up, everything can).
  const minAgeMs = opts.startup
    ? 0
    : Math.min(d.config.sweepPendingAfterSeconds * 1000, d.config.executionTimeoutMs, EXPRESS_MAX_EXECUTION_TIMEOUT_MS);
  const before = new Date(now.getTime() - minAgeMs + (opts.startup ? 1 : 0)).toISOString();

  for (const kind of kinds) {
    let budget = perKind;
    while (budget > 0) {
      const page = await d.sweep.sweepPage(kind, before, budget, positions.get(kind));
      positions.set(kind, page.next);
      budget -= page.ids.length;
      for (const id of page.ids) {
        report.examined += 1;
        try {
          await repair(d, id, now, opts, report);
        } catch (err) {
          report.errors += 1;
          d.log.error('sweeper: repair failed', { execution_id: id, ...errorFields(err) });
        }
      }
      if (!page.next) break;
    }
    if (positions.get(kind)) {
      report.complete = false;
      report.unfinished.push(kind);
    }
  }
  const repairs = report.requeued + report.timedOut + report.rerun + report.interrupted + report.callbacksRequeued + report.markersCleared;
  if (repairs > 0 || report.errors > 0) d.log.info('sweeper: pass', { ...report, unfinished: report.unfinished.join(',') });
  return report;
}

/** Passes until the whole index has been looked at once (a local start-up): bounded by what is open, not by history. */
export async function sweepAll(d: Deps, opts: SweepOptions = {}): Promise<SweepReport> {
  const total = emptyReport();
  cursors.delete(d.executions);
  let kinds: readonly SweepKind[] = opts.kinds ?? KINDS;
  for (;;) {
    const r = await sweepOnce(d, { ...opts, kinds });
    total.examined += r.examined;
    total.requeued += r.requeued;
    total.timedOut += r.timedOut;
    total.rerun += r.rerun;
    total.interrupted += r.interrupted;
    total.callbacksRequeued += r.callbacksRequeued;
    total.markersCleared += r.markersCleared;
    total.errors += r.errors;
    if (r.complete) return total;
    kinds = r.unfinished;
  }
}

async function repair(d: Deps, id: string, now: Date, opts: SweepOptions, report: SweepReport): Promise<void> {
  const e = await d.executions.get(id, now, true);
  // Gone (past retention), or an index entry whose item write never happened (dynalite, kill -9).
  if (!e) return;
  const age = (iso: string | null | undefined): number => (iso ? now.getTime() - Date.parse(iso) : Infinity);
  const quietMs = d.config.sweepPendingAfterSeconds * 1000;

  if (e.status === 'pending') {
    if (!opts.startup && (age(e.created_at) < quietMs || age(e.requeued_at) < quietMs)) return;
    if (!(await d.sweep.markRequeued(e.execution_id, { status: 'pending' }, now.toISOString()))) return;
    await d.queue.send('executions', { ...executionMessage(e), requeued: now.getTime() });
    report.requeued += 1;
    d.log.warn('sweeper: pending execution queued again', {
      execution_id: e.execution_id,
      created_at: e.created_at,
      startup: opts.startup === true,
    });
    return;
  }

  if (e.status === 'running') {
    if (opts.startup) {
      await recoverInterrupted(d, e, now, report);
      return;
    }
    const startedMs = Date.parse(e.started_at ?? e.created_at);
    const graceMs = d.config.sweepGraceSeconds * 1000;
    // No execution's time-out is shorter than the service's default, but an Express one's, held
    // within what Express allows: until then nothing needs its version read.
    const shortest =
      e.workflow === 'express' ? Math.min(d.config.executionTimeoutMs, EXPRESS_MAX_EXECUTION_TIMEOUT_MS) : d.config.executionTimeoutMs;
    if (now.getTime() <= startedMs + shortest + graceMs) return;
    // Past the service's default: the pipeline's own time-out (a job, a wait) may be longer.
    const version = await d.pipelines.getVersion(e.pipeline_id, e.version);
    const timeoutMs = version ? executionTimeoutMs(d, version.definition, workflowOf(e)) : d.config.executionTimeoutMs;
    if (now.getTime() <= startedMs + timeoutMs + graceMs) return;
    const seconds = Math.round(timeoutMs / 1000);
    if (await failRunning(d, e, `Execution timed out after ${seconds} s: it was still running past its time-out and was stopped`)) {
      report.timedOut += 1;
      d.log.warn('sweeper: running execution past its deadline failed', { execution_id: e.execution_id, started_at: e.started_at });
    }
    return;
  }

  if (!isTerminal(e.status)) return;
  const delivery = e.callback_delivery;
  if (e.callback && delivery?.outcome === 'pending') {
    await requeueCallback(d, e, now, opts, report);
    return;
  }
  if (await d.sweep.clearSweep(e.execution_id)) report.markersCleared += 1;
}

/**
 * A `running` execution found at a local start-up: its process died under it. As on AWS, where
 * the state machine runs a task again when its Lambda dies, it runs again from its last recorded
 * step (same id, same callback, owed once; the nodes it recorded are not run again) up to
 * INTERRUPTED_RERUNS times since its last finished step, then fails saying so. A pipeline
 * whose http nodes are not safe to repeat opts out with `"retry_interrupted": false` and is
 * failed at once. The re-run is one conditional write (markRerun) and a queue message; the
 * workflow that message starts takes it over in MarkRunning (claimRerun).
 */
async function recoverInterrupted(d: Deps, e: Execution, now: Date, report: SweepReport): Promise<void> {
  const reruns = e.reruns ?? 0;
  const optedOut = (await d.pipelines.getVersion(e.pipeline_id, e.version))?.definition.retry_interrupted === false;
  if (!optedOut && reruns < INTERRUPTED_RERUNS) {
    if (!(await d.sweep.markRerun(e.execution_id, reruns, now.toISOString()))) return;
    // The workflow that takes it over is of its current generation (a woken execution's).
    await d.queue.send('executions', {
      ...executionMessage(e),
      requeued: now.getTime(),
      ...((e.gen ?? 0) > 0 ? { gen: e.gen ?? 0 } : {}),
    });
    report.rerun += 1;
    d.log.warn('sweeper: interrupted execution queued to run again', {
      execution_id: e.execution_id,
      rerun: reruns + 1,
      of: INTERRUPTED_RERUNS,
    });
    return;
  }
  const why = optedOut
    ? 'its pipeline sets retry_interrupted to false, so it was not run again'
    : `it had already been run again ${reruns} ${reruns === 1 ? 'time' : 'times'}`;
  if (await failInterrupted(d, e, 'a service restart', why)) report.interrupted += 1;
  d.log.warn('sweeper: interrupted execution failed', { execution_id: e.execution_id, reruns, opted_out: optedOut });
}

/** An owed callback whose next attempt is overdue by the quiet period: its message was lost. */
async function requeueCallback(d: Deps, e: Execution, now: Date, opts: SweepOptions, report: SweepReport): Promise<void> {
  const delivery = e.callback_delivery;
  if (!delivery) return;
  const due = delivery.next_attempt_at ? Date.parse(delivery.next_attempt_at) : undefined;
  if (!opts.startup) {
    const lastSign = Math.max(
      due ?? 0,
      delivery.last_attempt_at ? Date.parse(delivery.last_attempt_at) : 0,
      e.completed_at ? Date.parse(e.completed_at) : 0,
      e.requeued_at ? Date.parse(e.requeued_at) : 0,
    );
    if (now.getTime() - lastSign < d.config.sweepPendingAfterSeconds * 1000) return;
  }
  // At a local start-up a claim on the attempt can only be the dead process's; its message
  // would take it again, but only once its visibility time-out has passed. The new message
  // takes over now (the claim goes in the same write). Elsewhere a claim still held makes this
  // message a dropped duplicate, and the claim (shorter than the quiet period) has run out by
  // the next pass.
  if (
    !(await d.sweep.markRequeued(e.execution_id, { attempts: delivery.attempts }, now.toISOString(), {
      releaseClaim: opts.startup === true,
    }))
  )
    return;
  await d.queue.send('callbacks', { execution_id: e.execution_id, ...(due && due > now.getTime() ? { due_at: due } : {}) });
  report.callbacksRequeued += 1;
  d.log.warn('sweeper: owed callback queued again', {
    execution_id: e.execution_id,
    attempts: delivery.attempts,
    startup: opts.startup === true,
  });
}
