/**
 * Caller shapes: how a real client learns the result, each run by many concurrent callers in
 * a closed loop from this (the load generator's) process:
 *
 *   poll      submit, then GET the result every 250 ms until it is there
 *   wait      submit with `Prefer: wait=N`: the result comes in the submit's own answer
 *             (a GET result with the same preference follows if the wait runs out)
 *   callback  submit with a callback URL, then nothing: the result arrives as a POST to a
 *             receiver here
 *
 * Each iteration ends when the result is in the caller's hands; its time is POST → result.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { ServerChild } from './child';
import { meanAwsWait } from './aws-calls';
import { diffCounts, scaleCounts, type Counts } from './instrument';
import { closedLoop, HttpClient, type Call } from './load';
import { perSecond, summarize, type Summary } from './stats';

export type CallerShape = 'poll' | 'wait' | 'callback';

export interface CallerOptions {
  callers: number;
  durationMs: number;
  pollMs: number;
  /** The `Prefer: wait` asked for (the AWS maximum, so the figures hold there too). */
  waitSeconds: number;
}

export interface CallerFigure {
  shape: CallerShape;
  callers: number;
  perSecond: number;
  /** POST sent → result in the caller's hands. */
  latency: Summary;
  /** Server CPU (every thread) per completed execution. */
  cpuMsPer: number;
  /** HTTP requests the caller sent per execution (the POST included). */
  requestsPer: number;
  /** What the server asked of AWS per execution, counted at the adapters, capacity units included. */
  perExecution: Counts;
  runnerInvocationsPer: number;
  /**
   * For `wait`: the same waits on AWS, where the waiting function re-reads on a schedule, each
   * as long as the server took from creating the record to its terminal write.
   */
  awsWait: { rereads: number; seconds: number };
  executions: number;
  failed: number;
  errors: string[];
}

interface Snapshot {
  counts: Counts;
  runnerInvocations: number;
}

const SETTLE_MS = 500;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A callback receiver on loopback: resolves the wait for each execution id it is told about. */
class Receiver {
  private readonly waiters = new Map<string, (at: number) => void>();
  private readonly early = new Map<string, number>();
  private readonly server: Server;
  url = '';

  private constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const at = performance.now();
        res.writeHead(204).end();
        let id = '';
        try {
          id = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { execution_id?: unknown }).execution_id ?? '');
        } catch {
          return;
        }
        this.arrived(id, at);
      });
    });
    this.server.keepAliveTimeout = 30_000;
  }

  static async start(): Promise<Receiver> {
    const r = new Receiver();
    await new Promise<void>((done) => r.server.listen(0, '127.0.0.1', done));
    r.url = `http://127.0.0.1:${(r.server.address() as AddressInfo).port}/hook`;
    return r;
  }

  private arrived(id: string, at: number): void {
    const w = this.waiters.get(id);
    if (w) {
      this.waiters.delete(id);
      w(at);
    } else this.early.set(id, at);
  }

  delivered(id: string, timeoutMs = 30_000): Promise<number> {
    const at = this.early.get(id);
    if (at !== undefined) {
      this.early.delete(id);
      return Promise.resolve(at);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        reject(new Error(`no callback for ${id} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.set(id, (t) => {
        clearTimeout(timer);
        resolve(t);
      });
    });
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

function idOf(body: string): string {
  const id = (JSON.parse(body) as { execution_id?: unknown }).execution_id;
  if (typeof id !== 'string') throw new Error(`no execution_id in ${body.slice(0, 200)}`);
  return id;
}

function completed(body: string): void {
  const status = (JSON.parse(body) as { status?: unknown }).status;
  if (status !== 'completed') throw new Error(`the result says ${String(status)}: ${body.slice(0, 200)}`);
}

/** Runs one caller shape; the server's counts and CPU are read around the measured loop. */
export async function callerShape(
  child: ServerChild,
  url: string,
  submit: Call,
  shape: CallerShape,
  o: CallerOptions,
): Promise<CallerFigure> {
  const http = new HttpClient(url, o.callers * 2);
  const receiver = shape === 'callback' ? await Receiver.start() : undefined;
  const key = submit.headers ?? {};
  const resultCall = (id: string, prefer?: string): Call => ({
    method: 'GET',
    path: `/v1/deployments/executions/${id}/result`,
    headers: { 'x-api-key': key['x-api-key'] ?? '', ...(prefer ? { prefer } : {}) },
  });
  let requests = 0;

  const one = async (latency: number[], waited: number[]): Promise<void> => {
    const sentAt = performance.now();
    if (shape === 'callback') {
      requests++;
      const a = await http.send({ ...submit, body: JSON.stringify({ callback: receiver?.url }) });
      if (a.status !== 202) throw new Error(`submit answered ${a.status}: ${a.body.slice(0, 200)}`);
      const at = await (receiver as Receiver).delivered(idOf(a.body));
      latency.push(at - sentAt);
      return;
    }
    const prefer = shape === 'wait' ? `wait=${o.waitSeconds}` : undefined;
    requests++;
    const a = await http.send({ ...submit, headers: { ...submit.headers, ...(prefer ? { prefer } : {}) } }, (o.waitSeconds + 10) * 1000);
    if (a.status === 200) {
      completed(a.body);
      latency.push(performance.now() - sentAt);
      // What the waiting function waited: from the record's creation (the wait begins right after) to its terminal write.
      const done = await child.finished(idOf(a.body), 5000);
      if (done.completed_at) waited.push(Date.parse(done.completed_at) - Date.parse(done.created_at));
      return;
    }
    if (a.status !== 202) throw new Error(`submit answered ${a.status}: ${a.body.slice(0, 200)}`);
    const id = idOf(a.body);
    for (;;) {
      if (shape === 'poll') await sleep(o.pollMs);
      requests++;
      const r = await http.send(resultCall(id, prefer), (o.waitSeconds + 10) * 1000);
      if (r.status === 200) {
        completed(r.body);
        break;
      }
      if (r.status !== 409) throw new Error(`result answered ${r.status}: ${r.body.slice(0, 200)}`);
    }
    latency.push(performance.now() - sentAt);
  };

  try {
    // Capacity units are measured through the whole load, so every figure below is of one run.
    await child.command('units', 1);
    await closedLoop({ concurrency: Math.min(8, o.callers), durationMs: 1000, maxIterations: 1000 }, () => one([], []));
    // A caller has its result before the writes that follow the terminal one (the usage count, the
    // delivery record) are answered: let them land on the side of the snapshot they belong to.
    await sleep(SETTLE_MS);
    const latency: number[] = [];
    const waited: number[] = [];
    requests = 0;
    const s0 = (await child.command('snapshot')) as Snapshot;
    const cpu0 = Number(await child.command('cpu'));
    const r = await closedLoop({ concurrency: o.callers, durationMs: o.durationMs, maxIterations: 1_000_000 }, () => one(latency, waited));
    await sleep(SETTLE_MS);
    const cpu1 = Number(await child.command('cpu'));
    const s1 = (await child.command('snapshot')) as Snapshot;
    await child.command('units', 0);
    child.forget();
    const n = Math.max(1, r.succeeded);
    return {
      shape,
      callers: o.callers,
      perSecond: perSecond(r.succeeded, r.spanMs),
      latency: summarize(latency),
      cpuMsPer: r.succeeded > 0 ? (cpu1 - cpu0) / r.succeeded : Number.NaN,
      requestsPer: requests / n,
      perExecution: scaleCounts(diffCounts(s0.counts, s1.counts), 1 / n),
      runnerInvocationsPer: (s1.runnerInvocations - s0.runnerInvocations) / n,
      awsWait: shape === 'wait' ? meanAwsWait(waited, o.waitSeconds) : { rereads: 0, seconds: 0 },
      executions: r.succeeded,
      failed: r.failed,
      errors: r.errors,
    };
  } finally {
    http.close();
    await receiver?.close();
  }
}
