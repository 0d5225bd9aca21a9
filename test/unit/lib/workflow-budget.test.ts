/**
 * An Express execution ends at 300 s wherever it is: the deadlines must leave MarkFailed its
 * share inside that, or a run that reaches its time-out stays `running` for good. The steps
 * keep the execution's deadline themselves, and each step's state time-out stops at it.
 */
import asl from '../../../lib/state-machine.asl.json';
import { readConfig } from '../../../lib/config';
import {
  EXPRESS_LIMIT_SECONDS,
  EXPRESS_MAX_EXECUTION_TIMEOUT_MS,
  FAIL_ALLOWANCE_SECONDS,
  MARK_TASK_TIMEOUT_SECONDS,
  RUN_RECORD_SECONDS,
  START_ALLOWANCE_SECONDS,
  STEP_TIMEOUT_SECONDS,
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

describe('stuck path 3: the steps reaching the deadline leave MarkFailed room inside the Express 300 s ceiling', () => {
  const execMs = EXPRESS_MAX_EXECUTION_TIMEOUT_MS;
  /**
   * The latest a step can end, from MarkRunning's end: every step before it ended before the
   * deadline (each sleeps at most until it), and the last one's state time-out is the time left
   * plus the room to record (runNodesTimeoutSeconds), wherever it started.
   */
  const lastStepEnds = (remainingAtStartMs: number) => (execMs - remainingAtStartMs) / 1000 + runNodesTimeoutSeconds(remainingAtStartMs);

  it('cuts the last step off at the deadline plus the room to record, wherever it started', () => {
    for (const remaining of [0, 1, 999, 1_000, 30_000, 90_000, execMs]) {
      expect(lastStepEnds(remaining)).toBeLessThanOrEqual(execMs / 1000 + RUN_RECORD_SECONDS + 1);
    }
  });

  it("covers MarkRunning's and MarkFailed's worst cases under the ASL's own Retry settings", () => {
    // A slow store: every attempt runs its whole Lambda time-out and every retry is spent.
    expect(START_ALLOWANCE_SECONDS).toBeGreaterThanOrEqual(worstTimeline('MarkRunning', MARK_TASK_TIMEOUT_SECONDS));
    expect(FAIL_ALLOWANCE_SECONDS).toBeGreaterThanOrEqual(worstTimeline('MarkFailed', MARK_TASK_TIMEOUT_SECONDS));
  });

  it('fits the whole worst timeline inside 300 s: a step that hangs at the deadline is tried again, finds it passed, and MarkFailed runs', () => {
    // The retries of a step cut off at the deadline each find it passed and end at once; their waits count.
    const runNodesWaits = worstTimeline('RunNodes', 0);
    const whole =
      worstTimeline('MarkRunning', MARK_TASK_TIMEOUT_SECONDS) +
      execMs / 1000 +
      RUN_RECORD_SECONDS +
      runNodesWaits +
      worstTimeline('MarkFailed', MARK_TASK_TIMEOUT_SECONDS);
    expect(whole).toBeLessThanOrEqual(EXPRESS_LIMIT_SECONDS);
  });

  it('moves with the ASL: more retries in MarkFailed mean a longer allowance', () => {
    const doc = {
      States: { MarkFailed: { Retry: [{ ErrorEquals: ['States.ALL'], IntervalSeconds: 1, MaxAttempts: 5, BackoffRate: 2 }] } },
    };
    // 6 attempts of 10 s and waits of 1 + 2 + 4 + 8 + 16 s: the ≈ 91 s the old fixed 30 s ignored.
    expect(worstCaseSeconds(retriersOf('MarkFailed', doc), 10)).toBe(91);
  });

  it('lets the state time-out fire before the Lambda is cut off, so MarkFailed says "timed out"', () => {
    for (const remaining of [0, execMs, 3_600_000]) {
      expect(taskRunLambdaTimeoutSeconds()).toBeGreaterThan(runNodesTimeoutSeconds(remaining));
    }
    expect(runNodesTimeoutSeconds(3_600_000)).toBe(STEP_TIMEOUT_SECONDS);
  });

  it("is the first step's time-out the runner hands the state machine", () => {
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
