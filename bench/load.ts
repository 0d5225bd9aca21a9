/**
 * A small load generator on node:http: keep-alive sockets, a bounded number of requests in
 * flight, a bounded count and a bounded time, and loopback addresses only, so a benchmark can
 * never load anything but this machine.
 */
import { Agent, request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';

export interface Call {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface Answer {
  status: number;
  body: string;
  ms: number;
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]', '::1', 'localhost']);

export function assertLoopback(base: string): URL {
  const u = new URL(base);
  if (u.protocol !== 'http:' || !LOOPBACK.has(u.hostname)) throw new Error(`refusing to load a non-loopback address: ${base}`);
  return u;
}

export class HttpClient {
  private readonly agent: Agent;
  private readonly base: URL;

  constructor(base: string, maxSockets: number) {
    this.base = assertLoopback(base);
    this.agent = new Agent({ keepAlive: true, maxSockets });
  }

  send(call: Call, timeoutMs = 10_000): Promise<Answer> {
    const started = performance.now();
    return new Promise<Answer>((resolve, reject) => {
      const body = call.body === undefined ? undefined : Buffer.from(call.body);
      const req = httpRequest(
        {
          agent: this.agent,
          host: this.base.hostname.replace(/^\[|\]$/g, ''),
          port: this.base.port,
          method: call.method,
          path: call.path,
          headers: { ...call.headers, ...(body ? { 'content-length': String(body.length) } : {}) },
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started }),
          );
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`request timed out after ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface LoopResult {
  started: number;
  succeeded: number;
  failed: number;
  /** First few failure messages, for the report. */
  errors: string[];
  spanMs: number;
}

export interface LoopOptions {
  /** Iterations in flight at once (closed loop: each starts the next when it ends). */
  concurrency: number;
  durationMs: number;
  maxIterations: number;
}

/**
 * Closed loop: `concurrency` workers each run `iteration` back to back until the time or the
 * count runs out. Throughput is whatever the system under test sustains.
 */
export async function closedLoop(opts: LoopOptions, iteration: (i: number) => Promise<void>): Promise<LoopResult> {
  const res: LoopResult = { started: 0, succeeded: 0, failed: 0, errors: [], spanMs: 0 };
  const t0 = performance.now();
  const end = t0 + opts.durationMs;
  const worker = async (): Promise<void> => {
    while (performance.now() < end && res.started < opts.maxIterations) {
      const i = res.started++;
      try {
        await iteration(i);
        res.succeeded++;
      } catch (e) {
        res.failed++;
        if (res.errors.length < 5) res.errors.push(e instanceof Error ? e.message : String(e));
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  res.spanMs = performance.now() - t0;
  return res;
}

export interface RateResult extends LoopResult {
  /** Arrivals skipped because `maxInFlight` iterations were already going (the system fell behind). */
  skipped: number;
}

/**
 * Open loop at a fixed arrival rate, as independent callers would arrive. At most
 * `maxInFlight` iterations run at once; an arrival beyond that is skipped and counted, so an
 * overloaded system shows up as skipped work rather than as an ever-growing backlog.
 */
export async function fixedRate(
  opts: { rate: number; durationMs: number; maxInFlight: number },
  iteration: (i: number) => Promise<void>,
): Promise<RateResult> {
  const res: RateResult = { started: 0, succeeded: 0, failed: 0, errors: [], spanMs: 0, skipped: 0 };
  const inFlight = new Set<Promise<void>>();
  const t0 = performance.now();
  const total = Math.floor((opts.rate * opts.durationMs) / 1000);
  for (let n = 0; n < total; n++) {
    const due = t0 + (n * 1000) / opts.rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    if (inFlight.size >= opts.maxInFlight) {
      res.skipped++;
      continue;
    }
    const i = res.started++;
    const p = iteration(i).then(
      () => {
        res.succeeded++;
      },
      (e: unknown) => {
        res.failed++;
        if (res.errors.length < 5) res.errors.push(e instanceof Error ? e.message : String(e));
      },
    );
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  }
  await Promise.all(inFlight);
  res.spanMs = performance.now() - t0;
  return res;
}
