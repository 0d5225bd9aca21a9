/**
 * How the state machine's time is shared out, read by the stacks (Lambda time-outs, the Express
 * limit) and by the runner (RunNodes' state time-out). Plain data: no aws-cdk-lib.
 *
 * An Express execution ends at 300 s whatever state it is in, so a time-out that fires late
 * leaves the record `running` with nothing left to finish it. The order of deadlines is:
 * the engine's own time-out (the configured execution time-out), then RunNodes' state
 * time-out (engine + RUN_RECORD_SECONDS, room to write the outcome), then the task-run
 * Lambda's (a little later still, so the state's time-out is what fires: States.Timeout →
 * MarkFailed → "timed out"), and MarkRunning's and MarkFailed's allowances around them must
 * fit in 300 s. Anything past even that is failed by the sweeper.
 */

/** Step Functions Express: an execution runs 5 minutes at most. */
export const EXPRESS_LIMIT_SECONDS = 300;
/** Beyond the engine's time-out: the final write (retried while the store is unavailable) and the callback send. */
export const RUN_RECORD_SECONDS = 10;
/** The task-run Lambda outlives RunNodes' state time-out by this much. */
export const TASK_RUN_LAMBDA_EXTRA_SECONDS = 5;
/** Time-out of the MarkRunning and MarkFailed Lambdas (two or three store calls and a send). */
export const MARK_TASK_TIMEOUT_SECONDS = 10;
/** MarkRunning's share: its first call at its slowest, plus its first retry waits. */
export const START_ALLOWANCE_SECONDS = 15;
/** MarkFailed's share: a slow first call and retries after 1, 2, 4 and 8 s. */
export const FAIL_ALLOWANCE_SECONDS = 30;

/** RunNodes' state time-out (TimeoutSecondsPath), seconds. */
export const runNodesTimeoutSeconds = (executionTimeoutMs: number): number => Math.ceil(executionTimeoutMs / 1000) + RUN_RECORD_SECONDS;

export const taskRunLambdaTimeoutSeconds = (executionTimeoutMs: number): number =>
  runNodesTimeoutSeconds(executionTimeoutMs) + TASK_RUN_LAMBDA_EXTRA_SECONDS;

/** Step Functions' own transitions and Lambda invocations between the states. */
export const TRANSITIONS_SECONDS = 5;

/** The longest execution time-out whose whole run, MarkFailed included, fits an Express execution (240 s). */
export const EXPRESS_MAX_EXECUTION_TIMEOUT_MS =
  (EXPRESS_LIMIT_SECONDS - START_ALLOWANCE_SECONDS - RUN_RECORD_SECONDS - FAIL_ALLOWANCE_SECONDS - TRANSITIONS_SECONDS) * 1000;

/**
 * `Prefer: wait` on AWS: API Gateway REST ends an integration after 29 s (its default quota), so
 * a wait is capped 4 s short of it, which leaves time for the final read and the answer; the
 * Lambdas of waiting routes may run 28 s. Read by the stack and by the bench's cost model.
 */
export const API_GATEWAY_INTEGRATION_TIMEOUT_SECONDS = 29;
export const AWS_MAX_WAIT_SECONDS = API_GATEWAY_INTEGRATION_TIMEOUT_SECONDS - 4;
