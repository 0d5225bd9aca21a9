/**
 * The scale model: the limits AWS would put in the service's way, read from the synthesized
 * templates (and AWS's own quotas), multiplied by a factor and enforced by `npm run start:synth`
 * with the answers AWS gives. A load of factor × R then meets, on one machine, what a load of R
 * meets on AWS (PIPEGATE_SCALE=0.01: 20 executions/s here stand for 2,000 there).
 *
 * - Lambda: each function's ReservedConcurrentExecutions caps its concurrent invocations; the
 *   functions without one share what the account's concurrency leaves unreserved. Beyond, a
 *   synchronous invoke is refused with TooManyRequestsException: Step Functions reports
 *   Lambda.TooManyRequestsException to the state's Retry, API Gateway answers with its
 *   INTEGRATION_FAILURE response (500 unless the template declares one).
 * - SQS event sources: ScalingConfig.MaximumConcurrency caps the pollers' concurrent invokes.
 * - API Gateway: the stage's method throttling (AWS::ApiGateway::Stage MethodSettings), a token
 *   bucket per method as API Gateway keeps it, inside the account's 10,000 requests/s (burst
 *   5,000); beyond, the THROTTLED gateway response.
 * - DynamoDB: 3,000 read and 1,000 write units a second per partition key value, the most one
 *   key gets however the table scales (adaptive capacity splits partitions, never a key), for the
 *   table's key and the key of each global secondary index a write sets; beyond,
 *   ProvisionedThroughputExceededException (the SDK retries it, as on AWS).
 * - Step Functions: StartExecution's token bucket per account and Region, one for Standard and
 *   one for Express state machines; beyond, ThrottlingException (the SDK retries it; the runner
 *   then leaves the message on the queue for another delivery).
 *
 * Every figure is rounded to a whole number, at least 1: at 1/100 a reservation of 42 becomes 1,
 * more than its share (the granularity figures printed with a run say by how much).
 */
import { isPlainObject } from '../../functions/core/values';
import type { ResolvedStack } from './physical';

/** AWS's quotas that no template states (defaults of a Region, per account). */
export const AWS_QUOTAS = {
  /** Lambda concurrent executions per account and Region (the `accountConcurrency` setting's default). */
  accountConcurrency: 1000,
  /** What Lambda always keeps unreserved. */
  minUnreserved: 100,
  /** API Gateway's account-level throttle across all APIs of a Region. */
  apiRatePerSecond: 10_000,
  apiBurst: 5_000,
  /** DynamoDB's most per partition key value, capacity units a second. */
  partitionReadUnits: 3_000,
  partitionWriteUnits: 1_000,
  /**
   * Step Functions' StartExecution throttle (AWS's "Quotas related to API action throttling"),
   * in us-east-1, us-west-2 and eu-west-1; Standard's is 800 / 150 a second in other Regions.
   */
  startExecution: {
    STANDARD: { burst: 1_300, rate: 300 },
    EXPRESS: { burst: 6_000, rate: 6_000 },
  },
} as const;

export interface ScaleModelOptions {
  factor: number;
  /** The account's Lambda concurrency (AWS_QUOTAS.accountConcurrency unless the account's quota was raised). */
  accountConcurrency?: number;
  /** What other functions of the account have reserved (their share of the pool is not the service's). */
  reservedElsewhere?: number;
}

/** Each function's ReservedConcurrentExecutions in the templates, by physical name. */
export function templateReservations(stacks: readonly ResolvedStack[]): Map<string, number> {
  const reserved = new Map<string, number>();
  for (const stack of stacks) {
    for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
      if (r.Type !== 'AWS::Lambda::Function' || r.Properties?.ReservedConcurrentExecutions === undefined) continue;
      const where = `${stack.stack.id}.Resources.${id}.Properties.ReservedConcurrentExecutions`;
      reserved.set(stack.physical[id]?.ref ?? id, Number(stack.resolve(r.Properties.ReservedConcurrentExecutions, where)));
    }
  }
  return reserved;
}

/** What the model refused, by limit: how the run met each. */
export interface ScaleStats {
  lambda: Record<string, number>;
  stage: Record<string, number>;
  dynamo: Record<string, number>;
  /** StartExecution refused, by state machine type. */
  states: Record<string, number>;
}

/** A limit as the template states it and as enforced here. */
export interface ScaledLimit {
  name: string;
  template: number;
  scaled: number;
}

/** `round(n × factor)`, at least 1. */
export const scaled = (n: number, factor: number): number => Math.max(1, Math.round(n * factor));

/** API Gateway's (and DynamoDB's) token bucket: `rate` tokens a second, at most `burst` banked. */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    readonly rate: number,
    readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.at = now();
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.at) / 1000) * this.rate);
    this.at = t;
  }

  /** Takes one token; false when none is left. */
  take(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Whether anything is left (DynamoDB admits a request while the balance is positive, then charges what it used). */
  positive(): boolean {
    this.refill();
    return this.tokens > 0;
  }

  charge(units: number): void {
    this.refill();
    this.tokens -= units;
  }
}

/** Concurrent invocations per function, under its reservation or the account's unreserved pool. */
export class LambdaConcurrency {
  private readonly running = new Map<string, number>();
  private unreservedRunning = 0;
  readonly limits: ScaledLimit[];
  readonly unreserved: ScaledLimit;

  constructor(
    private readonly reserved: ReadonlyMap<string, number>,
    accountConcurrency: number,
    private readonly factor: number,
    private readonly stats: ScaleStats,
  ) {
    const sum = [...reserved.values()].reduce((a, b) => a + b, 0);
    const left = Math.max(AWS_QUOTAS.minUnreserved, accountConcurrency - sum);
    this.unreserved = { name: 'unreserved', template: left, scaled: scaled(left, factor) };
    this.limits = [...reserved].map(([name, n]) => ({ name, template: n, scaled: scaled(n, factor) }));
  }

  /** The scaled cap of a function's concurrency (its reservation, or the unreserved pool's). */
  limitOf(fn: string): number {
    const r = this.reserved.get(fn);
    return r === undefined ? this.unreserved.scaled : scaled(r, this.factor);
  }

  /** A slot for one invocation and the function to give it back, or undefined: throttled. */
  acquire(fn: string): (() => void) | undefined {
    const reserved = this.reserved.has(fn);
    const now = reserved ? (this.running.get(fn) ?? 0) : this.unreservedRunning;
    if (now >= this.limitOf(fn)) {
      this.stats.lambda[fn] = (this.stats.lambda[fn] ?? 0) + 1;
      return undefined;
    }
    if (reserved) this.running.set(fn, now + 1);
    else this.unreservedRunning += 1;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      if (reserved) this.running.set(fn, (this.running.get(fn) ?? 1) - 1);
      else this.unreservedRunning -= 1;
    };
  }
}

/** The stage's method throttling and the account's, as API Gateway applies them to a request. */
export class StageThrottle {
  private readonly perMethod = new Map<string, TokenBucket>();
  private readonly account: TokenBucket;
  readonly limits: ScaledLimit[];

  constructor(
    private readonly method: { rate: number; burst: number } | undefined,
    private readonly factor: number,
    private readonly stats: ScaleStats,
  ) {
    this.account = new TokenBucket(scaled(AWS_QUOTAS.apiRatePerSecond, factor), scaled(AWS_QUOTAS.apiBurst, factor));
    this.limits = [
      ...(method
        ? [
            { name: 'method rate', template: method.rate, scaled: scaled(method.rate, factor) },
            { name: 'method burst', template: method.burst, scaled: scaled(method.burst, factor) },
          ]
        : []),
      { name: 'account rate', template: AWS_QUOTAS.apiRatePerSecond, scaled: this.account.rate },
    ];
  }

  /** Whether a request to `methodKey` (method and resource path) passes; false: THROTTLED. */
  admit(methodKey: string): boolean {
    let bucket = this.perMethod.get(methodKey);
    if (!bucket && this.method) {
      bucket = new TokenBucket(scaled(this.method.rate, this.factor), scaled(this.method.burst, this.factor));
      this.perMethod.set(methodKey, bucket);
    }
    const ok = (bucket ? bucket.take() : true) && this.account.take();
    if (!ok) this.stats.stage[methodKey] = (this.stats.stage[methodKey] ?? 0) + 1;
    return ok;
  }
}

/** Step Functions' StartExecution throttle: a token bucket per state machine type, for the whole account. */
export class StartExecutionThrottle {
  private readonly buckets: Record<'STANDARD' | 'EXPRESS', TokenBucket>;
  readonly limits: ScaledLimit[];

  constructor(
    factor: number,
    private readonly stats: ScaleStats,
    now: () => number = Date.now,
  ) {
    const q = AWS_QUOTAS.startExecution;
    this.buckets = {
      STANDARD: new TokenBucket(scaled(q.STANDARD.rate, factor), scaled(q.STANDARD.burst, factor), now),
      EXPRESS: new TokenBucket(scaled(q.EXPRESS.rate, factor), scaled(q.EXPRESS.burst, factor), now),
    };
    this.limits = (['STANDARD', 'EXPRESS'] as const).flatMap((t) => [
      { name: `StartExecution ${t} rate`, template: q[t].rate, scaled: this.buckets[t].rate },
      { name: `StartExecution ${t} burst`, template: q[t].burst, scaled: this.buckets[t].burst },
    ]);
  }

  /** Whether a StartExecution on a state machine of `type` passes; false: ThrottlingException. */
  admit(type: 'STANDARD' | 'EXPRESS'): boolean {
    if (this.buckets[type].take()) return true;
    this.stats.states[type] = (this.stats.states[type] ?? 0) + 1;
    return false;
  }
}

/** The keys of one table a throughput meter charges: its own partition key and its indexes'. */
export interface TableKeys {
  partitionKey: string;
  /** Index name → its partition key attribute. */
  indexes: Record<string, string>;
}

/** DynamoDB's per-key throughput: read and write units a second per partition key value. */
export class PartitionThroughput {
  private readonly buckets = new Map<string, TokenBucket>();
  readonly limits: ScaledLimit[];

  constructor(
    readonly tables: ReadonlyMap<string, TableKeys>,
    private readonly factor: number,
    private readonly stats: ScaleStats,
    private readonly now: () => number = Date.now,
  ) {
    this.limits = [
      { name: 'read units/s per key', template: AWS_QUOTAS.partitionReadUnits, scaled: scaled(AWS_QUOTAS.partitionReadUnits, factor) },
      { name: 'write units/s per key', template: AWS_QUOTAS.partitionWriteUnits, scaled: scaled(AWS_QUOTAS.partitionWriteUnits, factor) },
    ];
  }

  private bucket(key: string, kind: 'read' | 'write'): TokenBucket {
    const id = `${kind} ${key}`;
    let b = this.buckets.get(id);
    if (!b) {
      const rate = scaled(kind === 'read' ? AWS_QUOTAS.partitionReadUnits : AWS_QUOTAS.partitionWriteUnits, this.factor);
      // DynamoDB banks up to 300 s of unused capacity; a key's burst is at most its partition's rate here.
      b = new TokenBucket(rate, rate, this.now);
      this.buckets.set(id, b);
    }
    return b;
  }

  /**
   * The partition keys a call touches (`<table>` or `<table>/<index>`, then the value), or
   * undefined for a call the model does not meter (Scan, batches, DescribeTable). A Query reads
   * the one partition key value its key condition names, of the table or of its index.
   */
  keysOf(operation: string, body: Record<string, unknown>): { kind: 'read' | 'write'; keys: string[] } | undefined {
    const table = typeof body.TableName === 'string' ? body.TableName : '';
    const t = this.tables.get(table);
    if (!t) return undefined;
    if (operation === 'Query') {
      const index = typeof body.IndexName === 'string' ? body.IndexName : undefined;
      const attr = index === undefined ? t.partitionKey : t.indexes[index];
      const v = attr === undefined ? undefined : assignedValue(body, attr, 'KeyConditionExpression');
      return v === undefined ? undefined : { kind: 'read', keys: [index === undefined ? `${table} ${v}` : `${table}/${index} ${v}`] };
    }
    const item = isPlainObject(body.Item) ? body.Item : isPlainObject(body.Key) ? body.Key : undefined;
    const own = item ? stringValue(item[t.partitionKey]) : undefined;
    if (own === undefined) return undefined;
    const keys = [`${table} ${own}`];
    if (operation === 'GetItem') return { kind: 'read', keys };
    if (operation !== 'PutItem' && operation !== 'UpdateItem' && operation !== 'DeleteItem') return undefined;
    for (const [index, attr] of Object.entries(t.indexes)) {
      const v = operation === 'PutItem' ? stringValue(item?.[attr]) : assignedValue(body, attr);
      if (v !== undefined) keys.push(`${table}/${index} ${v}`);
    }
    return { kind: 'write', keys };
  }

  /** Whether every key touched still has throughput; false: ProvisionedThroughputExceededException. */
  admit(kind: 'read' | 'write', keys: readonly string[]): boolean {
    const blocked = keys.find((k) => !this.bucket(k, kind).positive());
    if (blocked === undefined) return true;
    const label = `${kind} ${blocked.replace(/#.*$/, '#…')}`;
    this.stats.dynamo[label] = (this.stats.dynamo[label] ?? 0) + 1;
    return false;
  }

  /** Charges what a call used: a write unit per KB written, a read unit per 4 KB read (strongly consistent). */
  charge(kind: 'read' | 'write', keys: readonly string[], bytes: number): void {
    const units = kind === 'write' ? Math.max(1, Math.ceil(bytes / 1024)) : Math.max(1, Math.ceil(bytes / 4096));
    for (const k of keys) this.bucket(k, kind).charge(units);
  }
}

function stringValue(v: unknown): string | undefined {
  if (!isPlainObject(v)) return undefined;
  if (typeof v.S === 'string') return v.S;
  if (typeof v.N === 'string') return v.N;
  return undefined;
}

/**
 * The value an UpdateItem's `SET <attr> = :v` gives an attribute (named directly or through
 * ExpressionAttributeNames), when it is a plain value: what the index entry is written under.
 * The same reading of a Query's KeyConditionExpression gives the partition key value it reads.
 */
function assignedValue(
  body: Record<string, unknown>,
  attr: string,
  field: 'UpdateExpression' | 'KeyConditionExpression' = 'UpdateExpression',
): string | undefined {
  const text = body[field];
  const expr = typeof text === 'string' ? text : '';
  const names = isPlainObject(body.ExpressionAttributeNames) ? body.ExpressionAttributeNames : {};
  const values = isPlainObject(body.ExpressionAttributeValues) ? body.ExpressionAttributeValues : {};
  const aliases = [
    attr,
    ...Object.entries(names)
      .filter(([, v]) => v === attr)
      .map(([k]) => k),
  ];
  for (const alias of aliases) {
    const escaped = alias.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const m = new RegExp(`(?:^|[\\s,])${escaped}\\s*=\\s*(:[A-Za-z0-9_]+)`).exec(expr);
    if (m?.[1]) return stringValue(values[m[1]]);
  }
  return undefined;
}

export interface ScaleModel {
  factor: number;
  lambda: LambdaConcurrency;
  stage: StageThrottle;
  dynamo: PartitionThroughput;
  states: StartExecutionThrottle;
  /** Event source mapping → scaled MaximumConcurrency (undefined: none set). */
  queueConcurrency(maximumConcurrency: number | undefined): number | undefined;
  stats: ScaleStats;
  /** Every limit, template and scaled, for a run's report. */
  limits(): ScaledLimit[];
}

/** PIPEGATE_SCALE: a factor in (0, 1], or undefined when unset (no model). */
export function scaleFactorOf(text: string | undefined): number | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const n = text.includes('/') ? Number(text.split('/')[0]) / Number(text.split('/')[1]) : Number(text);
  if (!Number.isFinite(n) || n <= 0 || n > 1)
    throw new Error(`PIPEGATE_SCALE must be a factor in (0, 1] such as 0.01 or 1/100, got ${text}`);
  return n;
}

/** The model of the assembly's stacks: every figure from their templates, AWS's quotas beside them. */
export function scaleModelFromTemplates(stacks: readonly ResolvedStack[], opts: ScaleModelOptions): ScaleModel {
  const { factor } = opts;
  const stats: ScaleStats = { lambda: {}, stage: {}, dynamo: {}, states: {} };
  const reserved = templateReservations(stacks);
  let method: { rate: number; burst: number } | undefined;
  const tables = new Map<string, TableKeys>();
  for (const stack of stacks) {
    for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
      const where = `${stack.stack.id}.Resources.${id}.Properties`;
      if (r.Type === 'AWS::ApiGateway::Stage') {
        const settings = stack.resolve(r.Properties?.MethodSettings ?? [], `${where}.MethodSettings`);
        for (const s of Array.isArray(settings) ? settings.filter(isPlainObject) : []) {
          if (s.HttpMethod !== '*' || s.ResourcePath !== '/*')
            throw new Error(
              `${where}.MethodSettings: only the stage-wide setting (* /*) is modelled, found ${String(s.HttpMethod)} ${String(s.ResourcePath)}`,
            );
          if (s.ThrottlingRateLimit !== undefined)
            method = { rate: Number(s.ThrottlingRateLimit), burst: Number(s.ThrottlingBurstLimit ?? s.ThrottlingRateLimit) };
        }
      } else if (r.Type === 'AWS::DynamoDB::Table') {
        const p = stack.resolve(r.Properties ?? {}, where) as Record<string, unknown>;
        const hashOf = (schema: unknown): string | undefined =>
          (Array.isArray(schema) ? schema.filter(isPlainObject) : []).find((k) => k.KeyType === 'HASH')?.AttributeName as
            string | undefined;
        const partitionKey = hashOf(p.KeySchema);
        if (!partitionKey) throw new Error(`${where}.KeySchema: no HASH key`);
        const indexes: Record<string, string> = {};
        for (const g of Array.isArray(p.GlobalSecondaryIndexes) ? p.GlobalSecondaryIndexes.filter(isPlainObject) : []) {
          const k = hashOf(g.KeySchema);
          if (k && typeof g.IndexName === 'string') indexes[g.IndexName] = k;
        }
        tables.set(stack.physical[id]?.ref ?? id, { partitionKey, indexes });
      }
    }
  }
  const lambda = new LambdaConcurrency(
    reserved,
    (opts.accountConcurrency ?? AWS_QUOTAS.accountConcurrency) - (opts.reservedElsewhere ?? 0),
    factor,
    stats,
  );
  const stage = new StageThrottle(method, factor, stats);
  const dynamo = new PartitionThroughput(tables, factor, stats);
  const states = new StartExecutionThrottle(factor, stats);
  return {
    factor,
    lambda,
    stage,
    dynamo,
    states,
    queueConcurrency: (max) => (max === undefined ? undefined : scaled(max, factor)),
    stats,
    limits: () => [...lambda.limits, lambda.unreserved, ...stage.limits, ...dynamo.limits, ...states.limits],
  };
}
