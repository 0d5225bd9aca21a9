import fc from 'fast-check';
import { fmt, fmtRatio, median, percentile, perSecond, ratio, summarize, verdict } from '../../../bench/stats';
import {
  atExecutionTime,
  awsWait,
  callerCost,
  costPerMillion,
  lambdaInvocations,
  meanAwsWait,
  mediaObjectCost,
  successPath,
  totalDollars,
  withScheduledRereads,
} from '../../../bench/aws-calls';
import { diffCounts, emptyCounts, IndexTracker, scaleCounts, updatedAttributes } from '../../../bench/instrument';
import { MEDIA, PRICES } from '../../../bench/prices';
import asl from '../../../lib/state-machine.asl.json';

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
    expect(path.states).toEqual(['MarkRunning', 'ShouldRun', 'RunNodes', 'AfterStep', 'Done']);
    expect(path.tasks).toEqual(['MarkRunning', 'RunNodes']);
  });

  it('reads the attributes an update expression sets and removes', () => {
    const u = updatedAttributes(
      'SET #status = :to, #completed_at = :completed_at, sweep = if_not_exists(sweep, :x) REMOVE sweep_at, gsi1pk',
      {
        '#status': 'status',
        '#completed_at': 'completed_at',
      },
    );
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

  it('charges a keys-only index copy 1 WRU whatever the item, an ALL copy what the item costs', () => {
    // Prepare
    const t = new IndexTracker();
    // Act: items of 3 WRU (over 2 KB)
    const keysOnly = t.put({ pk: 'EXEC#3', sk: 'EXEC', sweep: 'open', sweep_at: 'now' }, 3);
    const rekeyed = t.update({ pk: 'EXEC#3', sk: 'EXEC' }, 'SET sweep = :cb', {}, 3);
    const all = t.put({ pk: 'PIPE#1', sk: 'PIPE', gsi1pk: 'OWNER', gsi1sk: 'x' }, 3);
    const gone = t.delete({ pk: 'PIPE#1', sk: 'PIPE' }, 3);
    // Assess
    expect([keysOnly, rekeyed, all, gone]).toEqual([1, 2, 3, 3]);
  });
});

describe('bench cost model', () => {
  it('prices the counts docs/aws.md assumes at the total it states (≈ $9.5 per million)', () => {
    // Prepare
    const whole = {
      ...emptyCounts(),
      dynamo: { GetItem: 2, PutItem: 1, UpdateItem: 2 },
      readUnits: 2,
      writeUnits: 3,
      indexWriteUnits: 0,
      sqsSend: { executions: 1 },
      sfnStart: 1,
      secretsLookups: 1,
    };
    // Act
    const lines = costPerMillion({
      whole,
      apiRequests: 1,
      apiFunctions: ['authorizer', 'execute'],
      batch: 1,
      taskStates: 2,
      stateTransitions: 4,
      stateMachine: 'EXPRESS',
    });
    const standard = costPerMillion({
      whole,
      apiRequests: 1,
      apiFunctions: ['authorizer', 'execute'],
      batch: 1,
      taskStates: 2,
      stateTransitions: 4,
      stateMachine: 'STANDARD',
    });
    // Assess
    expect(totalDollars(lines)).toBeCloseTo(9.5, 1);
    expect(lines.find((l) => l.item === 'DynamoDB writes')?.dollars).toBeCloseTo(1.88, 2);
    expect(totalDollars(standard) - totalDollars(lines)).toBeCloseTo(100 - 1.21, 1);
  });
});

describe('bench cost of caller shapes', () => {
  const path = successPath(asl);
  // One execution as counted at the adapters with no caller traffic beyond the POST.
  const base = {
    ...emptyCounts(),
    dynamo: { GetItem: 2, PutItem: 1, UpdateItem: 2 },
    readUnits: 2,
    writeUnits: 3,
    sqsSend: { executions: 1 },
    sfnStart: 1,
    secretsLookups: 1,
  };
  const dollars = (lines: { item: string; dollars: number }[], item: string): number =>
    lines.find((l) => l.item === item)?.dollars ?? Number.NaN;

  it("re-reads a wait on AWS on the completions schedule: 50, 100, 200, 400, 800 ms, then every second, to the wait's end", () => {
    // Act
    const at = (ms: number) => awsWait(ms, 25);
    // Assess
    expect(at(0)).toEqual({ rereads: 0, seconds: 0 });
    expect(at(30)).toEqual({ rereads: 1, seconds: 0.05 });
    expect(at(50)).toEqual({ rereads: 1, seconds: 0.05 });
    expect(at(51)).toEqual({ rereads: 2, seconds: 0.15 });
    expect(at(1000)).toEqual({ rereads: 5, seconds: 1.55 });
    expect(at(2000)).toEqual({ rereads: 6, seconds: 2.55 });
    // An execution still open at the end: reads to 24.55 s, then one last read at 25 s.
    expect(at(60_000)).toEqual({ rereads: 29, seconds: 25 });
    expect(meanAwsWait([30, 51], 25)).toEqual({ rereads: 1.5, seconds: 0.1 });
    expect(meanAwsWait([], 25)).toEqual({ rereads: 0, seconds: 0 });
  });

  it('never ends a wait before the execution did, nor after the wait (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40_000 }), fc.integer({ min: 0, max: 40_000 }), (a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const x = awsWait(lo, 25);
        const y = awsWait(hi, 25);
        expect(x.rereads).toBeLessThanOrEqual(y.rereads);
        expect(x.seconds).toBeLessThanOrEqual(25);
        expect(x.seconds * 1000).toBeGreaterThanOrEqual(Math.min(lo, 25_000));
      }),
    );
  });

  it('replaces the re-reads counted locally (one per wake) with the scheduled ones, 1 RRU each', () => {
    // Prepare: the local wait read once after being woken.
    const local = { ...base, dynamo: { ...base.dynamo, GetItem: 4 }, readUnits: 3.5, waits: 1, waitWakes: 1 };
    // Act
    const onAws = withScheduledRereads(local, 4);
    // Assess
    expect(onAws.dynamo.GetItem).toBe(7);
    expect(onAws.readUnits).toBe(6.5);
    expect(onAws.waitWakes).toBe(4);
    expect(local.readUnits).toBe(3.5);
  });

  it('prices each poll as an API request, the authorizer and the result function, with the reads counted', () => {
    // Prepare: four polls, each the authorizer's consistent read and the result's eventual one.
    const perExecution = { ...base, dynamo: { ...base.dynamo, GetItem: 10 }, readUnits: 2 + 4 * 1.5 };
    // Act
    const poll = callerCost({ requestsPer: 5, perExecution, awsWait: { rereads: 0, seconds: 0 } }, path);
    const submitOnly = callerCost({ requestsPer: 1, perExecution: base, awsWait: { rereads: 0, seconds: 0 } }, path);
    // Assess
    expect(lambdaInvocations(poll.input)).toEqual({ authorizer: 5, execute: 1, 'execution-result': 4, runner: 1, tasks: 2 });
    expect(dollars(poll.lines, 'API Gateway REST')).toBeCloseTo(5 * PRICES.apiGatewayRestPerMillion, 6);
    expect(dollars(poll.lines, 'DynamoDB reads')).toBeCloseTo(8 * PRICES.dynamoPerMillionReadUnits, 6);
    // Each poll: $3.50 gateway, two Lambda requests, 1.5 RRU and 30 ms at 256 MB (plus its share of cold starts).
    const perPoll = (totalDollars(poll.lines) - totalDollars(submitOnly.lines)) / 4;
    expect(perPoll).toBeGreaterThan(3.5 + 0.4 + 1.5 * 0.125 + 0.25 * 0.03 * 13.3334);
    expect(perPoll).toBeLessThan(4.3);
    expect(totalDollars(submitOnly.lines)).toBeCloseTo(
      totalDollars(
        costPerMillion({
          whole: base,
          apiRequests: 1,
          apiFunctions: ['authorizer', 'execute'],
          batch: 1,
          taskStates: 2,
          stateTransitions: 4,
          stateMachine: 'EXPRESS',
        }),
      ),
      9,
    );
  });

  it('prices a wait as the execute function up for the wait plus its scheduled re-reads', () => {
    // Prepare: one wait, woken once locally; on AWS it would have re-read 5 times over 1.55 s.
    const perExecution = { ...base, dynamo: { ...base.dynamo, GetItem: 4 }, readUnits: 3.5, waits: 1, waitWakes: 1 };
    // Act
    const wait = callerCost({ requestsPer: 1, perExecution, awsWait: { rereads: 5, seconds: 1.55 } }, path);
    const notWaiting = callerCost(
      { requestsPer: 1, perExecution: { ...perExecution, waits: 0, waitWakes: 0 }, awsWait: { rereads: 5, seconds: 1.55 } },
      path,
    );
    // Assess
    expect(wait.whole.readUnits).toBe(7.5);
    expect(wait.input.waitSeconds).toBe(1.55);
    expect(notWaiting.input.waitSeconds).toBe(0);
    const extraDuration = dollars(wait.lines, 'Lambda duration (arm64)') - dollars(notWaiting.lines, 'Lambda duration (arm64)');
    expect(extraDuration).toBeCloseTo(0.25 * 1.55 * PRICES.lambdaArmPerGbSecond * 1e6, 6);
    expect(lambdaInvocations(wait.input)).toEqual({ authorizer: 1, execute: 1, runner: 1, tasks: 2 });
  });

  it('prices a callback as its send, the receive and delete, one dispatch and the writes counted', () => {
    // Prepare
    const perExecution = { ...base, sqsSend: { executions: 1, callbacks: 1 } };
    // Act
    const cb = callerCost({ requestsPer: 1, perExecution, awsWait: { rereads: 0, seconds: 0 } }, path);
    // Assess
    expect(lambdaInvocations(cb.input)['callback-dispatch']).toBe(1);
    expect(dollars(cb.lines, 'SQS')).toBeCloseTo(6 * PRICES.sqsPerMillionRequests, 6);
  });

  it('re-prices a shape at another execution time: polls until the first at or after it, waits on the schedule', () => {
    // Prepare: ten polls measured, each a consistent and an eventual read (1.5 RRU); one wait measured.
    const polled = {
      requestsPer: 11,
      perExecution: { ...base, dynamo: { ...base.dynamo, GetItem: 22 }, readUnits: 17 },
      awsWait: { rereads: 0, seconds: 0 },
    };
    const waited = { requestsPer: 1, perExecution: { ...base, waits: 1, waitWakes: 1 }, awsWait: { rereads: 9, seconds: 5.55 } };
    const called = {
      requestsPer: 1,
      perExecution: { ...base, sqsSend: { executions: 1, callbacks: 1 } },
      awsWait: { rereads: 0, seconds: 0 },
    };
    // Act
    const poll = atExecutionTime(polled, base, 0.5, 250, 25);
    const quick = atExecutionTime(polled, base, 0.1, 250, 25);
    const wait = atExecutionTime(waited, base, 0.5, 250, 25);
    // Assess
    expect(poll.requestsPer).toBe(3);
    expect(poll.perExecution.dynamo.GetItem).toBeCloseTo(6, 9);
    expect(poll.perExecution.readUnits).toBeCloseTo(5, 9);
    expect(quick.requestsPer).toBe(2);
    expect(wait.awsWait).toEqual({ rereads: 4, seconds: 0.75 });
    expect(atExecutionTime(called, base, 0.5, 250, 25)).toBe(called);
  });

  it('turns counts over a load into counts per execution', () => {
    // Prepare
    const before = { ...emptyCounts(), dynamo: { GetItem: 10 }, readUnits: 5, waits: 2 };
    const after = { ...emptyCounts(), dynamo: { GetItem: 30, PutItem: 4 }, readUnits: 15, waits: 6, sqsSend: { executions: 4 } };
    // Act
    const per = scaleCounts(diffCounts(before, after), 1 / 4);
    // Assess
    expect(per.dynamo).toEqual({ GetItem: 5, PutItem: 1 });
    expect(per.readUnits).toBe(2.5);
    expect(per.waits).toBe(1);
    expect(per.sqsSend).toEqual({ executions: 1 });
  });
});

describe("the media execution's object cost", () => {
  it('prices S3 requests, storage until expiry and transfer out for 1 MB in and 1 MB out', () => {
    // Act
    const lines = mediaObjectCost();
    const by = Object.fromEntries(lines.map((l) => [l.item, l.dollars]));
    // Assess: 2 PUTs at $5 per million, 4 GETs at $0.40, 2 MB for 8.5 of 30 days at $0.023 per GB-month, 1 MB out at $0.09 per GB.
    expect(by['S3 PUT requests']).toBeCloseTo(10, 6);
    expect(by['S3 GET/HEAD requests']).toBeCloseTo(1.6, 6);
    expect(by['S3 storage']).toBeCloseTo((2 / 1024) * (8.5 / 30) * 0.023 * 1e6, 6);
    expect(by['Transfer out']).toBeCloseTo((1 / 1024) * 0.09 * 1e6, 6);
    expect(totalDollars(lines)).toBeCloseTo(112.22, 2);
  });

  it('grows with the bytes stored and sent, and with every download', () => {
    // Act
    const twice = mediaObjectCost({ ...MEDIA, downloads: 2 });
    const bigger = mediaObjectCost({ ...MEDIA, inputBytes: 10 * MEDIA.inputBytes });
    // Assess
    expect(twice.find((l) => l.item === 'Transfer out')?.dollars).toBeCloseTo(
      2 * (mediaObjectCost().find((l) => l.item === 'Transfer out')?.dollars ?? 0),
      6,
    );
    expect(totalDollars(bigger)).toBeGreaterThan(totalDollars(mediaObjectCost()));
    expect(PRICES.s3PerMillionPuts).toBe(5);
  });
});
