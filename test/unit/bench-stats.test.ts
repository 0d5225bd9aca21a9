import fc from 'fast-check';
import { fmt, fmtRatio, median, percentile, perSecond, ratio, summarize, verdict } from '../../bench/stats';
import { costPerMillion, successPath, totalDollars } from '../../bench/aws-calls';
import { emptyCounts, IndexTracker, updatedAttributes } from '../../bench/instrument';
import asl from '../../lib/state-machine.asl.json';

describe('bench statistics', () => {
  it('takes nearest-rank percentiles, so every percentile is an observed value', () => {
    // Prepare
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    // Act
    const p = [percentile(sorted, 50), percentile(sorted, 99), percentile(sorted, 100), percentile(sorted, 0)];
    // Assess
    expect(p).toEqual([50, 99, 100, 1]);
    expect(percentile([], 50)).toBeNaN();
    expect(() => percentile(sorted, 101)).toThrow(RangeError);
  });

  it('keeps percentiles ordered and within the samples (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 200 }), (xs) => {
        const s = summarize(xs);
        expect(s.n).toBe(xs.length);
        expect(s.min).toBeLessThanOrEqual(s.p50);
        expect(s.p50).toBeLessThanOrEqual(s.p90);
        expect(s.p90).toBeLessThanOrEqual(s.p99);
        expect(s.p99).toBeLessThanOrEqual(s.max);
        expect(xs).toContain(s.p50);
        expect(xs).toContain(s.p99);
      }),
    );
  });

  it('summarizes samples and takes the median of unsorted input', () => {
    // Act
    const s = summarize([5, 1, 3, Number.NaN]);
    // Assess
    expect(s).toMatchObject({ n: 3, min: 1, p50: 3, max: 5, mean: 3 });
    expect(median([9, 1, 5, 7, 3])).toBe(5);
  });

  it('gives a ratio only against a positive floor', () => {
    expect(ratio(30, 10)).toBe(3);
    expect(ratio(5, 0)).toBeNaN();
    expect(ratio(5, Number.NaN)).toBeNaN();
    expect(fmtRatio(ratio(30, 10))).toBe('×3.0');
    expect(fmtRatio(ratio(250, 10))).toBe('×25');
    expect(fmtRatio(Number.NaN)).toBe('n/a');
    expect(fmt(Number.NaN)).toBe('n/a');
    expect(perSecond(300, 2000)).toBe(150);
  });

  it('judges targets in the right direction', () => {
    expect(verdict(25, 'max', 25)).toBe('pass');
    expect(verdict(25.1, 'max', 25)).toBe('MISS');
    expect(verdict(149, 'min', 150)).toBe('MISS');
    expect(verdict(Number.NaN, 'min', 150)).toBe('n/a');
  });
});

describe('bench cost inputs', () => {
  it('follows the state machine document along the success path', () => {
    // Act
    const path = successPath(asl);
    // Assess
    expect(path.states).toEqual(['MarkRunning', 'ShouldRun', 'RunNodes', 'Done']);
    expect(path.tasks).toEqual(['MarkRunning', 'RunNodes']);
  });

  it('reads the attributes an update expression sets and removes', () => {
    const u = updatedAttributes('SET #status = :to, #completed_at = :completed_at, sweep = if_not_exists(sweep, :x) REMOVE sweep_at, gsi1pk', {
      '#status': 'status',
      '#completed_at': 'completed_at',
    });
    expect([...u.set].sort()).toEqual(['completed_at', 'status', 'sweep']);
    expect([...u.remove].sort()).toEqual(['gsi1pk', 'sweep_at']);
  });

  it('counts index copies of an execution record as it moves through its statuses', () => {
    // Prepare
    const t = new IndexTracker();
    const key = { pk: 'EXEC#1', sk: 'EXEC' };
    // Act
    const created = t.put({ ...key, sweep: 'open', sweep_at: 'now' });
    const running = t.update(key, 'SET #status = :to', { '#status': 'status' });
    const completed = t.update(key, 'SET #status = :to REMOVE sweep, sweep_at', { '#status': 'status' });
    const later = t.update(key, 'SET callback_delivery = :d');
    // Assess
    // The sweep index projects keys only: a status change of an indexed item writes no copy.
    expect([created, running, completed, later]).toEqual([1, 0, 1, 0]);
    expect(t.update({ pk: 'EXEC#2', sk: 'EXEC' }, 'SET sweep = :cb')).toBe(1);
    expect(t.update({ pk: 'EXEC#2', sk: 'EXEC' }, 'SET sweep = :other')).toBe(2);
  });
});

describe('bench cost model', () => {
  it('prices the counts docs/aws.md assumes at the total it states (≈ $9.5 per million)', () => {
    // Prepare
    const whole = { ...emptyCounts(), dynamo: { GetItem: 2, PutItem: 1, UpdateItem: 2 }, readUnits: 2, writeUnits: 3, indexWriteUnits: 0, sqsSend: { executions: 1 }, sfnStart: 1, secretsLookups: 1 };
    // Act
    const lines = costPerMillion({ whole, apiRequests: 1, apiFunctions: ['authorizer', 'execute'], batch: 1, taskStates: 2, stateTransitions: 4, stateMachine: 'EXPRESS' });
    const standard = costPerMillion({ whole, apiRequests: 1, apiFunctions: ['authorizer', 'execute'], batch: 1, taskStates: 2, stateTransitions: 4, stateMachine: 'STANDARD' });
    // Assess
    expect(totalDollars(lines)).toBeCloseTo(9.5, 1);
    expect(lines.find((l) => l.item === 'DynamoDB writes')?.dollars).toBeCloseTo(1.88, 2);
    expect(totalDollars(standard) - totalDollars(lines)).toBeCloseTo(100 - 1.21, 1);
  });
});
