/**
 * AWS calls per execution, counted through the instrumented adapters (bench/instrument.ts),
 * and what they cost per million executions at the prices in bench/prices.ts.
 */
import { POLL_BACKOFF_MS } from '../functions/adapters/completions';
import { awsCalls, cloneCounts, diffCounts, dynamoReads, dynamoWrites, meanCounts, type Counts } from './instrument';
import {
  ASSUMPTIONS,
  BILL_VOLUMES,
  HISTORY_EVENTS,
  MAP_SCENARIO,
  MAP_STEP_OVERHEAD_MS,
  MEDIA,
  PRICES,
  SFN_QUOTAS,
  type MapScenario,
  type MediaScenario,
} from './prices';
import { DEFAULT_RESULT_RETENTION_DAYS } from '../lib/config';
import { DEFAULT_POLL_EVERY_MS, nextPollDelayMs } from '../functions/core/nodes/http';

export interface CountHooks {
  counts: Counts;
  /** POSTs one execution through the gateway; resolves with its id once the 202 is in. */
  post(): Promise<string>;
  waitTerminal(id: string): Promise<string>;
  /** Stops and restarts the executions queue's consumer (the runner's event source). */
  pause(): Promise<void>;
  resume(): void;
  /** Resolves once no state-machine execution is going. */
  idle(): Promise<void>;
  runnerInvocations(): number;
}

export interface CallMeasure {
  executions: number;
  /** Authorizer + execute handler of the first request a container serves. */
  requestPathCold: Counts;
  /** The same for every later request (mean). */
  requestPath: Counts;
  /** Everything an execution caused, request path included (mean over the warm ones). */
  whole: Counts;
  runnerInvocationsPerExecution: number;
  statuses: string[];
}

/**
 * Runs `n` executions one at a time. The runner's queue consumer is paused while the POST is
 * served, so the calls counted then are the request path's alone (authorizer + execute); then
 * it runs the execution to its end and counts the rest.
 */
export async function countExecutions(h: CountHooks, n: number): Promise<CallMeasure> {
  const requestPaths: Counts[] = [];
  const wholes: Counts[] = [];
  const statuses: string[] = [];
  let runners = 0;
  await h.pause();
  for (let i = 0; i < n; i++) {
    const c0 = cloneCounts(h.counts);
    const r0 = h.runnerInvocations();
    const id = await h.post();
    const c1 = cloneCounts(h.counts);
    const done = h.waitTerminal(id);
    h.resume();
    statuses.push(await done);
    await h.idle();
    await h.pause();
    const c2 = cloneCounts(h.counts);
    requestPaths.push(diffCounts(c0, c1));
    wholes.push(diffCounts(c0, c2));
    if (i > 0) runners += h.runnerInvocations() - r0;
  }
  h.resume();
  const [cold, ...warm] = requestPaths;
  if (!cold || warm.length === 0) throw new Error('count at least two executions');
  return {
    executions: n,
    requestPathCold: cold,
    requestPath: meanCounts(warm),
    whole: meanCounts(wholes.slice(1)),
    runnerInvocationsPerExecution: runners / (n - 1),
    statuses,
  };
}

/** The states an execution passes through when every task succeeds and the run proceeds. */
export function successPath(asl: { StartAt: string; States: Record<string, unknown> }): { states: string[]; tasks: string[] } {
  const states: string[] = [];
  const tasks: string[] = [];
  let name: string | undefined = asl.StartAt;
  while (name !== undefined) {
    if (states.includes(name) || states.length > 100) throw new Error(`the success path loops at ${name}`);
    const state = asl.States[name] as
      { Type?: string; Next?: string; End?: boolean; Default?: string; Choices?: { Next?: string }[] } | undefined;
    if (!state) throw new Error(`no state ${name}`);
    states.push(name);
    if (state.Type === 'Task') tasks.push(name);
    if (state.Type === 'Succeed' || state.Type === 'Fail' || state.End) break;
    // A Choice takes its first rule that moves on (ShouldRun: start.proceed == true), not one
    // that waits or steps again (AfterStep: an execution done in one step takes its Default).
    const forward = (next: string | undefined): boolean =>
      next !== undefined && !states.includes(next) && (asl.States[next] as { Type?: string } | undefined)?.Type !== 'Wait';
    name = state.Type === 'Choice' ? (state.Choices?.map((c) => c.Next).find(forward) ?? state.Default) : state.Next;
  }
  return { states, tasks };
}

export interface CostLine {
  item: string;
  perExecution: string;
  dollars: number;
}

export interface CostInput {
  whole: Counts;
  /** Caller requests through API Gateway per execution that submit it (the POST). */
  apiRequests: number;
  /** Lambda functions behind those requests: the authorizer and the route's handler. */
  apiFunctions: string[];
  /** Status or result requests per execution after the POST, each through the authorizer and `execution-result`. */
  polls?: number;
  /** Seconds per execution the execute function stays up waiting (`Prefer: wait`), billed as its duration. */
  waitSeconds?: number;
  /** Callback deliveries per execution: a dispatch invocation each, and the callbacks queue's receive and delete. */
  callbacks?: number;
  /** Executions per runner invocation (1 at low load, the batch size at sustained load). */
  batch: number;
  /** State-machine Task states on the success path, and how many states it visits. */
  taskStates: number;
  stateTransitions: number;
  stateMachine: 'EXPRESS' | 'STANDARD';
}

const round = (x: number, d = 2): string => (Number.isInteger(x) ? String(x) : x.toFixed(d));

/** Lambda invocations per execution, by function, for a caller that submits, polls and takes callbacks as `c` says. */
export function lambdaInvocations(c: CostInput): Record<string, number> {
  const polls = c.polls ?? 0;
  const out: Record<string, number> = {};
  const add = (f: string, n: number): void => {
    if (n > 0) out[f] = (out[f] ?? 0) + n;
  };
  for (const f of c.apiFunctions) add(f, c.apiRequests);
  add('authorizer', polls);
  add('execution-result', polls);
  add('runner', 1 / c.batch);
  add('tasks', c.taskStates);
  add('callback-dispatch', c.callbacks ?? 0);
  return out;
}

/** Dollars per million executions, item by item, from counted calls and the stated assumptions. */
export function costPerMillion(c: CostInput): CostLine[] {
  const M = 1_000_000;
  const lines: CostLine[] = [];
  const polls = c.polls ?? 0;
  const callbacks = c.callbacks ?? 0;
  const runnerInvocations = 1 / c.batch;
  const requests = c.apiRequests + polls;
  lines.push({
    item: 'API Gateway REST',
    perExecution: polls ? `${round(requests)} requests (${round(polls)} polls)` : `${round(requests)} request`,
    dollars: requests * PRICES.apiGatewayRestPerMillion,
  });

  const byFunction = lambdaInvocations(c);
  const invocations = Object.values(byFunction).reduce((s, x) => s + x, 0);
  lines.push({
    item: 'Lambda requests',
    perExecution: `${round(invocations)}: ${Object.entries(byFunction)
      .map(([f, n]) => `${f} ×${round(n)}`)
      .join(', ')}`,
    dollars: invocations * PRICES.lambdaPerMillionRequests,
  });

  const warm = ASSUMPTIONS.lambdaWarmMs;
  const waitMs = (c.waitSeconds ?? 0) * 1000;
  const ms =
    c.apiRequests * c.apiFunctions.reduce((s, f) => s + (warm[f] ?? 0), 0) +
    polls * ((warm.authorizer ?? 0) + (warm['execution-result'] ?? 0)) +
    runnerInvocations * (warm.runner ?? 0) +
    (warm['task-start'] ?? 0) +
    callbacks * (warm['callback-dispatch'] ?? 0) +
    waitMs;
  const gb = ASSUMPTIONS.lambdaMemoryMb / 1024;
  const gbSeconds = gb * (ms / 1000) + ASSUMPTIONS.coldShare * invocations * ASSUMPTIONS.coldInitSeconds * gb;
  lines.push({
    item: 'Lambda duration (arm64)',
    perExecution: `${gbSeconds.toFixed(4)} GB-s (${round(ms, 0)} ms warm${waitMs ? `, ${round(waitMs, 0)} of it waiting` : ''} + ${ASSUMPTIONS.coldShare * 100} % cold)`,
    dollars: gbSeconds * PRICES.lambdaArmPerGbSecond * M,
  });

  const sends = Object.values(c.whole.sqsSend).reduce((s, x) => s + x, 0);
  // The event source mapping receives and deletes once per batch it hands the runner (and the dispatcher, one callback each).
  const sqs = sends + 2 * runnerInvocations + 2 * callbacks;
  lines.push({
    item: 'SQS',
    perExecution: `${round(sqs)}: ${round(sends)} send + receive/delete per batch`,
    dollars: sqs * PRICES.sqsPerMillionRequests,
  });

  if (c.stateMachine === 'EXPRESS') {
    const billedSeconds = Math.ceil(ASSUMPTIONS.expressSeconds / 0.1) * 0.1;
    const expressGbS = billedSeconds * (Math.max(64, ASSUMPTIONS.expressMemoryMb) / 1024);
    lines.push({
      item: 'Step Functions Express',
      perExecution: `${round(c.whole.sfnStart)} start + ${expressGbS.toFixed(4)} GB-s`,
      dollars: c.whole.sfnStart * (PRICES.sfnExpressPerMillionRequests + expressGbS * PRICES.sfnExpressPerGbSecond * M),
    });
  } else {
    lines.push({
      item: 'Step Functions Standard',
      perExecution: `${c.stateTransitions} state transitions`,
      dollars: c.whole.sfnStart * c.stateTransitions * PRICES.sfnStandardPerMillionTransitions,
    });
  }

  const wru = c.whole.writeUnits + c.whole.indexWriteUnits;
  lines.push({
    item: 'DynamoDB writes',
    perExecution: `${round(wru)} WRU (${round(dynamoWrites(c.whole))} writes, ${round(c.whole.indexWriteUnits)} on indexes)`,
    dollars: wru * PRICES.dynamoPerMillionWriteUnits,
  });
  lines.push({
    item: 'DynamoDB reads',
    perExecution: `${round(c.whole.readUnits)} RRU (${round(dynamoReads(c.whole))} reads)`,
    dollars: c.whole.readUnits * PRICES.dynamoPerMillionReadUnits,
  });

  const refreshesPerMonth = ASSUMPTIONS.secretReadingContainers * (60 / ASSUMPTIONS.secretRefreshMinutes) * 730;
  const secretCalls = c.whole.secretsApiCalls + refreshesPerMonth / ASSUMPTIONS.monthlyExecutions;
  lines.push({
    item: 'Secrets Manager',
    perExecution: `${round(c.whole.secretsLookups)} lookup(s), cached: ${round(c.whole.secretsApiCalls)} call + refreshes`,
    dollars: secretCalls * PRICES.secretsManagerPerCall * M,
  });
  return lines;
}

/**
 * A `Prefer: wait` on AWS, where the waiting function cannot be woken by the completing write
 * and re-reads the execution on PollingCompletions' schedule (functions/adapters/completions.ts):
 * for an execution that turns terminal `ms` after the wait began, the re-reads it makes (the
 * read it starts with is not one) and how long it stays up, to the read that sees the end or
 * to the wait's end.
 */
export function awsWait(
  ms: number,
  maxSeconds: number,
  schedule: readonly number[] = POLL_BACKOFF_MS,
): { rereads: number; seconds: number } {
  const maxMs = maxSeconds * 1000;
  let t = 0;
  let rereads = 0;
  while (t < ms && t < maxMs) {
    t = Math.min(maxMs, t + (schedule[Math.min(rereads, schedule.length - 1)] ?? 1000));
    rereads++;
  }
  return { rereads, seconds: t / 1000 };
}

/** awsWait averaged over measured wait times (the schedule is a step function, so per sample). */
export function meanAwsWait(
  samplesMs: readonly number[],
  maxSeconds: number,
  schedule: readonly number[] = POLL_BACKOFF_MS,
): { rereads: number; seconds: number } {
  if (samplesMs.length === 0) return { rereads: 0, seconds: 0 };
  const each = samplesMs.map((ms) => awsWait(ms, maxSeconds, schedule));
  return {
    rereads: each.reduce((s, w) => s + w.rereads, 0) / each.length,
    seconds: each.reduce((s, w) => s + w.seconds, 0) / each.length,
  };
}

/**
 * Counts per execution as AWS would see them when waits re-read on a schedule: the re-reads
 * counted here (one per wake by the completing write) are replaced by `rereads`, each a
 * strongly consistent GetItem of an item under 4 KB (1 RRU).
 */
export function withScheduledRereads(perExecution: Counts, rereads: number): Counts {
  const out = cloneCounts(perExecution);
  const delta = rereads - perExecution.waitWakes;
  out.dynamo.GetItem = (out.dynamo.GetItem ?? 0) + delta;
  out.readUnits += delta;
  out.waitWakes = rereads;
  return out;
}

/** What a caller shape measured, per execution, that its AWS cost follows from. */
export interface CallerMeasure {
  /** HTTP requests per execution, the POST included. */
  requestsPer: number;
  perExecution: Counts;
  awsWait: { rereads: number; seconds: number };
}

/**
 * The AWS cost of one caller shape: every request after the POST is a status or result call
 * (API Gateway, the authorizer, `execution-result`), every callback sent a dispatch, and any
 * wait is priced as the AWS mechanism runs it (scheduled re-reads, the execute function up for
 * the wait). One message per runner batch and Express, as the headline request-path figure.
 */
export function callerCost(
  m: CallerMeasure,
  path: { tasks: string[]; states: string[] },
): { whole: Counts; input: CostInput; lines: CostLine[] } {
  const waited = m.perExecution.waits > 0;
  const whole = waited ? withScheduledRereads(m.perExecution, m.awsWait.rereads) : m.perExecution;
  const input: CostInput = {
    whole,
    apiRequests: 1,
    apiFunctions: ['authorizer', 'execute'],
    polls: Math.max(0, m.requestsPer - 1),
    waitSeconds: waited ? m.awsWait.seconds : 0,
    callbacks: m.perExecution.sqsSend.callbacks ?? 0,
    batch: 1,
    taskStates: path.tasks.length,
    stateTransitions: path.states.length,
    stateMachine: 'EXPRESS',
  };
  return { whole, input, lines: costPerMillion(input) };
}

/**
 * The same caller shape had each execution taken `seconds` from POST to terminal: a poller
 * polls until the first poll at or after it (at least once), each poll adding what the
 * measured polls did on average (their reads; polls write nothing); a waiter re-reads on the
 * AWS schedule for that long. `base` is an execution with no caller traffic beyond the POST.
 */
export function atExecutionTime(m: CallerMeasure, base: Counts, seconds: number, pollMs: number, maxWaitSeconds: number): CallerMeasure {
  const polls = m.requestsPer - 1;
  if (polls > 0) {
    const modelled = Math.max(1, Math.ceil((seconds * 1000) / pollMs));
    const perExecution = cloneCounts(m.perExecution);
    const getsPerPoll = ((m.perExecution.dynamo.GetItem ?? 0) - (base.dynamo.GetItem ?? 0)) / polls;
    const unitsPerPoll = (m.perExecution.readUnits - base.readUnits) / polls;
    perExecution.dynamo.GetItem = (perExecution.dynamo.GetItem ?? 0) + (modelled - polls) * getsPerPoll;
    perExecution.readUnits += (modelled - polls) * unitsPerPoll;
    return { ...m, requestsPer: 1 + modelled, perExecution };
  }
  if (m.perExecution.waits > 0) return { ...m, awsWait: awsWait(seconds * 1000, maxWaitSeconds) };
  return m;
}

export const totalDollars = (lines: CostLine[]): number => lines.reduce((s, l) => s + l.dollars, 0);

export { awsCalls };

const GB = 1024 ** 3;

/**
 * What a media execution's objects cost per million executions, beyond its requests' share of
 * the request path: S3 requests, S3 Standard storage until the lifecycle rule expires the
 * objects, and transfer out to the internet for each download (transfer in is free; the
 * download's own API Gateway request and Lambda time are the asset route's, priced with it).
 */
export function mediaObjectCost(m: Readonly<MediaScenario> = MEDIA): CostLine[] {
  const M = 1_000_000;
  const storedGbMonths = ((m.inputBytes + m.outputBytes) / GB) * (m.storedDays / 30);
  const outGb = (m.outputBytes / GB) * m.downloads;
  const mb = (b: number): string => round(b / (1024 * 1024), 1);
  return [
    {
      item: 'S3 PUT requests',
      perExecution: `${m.puts}: the upload's presigned PUT, the output`,
      dollars: m.puts * PRICES.s3PerMillionPuts,
    },
    {
      item: 'S3 GET/HEAD requests',
      perExecution: `${m.gets}: submit's HEAD and GET of the upload, the run's GET, the download's GET`,
      dollars: m.gets * PRICES.s3PerMillionGets,
    },
    {
      item: 'S3 storage',
      perExecution: `${mb(m.inputBytes + m.outputBytes)} MB for ${m.storedDays} days (lifecycle expiry)`,
      dollars: storedGbMonths * PRICES.s3StandardPerGbMonth * M,
    },
    {
      item: 'Transfer out',
      perExecution: `${mb(m.outputBytes)} MB × ${m.downloads} download(s); in is free`,
      dollars: outGb * PRICES.transferOutPerGb * M,
    },
  ];
}

/** A month, as the bill counts it. */
export const MONTH_SECONDS = 30 * 24 * 3600;

/**
 * The share of a source's requests X-Ray's default sampling rule records: the first each
 * second, then 5 % of the rest. A source at 0.4 a second (a million a month) is all recorded; at
 * 40 a second (a hundred million), 7.4 %.
 */
export function xraySampledShareAt(perSecond: number): number {
  if (perSecond <= 0) return 0;
  return (Math.min(perSecond, 1) + ASSUMPTIONS.xraySampledShare * Math.max(0, perSecond - 1)) / perSecond;
}

/**
 * Traces per execution, and how many of them X-Ray records. Each source that starts a trace
 * samples on its own: API Gateway (each caller request, through its Lambdas), Lambda for the
 * runner invoked by the SQS poller (no trace to continue), Step Functions (each execution, with
 * its tasks). With `monthlyExecutions`, each at its own rate under the default rule (one a
 * second, then 5 %), traffic spread evenly over the month; without, `sampledShare` of them.
 */
export function xrayTraces(
  c: CostInput,
  opts: { monthlyExecutions?: number; sampledShare?: number },
): { traces: number; recorded: number } {
  const sources = [c.apiRequests + (c.polls ?? 0), 1 / c.batch, c.whole.sfnStart];
  const traces = sources.reduce((a, b) => a + b, 0);
  if (opts.monthlyExecutions === undefined) return { traces, recorded: traces * (opts.sampledShare ?? ASSUMPTIONS.xraySampledShare) };
  const perSecond = opts.monthlyExecutions / MONTH_SECONDS;
  return { traces, recorded: sources.reduce((n, perExecution) => n + perExecution * xraySampledShareAt(perExecution * perSecond), 0) };
}

/**
 * What the stack turns on beside the request path, per million executions: CloudWatch Logs
 * (Lambda's lines, the access log, the state machine's events at `logLevel`), X-Ray's recorded
 * traces (at a monthly volume's own sampling when given), the web ACL's per-request charge when
 * the payload guard is on, the execution record's storage and backups, the answers' transfer
 * out, and, when the deploy reserves concurrency (`waitBound`), the wait bound's counters for a
 * waiting caller. Fixed monthly charges are `fixedMonthlyCosts`. The owner secrets' KMS key is
 * priced apart (ownerSecretsKmsCost): a trivial pipeline names no secret and makes no KMS call.
 */
export function operationsCost(
  c: CostInput,
  opts: {
    logLevel: 'ERROR' | 'ALL';
    waf: boolean;
    sampledShare?: number;
    monthlyExecutions?: number;
    lambdaSystemLogLevel?: 'WARN' | 'INFO';
    /** The wait bound's counters (only with `reservedConcurrency`; default true, the model's earlier pricing). */
    waitBound?: boolean;
  },
): CostLine[] {
  const M = 1_000_000;
  const b = ASSUMPTIONS.logBytes;
  const invocations = Object.values(lambdaInvocations(c)).reduce((s, x) => s + x, 0);
  const requests = c.apiRequests + (c.polls ?? 0);
  const machineEvents = opts.logLevel === 'ALL' ? ASSUMPTIONS.stateMachineEventsAll * c.whole.sfnStart : 0;
  // The stack's default (`lambdaSystemLogLevel=WARN`) leaves out Lambda's START, END and REPORT lines.
  const platform = (opts.lambdaSystemLogLevel ?? 'WARN') === 'INFO' ? b.lambdaPlatform : 0;
  const lambdaBytes = platform + b.lambdaOwn;
  const bytes = invocations * lambdaBytes + requests * b.accessLog + machineEvents * b.stateMachineEvent;
  const { traces, recorded } = xrayTraces(c, opts);
  const lines: CostLine[] = [
    {
      item: 'CloudWatch Logs',
      perExecution: `${round(bytes / 1024, 1)} KB: ${lambdaBytes ? `${round(invocations)} Lambda invocations × ${round(lambdaBytes / 1024, 2)} KB` : `no Lambda lines on a success (${round(invocations)} invocations)`}, ${round(requests)} access-log line(s)${machineEvents ? `, ${round(machineEvents)} state-machine events` : ', no state-machine events (log level ERROR)'}`,
      dollars: (bytes / 1e9) * PRICES.logsPerGbIngested * M,
    },
    {
      item: 'X-Ray',
      perExecution: `${round(traces)} traces, ${round((recorded / traces) * 100, 1)} % recorded${opts.monthlyExecutions === undefined ? '' : ' (the default rule at this volume)'}`,
      dollars: recorded * PRICES.xrayPerMillionTracesRecorded,
    },
  ];
  if (opts.waf)
    lines.push({ item: 'WAF', perExecution: `${round(requests)} request(s) inspected`, dollars: requests * PRICES.wafPerMillionRequests });
  if (opts.monthlyExecutions !== undefined) {
    const months = (DEFAULT_RESULT_RETENTION_DAYS + ASSUMPTIONS.recordTtlLagDays) / 30;
    const gbMonths = (ASSUMPTIONS.executionRecordBytes / 1e9) * months;
    lines.push(
      {
        item: 'DynamoDB storage and backups',
        perExecution: `${round(ASSUMPTIONS.executionRecordBytes / 1000, 1)} KB kept ${DEFAULT_RESULT_RETENTION_DAYS + ASSUMPTIONS.recordTtlLagDays} days, with point-in-time recovery`,
        dollars: gbMonths * (PRICES.dynamoStoragePerGbMonth + PRICES.dynamoPitrPerGbMonth) * M,
      },
      {
        item: 'Transfer out (answers)',
        perExecution: `${round(requests)} answer(s) × ${ASSUMPTIONS.answerBytes} B`,
        dollars: ((requests * ASSUMPTIONS.answerBytes) / GB) * PRICES.transferOutPerGb * M,
      },
    );
  }
  // With a reservation, each granted wait takes a slot of the wait bound and gives it back: two
  // ADDs of 1 WRU the local runtime (unbounded) never makes, so the counts above lack them.
  if (c.whole.waits > 0 && opts.waitBound !== false)
    lines.push({
      item: 'Wait bound',
      perExecution: `${round(2 * c.whole.waits)} WRU: a slot taken and given back`,
      dollars: 2 * c.whole.waits * PRICES.dynamoPerMillionWriteUnits,
    });
  return lines;
}

/** A charge by the month, whatever the volume. */
export interface FixedCost {
  item: string;
  perMonth: string;
  dollars: number;
}

/**
 * What a deployment costs a month before its first execution, at the defaults: the web ACL and
 * its rules (`payloadGuard`), the owner secrets' KMS key, the two secrets, the alarms, the SQS
 * pollers' empty receives, and the sweeper's passes (with their X-Ray traces: one a minute is
 * recorded whole under the default rule).
 */
export function fixedMonthlyCosts(opts: { waf: boolean } = { waf: true }): FixedCost[] {
  const s = ASSUMPTIONS;
  const sweeperGbSeconds = s.sweeperPassesPerMonth * (s.sweeperPassMs / 1000) * (s.lambdaMemoryMb / 1024);
  const lines: FixedCost[] = [];
  if (opts.waf)
    lines.push({
      item: 'WAF web ACL and rules',
      perMonth: `1 web ACL, ${s.wafRules} rules`,
      dollars: PRICES.wafPerWebAclMonth + s.wafRules * PRICES.wafPerRuleMonth,
    });
  lines.push(
    { item: 'KMS key (owner secrets)', perMonth: '1 customer-managed key', dollars: PRICES.kmsPerKeyMonth },
    { item: 'Secrets Manager', perMonth: '2 secrets (key material, pepper)', dollars: 2 * PRICES.secretsManagerPerSecretMonth },
    { item: 'CloudWatch alarms', perMonth: `${s.alarms} alarms`, dollars: s.alarms * PRICES.cloudwatchAlarmPerMonth },
    {
      item: 'SQS pollers',
      perMonth: `${s.polledQueues} queues × ${Math.round(s.pollerReceivesPerQueueMonth / 1000)}k empty receives`,
      dollars: (s.polledQueues * s.pollerReceivesPerQueueMonth * PRICES.sqsPerMillionRequests) / 1e6,
    },
    {
      item: 'Sweeper',
      perMonth: `${Math.round(s.sweeperPassesPerMonth / 1000)}k passes: invocations, ${s.sweeperPassMs} ms at ${s.lambdaMemoryMb} MB, ${s.sweeperQueries} Queries, a trace each`,
      dollars:
        (s.sweeperPassesPerMonth * PRICES.lambdaPerMillionRequests) / 1e6 +
        sweeperGbSeconds * PRICES.lambdaArmPerGbSecond +
        (s.sweeperPassesPerMonth * s.sweeperQueries * 0.5 * PRICES.dynamoPerMillionReadUnits) / 1e6 +
        (s.sweeperPassesPerMonth * PRICES.xrayPerMillionTracesRecorded) / 1e6,
    },
  );
  return lines;
}

/** The web ACL's fixed charge a month and the rest: fixedMonthlyCosts in all. */
export const fixedMonthlyDollars = (opts: { waf: boolean } = { waf: true }): number =>
  fixedMonthlyCosts(opts).reduce((n, l) => n + l.dollars, 0);

/** One month of a deployment at `monthlyExecutions` executions like `c`: what it costs, and per million. */
export interface MonthlyBill {
  monthlyExecutions: number;
  /** Per million executions, at this volume's sampling. */
  variable: CostLine[];
  fixed: FixedCost[];
  /** Dollars for the month: the variable lines at this volume and the fixed ones. */
  month: number;
  /** `month` per million executions. */
  perMillion: number;
}

/** The bill at a monthly volume, as the stack deploys by default (nothing reserved, so no wait bound). */
export function monthlyBill(c: CostInput, monthlyExecutions: number, opts: { waf: boolean } = { waf: true }): MonthlyBill {
  const variable = [...costPerMillion(c), ...operationsCost(c, { logLevel: 'ERROR', waf: opts.waf, monthlyExecutions, waitBound: false })];
  const fixed = fixedMonthlyCosts(opts);
  const month = (totalDollars(variable) * monthlyExecutions) / 1e6 + fixed.reduce((n, l) => n + l.dollars, 0);
  return { monthlyExecutions, variable, fixed, month, perMillion: (month / monthlyExecutions) * 1e6 };
}

/**
 * A second of pipeline time per execution, per million executions: task-run's Lambda duration
 * (its memory) and the Express execution's duration (64 MB billed, in 100 ms steps).
 */
export function pipelineSecondCost(): CostLine[] {
  const M = 1_000_000;
  return [
    {
      item: 'task-run duration',
      perExecution: `1 s × ${ASSUMPTIONS.lambdaMemoryMb} MB`,
      dollars: (ASSUMPTIONS.lambdaMemoryMb / 1024) * PRICES.lambdaArmPerGbSecond * M,
    },
    {
      item: 'Express duration',
      perExecution: `1 s × ${ASSUMPTIONS.expressMemoryMb} MB`,
      dollars: (ASSUMPTIONS.expressMemoryMb / 1024) * PRICES.sfnExpressPerGbSecond * M,
    },
  ];
}

/**
 * The calls a consumer key under a rate limit and a quota adds (issue 26), as the code makes
 * them: on every caller request the authorizer's strongly consistent read of the consumer
 * (`consumers.get`, functions/services/auth.service.ts) and the rate counter's conditional
 * write (`consumers.take`, limits.service.ts); on an accepted execution besides, the quota
 * counter's write (`consumers.take`) and the consumer's usage count (`consumers.tally`). Each
 * item is under 1 KB. A deployment key without limits adds none of them.
 */
export const CONSUMER_KEY_CALLS = {
  perRequest: { reads: 1, writes: 1 },
  perExecution: { writes: 2 },
} as const;

/** The same execution called with a consumer key under both limits: `c` with those calls added. */
export function withConsumerKey(c: CostInput): CostInput {
  const requests = c.apiRequests + (c.polls ?? 0);
  const reads = requests * CONSUMER_KEY_CALLS.perRequest.reads;
  const writes = requests * CONSUMER_KEY_CALLS.perRequest.writes + CONSUMER_KEY_CALLS.perExecution.writes;
  const whole = cloneCounts(c.whole);
  whole.dynamo.GetItem = (whole.dynamo.GetItem ?? 0) + reads;
  whole.dynamo.UpdateItem = (whole.dynamo.UpdateItem ?? 0) + writes;
  whole.readUnits += reads;
  whole.writeUnits += writes;
  whole.storeMethods['consumers.get'] = (whole.storeMethods['consumers.get'] ?? 0) + reads;
  whole.storeMethods['consumers.take'] = (whole.storeMethods['consumers.take'] ?? 0) + requests + 1;
  whole.storeMethods['consumers.tally'] = (whole.storeMethods['consumers.tally'] ?? 0) + 1;
  return { ...c, whole };
}

/** What giving something up takes off a month's bill, per million executions at its volume. */
export interface GoalLever {
  lever: string;
  /** Dollars per million it gives back at this volume. */
  saves: number;
  /** Per million at this volume with it and every lever before it taken. */
  then: number;
}

/**
 * Toward ≤ $12 per million, at a bill's volume: each lever the model can price, largest kind
 * first, what it gives back and where the bill then stands with it and those before it.
 */
export function goalLevers(c: CostInput, bill: MonthlyBill): GoalLever[] {
  const M = 1_000_000;
  const line = (item: string) => bill.variable.find((l) => l.item === item)?.dollars ?? 0;
  const fixedWaf = bill.fixed.find((f) => f.item === 'WAF web ACL and rules')?.dollars ?? 0;
  const gb = ASSUMPTIONS.lambdaMemoryMb / 1024;
  const levers: [string, number][] = [
    ['X-Ray off (tracing is on in every function, the stage and the state machine; no setting yet)', line('X-Ray')],
    ['`payloadGuard=false` (no web ACL: no 413 before Lambda, no rate-based rules)', line('WAF') + (fixedWaf / bill.monthlyExecutions) * M],
    ['`PIPEGATE_TRACK_OPEN=false` (the sweeper no longer finds lost executions)', 2 * PRICES.dynamoPerMillionWriteUnits],
    ["no owner's view of the live API (its executions index and usage counter; no setting)", 2 * PRICES.dynamoPerMillionWriteUnits],
    [
      'callers that do not hold a Lambda while they wait (a callback, or polls far apart)',
      (c.waitSeconds ?? 0) * gb * PRICES.lambdaArmPerGbSecond * M + c.whole.waitWakes * PRICES.dynamoPerMillionReadUnits,
    ],
  ];
  let then = bill.perMillion;
  return levers.map(([lever, saves]) => {
    then -= saves;
    return { lever, saves, then };
  });
}

/**
 * The README's headline: a waiting caller of the trivial pipeline, from the inputs the last
 * `npm run bench` measured (bench/reference-wait.json), billed by the month at 10 k, 1 M and
 * 100 M executions with everything the stack turns on at its defaults (nothing reserved, so no
 * wait bound), X-Ray at the sampling its default rule gives at each volume, fixed costs included.
 */
export function allInHeadline(input: CostInput): {
  requestPath: number;
  bills: MonthlyBill[];
  /** The bill at 1 M a month, the README's headline. */
  million: MonthlyBill;
  fixed: number;
  logsAll: number;
  lambdaLinesInfo: number;
  pipelineSecond: number;
  consumerKey: number;
  /** What `-c reservedConcurrency` adds per waiting execution: the wait bound's counters. */
  waitBound: number;
  levers: GoalLever[][];
} {
  const requestPath = totalDollars(costPerMillion(input));
  const bills = BILL_VOLUMES.map((v) => monthlyBill(input, v));
  const million = bills.find((b) => b.monthlyExecutions === 1_000_000) as MonthlyBill;
  const operations = operationsCost(input, { logLevel: 'ERROR', waf: true, waitBound: false });
  const withAll = operationsCost(input, { logLevel: 'ALL', waf: true, waitBound: false });
  return {
    requestPath,
    bills,
    million,
    fixed: fixedMonthlyDollars(),
    logsAll: totalDollars(withAll) - totalDollars(operations),
    /** What `lambdaSystemLogLevel=INFO` (Lambda's START, END and REPORT lines) adds. */
    lambdaLinesInfo:
      totalDollars(operationsCost(input, { logLevel: 'ERROR', waf: true, lambdaSystemLogLevel: 'INFO', waitBound: false })) -
      totalDollars(operations),
    pipelineSecond: totalDollars(pipelineSecondCost()),
    /** The same caller with a consumer key under a rate limit and a quota, at 1 M a month. */
    consumerKey: monthlyBill(withConsumerKey(input), 1_000_000).perMillion,
    waitBound: totalDollars(operationsCost(input, { logLevel: 'ERROR', waf: true })) - totalDollars(operations),
    levers: bills.map((b) => goalLevers(input, b)),
  };
}

/**
 * An MCP client (functions/services/mcp.service.ts). A tools/call is the waiting caller's
 * execution exactly (the same submit, the same wait, the same reads: a progress token makes
 * each wake read the whole record instead of its head, the same read unit for a record under
 * 4 KB), through the MCP function instead of execute. A session, once per client connection,
 * adds what precedes the calls: initialize, the initialized notification, the client's GET
 * (answered 405) and tools/list, each an API request through the authorizer (its strongly
 * consistent read of the deployment) and the MCP function; the tool is kept by the container
 * per deployment revision, so a warm one reads nothing else.
 */
export const MCP_SESSION_CALLS = {
  requests: 4,
  functions: ['authorizer', 'deployment-mcp'],
  strongReads: 1,
} as const;

/** An MCP client's cost per million, all in at the stack's defaults: one tools/call, and one session's handshake. */
export function mcpCost(input: CostInput): { call: number; session: CostLine[]; sessionTotal: number } {
  // As the bill prices an execution: at 1 M calls a month, fixed charges included.
  const call = monthlyBill({ ...input, apiFunctions: ['authorizer', 'deployment-mcp'] }, 1_000_000).perMillion;
  const M = 1_000_000;
  const { requests, functions, strongReads } = MCP_SESSION_CALLS;
  const gb = ASSUMPTIONS.lambdaMemoryMb / 1024;
  const warmMs = functions.reduce((s, f) => s + (ASSUMPTIONS.lambdaWarmMs[f] ?? 0), 0);
  const invocations = requests * functions.length;
  const gbSeconds = gb * ((requests * warmMs) / 1000) + ASSUMPTIONS.coldShare * invocations * ASSUMPTIONS.coldInitSeconds * gb;
  const session: CostLine[] = [
    { item: 'API Gateway REST', perExecution: `${requests} requests`, dollars: requests * PRICES.apiGatewayRestPerMillion },
    {
      item: 'Lambda requests',
      perExecution: `${invocations}: authorizer and deployment-mcp, each ×${requests}`,
      dollars: invocations * PRICES.lambdaPerMillionRequests,
    },
    {
      item: 'Lambda duration (arm64)',
      perExecution: `${gbSeconds.toFixed(4)} GB-s (${requests} × ${warmMs} ms warm + ${ASSUMPTIONS.coldShare * 100} % cold)`,
      dollars: gbSeconds * PRICES.lambdaArmPerGbSecond * M,
    },
    {
      item: 'DynamoDB reads',
      perExecution: `${requests * strongReads} RRU: the authorizer's read of the deployment`,
      dollars: requests * strongReads * PRICES.dynamoPerMillionReadUnits,
    },
    { item: 'WAF', perExecution: `${requests} requests inspected`, dollars: requests * PRICES.wafPerMillionRequests },
    {
      item: 'CloudWatch Logs',
      perExecution: `${requests} access-log lines`,
      dollars: ((requests * ASSUMPTIONS.logBytes.accessLog) / 1e9) * PRICES.logsPerGbIngested * M,
    },
    {
      item: 'X-Ray',
      perExecution: `${requests} traces, all recorded at a million sessions a month (the default rule)`,
      dollars: requests * xraySampledShareAt((requests * M) / MONTH_SECONDS) * PRICES.xrayPerMillionTracesRecorded,
    },
  ];
  return { call, session, sessionTotal: totalDollars(session) };
}

/**
 * The owner secrets' KMS key, per million executions of a pipeline whose http nodes name
 * `secrets` owner secrets. task-run keeps each data key it has opened for its container's life
 * (functions/adapters/kms.ts), so it asks KMS once per secret per container, and a container is
 * new for about ASSUMPTIONS.coldShare of the invocations; opened on every run instead, it would
 * be one Decrypt per secret per execution. Setting a secret is one GenerateDataKey (an owner's
 * action, not per execution: left out). The key's $1 a month is fixed, not per execution.
 */
export function ownerSecretsKmsCost(secrets = 1): { cached: CostLine; perRun: CostLine; keyMonthly: number } {
  const M = 1_000_000;
  const containers = ASSUMPTIONS.coldShare;
  return {
    cached: {
      item: 'KMS Decrypt (data keys kept per container)',
      perExecution: `${round(secrets * containers, 3)} Decrypt: ${secrets} per task-run container, ${containers * 100} % of runs start one`,
      dollars: secrets * containers * PRICES.kmsPerRequest * M,
    },
    perRun: { item: 'KMS Decrypt (opened on every run)', perExecution: `${secrets} Decrypt`, dollars: secrets * PRICES.kmsPerRequest * M },
    keyMonthly: PRICES.kmsPerKeyMonth,
  };
}

/**
 * One request's calls, as the code makes them, for what is priced from a list rather than
 * counted by a bench run: each GetItem of an item under 4 KB (1 read unit strongly consistent,
 * 0.5 eventually), each write of an item under 1 KB that no index holds (1 write unit).
 * test/integration/route-calls.test.ts counts the services' calls on dynalite against these lists.
 */
export interface RouteCalls {
  /** The Lambda functions the request invokes. */
  functions: readonly string[];
  strongReads: number;
  eventualReads: number;
  writes: number;
}

export const readUnitsOf = (c: Pick<RouteCalls, 'strongReads' | 'eventualReads'>): number => c.strongReads + c.eventualReads / 2;

/**
 * The owners' uploads route (`POST /v1/pipelines/{pipeline_id}/uploads`, function
 * pipeline-upload; functions/services/pipeline-uploads.service.ts and issue-upload.ts).
 * `request`: an owner route is IAM-signed, so no authorizer; the pipeline's item read strongly
 * consistent (`pipelines.getMeta`), its latest version eventually (`pipelines.getVersion`, which
 * a container keeps once read: its first upload reads it), the upload's item put conditionally
 * (`uploads.create`); the PUT URL is signed in the function, no request to S3. `s3Puts`: the
 * owner's PUT of the bytes to that URL. `use`: what a run that takes the upload adds
 * (asset-inputs.service.ts): the upload's item read strongly consistent (`uploads.get`), the
 * object's HeadObject and GetObject (size, sniffed type, hash), the single-use claim
 * (`uploads.consume`).
 */
export const PIPELINE_UPLOAD_CALLS = {
  request: { functions: ['pipeline-upload'], strongReads: 1, eventualReads: 1, writes: 1 },
  s3Puts: 1,
  use: { strongReads: 1, eventualReads: 0, writes: 1, s3Gets: 2 },
} as const satisfies { request: RouteCalls; s3Puts: number; use: Omit<RouteCalls, 'functions'> & { s3Gets: number } };

/**
 * What one owner upload costs, per million uploads, from PIPELINE_UPLOAD_CALLS: the request
 * (API Gateway, the web ACL's inspection, its access-log line, the function at its memory for
 * its warm time plus an init, since an owner's occasional call seldom finds a warm container),
 * the bytes' PUT and their storage until the lifecycle rule expires them (transfer in is free),
 * and the calls of the run that uses it. Not per execution: an owner's action.
 */
export function ownerUploadCost(bytes: number = MEDIA.inputBytes, storedDays: number = MEDIA.storedDays): CostLine[] {
  const M = 1_000_000;
  const { request, s3Puts, use } = PIPELINE_UPLOAD_CALLS;
  const gb = ASSUMPTIONS.lambdaMemoryMb / 1024;
  const warmMs = request.functions.reduce((s, f) => s + (ASSUMPTIONS.lambdaWarmMs[f] ?? 0), 0);
  const gbSeconds = gb * (warmMs / 1000 + request.functions.length * ASSUMPTIONS.coldInitSeconds);
  const mb = round(bytes / (1024 * 1024), 1);
  return [
    { item: 'API Gateway REST', perExecution: '1 request (IAM-signed: no authorizer)', dollars: PRICES.apiGatewayRestPerMillion },
    { item: 'WAF', perExecution: '1 request inspected', dollars: PRICES.wafPerMillionRequests },
    {
      item: 'Lambda requests',
      perExecution: `${request.functions.length}: ${request.functions.join(', ')}`,
      dollars: request.functions.length * PRICES.lambdaPerMillionRequests,
    },
    {
      item: 'Lambda duration',
      perExecution: `${gbSeconds.toFixed(4)} GB-s on arm64 (${warmMs} ms + a ${ASSUMPTIONS.coldInitSeconds} s init)`,
      dollars: gbSeconds * PRICES.lambdaArmPerGbSecond * M,
    },
    {
      item: 'DynamoDB reads',
      perExecution: `${round(readUnitsOf(request), 1)} RRU: the pipeline (strongly consistent), its latest version (eventually)`,
      dollars: readUnitsOf(request) * PRICES.dynamoPerMillionReadUnits,
    },
    {
      item: 'DynamoDB writes',
      perExecution: `${request.writes} WRU: the upload's item`,
      dollars: request.writes * PRICES.dynamoPerMillionWriteUnits,
    },
    {
      item: 'CloudWatch Logs',
      perExecution: '1 access-log line',
      dollars: (ASSUMPTIONS.logBytes.accessLog / 1e9) * PRICES.logsPerGbIngested * M,
    },
    { item: 'S3 PUT requests', perExecution: `${s3Puts}: the owner's PUT of the bytes`, dollars: s3Puts * PRICES.s3PerMillionPuts },
    {
      item: 'S3 storage',
      perExecution: `${mb} MB for ${storedDays} days (lifecycle expiry)`,
      dollars: (bytes / GB) * (storedDays / 30) * PRICES.s3StandardPerGbMonth * M,
    },
    {
      item: 'Run that uses it: DynamoDB',
      perExecution: `${round(readUnitsOf(use), 1)} RRU + ${use.writes} WRU: the upload's read and its claim`,
      dollars: readUnitsOf(use) * PRICES.dynamoPerMillionReadUnits + use.writes * PRICES.dynamoPerMillionWriteUnits,
    },
    {
      item: 'Run that uses it: S3 GET/HEAD',
      perExecution: `${use.s3Gets}: HEAD and GET of the bytes`,
      dollars: use.s3Gets * PRICES.s3PerMillionGets,
    },
  ];
}

/**
 * What opening an event stream costs before the shared loop (events.service.ts `streamOf`)
 * starts re-reading, by reader. `caller` (execution-events): the authorizer with its strongly
 * consistent Get of the deployment, then the execution read eventually (`ownedExecution`); the
 * deployment's contract is kept by the container per revision (`liveDeployment`), so a warm
 * one reads it no more. `form` (form-events, no key, no authorizer; form.service.ts
 * `openFormEventStream`): the link's item and the deployment, both strongly consistent
 * (`openForm`: a disabled or rotated link stops at once), the two rate counters' `ADD`s (the
 * link's and the address's, `admit`), and the execution read eventually.
 */
export const EVENT_STREAM_CALLS = {
  caller: { functions: ['authorizer', 'execution-events'], strongReads: 1, eventualReads: 1, writes: 0 },
  form: { functions: ['form-events'], strongReads: 2, eventualReads: 1, writes: 2 },
} as const satisfies Record<string, RouteCalls>;

export type StreamReader = keyof typeof EVENT_STREAM_CALLS;

/**
 * A wait node's resume (`POST /v1/resume/{token}`, function resume; resume.service.ts). No
 * key, so no authorizer. `request`: the execution read strongly consistent, its version
 * eventually (`pipelines.getVersion`, kept by a warm container), the event kept with one
 * conditional UpdateItem of the node's item (≤ 32 KiB inline; a larger event is one S3 PUT
 * more). `wake`, when the node was waiting: the waiting list's conditional update, the
 * execution read again strongly consistent, the next generation's message (SQS) and its
 * conditional update (`wakeExecution`), and StopExecution of the older workflow (no charge);
 * then the woken workflow's start (the runner, StartExecution), as any execution's.
 */
export const RESUME_CALLS = {
  request: { functions: ['resume'], strongReads: 1, eventualReads: 1, writes: 1 },
  wake: { strongReads: 1, eventualReads: 0, writes: 2, sqsSends: 1 },
} as const satisfies { request: RouteCalls; wake: Omit<RouteCalls, 'functions'> & { sqsSends: number } };

/**
 * What one resume of a waiting execution costs, per million resumes, from RESUME_CALLS: the
 * request (API Gateway, the web ACL's inspection, its access-log line, the resume function
 * warm with its share of cold starts), its reads and writes and the wake's, and the woken
 * workflow's start: the message's send, receive and delete, the runner's invocation and an
 * Express execution's start. (On Standard the start is three state transitions more, MarkRunning,
 * ShouldRun and RunNodes: $75 per million resumes.) The step that then runs is the pipeline's
 * own time, priced with it. An event sent before the node waits costs the request alone.
 */
export function resumeCost(): CostLine[] {
  const M = 1_000_000;
  const { request, wake } = RESUME_CALLS;
  const gb = ASSUMPTIONS.lambdaMemoryMb / 1024;
  // The woken workflow's runner and MarkRunning; the older one's next RunNodes, which stands down
  // at once (on Express, which cannot be stopped; on Standard it is stopped and costs nothing).
  const functions = [...request.functions, 'runner', 'task-start', 'task-run'];
  const warmMs = functions.reduce((s, f) => s + (ASSUMPTIONS.lambdaWarmMs[f] ?? 0), 0);
  const gbSeconds = gb * (warmMs / 1000) + ASSUMPTIONS.coldShare * functions.length * ASSUMPTIONS.coldInitSeconds * gb;
  const reads = readUnitsOf(request) + readUnitsOf(wake);
  const writes = request.writes + wake.writes;
  // The message: its send, then the event source's receive and delete.
  const sqs = wake.sqsSends * 3;
  const billedSeconds = Math.ceil(ASSUMPTIONS.expressSeconds / 0.1) * 0.1;
  const expressGbS = billedSeconds * (Math.max(64, ASSUMPTIONS.expressMemoryMb) / 1024);
  return [
    { item: 'API Gateway REST', perExecution: '1 request (no key: no authorizer)', dollars: PRICES.apiGatewayRestPerMillion },
    { item: 'WAF', perExecution: '1 request inspected', dollars: PRICES.wafPerMillionRequests },
    {
      item: 'Lambda requests',
      perExecution: `${functions.length}: ${functions.join(', ')} (the woken workflow's start, the older one standing down)`,
      dollars: functions.length * PRICES.lambdaPerMillionRequests,
    },
    {
      item: 'Lambda duration',
      perExecution: `${gbSeconds.toFixed(4)} GB-s on arm64 (${warmMs} ms warm + ${ASSUMPTIONS.coldShare * 100} % cold)`,
      dollars: gbSeconds * PRICES.lambdaArmPerGbSecond * M,
    },
    {
      item: 'DynamoDB reads',
      perExecution: `${round(reads, 1)} RRU: the execution twice (strongly consistent), its version (eventually)`,
      dollars: reads * PRICES.dynamoPerMillionReadUnits,
    },
    {
      item: 'DynamoDB writes',
      perExecution: `${writes} WRU: the event, the waiting list, the generation`,
      dollars: writes * PRICES.dynamoPerMillionWriteUnits,
    },
    { item: 'SQS', perExecution: `${sqs}: the wake's message sent, received, deleted`, dollars: sqs * PRICES.sqsPerMillionRequests },
    {
      item: 'Step Functions Express',
      perExecution: `1 start + ${expressGbS.toFixed(4)} GB-s`,
      dollars: PRICES.sfnExpressPerMillionRequests + expressGbS * PRICES.sfnExpressPerGbSecond * M,
    },
    {
      item: 'CloudWatch Logs',
      perExecution: '1 access-log line',
      dollars: (ASSUMPTIONS.logBytes.accessLog / 1e9) * PRICES.logsPerGbIngested * M,
    },
  ];
}

/** Dollars as the docs write them: two decimals, thousands separated. */
export const dollars = (x: number): string => `$${x.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;

const volumeName = (v: number): string => (v >= 1e6 ? `${v / 1e6} M` : `${v / 1e3} k`);

/**
 * docs/aws.md's bill by the month and the levers toward the goal, as markdown tables, and the
 * fixed charges as a sentence: rendered from the model, so the prose cannot drift from it.
 */
export function billText(h: ReturnType<typeof allInHeadline>): { bill: string; fixed: string; levers: string } {
  const head = `| Per million executions | ${h.bills.map((b) => `${volumeName(b.monthlyExecutions)} a month`).join(' | ')} |`;
  const rule = `|---|${h.bills.map(() => '---').join('|')}|`;
  const items = h.bills[0]?.variable.map((l) => l.item) ?? [];
  const row = (name: string, cell: (b: MonthlyBill) => string) => `| ${name} | ${h.bills.map(cell).join(' | ')} |`;
  const bill = [
    head,
    rule,
    ...items.map((item) => row(item, (b) => dollars(b.variable.find((l) => l.item === item)?.dollars ?? 0))),
    row('**Per execution, in all**', (b) => `**${dollars(totalDollars(b.variable))}**`),
    row('Fixed charges, spread', (b) => dollars((h.fixed / b.monthlyExecutions) * 1e6)),
    row('**All in, per million**', (b) => `**${dollars(b.perMillion)}**`),
    row('The month', (b) => dollars(b.month)),
  ].join('\n');
  const fixedLines = h.million.fixed.map((f) => `${f.item} ${dollars(f.dollars)} (${f.perMonth})`);
  const fixed = fixedLines.join('; ');
  const leverRows = (h.levers[0] ?? []).map(
    (l, i) => `| ${l.lever} | ${h.levers.map((ls) => `${dollars(ls[i]?.saves ?? 0)} → ${dollars(ls[i]?.then ?? 0)}`).join(' | ')} |`,
  );
  const levers = [
    `| Lever (each with those above it) | ${h.bills.map((b) => `${volumeName(b.monthlyExecutions)} a month: gives back → then`).join(' | ')} |`,
    rule,
    ...leverRows,
  ].join('\n');
  return { bill, fixed, levers };
}

/* ------------------------------------------------------------------ fan-out: the map node */

/** What one execution running a map asks of AWS, by design. */
export interface MapWork {
  /** RunNodes steps (the step loop), or 1 for the Map state's one execution. */
  steps: number;
  transitions: number;
  historyEvents: number;
  lambdaInvocations: number;
  /** Lambda time billed, seconds (the functions' own work, not the upstream's jobs). */
  lambdaSeconds: number;
  writeUnits: number;
  readUnits: number;
  upstreamRequests: number;
  /** The largest state payload the design moves, bytes (the Map's output carries every item's value). */
  payloadBytes: number;
}

/**
 * pipegate's design: the map runs inside the step loop (RunNodes → AfterStep → Sleep → RunNodes),
 * its items checkpointed in the steps table. A step submits a wave of `concurrency` items and
 * polls each at once; each later step polls the wave again; the step that finds it done submits
 * the next wave. So the steps, and the history, grow with waves × polls, not with items, and
 * the state carries ids and a wait only.
 */
export function mapStepLoopWork(s: MapScenario = MAP_SCENARIO): MapWork {
  const waves = Math.ceil(s.items / s.concurrency);
  const steps = waves * Math.max(1, s.pollsPerItem - 1) + 1;
  const upstreamRequests = s.items * (1 + s.pollsPerItem);
  // Per item: the lease before its submit, a waiting record per poll that finds it not done, the done record.
  const itemWrites = s.items * (1 + (s.pollsPerItem - 1) + 1);
  // Per step: the map's own record (waiting, then done), the progress write (the last step's terminal write instead).
  const stepWrites = steps * 2;
  // Per step: the execution (strong read), the node records (one Query, strongly consistent: 1 RRU per 4 KB), the cancel watch.
  const recordsRead = Array.from({ length: steps }, (_, i) => Math.min(s.items, Math.round((s.items * i) / steps)) + 1);
  const queryUnits = recordsRead.reduce((sum, n) => sum + Math.max(1, Math.ceil((n * s.recordBytes) / 4096)), 0);
  return {
    steps,
    transitions: 2 + steps * 3,
    historyEvents:
      HISTORY_EVENTS.task + HISTORY_EVENTS.choice + steps * (HISTORY_EVENTS.task + HISTORY_EVENTS.choice + HISTORY_EVENTS.wait),
    lambdaInvocations: 1 + steps,
    lambdaSeconds: (steps * MAP_STEP_OVERHEAD_MS + (upstreamRequests / s.concurrency) * s.requestMs) / 1000,
    writeUnits: itemWrites + stepWrites,
    readUnits: queryUnits + steps * 2,
    upstreamRequests,
    payloadBytes: 200,
  };
}

/**
 * The alternative: the state machine's inline Map state, `MaxConcurrency` = concurrency, each
 * iteration a submit Task, then per poll a Task and a Choice (and a Wait before every poll but
 * the first), the items' values in the state (the Map's output is their list).
 */
export function mapStateWork(s: MapScenario = MAP_SCENARIO): MapWork {
  const perItemTransitions = 1 + 1 + s.pollsPerItem * 2 + (s.pollsPerItem - 1);
  const perItemEvents =
    HISTORY_EVENTS.mapIteration +
    HISTORY_EVENTS.task +
    s.pollsPerItem * (HISTORY_EVENTS.task + HISTORY_EVENTS.choice) +
    (s.pollsPerItem - 1) * HISTORY_EVENTS.wait;
  const upstreamRequests = s.items * (1 + s.pollsPerItem);
  return {
    steps: 1,
    transitions: 4 + s.items * perItemTransitions,
    historyEvents: 4 * HISTORY_EVENTS.task + s.items * perItemEvents,
    lambdaInvocations: 2 + upstreamRequests,
    lambdaSeconds: (upstreamRequests * (s.requestMs + 20)) / 1000,
    // Each item's value recorded for a restart is the Map's own affair; the final write only.
    writeUnits: 2,
    readUnits: 2,
    upstreamRequests,
    payloadBytes: s.items * s.recordBytes,
  };
}

/** Dollars per million executions of a map, on Standard (its jobs wait between polls), item by item. */
export function mapCostPerMillion(w: MapWork): CostLine[] {
  const gbSeconds = (ASSUMPTIONS.lambdaMemoryMb / 1024) * w.lambdaSeconds;
  return [
    {
      item: 'Step Functions Standard',
      perExecution: `${w.transitions} state transitions`,
      dollars: w.transitions * PRICES.sfnStandardPerMillionTransitions,
    },
    {
      item: 'Lambda requests',
      perExecution: `${w.lambdaInvocations} invocations`,
      dollars: w.lambdaInvocations * PRICES.lambdaPerMillionRequests,
    },
    {
      item: 'Lambda duration (arm64)',
      perExecution: `${gbSeconds.toFixed(3)} GB-s`,
      dollars: gbSeconds * PRICES.lambdaArmPerGbSecond * 1_000_000,
    },
    { item: 'DynamoDB writes', perExecution: `${w.writeUnits} WRU`, dollars: w.writeUnits * PRICES.dynamoPerMillionWriteUnits },
    { item: 'DynamoDB reads', perExecution: `${w.readUnits} RRU`, dollars: w.readUnits * PRICES.dynamoPerMillionReadUnits },
  ];
}

/** The largest map each design can run within Step Functions' quotas, for a scenario's concurrency and polls (items, at most MAP_MAX_ITEMS). */
export function largestMapWithinQuotas(work: (s: MapScenario) => MapWork, s: MapScenario = MAP_SCENARIO, most = 1000): number {
  let ok = 0;
  for (let items = 1; items <= most; items++) {
    const w = work({ ...s, items });
    if (w.historyEvents > SFN_QUOTAS.historyEvents || w.payloadBytes > SFN_QUOTAS.payloadBytes) break;
    ok = items;
  }
  return ok;
}

/* ------------------------------------------------------------------ long executions: the two state machines */

/** What a step answers the state machine (functions/services/tasks.service.ts StepAnswer `next`). */
export type StepNext = 'wait' | 'step' | 'done';

interface AslState {
  Type?: string;
  Next?: string;
  End?: boolean;
  Default?: string;
  ResultPath?: string;
  Choices?: { Variable?: string; BooleanEquals?: boolean; StringEquals?: string; Next?: string }[];
}

/**
 * The states one workflow enters, walked through the ASL document itself from StartAt:
 * MarkRunning proceeds, and the step task (the Task whose result is `$.run`) answers each of
 * `answers` in turn, which the Choice after it reads (`stoppedInItsLastWait`: stopped, by a cancel
 * or a wake, in the Wait its last answer sent it to). Standard bills each state entered as a state
 * transition; a Wait entered is one however long it waits.
 */
export function stepLoopStates(
  asl: { StartAt: string; States: Record<string, unknown> },
  answers: readonly StepNext[],
  opts: { stoppedInItsLastWait?: boolean } = {},
): string[] {
  const states: string[] = [];
  let next = 0;
  let current: StepNext | undefined;
  let name: string | undefined = asl.StartAt;
  while (name !== undefined) {
    if (states.length > 100_000) throw new Error('the walk does not end');
    const state = asl.States[name] as AslState | undefined;
    if (!state) throw new Error(`no state ${name}`);
    states.push(name);
    if (state.Type === 'Succeed' || state.Type === 'Fail' || state.End) break;
    // StopExecution while it waits: no state is entered after this one.
    if (state.Type === 'Wait' && opts.stoppedInItsLastWait && next === answers.length) break;
    if (state.Type === 'Task' && state.ResultPath === '$.run') {
      current = answers[next++];
      if (current === undefined) throw new Error(`the workflow steps more than ${answers.length} times`);
    }
    if (state.Type === 'Choice') {
      const rule = state.Choices?.find((c) =>
        c.Variable === '$.start.proceed' ? c.BooleanEquals === true : c.Variable === '$.run.next' && c.StringEquals === current,
      );
      name = rule?.Next ?? state.Default;
    } else name = state.Next;
  }
  if (next !== answers.length) throw new Error(`the workflow ended after ${next} of ${answers.length} steps`);
  return states;
}

/**
 * The waits between a polled job's steps, seconds, for a job that is over `jobMs` after its
 * submit: the schedule the http node keeps (functions/core/nodes/http.ts nextPollDelayMs: the
 * first poll with the submit, then `every_ms` for the first minute, then each interval 1.5 times
 * the last up to one a minute; a `Retry-After` instead when the upstream sends one) in the whole
 * seconds a step asks its Wait state for (tasks.service.ts), steps taken as instant. A wait
 * before each poll after the first; the last poll finds the job over.
 */
export function pollWaitsSeconds(jobMs: number, everyMs: number = DEFAULT_POLL_EVERY_MS, retryAfterMs?: number): number[] {
  const waits: number[] = [];
  let t = 0;
  for (let polls = 1; t < jobMs; polls++) {
    const seconds = Math.max(1, Math.ceil(nextPollDelayMs(everyMs, polls, 0, t, retryAfterMs) / 1000));
    waits.push(seconds);
    t += seconds * 1000;
    if (waits.length > 100_000) throw new Error('the job never ends');
  }
  return waits;
}

/** DynamoDB read and write units of a task or a step (write units with their index copies). */
export interface StepCalls {
  readUnits: number;
  writeUnits: number;
}

/**
 * The priced executions (docs/aws.md, "Long executions"), each a caller's execution of a
 * published pipeline. Their definitions run in test/integration/workflow-calls.test.ts, which
 * checks WORKFLOW_CALLS against them.
 */
export const WORKFLOW_SCENARIOS = {
  /** (a) Two calls in a row between an input and an output, shaped by a transform: Express, one step. */
  fiveNodes: {
    definition: {
      nodes: {
        prompt: { type: 'input', value_type: 'string', value: 'a lighthouse' },
        draft: { type: 'http', method: 'GET', url: 'https://api.example/v1/draft', inputs: ['prompt'] },
        polish: { type: 'http', method: 'GET', url: 'https://api.example/v1/polish', inputs: ['draft'] },
        title: { type: 'transform', inputs: ['polish'], expression: '$uppercase(polish)' },
        out: { type: 'output', from: 'title' },
      },
    },
  },
  /** (b) A job of ten minutes by poll (render-job's shape, its default interval): Standard. */
  polledJob: {
    jobMs: 600_000,
    definition: {
      timeout_ms: 3_600_000,
      nodes: {
        prompt: { type: 'input', value_type: 'string', value: 'a lighthouse' },
        render: {
          type: 'http',
          method: 'POST',
          url: 'https://jobs.example/v1/jobs',
          inputs: ['prompt'],
          body: "{ 'prompt': prompt }",
          poll: { url: 'url', done: "status in ['succeeded', 'failed']", failed: "status = 'failed'", value: 'output' },
        },
        picture: { type: 'output', from: 'render' },
      },
    },
  },
} as const;

/**
 * What the tasks of each priced execution ask of DynamoDB (test/integration/workflow-calls.test.ts
 * measures them on dynalite, a caller's execution from MarkRunning to its terminal write, and
 * fails when the code changes them). The webhook job's figures are assembled from parts measured
 * the same way: the job's first step (a submit, then the node waiting), the woken generation's
 * MarkRunning and its step to the end; its resume request and wake are RESUME_CALLS, which
 * test/integration/route-calls.test.ts counts on the resume route itself.
 */
export const WORKFLOW_CALLS = {
  fiveNodes: { markRunning: { readUnits: 0, writeUnits: 1 }, steps: 1, stepUnits: { readUnits: 1, writeUnits: 5 } },
  polledJob: { markRunning: { readUnits: 0, writeUnits: 1 }, steps: 26, stepUnits: { readUnits: 51, writeUnits: 74 } },
  webhookJob: {
    markRunning: { readUnits: 0, writeUnits: 1 },
    firstStep: { readUnits: 1, writeUnits: 4 },
    wokenMarkRunning: { readUnits: 1, writeUnits: 0 },
    lastStep: { readUnits: 2, writeUnits: 4 },
  },
} as const satisfies Record<string, Record<string, StepCalls | number>>;

/** How each priced execution runs: its machine, its steps' answers per workflow, its upstream calls and wall time. */
export interface WorkflowRun {
  name: string;
  workflow: 'express' | 'standard';
  /** Per workflow it runs (a wake starts a second), each step's answer; `stopped`: stopped in its last Wait. */
  workflows: { answers: StepNext[]; stopped?: boolean }[];
  /** Calls its steps make to upstreams (submits, polls). */
  upstreamCalls: number;
  /** Its wall time, seconds (what Express bills). */
  seconds: number;
  /** DynamoDB units, all its tasks and requests together. */
  units: StepCalls;
  /** Whether an outside request resumes it (`POST /v1/resume/{token}`, priced from RESUME_CALLS). */
  resumed: boolean;
}

const addUnits = (...list: StepCalls[]): StepCalls => ({
  readUnits: list.reduce((n, c) => n + c.readUnits, 0),
  writeUnits: list.reduce((n, c) => n + c.writeUnits, 0),
});

/** The three priced executions of docs/aws.md's "Long executions", from WORKFLOW_CALLS and the poll schedule. */
export function workflowRuns(): WorkflowRun[] {
  const a = WORKFLOW_CALLS.fiveNodes;
  const waits = pollWaitsSeconds(WORKFLOW_SCENARIOS.polledJob.jobMs);
  const b = WORKFLOW_CALLS.polledJob;
  const c = WORKFLOW_CALLS.webhookJob;
  return [
    {
      name: 'five nodes, two calls (Express)',
      workflow: 'express',
      workflows: [{ answers: ['done'] }],
      upstreamCalls: 2,
      seconds: ASSUMPTIONS.expressSeconds + (2 * ASSUMPTIONS.upstreamMs) / 1000,
      units: addUnits(a.markRunning, a.stepUnits),
      resumed: false,
    },
    {
      name: 'a ten-minute job, polled (Standard)',
      workflow: 'standard',
      workflows: [{ answers: [...waits.map((): StepNext => 'wait'), 'done'] }],
      // The submit and the first poll, then one poll after each wait.
      upstreamCalls: 2 + waits.length,
      seconds: waits.reduce((x, y) => x + y, 0),
      units: addUnits(b.markRunning, b.stepUnits),
      resumed: false,
    },
    {
      name: 'a webhook job (Standard): a wait resumed by an event',
      workflow: 'standard',
      workflows: [{ answers: ['wait'], stopped: true }, { answers: ['done'] }],
      upstreamCalls: 1,
      seconds: WORKFLOW_SCENARIOS.polledJob.jobMs / 1000,
      units: addUnits(
        c.markRunning,
        c.firstStep,
        // The resume route's own reads and writes and its wake's, as test/integration/route-calls.test.ts counts them.
        { readUnits: readUnitsOf(RESUME_CALLS.request), writeUnits: RESUME_CALLS.request.writes },
        { readUnits: readUnitsOf(RESUME_CALLS.wake), writeUnits: RESUME_CALLS.wake.writes },
        c.wokenMarkRunning,
        c.lastStep,
      ),
      resumed: true,
    },
  ];
}

/**
 * One priced execution's state machine and what its workflow does, per million executions:
 * everything after the caller's submit was answered (the runner's message, the workflows, their
 * tasks and records; for a webhook job its resume request and the wake). The submit itself, and
 * any status reads, are the request path's, the same for every pipeline (the bill above).
 * Lambda bills nothing while an execution waits: the state machine holds it.
 */
export function workflowCost(r: WorkflowRun, asl: { StartAt: string; States: Record<string, unknown> }): CostLine[] {
  const M = 1_000_000;
  const gb = ASSUMPTIONS.lambdaMemoryMb / 1024;
  const workflows = r.workflows.length;
  const steps = r.workflows.reduce((n, w) => n + w.answers.length, 0);
  const waits = r.workflows.reduce((n, w) => n + w.answers.filter((x) => x === 'wait').length, 0);
  const resumes = r.resumed ? 1 : 0;
  const lines: CostLine[] = [];
  if (r.workflow === 'express') {
    const billed = Math.ceil(r.seconds / 0.1 - 1e-9) * 0.1;
    const gbs = workflows * billed * (Math.max(64, ASSUMPTIONS.expressMemoryMb) / 1024);
    lines.push({
      item: 'Step Functions Express',
      perExecution: `${workflows} execution of ${round(r.seconds, 1)} s at 64 MB: ${gbs.toFixed(4)} GB-s`,
      dollars: workflows * PRICES.sfnExpressPerMillionRequests + gbs * PRICES.sfnExpressPerGbSecond * M,
    });
  } else {
    const transitions = r.workflows.reduce((n, w) => n + stepLoopStates(asl, w.answers, { stoppedInItsLastWait: w.stopped }).length, 0);
    lines.push({
      item: 'Step Functions Standard',
      perExecution: `${transitions} state transitions (${workflows} workflow${workflows > 1 ? 's' : ''}, ${steps} step${steps > 1 ? 's' : ''}, ${waits} wait${waits === 1 ? '' : 's'})`,
      dollars: transitions * PRICES.sfnStandardPerMillionTransitions,
    });
  }
  const invocations = workflows * 2 + steps + resumes;
  lines.push({
    item: 'Lambda requests',
    perExecution: `${invocations}: runner ×${workflows}, task-start ×${workflows}, task-run ×${steps}${resumes ? ', resume ×1' : ''}`,
    dollars: invocations * PRICES.lambdaPerMillionRequests,
  });
  const warm = ASSUMPTIONS.lambdaWarmMs;
  const runMs = steps * ASSUMPTIONS.stepMs + r.upstreamCalls * ASSUMPTIONS.upstreamMs;
  const ms = workflows * ((warm.runner ?? 0) + (warm['task-start'] ?? 0)) + runMs + resumes * (warm.resume ?? 0);
  const gbSeconds = gb * (ms / 1000) + ASSUMPTIONS.coldShare * invocations * ASSUMPTIONS.coldInitSeconds * gb;
  lines.push({
    item: 'Lambda duration (arm64)',
    perExecution: `${gbSeconds.toFixed(4)} GB-s: ${round(ms, 0)} ms warm (task-run ${round(runMs, 0)} ms: ${steps} step${steps > 1 ? 's' : ''} × ${ASSUMPTIONS.stepMs} ms + ${r.upstreamCalls} upstream answer${r.upstreamCalls > 1 ? 's' : ''} × ${ASSUMPTIONS.upstreamMs} ms)${waits > 0 ? `, 0 s while it waits (${round(r.seconds - runMs / 1000, 0)} s)` : ''}`,
    dollars: gbSeconds * PRICES.lambdaArmPerGbSecond * M,
  });
  // Each workflow's message is received and deleted once; a wake sends one more.
  const sqs = workflows * 2 + resumes * RESUME_CALLS.wake.sqsSends;
  lines.push({ item: 'SQS', perExecution: `${sqs} requests`, dollars: sqs * PRICES.sqsPerMillionRequests });
  lines.push(
    {
      item: 'DynamoDB writes',
      perExecution: `${round(r.units.writeUnits)} WRU (index copies included)`,
      dollars: r.units.writeUnits * PRICES.dynamoPerMillionWriteUnits,
    },
    {
      item: 'DynamoDB reads',
      perExecution: `${round(r.units.readUnits)} RRU`,
      dollars: r.units.readUnits * PRICES.dynamoPerMillionReadUnits,
    },
  );
  if (resumes) {
    lines.push({
      item: 'Resume request',
      perExecution: `API Gateway, WAF, an access-log line`,
      dollars:
        PRICES.apiGatewayRestPerMillion +
        PRICES.wafPerMillionRequests +
        (ASSUMPTIONS.logBytes.accessLog / 1e9) * PRICES.logsPerGbIngested * M,
    });
  }
  // Traces: each workflow's and each runner invocation's; the resume request's. All recorded at a million a month.
  const traces = workflows * 2 + resumes;
  lines.push({
    item: 'X-Ray',
    perExecution: `${traces} traces (each workflow's and its runner's${resumes ? ", the resume request's" : ''}), all recorded at a million a month`,
    dollars: traces * PRICES.xrayPerMillionTracesRecorded,
  });
  return lines;
}

/** Standard's transitions for one workflow of `waits` waits and a last step that ends it. */
export const transitionsWithWaits = (asl: { StartAt: string; States: Record<string, unknown> }, waits: number): number =>
  stepLoopStates(asl, [...Array.from({ length: waits }, (): StepNext => 'wait'), 'done']).length;

/**
 * docs/aws.md's "Long executions": each priced execution as a markdown table, its total, and the
 * figures the prose compares (rendered from the model, so the prose cannot drift from it).
 */
export function longExecutionText(asl: { StartAt: string; States: Record<string, unknown> }): {
  tables: string[];
  totals: number[];
  polledWaits: number;
  polledTransitions: number;
  steadyTransitions: number;
  retryAfterTransitions: number;
  heldIntervalDollars: number;
  threeTransitionsDollars: number;
  breakEvenSeconds: number;
  fiveOnStandard: number;
} {
  const runs = workflowRuns();
  const tables = runs.map((r) => {
    const lines = workflowCost(r, asl);
    return [
      `| ${r.name} | Per execution | $ per million |`,
      '|---|---|---:|',
      ...lines.map((l) => `| ${l.item} | ${l.perExecution} | ${dollars(l.dollars)} |`),
      `| **In all** | | **${dollars(totalDollars(lines))}** |`,
    ].join('\n');
  });
  const jobMs = WORKFLOW_SCENARIOS.polledJob.jobMs;
  const polledWaits = pollWaitsSeconds(jobMs).length;
  const gbs = ASSUMPTIONS.lambdaMemoryMb / 1024;
  const perTransition = PRICES.sfnStandardPerMillionTransitions;
  return {
    tables,
    totals: runs.map((r) => totalDollars(workflowCost(r, asl))),
    polledWaits,
    polledTransitions: transitionsWithWaits(asl, polledWaits),
    // Every 5 s for the whole ten minutes, with no back-off.
    steadyTransitions: transitionsWithWaits(asl, Math.ceil(jobMs / DEFAULT_POLL_EVERY_MS)),
    // An upstream that answers Retry-After: 30.
    retryAfterTransitions: transitionsWithWaits(asl, pollWaitsSeconds(jobMs, DEFAULT_POLL_EVERY_MS, 30_000).length),
    // A step that stays in its Lambda through one 5 s interval, against the three transitions a Wait costs.
    heldIntervalDollars: gbs * (DEFAULT_POLL_EVERY_MS / 1000) * PRICES.lambdaArmPerGbSecond * 1e6,
    threeTransitionsDollars: 3 * perTransition,
    breakEvenSeconds: (3 * perTransition) / (gbs * PRICES.lambdaArmPerGbSecond * 1e6),
    fiveOnStandard: transitionsWithWaits(asl, 0) * perTransition,
  };
}
