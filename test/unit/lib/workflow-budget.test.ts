/**
 * An Express execution ends at 300 s wherever it is: the deadlines must leave MarkFailed its
 * share inside that, or a run that reaches its time-out stays `running` for good.
 */
import asl from '../../../lib/state-machine.asl.json';
import { readConfig } from '../../../lib/config';
import {
  EXPRESS_LIMIT_SECONDS,
  EXPRESS_MAX_EXECUTION_TIMEOUT_MS,
  FAIL_ALLOWANCE_SECONDS,
  MARK_TASK_TIMEOUT_SECONDS,
  START_ALLOWANCE_SECONDS,
  runNodesTimeoutSeconds,
  taskRunLambdaTimeoutSeconds,
} from '../../../lib/workflow-budget';
import { workflowTimeoutSeconds } from '../../../functions/services/runner.service';
import type { Deps } from '../../../functions/adapters/deps';

interface Retrier { IntervalSeconds: number; MaxAttempts: number; BackoffRate: number }
const retryWaits = (state: 'MarkRunning' | 'MarkFailed', n: number): number[] => {
  const r = (asl.States[state] as { Retry: Retrier[] }).Retry[0] as Retrier;
  return Array.from({ length: Math.min(n, r.MaxAttempts) }, (_, i) => r.IntervalSeconds * r.BackoffRate ** i);
};
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('stuck path 3: RunNodes reaching its deadline leaves MarkFailed room inside the Express 300 s ceiling', () => {
  const execMs = EXPRESS_MAX_EXECUTION_TIMEOUT_MS;

  it('leaves MarkFailed its share after RunNodes times out at the longest allowed execution time-out', () => {
    // Prepare: when RunNodes' state time-out fires at the latest.
    const runNodesEnds = START_ALLOWANCE_SECONDS + runNodesTimeoutSeconds(execMs);
    // Assess
    expect(runNodesEnds + FAIL_ALLOWANCE_SECONDS).toBeLessThan(EXPRESS_LIMIT_SECONDS);
  });

  it('sizes the allowances from the ASL retries and the task time-out', () => {
    expect(START_ALLOWANCE_SECONDS).toBeGreaterThanOrEqual(MARK_TASK_TIMEOUT_SECONDS + sum(retryWaits('MarkRunning', 1)));
    expect(FAIL_ALLOWANCE_SECONDS).toBeGreaterThanOrEqual(MARK_TASK_TIMEOUT_SECONDS + sum(retryWaits('MarkFailed', 4)));
  });

  it('lets the state time-out fire before the Lambda is cut off, so MarkFailed says "timed out"', () => {
    expect(taskRunLambdaTimeoutSeconds(execMs)).toBeGreaterThan(runNodesTimeoutSeconds(execMs));
    expect(runNodesTimeoutSeconds(execMs) * 1000).toBeGreaterThan(execMs);
  });

  it('is the time-out the runner hands the state machine', () => {
    const d = { config: readConfig({ PIPEGATE_EXECUTION_TIMEOUT_MS: String(execMs) }) } as Deps;
    expect(workflowTimeoutSeconds(d)).toBe(runNodesTimeoutSeconds(execMs));
  });
});
