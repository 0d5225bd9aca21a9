/**
 * `npm run bench`: one table of figures, each timing divided by a floor measured in the same
 * run (these machines are noisy), with the targets beside them.
 *
 *   BENCH_DURATION_MS  length of each measured load (default 8000)
 *   BENCH_PROFILE=1    CPU profiles of both servers into bench/results/profiles, summarised
 *   BENCH_SKIP_BUNDLES=1  leave the bundle section out (quicker while working on the runtime)
 *   BENCH_CALLERS_MS   length of each caller shape's load (default 6000)
 *   BENCH_RETAINED     finished executions kept for the retained-history figure (default 100000)
 *   BENCH_SKIP_RETAINED=1  leave the retained-history section out
 *
 *   BENCH_SKIP_MEDIA=1  leave the media section out (executions with a 1 MB image, downloads)
 *   BENCH_MEDIA_MS     length of each media load (default 5000)
 *
 * `npm run bench -- --only retained` prints the retained-history section alone (about a minute);
 * `npm run bench -- --only media` the media section (about a minute);
 * `npm run bench -- --only events` many readers of one execution's event stream (bench/events.ts);
 * `npm run bench -- --only consumers` what a consumer key with limits adds (bench/consumers.ts);
 * `npm run bench -- --only map` a map of 100 items locally, and priced on AWS against the Map state (bench/map.ts; a couple of minutes);
 * `npm run bench -- --only bundles` the Lambda bundles alone (sizes, cold inits, what each holds);
 * `npm run bench -- --only uploads` a 100 MiB upload PUT, checked and executed, against the
 * runtime's resident memory (bench/upload-memory.ts; about two minutes);
 * `npm run bench -- --only cli` the CLI's start, bare and through npx (bench/cli-start.ts; a minute);
 * `npm run bench -- --only synth` a cold synth, one with every bundle cached, and a cached one
 * (bench/synth.ts; one to several minutes);
 * `npm run bench -- --only steps` what checkpointing costs a node: N http nodes through the step
 * engine with its journal on dynalite against the in-memory engine (bench/steps.ts; seconds);
 * `npm run bench -- --only scale` runs the load test on start:synth's scale model (bench/scale.ts;
 * minutes: a synthesis per deployment, then each rate's load and drain).
 */
import { measureConsumers } from './consumers';
import { measureUploadMemory, uploadMemoryRows } from './upload-memory';
import { cliStartRows, measureCliStart } from './cli-start';
import { measureSynth, synthRows } from './synth';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import asl from '../lib/state-machine.asl.json';
import {
  atExecutionTime,
  awsCalls,
  callerCost,
  costPerMillion,
  lambdaInvocations,
  mediaObjectCost,
  operationsCost,
  monthlyBill,
  fixedMonthlyDollars,
  ownerUploadCost,
  resumeCost,
  successPath,
  totalDollars,
  type CallMeasure,
  type CostLine,
} from './aws-calls';
import { initMedian, measureBundles, HELLO, type BundleFigure } from './bundles';
import { callerShape, type CallerFigure, type CallerOptions, type CallerShape } from './callers';
import { ServerChild } from './child';
import { endToEnd, requestLoad, type ShapeFigures, type Shapes } from './e2e';
import { executePath } from './execute-path';
import { dynamoReads, dynamoWrites, type Counts } from './instrument';
import { machine } from './machine';
import { ALL_IN_TARGET_DOLLARS, ASSUMPTIONS, MEDIA, TARGET_DOLLARS_PER_MILLION } from './prices';
import { busy, formatProfile, startProfile, summarizeProfile } from './profile';
import { fmt, fmtRatio, median, ratio, verdict, type Verdict } from './stats';
import { markdownTable, textTable, type Row } from './table';
import { measureRetained, type RetainedFigure } from './retained';
import { measureScale, scaleOptionsOf, type RateFigure } from './scale';
import { measureMedia, mediaRows } from './media';
import { eventsRows, measureEvents } from './events';
import { mapRows, measureMap } from './map';
import { measureSteps, stepsRows } from './steps';

const RESULTS = join(__dirname, 'results');
const TARGETS = {
  e2eP50Ms: 25,
  e2ePerSecond: 150,
  bundleKb: 300,
  initOverFloorMs: 60,
  requestPathCalls: 3,
  /** Executions/s with 64 callers, by caller shape; server CPU per execution against the floor's per request. */
  callersPerSecond: { poll: 150, wait: 200 } as Partial<Record<CallerShape, number>>,
  callerCpuOverFloor: 3,
};

const envInt = (name: string, fallback: number): number => {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : fallback;
};

const shapes: Shapes = {
  concurrency: 16,
  rate: TARGETS.e2ePerSecond,
  durationMs: envInt('BENCH_DURATION_MS', 8000),
  maxRequests: 20_000,
  maxInFlight: 64,
};

const callers: CallerOptions = {
  callers: 64,
  durationMs: envInt('BENCH_CALLERS_MS', 6000),
  pollMs: 250,
  waitSeconds: ASSUMPTIONS.maxWaitSeconds,
};
const SHAPES: { shape: CallerShape; label: string }[] = [
  { shape: 'poll', label: `poll every ${callers.pollMs} ms` },
  { shape: 'wait', label: `Prefer: wait=${callers.waitSeconds}` },
  { shape: 'callback', label: 'callbacks only' },
];

const log = (msg: string): void => {
  process.stderr.write(`[bench ${(performance.now() / 1000).toFixed(1)} s] ${msg}\n`);
};

interface Results {
  floor: ShapeFigures;
  e2e: ShapeFigures;
  execute: ShapeFigures;
  calls: CallMeasure;
  callers: CallerFigure[];
  bundles: BundleFigure[];
  cost: { low: CostLine[]; sustained: CostLine[]; standardLow: CostLine[] };
}

async function withChild<T>(
  mode: 'floor' | 'runtime',
  profileDir: string | undefined,
  fn: (c: ServerChild, ready: Awaited<ServerChild['ready']>) => Promise<T>,
): Promise<T> {
  const child = new ServerChild(mode, profileDir ? { cpuProfileDir: join(profileDir, mode) } : {});
  try {
    return await fn(child, await child.ready);
  } finally {
    await child.stop();
  }
}

function costs(calls: CallMeasure): Results['cost'] {
  const path = successPath(asl);
  const base = {
    whole: calls.whole,
    apiRequests: 1,
    apiFunctions: ['authorizer', 'execute'],
    taskStates: path.tasks.length,
    stateTransitions: path.states.length,
  };
  return {
    low: costPerMillion({ ...base, batch: 1, stateMachine: 'EXPRESS' }),
    sustained: costPerMillion({ ...base, batch: 10, stateMachine: 'EXPRESS' }),
    standardLow: costPerMillion({ ...base, batch: 1, stateMachine: 'STANDARD' }),
  };
}

const ms = (x: number) => `${fmt(x)} ms`;
const rps = (x: number) => `${fmt(x, 0)}/s`;
const section = (title: string): Row => [`— ${title}`, '', '', '', '', ''];

function loadRows(r: Results): Row[] {
  const { floor, e2e, execute } = r;
  const rows: Row[] = [section('local runtime, greeting pipeline (floor: bare HTTP server, 1 write + 1 read)')];
  const row = (label: string, value: number, fl: number, fmtv: (x: number) => string, target = '', res: Verdict | '' = ''): Row => [
    label,
    fmtv(value),
    fmtv(fl),
    fmtRatio(ratio(value, fl)),
    target,
    res,
  ];
  const rate = `${shapes.rate}/s offered`;
  const closed = `closed loop ×${shapes.concurrency}`;
  const p50 = `≤ ${TARGETS.e2eP50Ms} ms`;
  const tput = `≥ ${TARGETS.e2ePerSecond}/s`;
  rows.push(
    row(
      `end to end, executions/s, ${closed}`,
      e2e.closed.perSecond,
      floor.closed.perSecond,
      rps,
      tput,
      verdict(e2e.closed.perSecond, 'min', TARGETS.e2ePerSecond),
    ),
  );
  rows.push(
    row(
      `end to end, executions/s, ${rate}`,
      e2e.rated.perSecond,
      floor.rated.perSecond,
      rps,
      tput,
      verdict(e2e.rated.perSecond, 'min', TARGETS.e2ePerSecond * 0.98),
    ),
  );
  rows.push(
    row(
      `end to end p50, client POST → completed, ${rate}`,
      e2e.rated.latency.p50,
      floor.rated.latency.p50,
      ms,
      p50,
      verdict(e2e.rated.latency.p50, 'max', TARGETS.e2eP50Ms),
    ),
  );
  rows.push(row(`end to end p99, client POST → completed, ${rate}`, e2e.rated.latency.p99, floor.rated.latency.p99, ms));
  rows.push(
    row(
      `end to end p50, server created → completed, ${rate}`,
      e2e.rated.serverLatency?.p50 ?? NaN,
      floor.rated.latency.p50,
      ms,
      p50,
      verdict(e2e.rated.serverLatency?.p50 ?? NaN, 'max', TARGETS.e2eP50Ms),
    ),
  );
  rows.push(row(`end to end p99, server created → completed, ${rate}`, e2e.rated.serverLatency?.p99 ?? NaN, floor.rated.latency.p99, ms));
  rows.push(
    row(
      'end to end p50, client, one caller',
      e2e.single.latency.p50,
      floor.single.latency.p50,
      ms,
      p50,
      verdict(e2e.single.latency.p50, 'max', TARGETS.e2eP50Ms),
    ),
  );
  rows.push(row('end to end p99, client, one caller', e2e.single.latency.p99, floor.single.latency.p99, ms));
  rows.push(row(`end to end p50, client, ${closed}`, e2e.closed.latency.p50, floor.closed.latency.p50, ms));
  rows.push(row(`end to end p99, client, ${closed}`, e2e.closed.latency.p99, floor.closed.latency.p99, ms));
  rows.push(row(`server CPU per execution, ${closed}`, e2e.closed.cpuMsPer, floor.closed.cpuMsPer, ms));
  rows.push(row(`execute path, requests/s, ${closed}`, execute.closed.perSecond, floor.closed.perSecond, rps));
  rows.push(row(`execute path p50, ${closed}`, execute.closed.latency.p50, floor.closed.latency.p50, ms));
  rows.push(row(`execute path p99, ${closed}`, execute.closed.latency.p99, floor.closed.latency.p99, ms));
  rows.push(row(`execute path p50, ${rate}`, execute.rated.latency.p50, floor.rated.latency.p50, ms));
  rows.push(row(`execute path p99, ${rate}`, execute.rated.latency.p99, floor.rated.latency.p99, ms));
  rows.push(row('execute path p50, one caller', execute.single.latency.p50, floor.single.latency.p50, ms));
  rows.push(row(`server CPU per request, execute path, ${closed}`, execute.closed.cpuMsPer, floor.closed.cpuMsPer, ms));
  return rows;
}

function callerRows(r: Results): Row[] {
  const fl = r.floor.closed;
  const path = successPath(asl);
  const rows: Row[] = [
    section(
      `caller shapes: ${callers.callers} callers each in a closed loop, POST → result in the caller's hands (floor: closed loop ×${shapes.concurrency})`,
    ),
  ];
  for (const f of r.callers) {
    const label = SHAPES.find((x) => x.shape === f.shape)?.label ?? f.shape;
    const tput = TARGETS.callersPerSecond[f.shape];
    const cpuRatio = ratio(f.cpuMsPer, fl.cpuMsPer);
    const cost = callerCost(f, path);
    const w = cost.whole;
    const lambdas = Object.entries(lambdaInvocations(cost.input))
      .map(([fn, n]) => `${fn} ${fmt(n, n % 1 ? 1 : 0)}`)
      .join(', ');
    const sqs = Object.values(w.sqsSend).reduce((s, x) => s + x, 0) + 2 / cost.input.batch + 2 * (cost.input.callbacks ?? 0);
    const polls = f.requestsPer - 1;
    rows.push([
      `${label}: executions/s`,
      rps(f.perSecond),
      rps(fl.perSecond),
      fmtRatio(ratio(f.perSecond, fl.perSecond)),
      tput ? `≥ ${tput}/s` : '',
      tput ? verdict(f.perSecond, 'min', tput) : '',
    ]);
    rows.push([
      `  p50 · p99 POST → result`,
      `${ms(f.latency.p50)} · ${ms(f.latency.p99)}`,
      `${ms(fl.latency.p50)} · ${ms(fl.latency.p99)}`,
      fmtRatio(ratio(f.latency.p50, fl.latency.p50)),
      '',
      '',
    ]);
    rows.push([
      `  server CPU per execution`,
      ms(f.cpuMsPer),
      `${ms(fl.cpuMsPer)} per request`,
      fmtRatio(cpuRatio),
      `≤ ×${TARGETS.callerCpuOverFloor}`,
      verdict(cpuRatio, 'max', TARGETS.callerCpuOverFloor),
    ]);
    rows.push([
      `  HTTP requests per execution`,
      fmt(f.requestsPer, 2),
      polls > 0.005 ? `POST + ${fmt(polls, 2)} result GETs` : 'the POST alone',
      '',
      '',
      '',
    ]);
    rows.push([
      `  AWS per execution${f.shape === 'wait' ? ' (waits as on AWS)' : ''}`,
      `${fmt(awsCalls(w), 1)} calls`,
      [
        `API Gateway ${fmt(f.requestsPer, 2)}`,
        `Lambda ${lambdas}`,
        `DynamoDB ${fmt(w.readUnits, 1)} RRU / ${fmt(w.writeUnits + w.indexWriteUnits, 1)} WRU (${fmt(dynamoReads(w), 1)} reads, ${fmt(dynamoWrites(w), 1)} writes)`,
        `SQS ${fmt(sqs, 1)}`,
        `Step Functions ${fmt(w.sfnStart, 1)}`,
        `Secrets Manager ${fmt(w.secretsApiCalls, 2)}`,
        ...(f.shape === 'wait' ? [`wait ${fmt(f.awsWait.seconds * 1000, 0)} ms, ${fmt(f.awsWait.rereads, 1)} re-reads`] : []),
      ].join(' · '),
      '',
      '',
      '',
    ]);
    const top = (lines: CostLine[]) =>
      [...lines]
        .sort((a, b) => b.dollars - a.dollars)
        .slice(0, 3)
        .map((l) => `${l.item} $${l.dollars.toFixed(2)}`)
        .join(', ');
    rows.push([
      `  cost per million on AWS, at this run's POST → result times`,
      `$${totalDollars(cost.lines).toFixed(2)}`,
      top(cost.lines),
      '',
      '',
      '',
    ]);
    const t = ASSUMPTIONS.awsExecutionSeconds;
    const atT = atExecutionTime(f, r.calls.whole, t, callers.pollMs, callers.waitSeconds);
    const costT = callerCost(atT, path).lines;
    const how =
      f.shape === 'poll'
        ? `${fmt(atT.requestsPer - 1, 0)} polls`
        : f.shape === 'wait'
          ? `${fmt(atT.awsWait.rereads, 0)} re-reads over ${fmt(atT.awsWait.seconds * 1000, 0)} ms`
          : 'no time dependence';
    rows.push([
      `  cost per million on AWS, executions taking ${t} s there`,
      `$${totalDollars(costT).toFixed(2)}`,
      `${how}; ${top(costT)}`,
      '',
      '',
      '',
    ]);
    const atTInput = callerCost(atT, path).input;
    // The bill at 1 M a month (docs/aws.md): X-Ray at its default rule's sampling there, the
    // deploy's defaults (no wait bound), the fixed charges spread over the month's executions.
    const bill = monthlyBill(atTInput, 1_000_000);
    const ops = operationsCost(atTInput, { logLevel: 'ERROR', waf: true, monthlyExecutions: 1_000_000, waitBound: false });
    const allIn = bill.perMillion;
    rows.push([
      `  all in at 1 M a month (fixed charges included)`,
      `$${allIn.toFixed(2)}`,
      [...ops.map((l) => `${l.item} $${l.dollars.toFixed(2)}`), `fixed $${fixedMonthlyDollars().toFixed(2)} a month`].join(', '),
      '',
      f.shape === 'wait' ? `≤ $${ALL_IN_TARGET_DOLLARS}` : '',
      f.shape === 'wait' ? verdict(allIn, 'max', ALL_IN_TARGET_DOLLARS) : '',
    ]);
    // The headline's inputs, kept with the sources: docs-figures.test.ts prices them again and
    // checks the README's and docs/aws.md's all-in figure against it.
    if (f.shape === 'wait') writeFileSync(join(__dirname, 'reference-wait.json'), `${JSON.stringify(atTInput, null, 2)}\n`);
  }
  const failed = r.callers.filter((f) => f.failed > 0);
  for (const f of failed) rows.push([`  ${f.shape}: ${f.failed} failed`, '', f.errors.slice(0, 2).join('; '), '', '', '']);
  return rows;
}

function bundleRows(bundles: BundleFigure[]): Row[] {
  const hello = bundles.find((b) => b.name === HELLO);
  if (!hello) return [];
  const floorInit = initMedian(hello);
  const rows: Row[] = [section(`Lambda bundles: size (minified) · cold init, median of ${hello.initMs.length} (floor: hello world)`)];
  for (const b of bundles) {
    if (b.name === HELLO) continue;
    const kb = b.bytes / 1024;
    const over = initMedian(b) - floorInit;
    const v1 = verdict(kb, 'max', TARGETS.bundleKb);
    const v2 = verdict(over, 'max', TARGETS.initOverFloorMs);
    rows.push([
      `bundle ${b.name}`,
      `${fmt(kb)} KB · ${ms(initMedian(b))}`,
      `${fmt(hello.bytes / 1024)} KB · ${ms(floorInit)}`,
      `${fmtRatio(ratio(kb, hello.bytes / 1024))} · +${fmt(over)} ms`,
      `≤ ${TARGETS.bundleKb} KB · ≤ +${TARGETS.initOverFloorMs} ms`,
      v1 === 'pass' && v2 === 'pass' ? 'pass' : `${v1} · ${v2}`,
    ]);
  }
  return rows;
}

function describeCalls(c: Counts): string {
  const sqs = Object.values(c.sqsSend).reduce((s, x) => s + x, 0);
  const parts = [`${fmt(dynamoReads(c), 0)} DynamoDB reads`, `${fmt(dynamoWrites(c), 0)} writes`];
  if (sqs) parts.push(`${fmt(sqs, 0)} SQS send`);
  if (c.sfnStart) parts.push(`${fmt(c.sfnStart, 0)} SFN start`);
  if (c.secretsApiCalls) parts.push(`${fmt(c.secretsApiCalls, 0)} Secrets Manager`);
  return parts.join(', ');
}

function callRows(calls: CallMeasure, cost: Results['cost']): Row[] {
  const path = calls.requestPath;
  const n = awsCalls(path);
  const rows: Row[] = [section(`AWS calls, counted at the adapters over ${calls.executions} executions`)];
  rows.push([
    'execute request path (authorizer + execute)',
    `${fmt(n, 1)} calls`,
    describeCalls(path),
    '',
    `≤ ${TARGETS.requestPathCalls}`,
    verdict(n, 'max', TARGETS.requestPathCalls),
  ]);
  rows.push([
    '  first request of a cold execute container',
    `${fmt(awsCalls(calls.requestPathCold), 0)} calls`,
    describeCalls(calls.requestPathCold),
    '',
    '',
    '',
  ]);
  rows.push(['whole execution', `${fmt(awsCalls(calls.whole), 1)} calls`, describeCalls(calls.whole), '', '', '']);
  rows.push([
    '  DynamoDB request units',
    `${fmt(calls.whole.writeUnits + calls.whole.indexWriteUnits, 1)} WRU · ${fmt(calls.whole.readUnits, 1)} RRU`,
    `index copies ${fmt(calls.whole.indexWriteUnits, 1)} WRU`,
    '',
    '',
    '',
  ]);
  rows.push(section('cost per million trivial executions, us-east-1 list prices (bench/prices.ts)'));
  cost.low.forEach((l, i) => {
    const sustained = cost.sustained[i];
    rows.push([
      `  ${l.item}`,
      `$${l.dollars.toFixed(2)}`,
      sustained ? `sustained $${sustained.dollars.toFixed(2)}` : '',
      '',
      '',
      l.perExecution,
    ]);
  });
  const low = totalDollars(cost.low);
  const sus = totalDollars(cost.sustained);
  rows.push([
    'request path total, Express, 1 message per runner batch',
    `$${low.toFixed(2)}`,
    '',
    '',
    `≤ $${TARGET_DOLLARS_PER_MILLION}`,
    verdict(low, 'max', TARGET_DOLLARS_PER_MILLION),
  ]);
  rows.push([
    'request path total, Express, sustained (10 per batch)',
    `$${sus.toFixed(2)}`,
    '',
    '',
    `≤ $${TARGET_DOLLARS_PER_MILLION}`,
    verdict(sus, 'max', TARGET_DOLLARS_PER_MILLION),
  ]);
  rows.push(['  same with a Standard state machine', `$${totalDollars(cost.standardLow).toFixed(2)}`, '', '', '', '']);
  const media = mediaObjectCost();
  rows.push(
    section(
      `objects of a media execution per million, on top (bench/prices.ts MEDIA: ${MEDIA.inputBytes / 1048576} MB in by upload, ${MEDIA.outputBytes / 1048576} MB out, ${MEDIA.downloads} download)`,
    ),
  );
  for (const l of media) rows.push([`  ${l.item}`, `$${l.dollars.toFixed(2)}`, '', '', '', l.perExecution]);
  rows.push(['objects total', `$${totalDollars(media).toFixed(2)}`, '', '', '', '']);
  const upload = ownerUploadCost();
  rows.push(
    section(
      `an owner's upload (POST /v1/pipelines/{id}/uploads) per million uploads, ${MEDIA.inputBytes / 1048576} MB, and the run that uses it (PIPELINE_UPLOAD_CALLS)`,
    ),
  );
  for (const l of upload) rows.push([`  ${l.item}`, `$${l.dollars.toFixed(2)}`, '', '', '', l.perExecution]);
  rows.push(['owner upload total', `$${totalDollars(upload).toFixed(2)}`, '', '', '', '']);
  const resumed = resumeCost();
  rows.push(section('a wait node resumed (POST /v1/resume/{token}) per million resumes, the wake included (RESUME_CALLS)'));
  for (const l of resumed) rows.push([`  ${l.item}`, `$${l.dollars.toFixed(2)}`, '', '', '', l.perExecution]);
  rows.push(['resume total', `$${totalDollars(resumed).toFixed(2)}`, '', '', '', '']);
  return rows;
}

/** Start-up and a sweeper pass must not grow with the history kept: no more than this times the empty figure. */
const RETAINED_RATIO_MAX = 2;

function retainedRows(empty: RetainedFigure, full: RetainedFigure): Row[] {
  const n = full.retained.toLocaleString('en-US');
  const rows: Row[] = [
    section(
      `retained history: ${n} finished executions against ${empty.retained} (the sweeper reads the sweep index only; floor: the empty data dir)`,
    ),
  ];
  const grows = (label: string, a: number[], b: number[]): Row => {
    const value = median(b);
    const fl = median(a);
    const r = ratio(value, fl);
    return [label, ms(value), ms(fl), fmtRatio(r), `≤ ×${RETAINED_RATIO_MAX}`, verdict(r, 'max', RETAINED_RATIO_MAX)];
  };
  rows.push(grows(`start-up (listening, start-up sweep included), median of ${full.startupMs.length}`, empty.startupMs, full.startupMs));
  rows.push(grows(`one sweeper pass, median of ${full.sweepMs.length}`, empty.sweepMs, full.sweepMs));
  rows.push([`  index entries the passes looked at`, fmt(full.sweepExamined, 0), fmt(empty.sweepExamined, 0), '', '', '']);
  rows.push([
    `a Scan of the table, for contrast (${fmt(full.scanItems, 0)} items)`,
    ms(full.scanMs),
    ms(empty.scanMs),
    fmtRatio(ratio(full.scanMs, empty.scanMs)),
    '',
    '',
  ]);
  rows.push([`  writing the history into the data dir`, ms(full.seedMs), ms(empty.seedMs), '', '', '']);
  return rows;
}

async function retainedSection(): Promise<Row[]> {
  const retained = envInt('BENCH_RETAINED', 100_000);
  log('retained history: an empty data dir');
  const empty = await measureRetained(0);
  log(`retained history: ${retained} finished executions`);
  const full = await measureRetained(retained);
  return retainedRows(empty, full);
}

/** The biggest contributors to a bundle, in KB. */
function packageLine(b: BundleFigure): string {
  return Object.entries(b.packages)
    .sort((x, y) => y[1] - x[1])
    .slice(0, 9)
    .map(([p, bytes]) => `${p} ${fmt(bytes / 1024, 0)}`)
    .join(', ');
}

const HEADER: Row = ['figure', 'value', 'floor / detail', 'ratio', 'target', 'result'];

/** The scale model's run: one row per rate, then the limits it enforced. */
function scaleRows(figures: RateFigure[], limits: Record<string, { name: string; template: number; scaled: number }[]>): [Row, Row[]] {
  const header: Row = [
    'deployment',
    'here/s (AWS/s)',
    'finished',
    'p50 · p99 arrival → result',
    'answers',
    'refused by the model',
    'lost · stuck · 5xx w/o Retry-After · load avg',
    'held',
  ];
  const rows: Row[] = figures.map((f) => {
    const factor = Number(process.env.BENCH_SCALE ?? '0.01');
    const refusals = (f.statuses['429'] ?? 0) + (f.statuses['503'] ?? 0);
    // Held: every caller had its result, nothing lost or stuck, and refusals rare enough that
    // callers were not made to queue behind a limit (under one per ten executions).
    const held =
      f.lost === 0 && f.stuck === 0 && f.unanswered === 0 && f.failed === 0 && f.finished === f.offered && refusals <= f.offered / 10;
    return [
      f.deployment,
      `${f.rate} (${Math.round(f.rate / factor)})`,
      `${f.finished}/${f.offered} (${f.completed} completed, ${f.failed} failed)`,
      `${ms(f.latency.p50)} · ${ms(f.latency.p99)}`,
      Object.entries(f.statuses)
        .map(([k, n]) => `${k}×${n}`)
        .join(' '),
      Object.entries(f.refused)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none',
      `${f.lost} · ${f.stuck} · ${f.unanswered}${f.timeouts ? ` (${f.timeouts} function time-outs)` : ''} · load ${fmt(f.load, 1)}→${fmt(f.loadEnd, 1)}`,
      held ? 'yes' : 'no',
    ];
  });
  for (const [dep, ls] of Object.entries(limits)) {
    // Owner routes and the like at 1 each say nothing; the limits the load meets do.
    const shown = ls.filter((l) => l.template > 9 || !/^[A-Z]/.test(l.name));
    rows.push([`${dep}: limits (AWS→here)`, '', '', '', '', shown.map((l) => `${l.name} ${l.template}→${l.scaled}`).join(', '), '', '']);
  }
  return [header, rows];
}

async function main(): Promise<void> {
  const started = performance.now();
  mkdirSync(RESULTS, { recursive: true });
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
  const ONLY = ['retained', 'media', 'scale', 'events', 'consumers', 'bundles', 'cli', 'synth', 'uploads', 'steps', 'map'];
  if (only !== undefined && !ONLY.includes(only))
    throw new Error(`--only takes ${ONLY.map((o) => JSON.stringify(o)).join(', ')}, not ${JSON.stringify(only)}`);
  if (only === 'consumers') {
    const m = machine();
    console.log(textTable(['what', 'latency (local runtime, one at a time)', 'cost'], await measureConsumers(log)));
    console.log(
      `\n${m.nproc} cores · ${m.cpuModel} · ${m.memoryGiB} GiB · Node ${m.node} · ${m.platform} · ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return;
  }
  if (only === 'steps') {
    const m = machine();
    const [header, rows] = stepsRows(await measureSteps(log));
    console.log(textTable(header, rows));
    console.log(
      `\n${m.nproc} cores · ${m.cpuModel} · ${m.memoryGiB} GiB · Node ${m.node} · ${m.platform} · ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return;
  }
  if (only === 'uploads') {
    const m = machine();
    const [header, rows] = uploadMemoryRows(await measureUploadMemory(log));
    console.log(textTable(header, rows));
    console.log(
      `\n${m.nproc} cores · ${m.cpuModel} · ${m.memoryGiB} GiB · Node ${m.node} · ${m.platform} · ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return;
  }
  if (only === 'cli') {
    const m = machine();
    const { figures, load } = measureCliStart();
    console.log(textTable(['command', 'wall, median (range)', '÷ floor', 'CPU, median', '÷ floor'], cliStartRows(figures)));
    console.log(
      `\nload ${load[0].toFixed(1)} → ${load[1].toFixed(1)} · ${m.nproc} cores · ${m.cpuModel} · Node ${m.node} · ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return;
  }
  if (only === 'synth') {
    const m = machine();
    const figures = await measureSynth(log);
    console.log(textTable(['synth', 'took', 'bundling', 'of cold', 'load before → after'], synthRows(figures)));
    console.log(
      `\n${m.nproc} cores · ${m.cpuModel} · ${m.memoryGiB} GiB · Node ${m.node} · ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return;
  }
  if (only === 'bundles') {
    const m = machine();
    const bundles = await measureBundles({ outRoot: join(RESULTS, 'bundles'), samples: 5 });
    console.log(textTable(HEADER, bundleRows(bundles)));
    for (const b of bundles) if (b.name !== HELLO) console.log(`${b.name}: ${packageLine(b)}`);
    console.log(
      `\n${m.nproc} cores · ${m.cpuModel} · ${m.memoryGiB} GiB · Node ${m.node} · ${m.platform} · ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return;
  }
  if (only === 'map') {
    const m = machine();
    console.log(textTable(HEADER, mapRows(await measureMap(log))));
    console.log(
      `\n${m.nproc} cores · ${m.cpuModel} · ${m.memoryGiB} GiB · Node ${m.node} · ${m.platform} · ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return;
  }
  if (only === 'events') {
    const m = machine();
    console.log(textTable(HEADER, eventsRows(await measureEvents(log))));
    console.log(
      `\n${m.nproc} cores · ${m.cpuModel} · ${m.memoryGiB} GiB · Node ${m.node} · ${m.platform} · ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return;
  }
  if (only === 'scale') {
    const m = machine();
    const { profile, ...opts } = scaleOptionsOf(process.argv);
    const stopProfile = profile ? await startProfile() : undefined;
    const { figures, limits } = await measureScale(log, opts);
    if (stopProfile) {
      const file = join(RESULTS, 'scale.cpuprofile');
      const json = await stopProfile();
      writeFileSync(file, JSON.stringify(json));
      console.log(`${formatProfile(summarizeProfile(json))}\n(${file})\n`);
    }
    const [header, rows] = scaleRows(figures, limits);
    console.log(textTable(header, rows));
    writeFileSync(join(RESULTS, 'scale.md'), `${markdownTable(header, rows)}\n`);
    console.log(
      `\n${m.nproc} cores · ${m.cpuModel} · ${m.memoryGiB} GiB · Node ${m.node} · ${m.platform} · ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return;
  }
  if (only === 'media') {
    const m = machine();
    console.log(textTable(HEADER, mediaRows(await measureMedia(log))));
    console.log(
      `\n${m.nproc} cores · ${m.cpuModel} · ${m.memoryGiB} GiB · Node ${m.node} · ${m.platform} · ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return;
  }
  if (only === 'retained') {
    const m = machine();
    const rows = await retainedSection();
    console.log(textTable(HEADER, rows));
    console.log(
      `\n${m.nproc} cores · ${m.cpuModel} · ${m.memoryGiB} GiB · Node ${m.node} · ${m.platform} · ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return;
  }
  const profileDir =
    process.env.BENCH_PROFILE === '1' ? join(RESULTS, 'profiles', new Date().toISOString().replace(/[:.]/g, '-')) : undefined;
  const m = machine();
  log(`${m.nproc} cores, ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}; ${shapes.durationMs} ms per load`);

  let bundles: BundleFigure[] = [];
  if (process.env.BENCH_SKIP_BUNDLES !== '1') {
    log('bundling every function and timing cold inits');
    bundles = await measureBundles({ outRoot: join(RESULTS, 'bundles'), samples: 5 });
  }

  const call = (deploymentId: string, apiKey: string) => ({
    method: 'POST',
    path: `/v1/deployments/${deploymentId}/executions`,
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: '{}',
  });

  log('floor: bare HTTP server with one write and one read');
  const floor = await withChild('floor', profileDir, (c, ready) =>
    requestLoad(c, ready.url, call('00000000-0000-4000-8000-000000000000', 'x'), 202, shapes, 'floor'),
  );

  log('local runtime: counting AWS calls, then end to end, then the caller shapes, then the execute path');
  const { calls, e2e, execute, shapesMeasured } = await withChild('runtime', profileDir, async (child, ready) => {
    if (!ready.apiKey || !ready.deploymentId) throw new Error('the runtime published no deployment');
    const c = call(ready.deploymentId, ready.apiKey);
    const counted = (await child.command('count', 12)) as CallMeasure;
    log('end to end');
    const e = await endToEnd(child, ready.url, c, shapes);
    const measured: CallerFigure[] = [];
    for (const { shape, label } of SHAPES) {
      log(`callers: ${label}`);
      measured.push(await callerShape(child, ready.url, c, shape, callers));
    }
    log('execute path');
    const x = await executePath(child, ready.url, c, shapes);
    return { calls: counted, e2e: e, execute: x, shapesMeasured: measured };
  });

  const retained = process.env.BENCH_SKIP_RETAINED === '1' ? [] : await retainedSection();
  const media = process.env.BENCH_SKIP_MEDIA === '1' ? [] : mediaRows(await measureMedia(log));
  const results: Results = { floor, e2e, execute, calls, callers: shapesMeasured, bundles, cost: costs(calls) };
  const rows = [
    ...loadRows(results),
    ...callerRows(results),
    ...bundleRows(bundles),
    ...retained,
    ...media,
    ...callRows(calls, results.cost),
  ];
  const failures = [floor, e2e, execute].flatMap((f) => [f.single, f.rated, f.closed]).filter((f) => f.failed > 0 || f.skipped > 0);

  console.log(textTable(HEADER, rows));
  for (const name of ['authorizer', 'execute', 'task-run']) {
    const b = bundles.find((x) => x.name === name);
    if (b) console.log(`${name} bundle by package: ${packageLine(b)}`);
  }
  for (const f of failures)
    console.log(`note: ${f.shape}: ${f.failed} failed, ${f.skipped} arrivals skipped (in flight limit) ${f.errors.slice(0, 2).join('; ')}`);
  console.log(
    `\n${m.nproc} cores · ${m.cpuModel} · ${m.memoryGiB} GiB · Node ${m.node} · ${m.platform} · ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );

  const stamp = new Date().toISOString();
  const payload = { at: stamp, machine: m, shapes, callers, targets: TARGETS, results };
  writeFileSync(join(RESULTS, 'latest.json'), JSON.stringify(payload, null, 2));
  writeFileSync(
    join(RESULTS, 'latest.md'),
    `Measured ${stamp} on ${m.nproc} cores (${m.cpuModel}), ${m.memoryGiB} GiB, Node ${m.node}, with \`npm run bench\`.\n\n${markdownTable(HEADER, rows)}\n`,
  );

  if (profileDir) {
    for (const mode of ['floor', 'runtime']) {
      const dir = join(profileDir, mode);
      // One profile per thread; the loader's worker thread sits idle, the main thread is the one to read.
      const summaries = readdirSync(dir)
        .filter((x) => x.endsWith('.cpuprofile'))
        .map((f) => ({ f, s: summarizeProfile(JSON.parse(readFileSync(join(dir, f), 'utf8'))) }))
        .sort((a, b) => busy(b.s) - busy(a.s));
      const main = summaries[0];
      if (main) console.log(`\nCPU profile, ${mode} server (${join(dir, main.f)}):\n${formatProfile(main.s)}`);
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
