/**
 * The load test on the scale model: start:synth with PIPEGATE_SCALE (lib/synth/scale-model.ts)
 * enforcing the templates' limits and AWS's quotas at a factor (1/100 by default), and callers
 * arriving at a fixed rate, each submitting with `Prefer: wait=25` and, as a client must,
 * sending again after Retry-After when refused (429, 503) and fetching the result with a wait
 * when the submit's own wait gave out. A rate R here stands for R / factor on AWS.
 *
 * Per rate it prints what the callers saw (completed, refusals by status, any 5xx without
 * Retry-After), what the model refused (by limit), and then every accepted execution's final
 * state after a drain: lost (never found again) and stuck (not terminal) must both be 0.
 *
 *   BENCH_SCALE            the factor (default 0.01)
 *   BENCH_SCALE_RATES      executions/s offered here, comma-separated (default: 1,2 for
 *                          `default`, 5,10,20 for `sized`)
 *   BENCH_SCALE_SECONDS    length of each rate's load (default 20)
 *   BENCH_SCALE_DEPLOYMENTS  which templates: `default` (the settings' defaults: nothing
 *                          reserved, every function in an account of 1,000), `sized` (a
 *                          deployment sized for 2,000/s in an account of 5,000 given over to
 *                          it: throttleRateLimit 3000, burst 3000, reservedConcurrency 4900,
 *                          maxAccountShare 100, the per-address rate rule lifted) or both
 *                          (default both)
 *
 * The same as options, which win over the variables, so one command re-runs a figure:
 *   npm run bench -- --only scale --deployment sized --rate 20 --seconds 20 [--profile]
 * `--profile` records a CPU profile of the whole run (start:synth, its functions, dynalite, the
 * state machine interpreter and the callers all share this process) and prints where the time
 * went by package; the profile is written to bench/results/scale.cpuprofile.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { cachedAssembly, loadAssembly } from '../lib/synth/assembly';
import { startSynthRuntime, type SynthRuntime } from '../lib/synth/runtime';
import { summarize, type Summary } from './stats';

export interface Deployment {
  name: string;
  /** CDK context the stack is synthesized with. */
  context: Record<string, string>;
  /** The emulated account's Lambda concurrency quota (the deployment's reservedConcurrency must fit it). */
  accountConcurrency: number;
  /** Executions/s offered here, unless BENCH_SCALE_RATES says. */
  rates: number[];
}

/**
 * Every caller of the model comes from 127.0.0.1, where AWS's load comes from many addresses:
 * the web ACL's per-address rate rule (not scaled) would refuse the whole load as one address's.
 * At the default deployment's 1 and 2/s it stays under 1,200 a minute; the sized one lifts it.
 */
const ONE_ADDRESS_FOR_ALL = { rateLimitPerAddress: '2000000000' };

export const DEPLOYMENTS: readonly Deployment[] = [
  // Its stage throttle is 100/s: 1 and 2 here are 100 and 200 on AWS, at and past it.
  { name: 'default', context: {}, accountConcurrency: 1000, rates: [1, 2] },
  {
    name: 'sized',
    context: {
      throttleRateLimit: '3000',
      throttleBurstLimit: '3000',
      reservedConcurrency: '4900',
      maxAccountShare: '100',
      ...ONE_ADDRESS_FOR_ALL,
    },
    accountConcurrency: 5000,
    rates: [5, 10, 20],
  },
];

export interface RateFigure {
  deployment: string;
  rate: number;
  seconds: number;
  offered: number;
  /** Callers that had their result (completed or failed) before the run's end. */
  finished: number;
  completed: number;
  failed: number;
  /** Arrival → result in hand, ms, of the finished. */
  latency: Summary;
  /** Answers the callers got, by status (each retry counted). */
  statuses: Record<string, number>;
  /** 429 and 503 answers without Retry-After, and any other 5xx: must be 0. */
  unanswered: number;
  /** Invocations the functions' own time-outs ended (a sandbox starved of CPU here, mostly). */
  timeouts: number;
  /** This machine's 1-minute load average when the rate began: the model's clock is this machine's. */
  load: number;
  /** And when its load ended (the drain not counted). */
  loadEnd: number;
  /** Why the failed executions failed: their `error_message`, counted. */
  failures: Record<string, number>;
  /** The model's refusals by limit. */
  refused: Record<string, number>;
  accepted: number;
  lost: number;
  stuck: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  retryAfter: string | null;
  body: Record<string, unknown>;
}

async function call(url: string, method: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // A non-JSON answer is recorded by its status alone.
  }
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: parsed };
}

/** The trivial pipeline the cost headline prices: one input, one output. */
const TRIVIAL = {
  description: 'echo',
  nodes: { name: { type: 'input', value_type: 'string', value: 'world' }, out: { type: 'output', from: 'name' } },
};

async function publish(rt: SynthRuntime): Promise<{ deploymentId: string; apiKey: string }> {
  const owner = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    for (;;) {
      const a = await call(`${rt.url}${path}`, method, { authorization: `Bearer ${rt.ownerToken}` }, body);
      if (a.status !== 429 && a.status !== 503) return a;
      await sleep(Number(a.retryAfter ?? '1') * 1000);
    }
  };
  await owner('PUT', '/v1/pipelines/echo', TRIVIAL);
  const run = await owner('POST', '/v1/pipelines/echo/runs', {});
  for (;;) {
    const r = await owner('GET', `/v1/pipelines/echo/runs/${String(run.body.run_id)}`);
    if (r.body.status === 'completed') break;
    if (r.body.status === 'failed') throw new Error(`the pipeline's run failed: ${JSON.stringify(r.body)}`);
    await sleep(500);
  }
  const pub = await owner('PUT', '/v1/pipelines/echo/deployment', {});
  if (pub.status !== 201) throw new Error(`publish refused: ${JSON.stringify(pub.body)}`);
  return { deploymentId: String(pub.body.deployment_id), apiKey: String(pub.body.api_key) };
}

async function runRate(
  rt: SynthRuntime,
  dep: Deployment,
  target: { deploymentId: string; apiKey: string },
  rate: number,
  seconds: number,
  log: (s: string) => void,
): Promise<RateFigure> {
  const key = { 'x-api-key': target.apiKey };
  const statuses: Record<string, number> = {};
  let unanswered = 0;
  const accepted = new Set<string>();
  const latencies: number[] = [];
  let completed = 0;
  let failed = 0;
  const failures: Record<string, number> = {};
  const before = JSON.parse(JSON.stringify(rt.scale?.stats ?? {})) as Record<string, Record<string, number>>;
  const timeoutsOf = () => [...rt.functions.values()].reduce((n, h) => n + h.stats.timeouts, 0);
  const timeoutsBefore = timeoutsOf();
  const load = loadavg()[0] ?? 0;
  const deadline = performance.now() + seconds * 1000 + 60_000;

  /** One answer, counted; a refusal is waited out as its Retry-After says, then sent again. */
  const send = async (
    url: string,
    method: string,
    headers: Record<string, string>,
    body?: unknown,
    until = deadline,
  ): Promise<Answer | undefined> => {
    while (performance.now() < until) {
      let a: Answer;
      try {
        a = await call(url, method, headers, body);
      } catch {
        statuses.network = (statuses.network ?? 0) + 1;
        await sleep(1000);
        continue;
      }
      statuses[a.status] = (statuses[a.status] ?? 0) + 1;
      const refusal = a.status === 429 || a.status === 503;
      if ((refusal && a.retryAfter === null) || (a.status >= 500 && !refusal)) unanswered += 1;
      if (!refusal) return a;
      await sleep(Number(a.retryAfter ?? '1') * 1000 * (0.5 + Math.random()));
    }
    return undefined;
  };

  const caller = async (): Promise<void> => {
    const t0 = performance.now();
    const submitted = await send(`${rt.url}/v1/deployments/${target.deploymentId}/executions/`, 'POST', { ...key, prefer: 'wait=25' }, {});
    if (!submitted || (submitted.status !== 200 && submitted.status !== 202)) return;
    const id = String(submitted.body.execution_id);
    accepted.add(id);
    let answer: Answer | undefined = submitted;
    while (answer && answer.status !== 200 && performance.now() < deadline) {
      answer = await send(`${rt.url}/v1/deployments/executions/${id}/result/`, 'GET', { ...key, prefer: 'wait=25' });
      if (answer?.status === 409) await sleep(Number(answer.retryAfter ?? '1') * 1000);
    }
    if (answer?.status !== 200) return;
    latencies.push(performance.now() - t0);
    if (answer.body.status === 'completed') completed += 1;
    else {
      failed += 1;
      const why = String(answer.body.error_message ?? answer.body.status);
      failures[why] = (failures[why] ?? 0) + 1;
    }
  };

  log(`${dep.name}: ${rate}/s for ${seconds} s (${Math.round(rate / (rt.scale?.factor ?? 1))}/s on AWS)`);
  const callers: Promise<void>[] = [];
  const start = performance.now();
  const offered = Math.round(rate * seconds);
  for (let i = 0; i < offered; i += 1) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    callers.push(caller());
  }
  await Promise.all(callers);
  const loadEnd = loadavg()[0] ?? 0;

  // Every accepted execution's final state, read outside the model's limits' way: the status
  // route, sent again while refused.
  let lost = 0;
  let stuck = 0;
  for (const id of accepted) {
    const end = performance.now() + 30_000;
    let s: Answer | undefined;
    do {
      s = await send(`${rt.url}/v1/deployments/executions/${id}/status/`, 'GET', key, undefined, end);
      if (s?.status === 200 && (s.body.status === 'completed' || s.body.status === 'failed' || s.body.status === 'cancelled')) break;
      await sleep(500);
    } while (performance.now() < end);
    // Never answered within 30 s of asking is not lost, only unknown: counted as stuck.
    if (s?.status === 404) lost += 1;
    else if (!s || !(s.body.status === 'completed' || s.body.status === 'failed' || s.body.status === 'cancelled')) stuck += 1;
  }

  const refused: Record<string, number> = {};
  for (const kind of ['lambda', 'stage', 'dynamo', 'states'] as const) {
    for (const [k, n] of Object.entries(rt.scale?.stats[kind] ?? {})) {
      const d = n - (before[kind]?.[k] ?? 0);
      if (d > 0) refused[`${kind} ${shortName(k)}`] = d;
    }
  }
  return {
    deployment: dep.name,
    rate,
    seconds,
    offered,
    finished: latencies.length,
    completed,
    failed,
    latency: summarize(latencies),
    statuses,
    unanswered,
    timeouts: timeoutsOf() - timeoutsBefore,
    load,
    loadEnd,
    failures,
    refused,
    accepted: accepted.size,
    lost,
    stuck,
  };
}

/** `Pipegate-ExecuteFunctionAB12CD34-xyz` → `Execute`: the logical name, for a table. */
const shortName = (k: string): string => k.replace(/Pipegate[A-Za-z]*-/g, '').replace(/Function[A-F0-9]{8}(-[A-Za-z0-9]+)?/g, '');

export interface ScaleOptions {
  rates?: number[];
  seconds?: number;
  deployments?: string[];
}

/** `--rate 5,20 --seconds 30 --deployment sized` from a command line (undefined where absent). */
export function scaleOptionsOf(argv: readonly string[]): ScaleOptions & { profile: boolean } {
  const value = (flag: string): string | undefined => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : undefined);
  const numbers = (flag: string): number[] | undefined => {
    const text = value(flag);
    if (text === undefined) return undefined;
    const ns = text.split(',').map(Number);
    if (ns.some((n) => !(n > 0))) throw new Error(`${flag} takes positive numbers, comma-separated, not ${JSON.stringify(text)}`);
    return ns;
  };
  const deployments = value('--deployment')?.split(',');
  for (const d of deployments ?? [])
    if (!DEPLOYMENTS.some((x) => x.name === d))
      throw new Error(`--deployment takes ${DEPLOYMENTS.map((x) => x.name).join(' or ')}, not ${JSON.stringify(d)}`);
  const rates = numbers('--rate');
  const seconds = numbers('--seconds')?.[0];
  return {
    ...(rates ? { rates } : {}),
    ...(seconds ? { seconds } : {}),
    ...(deployments ? { deployments } : {}),
    profile: argv.includes('--profile'),
  };
}

export async function measureScale(
  log: (s: string) => void,
  opts: ScaleOptions = {},
): Promise<{ figures: RateFigure[]; limits: Record<string, { name: string; template: number; scaled: number }[]> }> {
  const factor = Number(process.env.BENCH_SCALE ?? '0.01');
  const seconds = opts.seconds ?? Number(process.env.BENCH_SCALE_SECONDS ?? '20');
  const which = opts.deployments?.join(',') ?? process.env.BENCH_SCALE_DEPLOYMENTS ?? 'default,sized';
  const figures: RateFigure[] = [];
  const limits: Record<string, { name: string; template: number; scaled: number }[]> = {};
  for (const dep of DEPLOYMENTS.filter((d) => which.split(',').includes(d.name))) {
    log(`${dep.name}: synthesizing (cached after the first time)`);
    const assembly = loadAssembly((await cachedAssembly({ context: dep.context, progress: log })).dir);
    const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-bench-scale-'));
    const rt = await startSynthRuntime({
      port: 0,
      inMemory: true,
      log: false,
      dataDir,
      assembly,
      scale: factor,
      accountConcurrency: dep.accountConcurrency,
    });
    try {
      limits[dep.name] = rt.scale?.limits().map((l) => ({ ...l, name: shortName(l.name) })) ?? [];
      const target = await publish(rt);
      for (const rate of opts.rates ?? (process.env.BENCH_SCALE_RATES ? process.env.BENCH_SCALE_RATES.split(',').map(Number) : dep.rates)) {
        await sleep(2_000);
        const f = await runRate(rt, dep, target, rate, seconds, log);
        log(JSON.stringify(f));
        figures.push(f);
      }
    } finally {
      await rt.stop({ drainMs: 0 });
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  return { figures, limits };
}
