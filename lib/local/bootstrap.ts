/**
 * How `npm start` (lib/local/runtime.ts) and `npm run start:synth` (lib/synth/runtime.ts) run
 * the service they build, alike: the data dir and its lock, whether the last stop finished, the
 * owner token, the tables (dynalite), the schedules, the start-up recovery, listening with the
 * URL recorded for the CLI, and the stop's order. Where functions, state machine and wiring
 * come from is each runtime's own: it builds them in `wire` and hands back a `Wired`.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import type { Deps } from '../../functions/adapters/deps';
import { sweepAll } from '../../functions/services/sweeper.service';
import { lockDataDir } from './data-dir-lock';
import { ensureTableAs, startDynalite, type LocalDynamo } from './dynamo';
import { createLocalServer } from './gateway';
import { recordRuntimeUrl } from './runtime-url';
import { drainWorkflow, refuseWhileStopping, type StopOptions, type StopReport } from './shutdown';
import type { LocalWorkflows } from './workflow';

/** Reads a file of the data dir, creating it (mode 0600) on first use. */
export function persistent(path: string, create: () => string): string {
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  const value = create();
  writeFileSync(path, `${value}\n`, { mode: 0o600, flag: 'wx' });
  return value;
}

/**
 * Starts a listener (`start(port)`, 0 for any free port) on the port recorded in `file` when
 * there is one and it is free, else on a free port, and records the port it got. The local S3
 * emulation listens this way: a presigned URL names its host and port, and SigV4 signs the
 * host, so URLs handed out before a restart keep working after it unless another process took
 * the port meanwhile.
 */
export async function onRecordedPort<T extends { url: string }>(
  file: string,
  start: (port: number) => Promise<T>,
  warn: (message: string) => void = () => undefined,
): Promise<T> {
  const recorded = existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : NaN;
  let started: T | undefined;
  if (Number.isInteger(recorded) && recorded > 0 && recorded < 65536) {
    try {
      started = await start(recorded);
    } catch (e) {
      if ((e as { code?: string }).code !== 'EADDRINUSE') throw e;
    }
  }
  started ??= await start(0);
  const port = new URL(started.url).port;
  if (Number.isInteger(recorded) && String(recorded) !== port) {
    warn(
      `port ${recorded} (recorded in ${file}) is taken; listening on ${port} instead: URLs handed out before this start that name ${recorded} no longer work`,
    );
  }
  if (String(recorded) !== port) writeFileSync(file, `${port}\n`, { mode: 0o600 });
  return started;
}

/** The owner token: given, PIPEGATE_OWNER_TOKEN, or generated once into the data dir. */
export function ownerTokenOf(given: string | undefined, env: Record<string, string | undefined>, dataDir: string): string {
  return (
    given ?? env.PIPEGATE_OWNER_TOKEN ?? persistent(join(dataDir, 'owner-token'), () => `pgo_${randomBytes(24).toString('base64url')}`)
  );
}

/**
 * Listens on HOST/PORT (or the options'), and records the URL in the data dir where the CLI
 * looks for it. Returns the URL and how to remove the record.
 */
export async function listen(
  server: Server,
  opts: { host?: string; port?: number },
  env: Record<string, string | undefined>,
  dataDir: string,
): Promise<{ url: string; forgetUrl: () => void }> {
  const host = opts.host ?? env.HOST ?? '127.0.0.1';
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(opts.port ?? Number(env.PORT ?? 3000), host, () => res());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    forgetUrl: recordRuntimeUrl(dataDir, host, port, env.PIPEGATE_BASE_PATH),
  };
}

/** What a start-up sweep found and did, as both runtimes report it. */
export interface Recovered {
  resumed: number;
  rerun: number;
  interrupted: number;
  callbacks: number;
}

export const recoveredOf = (swept: { requeued: number; rerun: number; interrupted: number; callbacksRequeued: number }): Recovered => ({
  resumed: swept.requeued,
  rerun: swept.rerun,
  interrupted: swept.interrupted,
  callbacks: swept.callbacksRequeued,
});

/** The banner's line about it; null when there was nothing to recover. */
export function describeRecovered(r: Recovered): string | null {
  if (r.resumed + r.rerun + r.interrupted + r.callbacks === 0) return null;
  return `${r.resumed} queued, ${r.rerun} interrupted and running again, ${r.interrupted} interrupted (marked failed), ${r.callbacks} callbacks resumed`;
}

/** What the start-up recovery did, as its progress line says it. */
export function recoveryLine(r: Recovered, repaired: number | null): string {
  const fixed = repaired ? `put ${repaired} open execution${repaired === 1 ? '' : 's'} back on the sweep index; ` : '';
  const did = describeRecovered(r);
  return did === null ? `${fixed}nothing was left unfinished` : `${fixed}recovered ${did}`;
}

/** In the data dir after a stop that finished; removed at every start. */
export const CLEAN_STOP_FILE = 'clean-stop';

export interface BootOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  dataDir?: string;
  ownerToken?: string;
  /** Environment to read settings from (defaults to process.env). */
  env?: Record<string, string | undefined>;
  /** Keep DynamoDB in memory instead of on disk under the data dir (tests). */
  inMemory?: boolean;
  /** A line per stage of the start (the runtime's own, then the recovery's: what it found and did). */
  progress?: (line: string) => void;
}

/** Where a runtime's own messages go (errors of passes and stops, a port given up). */
export type Say = (message: string, fields?: Record<string, unknown>) => void;

/** What the bootstrap gives a runtime to build on while it wires itself. */
export interface Boot {
  env: Record<string, string | undefined>;
  dataDir: string;
  ownerToken: string;
  /**
   * The last stop did not finish: no clean-stop file in a data dir that held anything (a kill
   * or a crash). Only then can a write be half done.
   */
  unclean: boolean;
  /** A teardown step: run at the stop after the drain, and when the start fails, last registered first. */
  onStop(step: () => unknown): void;
  /**
   * dynalite for this data dir (on disk under db/, or in memory) with these tables created,
   * or rebuilt when a data dir from before an index was added lacks it (ensureTableAs).
   */
  tables(inputs: readonly CreateTableCommandInput[], opts?: { inProcess?: boolean }): Promise<LocalDynamo>;
  /**
   * A pass every `everyMs` from the end of the start-up recovery (and one then with `now`),
   * never two at once: a pass still running when the next is due is skipped. Halted, and its
   * running pass awaited, first at the stop.
   */
  every(everyMs: number, pass: () => Promise<unknown>, onError: (err: unknown) => void, opts?: { now?: boolean }): void;
}

/** What a runtime hands back once its functions, state machine and wiring are built. */
export interface Wired {
  /** The stores, queues and state machine as the start-up recovery and the drain use them. */
  deps: Deps;
  /** The state machine whose running executions a stop drains. */
  workflow: LocalWorkflows;
  /** The consumer that starts workflows, stopped before the drain. */
  executionsQueue: { stop(): Promise<void> };
  /** PIPEGATE_DRAIN_SECONDS. */
  drainSeconds: number;
  /**
   * After an unclean stop only, before the recovery's sweep: what a kill can leave half
   * written that the sweep would not find. Returns how many items it put right.
   */
  repair?(): Promise<number>;
  /** After the recovery: the queue consumers. */
  start(): Promise<void> | void;
  /** The API (answered 503 while stopping instead). */
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** Once listening: what only the URL tells (start:synth: custom resources that name the API's address). */
  listening?(url: string): void | Promise<void>;
  say: Say;
}

/** A runtime running: its URL, what the start found, and its stop. */
export interface Booted {
  url: string;
  ownerToken: string;
  dataDir: string;
  drainSeconds: number;
  recovered: Recovered;
  /** Whether the data dir was new (missing or empty): no stop before, nothing to recover. */
  freshDataDir: boolean;
  /** Whether the last stop had not finished (see Boot.unclean). */
  uncleanStop: boolean;
  /** What `repair` put right; null when it did not run (a clean stop before, or none to run). */
  repaired: number | null;
  /**
   * Every request answers 503 + Retry-After, the schedules halt, the executions queue's consumer
   * stops, running executions get `drainMs` (PIPEGATE_DRAIN_SECONDS by default) to finish and the
   * rest fail as interrupted; then the teardown runs and the data dir is let go, even when a
   * step fails. Only a stop with no failed step leaves the clean-stop file.
   */
  stop(opts?: StopOptions): Promise<StopReport>;
}

/**
 * Starts a runtime: takes the data dir (`defaultDataDir` unless given), lets `wire` build the
 * service on what the bootstrap holds, recovers what the last run left unfinished before
 * anything new arrives, starts the consumers and listens.
 */
export async function bootstrap<W extends Wired>(
  opts: BootOptions,
  defaultDataDir: string,
  wire: (boot: Boot) => Promise<W>,
): Promise<{ booted: Booted; wired: W }> {
  const env = opts.env ?? process.env;
  const progress = opts.progress ?? (() => undefined);
  const dataDir = resolve(opts.dataDir ?? env.PIPEGATE_DATA_DIR ?? defaultDataDir);
  const fresh = !existsSync(dataDir) || readdirSync(dataDir).length === 0;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // One runtime per data dir.
  const lock = await lockDataDir(dataDir);
  const steps: Array<() => unknown> = [];
  const halts: Array<() => Promise<void>> = [];
  // Schedules start once the recovery is done, so no pass runs beside it.
  const arms: Array<() => void> = [];
  const cleanStop = join(dataDir, CLEAN_STOP_FILE);
  /** Runs every step, then lets the data dir go; a whole stop is marked clean first. Returns the first failure. */
  const teardown = async (whole = false): Promise<unknown> => {
    let failed: unknown;
    for (const step of steps.splice(0).reverse()) {
      try {
        await step();
      } catch (e) {
        failed ??= e ?? new Error('a teardown step failed');
      }
    }
    // Every write finished before the table closed: the next start needs no repair. Written
    // while the lock is held, so no other start can read the data dir in between.
    if (whole && failed === undefined) writeFileSync(cleanStop, `${new Date().toISOString()}\n`, { mode: 0o600 });
    await lock.release();
    return failed;
  };
  try {
    // Left by versions that guarded the data dir with a pid file.
    rmSync(join(dataDir, 'runtime.pid'), { force: true });
    const unclean = !fresh && !existsSync(cleanStop);
    rmSync(cleanStop, { force: true });
    const boot: Boot = {
      env,
      dataDir,
      ownerToken: ownerTokenOf(opts.ownerToken, env, dataDir),
      unclean,
      onStop: (step) => steps.push(step),
      async tables(inputs, tableOpts = {}) {
        const dynamo = await startDynalite({ ...(opts.inMemory ? {} : { path: join(dataDir, 'db') }), inProcess: tableOpts.inProcess });
        steps.push(() => dynamo.close());
        for (const input of inputs) await ensureTableAs(dynamo.endpoint, input);
        return dynamo;
      },
      every(everyMs, pass, onError, everyOpts = {}) {
        let running: Promise<unknown> | undefined;
        let timer: NodeJS.Timeout | undefined;
        const run = () => {
          running ??= pass()
            .catch(onError)
            .finally(() => (running = undefined));
        };
        arms.push(() => {
          if (everyOpts.now) run();
          timer = setInterval(run, everyMs);
          timer.unref();
        });
        const halt = async () => {
          clearInterval(timer);
          await running;
        };
        halts.push(halt);
        steps.push(halt);
      },
    };
    const wired = await wire(boot);

    // Recovery before anything new arrives: nothing accepted is ever lost. The sweep reads the
    // sweep index, so it costs what is open, not what is retained.
    progress(
      fresh
        ? 'a new data dir: nothing to recover'
        : unclean
          ? 'the last stop did not finish: repairing what it may have left half written, then recovering its unfinished work'
          : 'the last stop finished: looking for work it left queued or owed',
    );
    const repaired = unclean && wired.repair ? await wired.repair() : null;
    const recovered = recoveredOf(await sweepAll(wired.deps, { startup: true }));
    if (!fresh) progress(recoveryLine(recovered, repaired));
    await wired.start();
    for (const arm of arms) arm();

    // While stopping: every request is told to come back (503 + Retry-After), so nothing new is accepted.
    let draining = false;
    const server: Server = createLocalServer((req, res) => (draining ? refuseWhileStopping(req, res) : wired.handle(req, res)));
    const { url, forgetUrl } = await listen(server, opts, env, dataDir);
    steps.push(
      () =>
        new Promise<void>((res) => {
          server.close(() => res());
          server.closeAllConnections();
        }),
    );
    steps.push(forgetUrl);
    await wired.listening?.(url);

    const stop = async (stopOpts: StopOptions = {}): Promise<StopReport> => {
      draining = true;
      let report: StopReport;
      try {
        for (const halt of halts) await halt();
        // No new workflow starts; their messages wait in the queue for the next start.
        await wired.executionsQueue.stop();
        report = await drainWorkflow(wired.workflow, stopOpts.drainMs ?? wired.drainSeconds * 1000);
      } catch (e) {
        // Whatever step fails, the data dir is let go: a stop that threw must not leave the next
        // start (or a supervisor's restart) waiting on a lock nobody holds any more.
        await teardown();
        throw e;
      }
      const failed = await teardown(true);
      if (failed !== undefined) throw failed;
      return report;
    };
    let stopping: Promise<StopReport> | undefined;
    return {
      booted: {
        url,
        ownerToken: boot.ownerToken,
        dataDir,
        drainSeconds: wired.drainSeconds,
        recovered,
        freshDataDir: fresh,
        uncleanStop: unclean,
        repaired,
        stop: (stopOpts) => (stopping ??= stop(stopOpts)),
      },
      wired,
    };
  } catch (e) {
    await teardown();
    throw e;
  }
}
