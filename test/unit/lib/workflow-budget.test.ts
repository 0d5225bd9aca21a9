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
  retriersOf,
  worstCaseSeconds,
  runNodesTimeoutSeconds,
  taskRunLambdaTimeoutSeconds,
} from '../../../lib/workflow-budget';
import { workflowTimeoutSeconds } from '../../../functions/services/runner.service';
import type { Deps } from '../../../functions/adapters/deps';

interface AslRetrier {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  MaxAttempts?: number;
  BackoffRate?: number;
  MaxDelaySeconds?: number;
}
const states = asl.States as unknown as Record<string, { Retry?: AslRetrier[] }>;

/**
 * Walks a task state's worst timeline on its own (not through the module under test): each
 * attempt fails at its time-out with an error every retrier matches in turn, so every retrier's
 * every retry is spent, and each wait is IntervalSeconds × BackoffRate^n, at most
 * MaxDelaySeconds. A throttle (Lambda.TooManyRequestsException) is refused before the function
 * runs, so the retries of a retrier of throttles alone cost their waits only.
 */
function worstTimeline(state: string, attemptSeconds: number): number {
  let t = 0;
  for (const r of states[state]?.Retry ?? []) {
    const ran = !(r.ErrorEquals.length === 1 && r.ErrorEquals[0] === 'Lambda.TooManyRequestsException');
    for (let n = 0; n < (r.MaxAttempts ?? 3); n += 1) {
      t += (ran ? attemptSeconds : 0) + Math.min((r.IntervalSeconds ?? 1) * (r.BackoffRate ?? 2) ** n, r.MaxDelaySeconds ?? Infinity);
    }
  }
  return t + attemptSeconds;
}

describe('stuck path 3: RunNodes reaching its deadline leaves MarkFailed room inside the Express 300 s ceiling', () => {
  const execMs = EXPRESS_MAX_EXECUTION_TIMEOUT_MS;

  it('leaves MarkFailed its share after RunNodes times out at the longest allowed execution time-out', () => {
    // Prepare: when RunNodes' state time-out fires at the latest.
    const runNodesEnds = START_ALLOWANCE_SECONDS + runNodesTimeoutSeconds(execMs);
    // Assess
    expect(runNodesEnds + FAIL_ALLOWANCE_SECONDS).toBeLessThan(EXPRESS_LIMIT_SECONDS);
  });

  it("covers MarkRunning's and MarkFailed's worst cases under the ASL's own Retry settings", () => {
    // A slow store: every attempt runs its whole Lambda time-out and every retry is spent.
    expect(START_ALLOWANCE_SECONDS).toBeGreaterThanOrEqual(worstTimeline('MarkRunning', MARK_TASK_TIMEOUT_SECONDS));
    expect(FAIL_ALLOWANCE_SECONDS).toBeGreaterThanOrEqual(worstTimeline('MarkFailed', MARK_TASK_TIMEOUT_SECONDS));
  });

  it('fits the whole worst timeline, RunNodes retried on throttling, inside 300 s', () => {
    const runNodesWaits = worstTimeline('RunNodes', 0);
    const whole =
      worstTimeline('MarkRunning', MARK_TASK_TIMEOUT_SECONDS) +
      runNodesWaits +
      runNodesTimeoutSeconds(execMs) +
      worstTimeline('MarkFailed', MARK_TASK_TIMEOUT_SECONDS);
    expect(whole).toBeLessThan(EXPRESS_LIMIT_SECONDS);
  });

  it('moves with the ASL: more retries in MarkFailed mean a longer allowance', () => {
    const doc = {
      States: { MarkFailed: { Retry: [{ ErrorEquals: ['States.ALL'], IntervalSeconds: 1, MaxAttempts: 5, BackoffRate: 2 }] } },
    };
    // 6 attempts of 10 s and waits of 1 + 2 + 4 + 8 + 16 s: the ≈ 91 s the old fixed 30 s ignored.
    expect(worstCaseSeconds(retriersOf('MarkFailed', doc), 10)).toBe(91);
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

it('retries a throttled task on its own, more often than other Lambda errors, on every task state', () => {
  for (const state of ['MarkRunning', 'RunNodes', 'MarkFailed']) {
    const [first] = states[state]?.Retry ?? [];
    expect(first?.ErrorEquals).toEqual(['Lambda.TooManyRequestsException']);
    expect(first?.MaxAttempts).toBeGreaterThanOrEqual(4);
  }
});
