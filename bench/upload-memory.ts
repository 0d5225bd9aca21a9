/**
 * A 100 MiB upload, PUT, checked and executed, against the resident memory of the runtime that
 * takes it (`npm run bench -- --only uploads`; printed figures, not a timed test). Each run is a
 * fresh `npm start` runtime in a process of its own (bench/upload-memory-child.ts), sampled
 * every 5 ms; this process is the client and the http node's upstream, so neither counts.
 *
 * - `put` (the floor): the upload created and its 100 MiB PUT to the S3 emulation.
 * - `put, check, execute`: the same, then an execution naming it: the execute function opens
 *   the upload once, counting, hashing and sniffing it as it streams (never holding it), and the
 *   run sends its bytes on to an http node's upstream as the raw body (body_asset), streamed.
 *
 * The goal: the runtime grows by less than 160 MB over the whole of it (a Lambda function has
 * 256 MB; before the check streamed it held about three copies of the file, ≈ +300 MB).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { PipelineDefinition } from '../functions/core/types';
import { dataUri, png } from '../test/support/media';
import { median } from './stats';

const MIB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_UPLOAD_MIB ?? 100) * MIB;
const ROUNDS = Number(process.env.BENCH_UPLOAD_ROUNDS ?? 3);
/** The goal for the runtime's growth over a 100 MiB upload's whole path. */
export const UPLOAD_MEMORY_GOAL_BYTES = 160 * 1000 * 1000;
const WAYS = ['put', 'put, check, execute'] as const;
type Way = (typeof WAYS)[number];

export interface UploadMemoryFigure {
  way: Way;
  ms: number;
  growth: number;
  peak: number;
  /** Bytes the http node's upstream received (the execution's run of the file). */
  forwarded: number;
}

const pipeline = (upstream: string): PipelineDefinition => ({
  nodes: {
    photo: { type: 'input', value_type: 'asset', value: dataUri('image/png', png(1, 1)) },
    send: { type: 'http', method: 'POST', url: upstream, inputs: ['photo'], body_asset: 'photo', timeout_ms: 30_000 },
    received: { type: 'transform', inputs: ['send'], expression: 'send.received' },
    out: { type: 'output', from: 'received' },
  },
});

async function call(url: string, method: string, body: unknown, headers: Record<string, string>): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : {}) as Record<string, unknown>;
}

const ask = <T>(child: ChildProcess, message: string): Promise<T> =>
  new Promise((resolve) => {
    child.once('message', (m) => resolve(m as T));
    child.send(message);
  });

async function oneRun(
  way: Way,
  file: Buffer,
  upstream: { url: string; received: () => number; reset: () => void },
): Promise<UploadMemoryFigure> {
  const child = fork(join(__dirname, 'upload-memory-child.ts'), [], {
    execArgv: ['--import', 'tsx', '--expose-gc'],
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const { url, ownerToken } = await new Promise<{ url: string; ownerToken: string }>((resolve, reject) => {
    child.once('message', (m) => resolve(m as { url: string; ownerToken: string }));
    child.once('exit', (code) => reject(new Error(`the runtime exited ${String(code)}`)));
  });
  try {
    const owner = { authorization: `Bearer ${ownerToken}` };
    await call(`${url}/v1/pipelines/upload-bench`, 'PUT', pipeline(upstream.url), owner);
    const run = await call(`${url}/v1/pipelines/upload-bench/runs`, 'POST', {}, { ...owner, prefer: 'wait=20' });
    if (run.status !== 'completed') throw new Error(`the owner's run ended ${JSON.stringify(run)}`);
    const pub = await call(`${url}/v1/pipelines/upload-bench/deployment`, 'PUT', {}, owner);
    const key = { 'x-api-key': String(pub.api_key) };
    const deployment = String(pub.deployment_id);
    const upload = async (bytes: Buffer): Promise<string> => {
      const u = await call(`${url}/v1/deployments/${deployment}/uploads/`, 'POST', { media_type: 'image/png', bytes: bytes.length }, key);
      const put = await fetch(String(u.upload_url), { method: 'PUT', headers: u.headers as Record<string, string>, body: bytes });
      if (put.status !== 200) throw new Error(`PUT ${put.status} ${await put.text()}`);
      return String((u.asset as { value: string }).value);
    };
    const execute = async (value: string): Promise<void> => {
      const e = await call(
        `${url}/v1/deployments/${deployment}/executions/`,
        'POST',
        { workflow_input: { photo: { value, value_type: 'ASSET' } } },
        { ...key, prefer: 'wait=25' },
      );
      let status = String(e.status);
      while (status !== 'completed' && status !== 'failed') {
        const s = await call(`${url}/v1/deployments/executions/${String(e.execution_id)}/status/`, 'GET', undefined, {
          ...key,
          prefer: 'wait=25',
        });
        status = String(s.status);
      }
      if (status !== 'completed') throw new Error(`the execution ${status}`);
    };
    // Warm every path once, small, outside the measure.
    const small = Buffer.concat([png(2, 2), Buffer.alloc(1024)]);
    await execute(await upload(small));
    upstream.reset();
    await ask(child, 'start');
    const started = performance.now();
    const value = await upload(file);
    if (way === 'put, check, execute') await execute(value);
    const ms = performance.now() - started;
    const { growth, peak } = await ask<{ growth: number; peak: number }>(child, 'stop');
    return { way, ms, growth, peak, forwarded: upstream.received() };
  } finally {
    child.send('exit');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

export async function measureUploadMemory(log: (line: string) => void = () => undefined): Promise<UploadMemoryFigure[]> {
  const file = Buffer.alloc(SIZE);
  png(8, 8).copy(file);
  for (let i = 256; i < SIZE; i += 4096) file[i] = i % 251;
  let received = 0;
  const sink = createServer((req, res) => {
    req.on('data', (c: Buffer) => (received += c.length));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ received }));
    });
  });
  await new Promise<void>((ok) => sink.listen(0, '127.0.0.1', ok));
  const upstream = {
    url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/sink`,
    received: () => received,
    reset: () => (received = 0),
  };
  const runs: UploadMemoryFigure[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const way of WAYS) {
        const r = await oneRun(way, file, upstream);
        log(`uploads: ${way}, round ${round + 1}: growth ${(r.growth / MIB).toFixed(1)} MiB, peak ${(r.peak / MIB).toFixed(1)} MiB`);
        runs.push(r);
      }
    }
  } finally {
    sink.close();
  }
  return WAYS.map((way) => {
    const rs = runs.filter((r) => r.way === way);
    return {
      way,
      ms: median(rs.map((r) => r.ms)),
      growth: median(rs.map((r) => r.growth)),
      peak: median(rs.map((r) => r.peak)),
      forwarded: median(rs.map((r) => r.forwarded)),
    };
  });
}

/** The printed table: medians of each way, the floor's ratio, and the goal. */
export function uploadMemoryRows(figures: readonly UploadMemoryFigure[]): [string[], string[][]] {
  const mb = (b: number): string => `${(b / 1e6).toFixed(0)} MB`;
  const floor = figures.find((f) => f.way === 'put');
  const header = ['way', 'time', 'RSS growth', 'RSS peak over start', '× floor (peak)', 'sent on by the run', 'goal'];
  const rows = figures.map((f) => [
    f.way,
    `${(f.ms / 1000).toFixed(1)} s`,
    mb(f.growth),
    mb(f.peak),
    floor && floor.peak > 0 ? `×${(f.peak / floor.peak).toFixed(2)}` : '',
    f.way === 'put' ? '' : `${(f.forwarded / MIB).toFixed(1)} MiB`,
    f.way === 'put' ? '' : `peak < ${mb(UPLOAD_MEMORY_GOAL_BYTES)}: ${f.peak < UPLOAD_MEMORY_GOAL_BYTES ? 'met' : 'NOT met'}`,
  ]);
  rows.push([
    `${SIZE / MIB} MiB file, ${ROUNDS} rounds, medians; load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
    '',
    '',
    '',
    '',
    '',
    '',
  ]);
  return [header, rows];
}
