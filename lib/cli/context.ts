/** What every command receives: where to print, the client, and how to wait. */
import { PipegateClient } from './client';
import { resolveConnection, type GlobalOptions, type StackLookup } from './connection';
import { isTerminal, type ExecutionStatus } from '../../functions/core/transitions';
import { FailureError } from './errors';
import { Output, type CliIO } from './output';
import type { CredentialSource } from './sigv4';

export interface Ctx {
  io: CliIO;
  out: Output;
  client: PipegateClient;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** While a wait is under way, what Ctrl-C does (see waitOrInterrupt). */
  onInterrupt: (handler: () => void) => () => void;
}

export interface CliDeps {
  /** Reads a CloudFormation stack's outputs for `--stack`. */
  stackLookup?: StackLookup;
  /** Fixed AWS credentials (tests); defaults to the standard chain. */
  credentials?: CredentialSource;
}

/** The caller's API key: `--key`, else PIPEGATE_API_KEY; undefined when neither holds one. */
export function callerKey(ctx: Pick<Ctx, 'io'>, given: string | undefined): string | undefined {
  const key = given ?? ctx.io.env.PIPEGATE_API_KEY;
  return key === undefined || key.trim() === '' ? undefined : key;
}

/** A sleep that an abort ends at once, its timer cleared (nothing left to keep the process up). */
const realSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((res) => {
    if (signal?.aborted) return res();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      res();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

const processInterrupt = (handler: () => void): (() => void) => {
  process.once('SIGINT', handler);
  return () => process.off('SIGINT', handler);
};

/** Ctrl-C during a wait: the wait ends with exit code 130 after `message` (how to follow up and cancel). */
export class Interrupted extends Error {
  readonly exitCode = 130;
  constructor(readonly followUp: string) {
    super('stopped waiting');
    this.name = 'Interrupted';
  }
}

/**
 * Runs `wait`; a Ctrl-C meanwhile stops waiting (the work keeps going on the service) and
 * prints `followUp`, which says how to look at it later and how to cancel it.
 */
export async function waitOrInterrupt<T>(
  ctx: Pick<Ctx, 'onInterrupt'>,
  followUp: string,
  wait: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const abort = new AbortController();
  let stop: () => void = () => undefined;
  const interrupted = new Promise<never>((_, reject) => {
    stop = ctx.onInterrupt(() => {
      abort.abort();
      reject(new Interrupted(followUp));
    });
  });
  try {
    return await Promise.race([wait(abort.signal), interrupted]);
  } finally {
    stop();
  }
}

export async function createContext(io: CliIO, opts: GlobalOptions, deps: CliDeps): Promise<Ctx> {
  const out = new Output(io, opts.json === true, opts.color !== false);
  const connection = await resolveConnection(opts, io.env, io.cwd, deps.stackLookup);
  const client = new PipegateClient({
    connection,
    ...(io.fetch ? { fetch: io.fetch } : {}),
    ...(deps.credentials ? { credentials: deps.credentials } : {}),
  });
  return { io, out, client, sleep: io.sleep ?? realSleep, onInterrupt: io.onInterrupt ?? processInterrupt };
}

/**
 * Asks `once` again and again until `done`, a little less often as time goes on, and gives up
 * after `timeoutMs` (the service has its own execution time-out; this only keeps a stuck CLI
 * from waiting forever).
 */
export async function pollUntil<T>(
  once: () => Promise<T>,
  done: (t: T) => boolean,
  opts: {
    sleep: (ms: number) => Promise<void>;
    timeoutMs: number;
    onTick?: (t: T, elapsedMs: number) => void;
    what: string;
    signal?: AbortSignal;
  },
): Promise<T> {
  const started = Date.now();
  let delay = 150;
  for (;;) {
    if (opts.signal?.aborted) throw new Error(`${opts.what}: stopped waiting`);
    const t = await once();
    const elapsed = Date.now() - started;
    opts.onTick?.(t, elapsed);
    if (done(t)) return t;
    if (elapsed >= opts.timeoutMs) {
      throw new FailureError(
        `${opts.what} has not finished after ${Math.round(elapsed / 1000)} s; stopped waiting (it keeps going on the service)`,
      );
    }
    await opts.sleep(delay);
    delay = Math.min(1000, Math.round(delay * 1.5));
  }
}

/**
 * Waits for a run or an execution to reach a terminal status, its status on a spinner. `started`
 * (naming the id) is printed once Ctrl-C is ours, so the id is on screen whatever happens to the
 * wait; Ctrl-C then stops the wait with `followUp` (how to look later and how to cancel).
 */
export async function waitUntilFinished<T extends { body: { status: ExecutionStatus } }>(
  ctx: Ctx,
  w: {
    started: string;
    followUp: string;
    what: string;
    timeoutSeconds: number;
    poll: () => Promise<T>;
    progress: (status: string, elapsedMs: number) => string;
  },
): Promise<T> {
  const spinner = ctx.out.spinner();
  try {
    return await waitOrInterrupt(ctx, w.followUp, (signal) => {
      ctx.out.note(w.started);
      return pollUntil(w.poll, (r) => isTerminal(r.body.status), {
        sleep: ctx.sleep,
        timeoutMs: w.timeoutSeconds * 1000,
        what: w.what,
        signal,
        onTick: (r, ms) => {
          if (!isTerminal(r.body.status)) spinner.update(w.progress(r.body.status, ms), r.body.status);
        },
      });
    });
  } finally {
    spinner.stop();
  }
}
