/**
 * Fan-out (`npm run bench -- --only map`): a map of 100 items on the local runtime, counted
 * through the instrumented adapters (bench/instrument.ts), and the same map priced on AWS in the
 * cost model (bench/aws-calls.ts mapStepLoopWork, against the state machine's Map state). Three
 * item nodes: a transform (the map's own cost, no upstream), a plain GET, and a render job polled
 * until it is over (the example image job service, examples/servers/image-jobs.mjs, its own
 * process, each job a second long), at concurrency 4 and 32.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startRuntime } from '../lib/local/runtime';
import { largestMapWithinQuotas, mapCostPerMillion, mapStateWork, mapStepLoopWork, totalDollars, type MapWork } from './aws-calls';
import { cloneCounts, diffCounts, dynamoReads, dynamoWrites, instrumentation } from './instrument';
import { MAP_SCENARIO, SFN_QUOTAS } from './prices';
import { fmt } from './stats';
import type { Row } from './table';

const ITEMS = 100;
const JOB_SECONDS = 1;

export interface MapFigure {
  label: string;
  wallMs: number;
  /** RunNodes steps the execution took (node-record loads). */
  steps: number;
  nodeWrites: number;
  writeUnits: number;
  readUnits: number;
  dynamoReads: number;
  dynamoWrites: number;
  upstreamRequests: number;
  /** CPU of the runtime's process per item, ms (the job service runs in its own). */
  cpuMsPerItem: number;
  status: string;
}

async function json(url: string, method: string, headers: Record<string, string>, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await res.json()) as Record<string, unknown>;
}

/** The example job service on a free port; resolves with its URL and how to stop it. */
async function startJobs(): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [join(__dirname, '..', 'examples', 'servers', 'image-jobs.mjs')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', RETRY_AFTER_MAX_S: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const check = setInterval(() => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) {
        clearInterval(check);
        resolve(m[1]);
      }
      if (child.exitCode !== null) {
        clearInterval(check);
        reject(new Error(`the job service exited: ${out}`));
      }
    }, 20);
  });
  return {
    url,
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const mapOf = (node: Record<string, unknown>, concurrency: number) => ({
  timeout_ms: 600_000,
  nodes: {
    n: { type: 'input', value_type: 'integer', value: 2 },
    m: { type: 'map', inputs: ['n'], items: '[1..n]', concurrency, node },
    c: { type: 'transform', inputs: ['m'], expression: '$count(m)' },
    out: { type: 'output', from: 'c' },
  },
});

export async function measureMap(log: (m: string) => void): Promise<MapFigure[]> {
  const jobs = await startJobs();
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-bench-map-'));
  const inst = instrumentation();
  const rt = await startRuntime({ port: 0, dataDir, log: false, trackOpen: true, wrapDeps: inst.wrap });
  const owner = { authorization: `Bearer ${rt.ownerToken}` };
  inst.units = true;
  const figures: MapFigure[] = [];
  const cases: { label: string; node: Record<string, unknown>; concurrency: number; requestsPerItem: number }[] = [
    { label: 'transform items', node: { type: 'transform', expression: 'item * 2' }, concurrency: 4, requestsPerItem: 0 },
    { label: 'GET items, concurrency 4', node: { type: 'http', url: `${jobs.url}/v1/stats` }, concurrency: 4, requestsPerItem: 1 },
    { label: 'GET items, concurrency 32', node: { type: 'http', url: `${jobs.url}/v1/stats` }, concurrency: 32, requestsPerItem: 1 },
    ...[4, 32].map((concurrency) => ({
      label: `${JOB_SECONDS} s jobs polled every second, concurrency ${concurrency}`,
      node: {
        type: 'http',
        method: 'POST',
        url: `${jobs.url}/v1/jobs`,
        body: `{'prompt': 'bench ' & $string(index), 'seconds': ${JOB_SECONDS}, 'size': 8}`,
        poll: { url: 'url', every_ms: 1000, done: "status in ['succeeded', 'failed']", failed: "status = 'failed'", error: 'error' },
      },
      concurrency,
      requestsPerItem: NaN,
    })),
  ];
  try {
    for (const [i, c] of cases.entries()) {
      const id = `map${i}`;
      await json(`${rt.url}/v1/pipelines/${id}`, 'PUT', owner, mapOf(c.node, c.concurrency));
      log(`map of ${ITEMS}: ${c.label}`);
      const before = cloneCounts(inst.counts);
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const started = await json(`${rt.url}/v1/pipelines/${id}/runs`, 'POST', owner, { inputs: { n: ITEMS } });
      let run: Record<string, unknown> = {};
      for (;;) {
        run = await json(`${rt.url}/v1/pipelines/${id}/runs/${String(started.run_id)}`, 'GET', { ...owner, prefer: 'wait=20' });
        if (['completed', 'failed', 'cancelled'].includes(String(run.status))) break;
      }
      const wallMs = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const d = diffCounts(before, inst.counts);
      figures.push({
        label: c.label,
        wallMs,
        steps: d.storeMethods['steps.load'] ?? 0,
        nodeWrites: d.storeMethods['steps.save'] ?? 0,
        writeUnits: d.writeUnits + d.indexWriteUnits,
        readUnits: d.readUnits,
        dynamoReads: dynamoReads(d),
        dynamoWrites: dynamoWrites(d),
        upstreamRequests: d.http,
        cpuMsPerItem: (cpu.user + cpu.system) / 1000 / ITEMS,
        status: String(run.status),
      });
    }
  } finally {
    await rt.stop({ drainMs: 0 });
    await jobs.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return figures;
}

const workLine = (w: MapWork): string =>
  `${w.steps} step(s), ${w.transitions} transitions, ${w.historyEvents} history events, ${w.lambdaInvocations} invocations, ${w.writeUnits} WRU, ${w.readUnits} RRU, state ${fmt(w.payloadBytes / 1024, 1)} KiB`;

export function mapRows(figures: MapFigure[]): Row[] {
  const rows: Row[] = [
    [`— a map of ${ITEMS} items on the local runtime (an owner's run, counted through the instrumented adapters)`, '', '', '', '', ''],
  ];
  for (const f of figures) {
    rows.push([`${f.label}: wall, submit → ${f.status}`, `${fmt(f.wallMs, 0)} ms`, '', '', '', '']);
    rows.push([
      '  steps · node-record writes · upstream requests',
      `${f.steps} · ${f.nodeWrites} · ${f.upstreamRequests}`,
      `DynamoDB ${f.dynamoWrites} writes (${fmt(f.writeUnits, 0)} WRU), ${f.dynamoReads} reads (${fmt(f.readUnits, 1)} RRU)`,
      '',
      '',
      '',
    ]);
    rows.push([`  runtime CPU per item`, `${fmt(f.cpuMsPerItem, 2)} ms`, 'the job service in its own process', '', '', '']);
  }
  const loop = mapStepLoopWork();
  const state = mapStateWork();
  const s = MAP_SCENARIO;
  rows.push([
    `— the same on AWS (Standard: its jobs wait): ${s.items} items, concurrency ${s.concurrency}, ${s.pollsPerItem} polls a job, ${s.requestMs} ms a request`,
    '',
    '',
    '',
    '',
    '',
  ]);
  for (const [label, w] of [
    ['the step loop (pipegate)', loop],
    ["the state machine's Map state", state],
  ] as const) {
    const lines = mapCostPerMillion(w);
    rows.push([`${label}: per million executions`, `$${fmt(totalDollars(lines), 2)}`, workLine(w), '', '', '']);
    rows.push(['  by item', lines.map((l) => `${l.item} $${fmt(l.dollars, 2)}`).join(' · '), '', '', '', '']);
  }
  rows.push([
    `  largest map within the quotas (${SFN_QUOTAS.historyEvents} events, ${SFN_QUOTAS.payloadBytes / 1024} KiB)`,
    `step loop ${largestMapWithinQuotas(mapStepLoopWork)} · Map state ${largestMapWithinQuotas(mapStateWork)}`,
    `concurrency 1: step loop ${largestMapWithinQuotas(mapStepLoopWork, { ...s, concurrency: 1 })} · Map state ${largestMapWithinQuotas(mapStateWork, { ...s, concurrency: 1 })}`,
    '',
    '',
    '',
  ]);
  return rows;
}
