/**
 * The scale model: its limits are the templates' own (and AWS's quotas) times the factor, and
 * each refuses as AWS refuses: a function past its concurrency, a method past its bucket, a
 * key past its partition's throughput.
 */
import { sweepKey } from '../../functions/adapters/executions.store';
import { concurrencyPlan } from '../../lib/concurrency';
import { allFunctionNames } from '../../lib/stacks/permissions';
import type { Assembly } from '../../lib/synth/assembly';
import { resolveAssembly, type ResolvedAssembly } from '../../lib/synth/physical';
import {
  AWS_QUOTAS,
  LambdaConcurrency,
  PartitionThroughput,
  scaleFactorOf,
  scaleModelFromTemplates,
  StartExecutionThrottle,
  TokenBucket,
  type ScaleStats,
} from '../../lib/synth/scale-model';
import { SYNTH_TIMEOUT_MS, testAssembly } from '../support/synth';
import { localEnv, reserving, withTemplate } from './synth-helpers';

const noStats = (): ScaleStats => ({ lambda: {}, stage: {}, dynamo: {}, states: {} });

describe('read from the synthesized templates', () => {
  let assembly: Assembly;
  let resolved: ResolvedAssembly;
  beforeAll(async () => {
    assembly = await testAssembly();
    resolved = resolveAssembly(assembly, localEnv());
  }, SYNTH_TIMEOUT_MS);

  it('shares the whole account between the functions of the default template, which reserves nothing', () => {
    // Act
    const model = scaleModelFromTemplates(
      assembly.stacks.map((s) => resolved.stack(s.id)),
      { factor: 0.01 },
    );
    // Assess
    expect(model.lambda.limits).toEqual([]);
    expect(model.lambda.unreserved).toEqual({ name: 'unreserved', template: AWS_QUOTAS.accountConcurrency, scaled: 10 });
  });

  it("caps each function at its template reservation times the factor, the stage at its method throttle, and knows the table's and index's keys", () => {
    // Prepare: the template `-c reservedConcurrency=800` makes, in an account where others hold 50.
    const edited = withTemplate(assembly, 'Pipegate', reserving(800));
    const r = resolveAssembly(edited, localEnv());
    // Act
    const model = scaleModelFromTemplates(
      edited.stacks.map((s) => r.stack(s.id)),
      { factor: 0.01, reservedElsewhere: 50 },
    );

    // Assess: the reservations the stack derived from lib/concurrency.ts, read back from the template.
    const plan = concurrencyPlan(allFunctionNames(), 800);
    const sorted = (xs: number[]) => [...xs].sort((x, y) => x - y);
    expect(sorted(model.lambda.limits.map((l) => l.template))).toEqual(sorted(Object.values(plan.reserved)));
    for (const l of model.lambda.limits) expect(l.scaled).toBe(Math.max(1, Math.round(l.template / 100)));
    expect(model.lambda.unreserved.template).toBe(AWS_QUOTAS.accountConcurrency - 50 - plan.total);
    expect(model.stage.limits.find((l) => l.name === 'method rate')).toEqual({ name: 'method rate', template: 100, scaled: 1 });
    expect(model.stage.limits.find((l) => l.name === 'method burst')).toEqual({ name: 'method burst', template: 200, scaled: 2 });
    const tables = [...model.dynamo.tables.values()];
    expect(tables).toEqual([{ partitionKey: 'pk', indexes: expect.objectContaining({ sweep: 'sweep' }) as unknown }]);
    expect(model.limits()).toEqual(expect.arrayContaining([{ name: 'StartExecution EXPRESS rate', template: 6000, scaled: 60 }]));
  });
});

describe('Lambda concurrency', () => {
  it('refuses an invocation past the scaled reservation and takes it again once one ends; unreserved functions share what is left', () => {
    // Prepare: 213 and 90 reserved of 1,000, at 1/100: 2, 1, and 7 unreserved.
    const stats = noStats();
    const lambda = new LambdaConcurrency(
      new Map([
        ['execute', 213],
        ['authorizer', 90],
      ]),
      1000,
      0.01,
      stats,
    );

    // Act
    const a = lambda.acquire('execute');
    const b = lambda.acquire('execute');
    const refused = lambda.acquire('execute');
    a?.();
    const again = lambda.acquire('execute');
    const pool = Array.from({ length: 8 }, () => lambda.acquire('secret-init'));

    // Assess
    expect([a, b, again].every((s) => typeof s === 'function')).toBe(true);
    expect(refused).toBeUndefined();
    expect(pool.filter((s) => s !== undefined)).toHaveLength(7);
    expect(stats.lambda).toEqual({ execute: 1, 'secret-init': 1 });
  });
});

describe('token buckets', () => {
  it('lets a burst through, then the rate', () => {
    let now = 0;
    const bucket = new TokenBucket(1, 2, () => now);
    expect([bucket.take(), bucket.take(), bucket.take()]).toEqual([true, true, false]);
    now = 999;
    expect(bucket.take()).toBe(false);
    now = 1000;
    expect(bucket.take()).toBe(true);
  });
});

describe("Step Functions' StartExecution throttle", () => {
  it("is AWS's bucket per state machine type times the factor: Standard 1,300 then 300/s, Express 6,000 then 6,000/s", () => {
    // Act
    const throttle = new StartExecutionThrottle(0.01, noStats());

    // Assess
    expect(throttle.limits).toEqual([
      { name: 'StartExecution STANDARD rate', template: AWS_QUOTAS.startExecution.STANDARD.rate, scaled: 3 },
      { name: 'StartExecution STANDARD burst', template: AWS_QUOTAS.startExecution.STANDARD.burst, scaled: 13 },
      { name: 'StartExecution EXPRESS rate', template: AWS_QUOTAS.startExecution.EXPRESS.rate, scaled: 60 },
      { name: 'StartExecution EXPRESS burst', template: AWS_QUOTAS.startExecution.EXPRESS.burst, scaled: 60 },
    ]);
    expect(AWS_QUOTAS.startExecution).toEqual({ STANDARD: { burst: 1300, rate: 300 }, EXPRESS: { burst: 6000, rate: 6000 } });
  });

  it('refuses starts past the burst until the rate refills it, each type on its own, counting the refusals', () => {
    // Prepare: Standard at 1/100: 13 banked, 3 a second.
    let now = 0;
    const stats = noStats();
    const throttle = new StartExecutionThrottle(0.01, stats, () => now);

    // Act
    const burst = Array.from({ length: 14 }, () => throttle.admit('STANDARD'));
    const express = throttle.admit('EXPRESS');
    now = 1000;
    const refilled = Array.from({ length: 4 }, () => throttle.admit('STANDARD'));

    // Assess
    expect(burst.filter(Boolean)).toHaveLength(13);
    expect(burst[13]).toBe(false);
    expect(express).toBe(true);
    expect(refilled).toEqual([true, true, true, false]);
    expect(stats.states).toEqual({ STANDARD: 2 });
  });
});

describe('DynamoDB per-key throughput', () => {
  const tables = new Map([['T', { partitionKey: 'pk', indexes: { sweep: 'sweep' } }]]);
  const setSweep = (id: string, key: string) => ({
    TableName: 'T',
    Key: { pk: { S: `EXEC#${id}` }, sk: { S: 'EXEC' } },
    UpdateExpression: 'SET #s = :s, sweep = :open, sweep_at = :at',
    ExpressionAttributeNames: { '#s': 'status' },
    ExpressionAttributeValues: { ':s': { S: 'running' }, ':open': { S: key }, ':at': { S: '2026' } },
  });
  /** Writes in one second that the model refuses, each a 1 KB write of a new execution. */
  const refusedOf = (key: (id: string) => string, writes: number): number => {
    const meter = new PartitionThroughput(tables, 0.01, noStats());
    let refused = 0;
    for (let i = 0; i < writes; i += 1) {
      const call = meter.keysOf('UpdateItem', setSweep(`e${i}`, key(`e${i}`)));
      if (!call) throw new Error('not metered');
      if (meter.admit(call.kind, call.keys)) meter.charge(call.kind, call.keys, 300);
      else refused += 1;
    }
    return refused;
  };

  it("charges a write to the item's key and to the index key it sets", () => {
    const meter = new PartitionThroughput(tables, 0.01, noStats());
    expect(meter.keysOf('UpdateItem', setSweep('x', 'open#3'))).toEqual({ kind: 'write', keys: ['T EXEC#x', 'T/sweep open#3'] });
    expect(meter.keysOf('GetItem', { TableName: 'T', Key: { pk: { S: 'EXEC#x' } } })).toEqual({ kind: 'read', keys: ['T EXEC#x'] });
    expect(meter.keysOf('Query', { TableName: 'T' })).toBeUndefined();
  });

  it('charges a Query to the one partition key value its key condition reads, of the index or the table', () => {
    // A clock that stands still: the bucket refills by none while the loop below runs.
    const meter = new PartitionThroughput(tables, 0.01, noStats(), () => 0);
    const sweep = {
      TableName: 'T',
      IndexName: 'sweep',
      KeyConditionExpression: 'sweep = :k AND sweep_at < :before',
      ExpressionAttributeValues: { ':k': { S: 'open#3' }, ':before': { S: '2026' } },
    };
    expect(meter.keysOf('Query', sweep)).toEqual({ kind: 'read', keys: ['T/sweep open#3'] });
    expect(
      meter.keysOf('Query', {
        TableName: 'T',
        KeyConditionExpression: '#p = :p AND sk >= :from',
        ExpressionAttributeNames: { '#p': 'pk' },
        ExpressionAttributeValues: { ':p': { S: 'USAGE#d' }, ':from': { S: 'a' } },
      }),
    ).toEqual({
      kind: 'read',
      keys: ['T USAGE#d'],
    });
    // 30 read units a second per key at 1/100: a sweeper reading 4 KB pages of one shard meets it.
    const call = meter.keysOf('Query', sweep);
    if (!call) throw new Error('not metered');
    let admitted = 0;
    while (meter.admit(call.kind, call.keys) && admitted < 100) {
      meter.charge(call.kind, call.keys, 4096);
      admitted += 1;
    }
    expect(admitted).toBe(30);
  });

  it('throttles one index key written 40 times a second at 1/100 (4,000/s on AWS) and not the same writes over the sharded sweep keys', () => {
    // 20 executions/s write the sweep index twice each.
    expect(refusedOf(() => 'open', 40)).toBeGreaterThan(0);
    expect(refusedOf((id) => sweepKey('open', id), 40)).toBe(0);
  });
});

describe('PIPEGATE_SCALE', () => {
  it('reads a factor or a fraction, and refuses anything outside (0, 1]', () => {
    expect(scaleFactorOf('0.01')).toBe(0.01);
    expect(scaleFactorOf('1/100')).toBe(0.01);
    expect(scaleFactorOf(undefined)).toBeUndefined();
    expect(() => scaleFactorOf('2')).toThrow(/PIPEGATE_SCALE/);
    expect(() => scaleFactorOf('0')).toThrow(/PIPEGATE_SCALE/);
  });
});
