/**
 * End to end on the local runtime (POST → completed for the greeting pipeline) and requests
 * alone (the execute path, and the floor) under the same load shapes: one caller at a time,
 * a fixed arrival rate, and a closed loop of concurrent callers.
 */
import { performance } from 'node:perf_hooks';
import type { ServerChild } from './child';
import { closedLoop, fixedRate, HttpClient, type Call, type LoopResult } from './load';
import { perSecond, summarize, type Summary } from './stats';

export interface LoadFigure {
  shape: string;
  /** Completed iterations per second over the run. */
  perSecond: number;
  latency: Summary;
  /** Server-side POST→completed (created_at → completed_at, ms resolution), end to end only. */
  serverLatency?: Summary;
  /** CPU the server process used per completed iteration, every thread counted. */
  cpuMsPer: number;
  failed: number;
  skipped: number;
  errors: string[];
}

export interface Shapes {
  concurrency: number;
  rate: number;
  durationMs: number;
  maxRequests: number;
  /** In flight at most, for the fixed-rate shape. */
  maxInFlight: number;
}

export interface ShapeFigures {
  single: LoadFigure;
  rated: LoadFigure;
  closed: LoadFigure;
}

/** POST one request and check the answer is what the figure assumes. */
async function post(http: HttpClient, call: Call, want: number): Promise<{ ms: number; body: string; sentAt: number }> {
  const sentAt = performance.now();
  const a = await http.send(call);
  if (a.status !== want) throw new Error(`${call.method} ${call.path} answered ${a.status}: ${a.body.slice(0, 200)}`);
  return { ms: a.ms, body: a.body, sentAt };
}

type Iteration = (client: number[], server: number[]) => Promise<void>;

/** Warms up, then runs the three shapes, measuring the server's CPU around each. */
async function shapesOf(child: ServerChild, s: Shapes, label: string, one: Iteration, withServer: boolean): Promise<ShapeFigures> {
  const cpu = async () => Number(await child.command('cpu'));
  await closedLoop({ concurrency: 4, durationMs: 1500, maxIterations: 2000 }, () => one([], []));

  const run = async (shape: string, loop: (it: () => Promise<void>) => Promise<LoopResult & { skipped?: number }>): Promise<LoadFigure> => {
    const client: number[] = [];
    const server: number[] = [];
    const c0 = await cpu();
    const r = await loop(() => one(client, server));
    const c1 = await cpu();
    return {
      shape: `${label}, ${shape}`,
      perSecond: perSecond(r.succeeded, r.spanMs),
      latency: summarize(client),
      ...(withServer ? { serverLatency: summarize(server) } : {}),
      cpuMsPer: r.succeeded > 0 ? (c1 - c0) / r.succeeded : Number.NaN,
      failed: r.failed,
      skipped: r.skipped ?? 0,
      errors: r.errors,
    };
  };
  const single = await run('one caller', (it) =>
    closedLoop({ concurrency: 1, durationMs: s.durationMs / 2, maxIterations: s.maxRequests }, it),
  );
  const rated = await run(`${s.rate}/s offered`, (it) =>
    fixedRate({ rate: s.rate, durationMs: s.durationMs, maxInFlight: s.maxInFlight }, it),
  );
  const closed = await run(`closed loop ×${s.concurrency}`, (it) =>
    closedLoop({ concurrency: s.concurrency, durationMs: s.durationMs, maxIterations: s.maxRequests }, it),
  );
  return { single, rated, closed };
}

/** Requests alone, each answered `want`: the floor, or the execute path. */
export async function requestLoad(
  child: ServerChild,
  url: string,
  call: Call,
  want: number,
  s: Shapes,
  label: string,
): Promise<ShapeFigures> {
  const http = new HttpClient(url, s.concurrency + s.maxInFlight);
  try {
    return await shapesOf(
      child,
      s,
      label,
      async (client) => {
        client.push((await post(http, call, want)).ms);
      },
      false,
    );
  } finally {
    http.close();
  }
}

/**
 * Executions from POST to completed. The client-observed latency ends when the server's
 * completion notice arrives (no polling, so no poll interval is added and no poll load);
 * the server-side one is the record's created_at → completed_at.
 */
export async function endToEnd(child: ServerChild, url: string, call: Call, s: Shapes): Promise<ShapeFigures> {
  const http = new HttpClient(url, s.concurrency + s.maxInFlight);
  try {
    const figures = await shapesOf(
      child,
      s,
      'end to end',
      async (client, server) => {
        const p = await post(http, call, 202);
        const id = (JSON.parse(p.body) as { execution_id?: unknown }).execution_id;
        if (typeof id !== 'string') throw new Error(`no execution_id in ${p.body.slice(0, 200)}`);
        const done = await child.finished(id);
        if (done.status !== 'completed' || done.completed_at === null) throw new Error(`execution ${id} ended ${done.status}`);
        client.push(done.seenAt - p.sentAt);
        server.push(Date.parse(done.completed_at) - Date.parse(done.created_at));
      },
      true,
    );
    child.forget();
    return figures;
  } finally {
    http.close();
  }
}
