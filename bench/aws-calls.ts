/**
 * AWS calls per execution, counted through the instrumented adapters (bench/instrument.ts),
 * and what they cost per million executions at the prices in bench/prices.ts.
 */
import { awsCalls, cloneCounts, diffCounts, dynamoReads, dynamoWrites, type Counts } from './instrument';
import { ASSUMPTIONS, PRICES } from './prices';

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

function meanCounts(list: Counts[]): Counts {
  const n = list.length;
  const first = list[0];
  if (!first) throw new Error('no samples');
  const out = cloneCounts(first);
  const keys = ['readUnits', 'writeUnits', 'indexWriteUnits', 'sfnStart', 'sfnStop', 'secretsLookups', 'secretsApiCalls', 'http'] as const;
  for (const k of keys) out[k] = list.reduce((s, c) => s + c[k], 0) / n;
  for (const m of ['dynamo', 'sqsSend', 'storeMethods'] as const) {
    const names = new Set(list.flatMap((c) => Object.keys(c[m])));
    out[m] = Object.fromEntries([...names].map((name) => [name, list.reduce((s, c) => s + (c[m][name] ?? 0), 0) / n]));
  }
  return out;
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
    const state = asl.States[name] as { Type?: string; Next?: string; End?: boolean; Choices?: { Next?: string }[] } | undefined;
    if (!state) throw new Error(`no state ${name}`);
    states.push(name);
    if (state.Type === 'Task') tasks.push(name);
    if (state.Type === 'Succeed' || state.Type === 'Fail' || state.End) break;
    // A Choice's first rule is the one that proceeds (ShouldRun: start.proceed == true).
    name = state.Type === 'Choice' ? state.Choices?.[0]?.Next : state.Next;
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
  /** Caller requests through API Gateway per execution (the POST). */
  apiRequests: number;
  /** Lambda functions behind those requests: the authorizer and the route's handler. */
  apiFunctions: string[];
  /** Executions per runner invocation (1 at low load, the batch size at sustained load). */
  batch: number;
  /** State-machine Task states on the success path, and how many states it visits. */
  taskStates: number;
  stateTransitions: number;
  stateMachine: 'EXPRESS' | 'STANDARD';
}

const round = (x: number, d = 2): string => (Number.isInteger(x) ? String(x) : x.toFixed(d));

/** Dollars per million executions, item by item, from counted calls and the stated assumptions. */
export function costPerMillion(c: CostInput): CostLine[] {
  const M = 1_000_000;
  const lines: CostLine[] = [];
  const runnerInvocations = 1 / c.batch;
  lines.push({ item: 'API Gateway REST', perExecution: `${c.apiRequests} request`, dollars: c.apiRequests * PRICES.apiGatewayRestPerMillion });

  const invocations = c.apiFunctions.length + runnerInvocations + c.taskStates;
  lines.push({
    item: 'Lambda requests',
    perExecution: `${round(invocations)}: ${c.apiFunctions.join(', ')}, runner ×${round(runnerInvocations)}, ${c.taskStates} tasks`,
    dollars: invocations * PRICES.lambdaPerMillionRequests,
  });

  const warm = ASSUMPTIONS.lambdaWarmMs;
  const ms =
    c.apiFunctions.reduce((s, f) => s + (warm[f] ?? 0), 0) + runnerInvocations * (warm.runner ?? 0) + (warm['task-start'] ?? 0);
  const gb = ASSUMPTIONS.lambdaMemoryMb / 1024;
  const gbSeconds = gb * (ms / 1000) + ASSUMPTIONS.coldShare * invocations * ASSUMPTIONS.coldInitSeconds * gb;
  lines.push({
    item: 'Lambda duration (arm64)',
    perExecution: `${gbSeconds.toFixed(4)} GB-s (${round(ms, 0)} ms warm + ${ASSUMPTIONS.coldShare * 100} % cold)`,
    dollars: gbSeconds * PRICES.lambdaArmPerGbSecond * M,
  });

  const sends = Object.values(c.whole.sqsSend).reduce((s, x) => s + x, 0);
  // The event source mapping receives and deletes once per batch it hands the runner.
  const sqs = sends + 2 * runnerInvocations;
  lines.push({ item: 'SQS', perExecution: `${round(sqs)}: ${round(sends)} send + receive/delete per batch`, dollars: sqs * PRICES.sqsPerMillionRequests });

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

export const totalDollars = (lines: CostLine[]): number => lines.reduce((s, l) => s + l.dollars, 0);

export { awsCalls };
