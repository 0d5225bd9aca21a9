/**
 * Event streams (`npm run bench -- --only events`): many readers of one execution on the local
 * runtime, and what a streamed execution costs on AWS. The runtime runs in its own process
 * (bench/events-server.ts) so its CPU time is the server's alone: an execution with no reader
 * is the floor, the same execution with N readers the load, and the difference over N is the
 * CPU one stream costs the server.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { POLL_BACKOFF_MS } from '../functions/adapters/completions';
import { EVENT_STREAM_CALLS, readUnitsOf, type StreamReader } from './aws-calls';
import { ASSUMPTIONS, PRICES } from './prices';
import { PROGRESS_WRITE_INTERVAL_MS } from '../functions/services/progress.service';
import { json, publish } from './media';
import { fmt, median } from './stats';
import type { Row } from './table';

const READERS = Number(process.env.BENCH_EVENTS_READERS) > 0 ? Number(process.env.BENCH_EVENTS_READERS) : 100;
const ROUNDS = 3;
const NODES = 6;
const NODE_MS = 250;

interface Usage {
  cpuMs: number;
  rss: number;
}

class EventsChild {
  private readonly proc: ChildProcess;
  private seq = 0;
  private readonly pending = new Map<number, (x: unknown) => void>();
  readonly ready: Promise<{ url: string; ownerToken: string }>;

  constructor() {
    this.proc = fork(join(__dirname, 'events-server.ts'), [], {
      execArgv: [...process.execArgv, '--expose-gc'],
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.ready = new Promise((resolve, reject) => {
      this.proc.once('exit', (code) => reject(new Error(`the events server exited (code ${String(code)})`)));
      this.proc.on('message', (m: { type: string; seq?: number; result?: unknown; url?: string; ownerToken?: string }) => {
        if (m.type === 'ready') resolve({ url: String(m.url), ownerToken: String(m.ownerToken) });
        else if (m.type === 'reply' && m.seq !== undefined) {
          this.pending.get(m.seq)?.(m.result);
          this.pending.delete(m.seq);
        }
      });
    });
  }

  private ask<T>(cmd: string): Promise<T> {
    const seq = ++this.seq;
    return new Promise((resolve) => {
      this.pending.set(seq, (x) => resolve(x as T));
      this.proc.send({ cmd, seq });
    });
  }

  usage = (): Promise<Usage> => this.ask('usage');
  stop = (): Promise<unknown> => this.ask('stop');
}

/** A pipeline of NODES delays in a row: long enough for every reader to be connected while it runs. */
const chain = () => {
  const nodes: Record<string, unknown> = { name: { type: 'input', value_type: 'string', value: 'x' } };
  let prev = 'name';
  for (let i = 1; i <= NODES; i++) {
    nodes[`step${i}`] = { type: 'delay', inputs: [prev], ms: NODE_MS };
    prev = `step${i}`;
  }
  nodes.out = { type: 'output', from: prev };
  return { nodes };
};

/** Reads a stream to its end; answers how many events came and whether the last was done. */
async function read(url: string, key: string): Promise<{ events: number; done: boolean }> {
  const res = await fetch(url, { headers: { accept: 'text/event-stream', 'x-api-key': key } });
  const text = await res.text();
  const names = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
  return { events: names.length, done: names.at(-1) === 'done' };
}

export interface EventsFigures {
  readers: number;
  floorCpuMs: number;
  loadCpuMs: number;
  cpuPerStreamMs: number;
  rssGrowth: number;
  events: number;
  allDone: boolean;
  executionMs: number;
}

export async function measureEvents(log: (s: string) => void = () => undefined): Promise<EventsFigures> {
  const child = new EventsChild();
  const { url, ownerToken } = await child.ready;
  try {
    const owner = { authorization: `Bearer ${ownerToken}` };
    const dep = await publish(url, owner, 'bench-events', chain());
    const key = { 'x-api-key': dep.apiKey };
    const runOnce = async (readers: number) => {
      const before = await child.usage();
      const started = Date.now();
      const r = await json(`${url}/v1/deployments/${dep.deploymentId}/executions`, 'POST', { ...key, prefer: 'wait=30' }, {});
      const id = String(r.body.execution_id);
      const streams = Array.from({ length: readers }, () => read(`${url}/v1/deployments/executions/${id}/events/`, dep.apiKey));
      // With no reader, wait for the end as a reader would (one waiting request).
      if (readers === 0 && r.status !== 200)
        await json(`${url}/v1/deployments/executions/${id}/result`, 'GET', { ...key, prefer: 'wait=30' });
      const got = await Promise.all(streams);
      const ms = Date.now() - started;
      const after = await child.usage();
      return { cpuMs: after.cpuMs - before.cpuMs, rss: after.rss - before.rss, got, ms };
    };
    await runOnce(0); // warm
    const floor: number[] = [];
    const load: number[] = [];
    const rss: number[] = [];
    let events = 0;
    let allDone = true;
    let executionMs = 0;
    for (let i = 0; i < ROUNDS; i++) {
      floor.push((await runOnce(0)).cpuMs);
      const l = await runOnce(READERS);
      load.push(l.cpuMs);
      rss.push(l.rss);
      events = l.got[0]?.events ?? 0;
      allDone &&= l.got.every((g) => g.done && g.events === events);
      executionMs = l.ms;
      log(`events: round ${i + 1}: floor ${fmt(floor.at(-1) ?? 0)} ms CPU, ${READERS} readers ${fmt(l.cpuMs)} ms CPU`);
    }
    const floorCpuMs = median(floor);
    const loadCpuMs = median(load);
    return {
      readers: READERS,
      floorCpuMs,
      loadCpuMs,
      cpuPerStreamMs: (loadCpuMs - floorCpuMs) / READERS,
      rssGrowth: median(rss),
      events,
      allDone,
      executionMs,
    };
  } finally {
    await child.stop();
  }
}

/**
 * What one reader streaming one execution costs on AWS, at list prices: opening the stream
 * (EVENT_STREAM_CALLS: its request through API Gateway, its functions, its reads and writes),
 * the events function held for the whole execution (billed duration is wall time, waiting
 * included; any other function of the request at its warm time), the shared loop's re-reads on
 * PollingCompletions' schedule (each a strongly consistent GetItem of an item under 4 KB: one
 * read unit) and the progress writes the run makes (spaced by PROGRESS_WRITE_INTERVAL_MS, at
 * most two per node, each one write unit for an item under 1 KB; paid whether anyone streams or
 * not). `reader`: a caller with the key (execution-events) or a web form's viewer (form-events).
 */
export function streamCost(seconds: number, nodes: number, reader: StreamReader = 'caller'): { total: number; lines: [string, number][] } {
  const perMillion = (x: number) => x * 1_000_000;
  const gb = ASSUMPTIONS.lambdaMemoryMb / 1024;
  const open = EVENT_STREAM_CALLS[reader];
  const held = open.functions.at(-1) ?? '';
  const others = open.functions.slice(0, -1);
  const othersMs = others.reduce((s, f) => s + (ASSUMPTIONS.lambdaWarmMs[f] ?? 0), 0);
  let rereads = 0;
  for (let t = 0, i = 0; t < seconds * 1000; i++) {
    t += POLL_BACKOFF_MS[Math.min(i, POLL_BACKOFF_MS.length - 1)] ?? 1000;
    rereads += 1;
  }
  // Spaced by the interval, none in the first; never more than one per node event.
  const progressWrites = Math.max(0, Math.min(2 * nodes, Math.ceil((seconds * 1000) / PROGRESS_WRITE_INTERVAL_MS) - 1));
  const openReads = readUnitsOf(open);
  const lines: [string, number][] = [
    ['API Gateway request (1)', PRICES.apiGatewayRestPerMillion],
    [`Lambda requests (${open.functions.length}: ${open.functions.join(', ')})`, open.functions.length * PRICES.lambdaPerMillionRequests],
    [
      `Lambda duration (${held} held ${seconds} s${others.length ? `, ${others.join(', ')} ${othersMs} ms` : ''}, at ${ASSUMPTIONS.lambdaMemoryMb} MB)`,
      perMillion((seconds + othersMs / 1000) * gb * PRICES.lambdaArmPerGbSecond),
    ],
    [
      `DynamoDB reads opening it (${openReads} RRU${reader === 'form' ? ': the link, the deployment, the execution' : ": the authorizer's, the execution"})`,
      openReads * PRICES.dynamoPerMillionReadUnits,
    ],
  ];
  if (open.writes > 0)
    lines.push([
      `DynamoDB rate counters (${open.writes}, 1 WRU each: the link's and the address's)`,
      open.writes * PRICES.dynamoPerMillionWriteUnits,
    ]);
  lines.push(
    [`DynamoDB re-reads (${rereads}, 1 RRU each)`, rereads * PRICES.dynamoPerMillionReadUnits],
    [
      `DynamoDB progress writes (at most ${progressWrites}, 1 WRU each; every execution that long, streamed or not)`,
      progressWrites * PRICES.dynamoPerMillionWriteUnits,
    ],
  );
  return { total: lines.reduce((s, [, d]) => s + d, 0), lines };
}

export function eventsRows(f: EventsFigures): Row[] {
  const rows: Row[] = [
    [
      `— event streams: ${f.readers} readers of one execution (${NODES} nodes of ${NODE_MS} ms) on the local runtime; server CPU in its own process (floor: the same execution, no reader)`,
      '',
      '',
      '',
      '',
      '',
    ],
  ];
  rows.push([`server CPU per execution, no reader (floor)`, `${fmt(f.floorCpuMs)} ms`, `median of ${ROUNDS}`, '', '', '']);
  rows.push([
    `server CPU per execution, ${f.readers} readers`,
    `${fmt(f.loadCpuMs)} ms`,
    `${f.events} events each, all ended with done: ${f.allDone ? 'yes' : 'NO'}`,
    '',
    '',
    '',
  ]);
  rows.push([`  server CPU per stream`, `${fmt(f.cpuPerStreamMs, 2)} ms`, `(load − floor) / ${f.readers}`, '', '', '']);
  rows.push([`  server RSS after the load`, `${fmt(f.rssGrowth / 1048576, 1)} MB`, 'after a collection, against before it', '', '', '']);
  for (const reader of ['caller', 'form'] as const) {
    for (const seconds of [10, 60]) {
      const c = streamCost(seconds, 5, reader);
      rows.push([
        `cost per million streamed executions on AWS, ${reader === 'form' ? "a web form's viewer" : 'a caller'} (${seconds} s, 5 nodes)`,
        `$${fmt(c.total, 2)}`,
        'list prices',
        '',
        '',
        '',
      ]);
      for (const [item, dollars] of c.lines) rows.push([`  ${item}`, `$${fmt(dollars, 2)}`, '', '', '', '']);
    }
  }
  return rows;
}
