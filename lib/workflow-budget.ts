/**
 * How the state machine's time is shared out, read by the stacks (Lambda time-outs, the Express
 * limit) and by the runner (RunNodes' state time-out). Plain data: no aws-cdk-lib.
 *
 * An Express execution ends at 300 s whatever state it is in, so a time-out that fires late
 * leaves the record `running` with nothing left to finish it, and the sweeper then records
 * "timed out" instead of the cause. The order of deadlines is: the engine's own time-out (the
 * configured execution time-out), then RunNodes' state time-out (engine + RUN_RECORD_SECONDS,
 * room to write the outcome), then the task-run Lambda's (a little later still, so the state's
 * time-out is what fires: States.Timeout → MarkFailed → "timed out"). MarkRunning's and
 * MarkFailed's worst cases around them must fit in 300 s.
 *
 * The worst cases are computed from the Retry blocks of lib/state-machine.asl.json itself, so
 * changing a retry there moves the budget (and the longest Express execution time-out) with it.
 */
import asl from './state-machine.asl.json';
import { HTTP_TIMEOUT_MAX_MS } from '../functions/core/nodes/http';

/**
 * A step starts no node after this long and hands the rest to the next step (the state
 * machine goes straight on): the nodes under way finish inside the task's time-out.
 */
export const STEP_BUDGET_MS = 60_000;

/**
 * Step Functions Standard keeps at most 25,000 events of history per execution, and a step of
 * the loop writes 9 (RunNodes' Task 5, AfterStep's Choice 2, Sleep's Wait 2; more when a task
 * is retried). A workflow hands its execution to one of the next generation after this many
 * steps (functions/services/tasks.service.ts), so a long job polled for a day, or a large map,
 * never reaches the quota: 2,000 steps are 18,000 events, the rest left for retries.
 */
export const STANDARD_STEPS_PER_WORKFLOW = 2_000;
/** Step Functions Standard's history quota, in events per execution. */
export const STANDARD_HISTORY_EVENTS = 25_000;

/** Step Functions Express: an execution runs 5 minutes at most. */
export const EXPRESS_LIMIT_SECONDS = 300;
/** Beyond the engine's time-out: the final write (retried while the store is unavailable) and the callback send. */
export const RUN_RECORD_SECONDS = 10;
/** The task-run Lambda outlives RunNodes' state time-out by this much. */
export const TASK_RUN_LAMBDA_EXTRA_SECONDS = 5;
/** Time-out of the MarkRunning and MarkFailed Lambdas (two or three store calls and a send). */
export const MARK_TASK_TIMEOUT_SECONDS = 8;
/** Step Functions' own transitions and Lambda invocations between the states. */
export const TRANSITIONS_SECONDS = 5;

export interface Retrier {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  MaxAttempts?: number;
  BackoffRate?: number;
  MaxDelaySeconds?: number;
}

export type TaskStateName = 'MarkRunning' | 'RunNodes' | 'MarkFailed';

/** A task state's retriers as the ASL declares them (Step Functions' defaults: 1 s, 3 attempts, rate 2). */
export function retriersOf(state: TaskStateName, document: { States: Record<string, unknown> } = asl): Retrier[] {
  const s = document.States[state] as { Retry?: Retrier[] } | undefined;
  if (s === undefined) throw new Error(`the state machine has no state ${state}`);
  return s.Retry ?? [];
}

/** The waits between attempts of one retrier, seconds, in order (Step Functions' formula). */
export function retryWaitsSeconds(r: Retrier): number[] {
  const interval = r.IntervalSeconds ?? 1;
  const rate = r.BackoffRate ?? 2;
  const attempts = r.MaxAttempts ?? 3;
  return Array.from({ length: attempts }, (_, i) => Math.min(interval * rate ** i, r.MaxDelaySeconds ?? Number.POSITIVE_INFINITY));
}

/**
 * Lambda's refusals raised before the function runs (a throttle at its reserved concurrency):
 * a retry of one costs its wait, not another run of the function.
 */
export const NOT_RUN_ERRORS: readonly string[] = ['Lambda.TooManyRequestsException'];

const retriesRun = (r: Retrier): boolean => !r.ErrorEquals.every((e) => NOT_RUN_ERRORS.includes(e));

/**
 * The longest a task state can take: every retry of every retrier (each keeps its own count, so
 * errors of different kinds can exhaust them all) with each attempt running its whole time-out
 * (but a retrier of throttles only, whose attempts never ran), plus every wait between attempts.
 */
export function worstCaseSeconds(retriers: Retrier[], attemptSeconds: number): number {
  const retries = retriers.filter(retriesRun).reduce((n, r) => n + (r.MaxAttempts ?? 3), 0);
  const waits = retriers.flatMap(retryWaitsSeconds).reduce((a, b) => a + b, 0);
  return (retries + 1) * attemptSeconds + waits;
}

/** MarkRunning's share: every attempt at its slowest plus every retry wait (38 s). */
export const START_ALLOWANCE_SECONDS = worstCaseSeconds(retriersOf('MarkRunning'), MARK_TASK_TIMEOUT_SECONDS);
/** MarkFailed's share, the same way (57 s). */
export const FAIL_ALLOWANCE_SECONDS = worstCaseSeconds(retriersOf('MarkFailed'), MARK_TASK_TIMEOUT_SECONDS);
/**
 * RunNodes retries only Lambda's own invocation errors (throttled, service unavailable), raised
 * before the function ran, so its retries cost their waits, not another run of the engine.
 */
export const RUN_RETRY_WAITS_SECONDS = retriersOf('RunNodes')
  .flatMap(retryWaitsSeconds)
  .reduce((a, b) => a + b, 0);

/**
 * One step's longest: its budget, then the slowest node it may have started just before the
 * budget ran out (an http request), then the room to record the outcome.
 */
export const STEP_TIMEOUT_SECONDS = Math.ceil(STEP_BUDGET_MS / 1000) + Math.ceil(HTTP_TIMEOUT_MAX_MS / 1000) + RUN_RECORD_SECONDS;

/**
 * RunNodes' state time-out (TimeoutSecondsPath `$.run.step_timeout`), seconds, for a step that
 * starts `remainingMs` before the execution's deadline: a step's longest, but never past the
 * deadline by more than the room to record the time-out. Each step answers the next one's (the
 * runner gives the first), so a step hung near the deadline is cut off there and MarkFailed
 * still fits an Express execution's five minutes.
 */
export const runNodesTimeoutSeconds = (remainingMs: number): number =>
  Math.max(1, Math.min(STEP_TIMEOUT_SECONDS, Math.ceil(Math.max(0, remainingMs) / 1000) + RUN_RECORD_SECONDS));

/** The task-run Lambda's time-out: a step's longest, and a little more, so the state's time-out fires first. */
export const TASK_RUN_LAMBDA_TIMEOUT_SECONDS = STEP_TIMEOUT_SECONDS + TASK_RUN_LAMBDA_EXTRA_SECONDS;
export const taskRunLambdaTimeoutSeconds = (_executionTimeoutMs?: number): number => TASK_RUN_LAMBDA_TIMEOUT_SECONDS;

/** The longest execution time-out whose whole run, MarkFailed included, fits an Express execution (176 s). */
export const EXPRESS_MAX_EXECUTION_TIMEOUT_MS =
  (EXPRESS_LIMIT_SECONDS -
    START_ALLOWANCE_SECONDS -
    RUN_RETRY_WAITS_SECONDS -
    RUN_RECORD_SECONDS -
    FAIL_ALLOWANCE_SECONDS -
    TRANSITIONS_SECONDS) *
  1000;

/**
 * `Prefer: wait` on AWS: API Gateway REST ends an integration after 29 s (its default quota), so
 * a wait is capped 4 s short of it, which leaves time for the final read and the answer; the
 * Lambdas of waiting routes may run 28 s. Read by the stack and by the bench's cost model.
 */
export const API_GATEWAY_INTEGRATION_TIMEOUT_SECONDS = 29;
export const AWS_MAX_WAIT_SECONDS = API_GATEWAY_INTEGRATION_TIMEOUT_SECONDS - 4;

/**
 * Runs from the start that an execution interrupted by a crash of the local runtime gets: as
 * many as the state machine gives RunNodes when its Lambda fails for Lambda's own reasons (its
 * environment died), so a crash here loses no more work than one of those would on AWS.
 */
export const INTERRUPTED_RERUNS = ((r) => (r === undefined ? 0 : (r.MaxAttempts ?? 3)))(
  retriersOf('RunNodes').find((r) => r.ErrorEquals.includes('Lambda.ServiceException')),
);
