/**
 * What `npm start` and `npm run start:synth` share as commands: the start-up banner, Ctrl-C and
 * SIGTERM draining the runtime with the outcome printed, and start failures told plainly.
 */
import { ConfigError } from '../config';
import { DataDirInUseError } from './data-dir-lock';
import type { StopReport } from './shutdown';
import { describeRecovered, type Booted } from './bootstrap';

/** A started runtime, either kind (what lib/local/bootstrap.ts gives both), with its state machine. */
export interface Served extends Pick<Booted, 'url' | 'ownerToken' | 'dataDir' | 'drainSeconds' | 'recovered' | 'stop'> {
  workflow: { running(): string[] };
}

export interface ServeOptions<R extends Served> {
  /** The command as users type it, for hints: `npm start`, `npm run start:synth`. */
  command: string;
  /** What runs, after "pipegate" in the banner, e.g. ` (synthesized assembly)`. */
  what?: string;
  start(): Promise<R>;
  /** More `label value` lines of the banner, after the data dir. */
  details?(runtime: R, startedMs: number): Array<[string, string]>;
  /** Errors whose message says all a user needs (no stack), beyond configuration and data-dir ones. */
  isUserError?(err: unknown): boolean;
}

const LABEL_WIDTH = 14;
const line = (label: string, value: string): string => `  ${label.padEnd(LABEL_WIDTH)}${value}`;

function banner(rt: Served, what: string, details: Array<[string, string]>): string {
  const recovered = describeRecovered(rt.recovered);
  return [
    '',
    `  pipegate${what} is running at ${rt.url}`,
    '',
    line('owner token', rt.ownerToken),
    line('data dir', rt.dataDir),
    ...details.map(([label, value]) => line(label, value)),
    ...(recovered === null ? [] : [line('recovered', recovered)]),
    '',
    '  Try it:',
    `    export PIPEGATE_URL=${rt.url} PIPEGATE_OWNER_TOKEN=${rt.ownerToken}`,
    '    npx pipegate push examples/greeting.json && npx pipegate run greeting && npx pipegate publish greeting',
    '',
    '  Press Ctrl-C to stop.',
    '',
  ].join('\n');
}

/** What a signal starts: new requests refused, running executions given the drain time. */
function stoppingMessage(signal: string, running: number, drainSeconds: number): string {
  return (
    `\n  ${signal}: stopping. New requests are answered 503; ` +
    (running > 0
      ? `waiting up to ${drainSeconds} s for ${running} running execution${running === 1 ? '' : 's'} to finish…\n`
      : 'nothing is running.\n')
  );
}

/** How the drain went, when anything was running. */
function stoppedMessage(r: StopReport, drainSeconds: number): string {
  const waiting = r.left - r.cut;
  const outcome =
    r.running > 0
      ? `  ${r.finished} of ${r.running} finished in ${(r.waitedMs / 1000).toFixed(1)} s` +
        (r.left > 0
          ? `; ${r.left} left to the next start, which goes on with them from their last recorded step (` +
            [
              ...(waiting > 0 ? [`${waiting} waiting between steps`] : []),
              ...(r.cut > 0 ? [`${r.cut} cut in the middle of a step after ${drainSeconds} s`] : []),
            ].join(', ') +
            ')'
          : '') +
        '.\n'
      : '';
  return `${outcome}  stopped.\n`;
}

/** Ctrl-C or SIGTERM drains the runtime once, prints the outcome and exits. */
function stopOnSignals(rt: Served, write: (text: string) => void = (t) => process.stderr.write(t)): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    write(stoppingMessage(signal, rt.workflow.running().length, rt.drainSeconds));
    rt.stop().then(
      (report) => {
        write(stoppedMessage(report, rt.drainSeconds));
        process.exit(0);
      },
      (e: unknown) => {
        write(`  could not stop cleanly: ${String(e)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  // A supervisor that is killed outright (npm under SIGKILL, a crashed shell) cannot forward
  // its signal: the kernel hands this process to another parent, and it stops as on SIGTERM
  // rather than serving on unseen.
  const parent = process.ppid;
  const orphanCheck = setInterval(() => {
    if (process.ppid !== parent) stop('parent process gone');
  }, ORPHAN_CHECK_MS);
  orphanCheck.unref();
}

const ORPHAN_CHECK_MS = 500;

/**
 * A reader that went away (`npm start | tee log` stopped by the same Ctrl-C) makes every later
 * write fail with EPIPE; unhandled, that error would end the process in the middle of its
 * drain. Output then goes nowhere, and the drain carries on.
 */
function tolerateClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE' && e.code !== 'ERR_STREAM_DESTROYED') throw e;
    });
  }
}

/** Starts the runtime, prints the banner and stops on a signal; a failed start exits 1 with why. */
export function serve<R extends Served>(opts: ServeOptions<R>): void {
  const started = Date.now();
  tolerateClosedOutput();
  opts
    .start()
    .then((rt) => {
      process.stderr.write(`${banner(rt, opts.what ?? '', opts.details?.(rt, Date.now() - started) ?? [])}\n`);
      stopOnSignals(rt);
    })
    .catch((e: unknown) => {
      if (e instanceof ConfigError || e instanceof DataDirInUseError || opts.isUserError?.(e))
        process.stderr.write(`${(e as Error).message}\n`);
      else if ((e as { code?: string }).code === 'EADDRINUSE') {
        process.stderr.write(
          `Port ${process.env.PORT ?? 3000} is already in use. Set PORT to another port, e.g. PORT=3001 ${opts.command}\n`,
        );
      } else process.stderr.write(`pipegate could not start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    });
}
