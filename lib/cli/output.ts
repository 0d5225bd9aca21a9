/**
 * Everything the CLI prints. Results go to stdout (human text, or with `--json` exactly one
 * JSON document); progress, hints and errors go to stderr. Colour only on a terminal with
 * NO_COLOR unset; the spinner only on a terminal.
 */
import { stripVTControlCharacters } from 'node:util';
import { createColors } from 'picocolors';
import type { SecretSource } from './secret-input';

export interface Stream {
  write(chunk: string): unknown;
  isTTY?: boolean;
}

export interface CliIO {
  stdout: Stream;
  stderr: Stream;
  env: Record<string, string | undefined>;
  cwd: string;
  fetch?: typeof fetch;
  /** Waits `ms`, or less when `signal` is aborted (Ctrl-C). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Where `secrets set` reads a value: a terminal (hidden prompt) or a pipe. */
  stdin?: SecretSource;
  /** Calls `handler` on Ctrl-C until the returned function is called (default: SIGINT). */
  onInterrupt?: (handler: () => void) => () => void;
}

export type Colors = ReturnType<typeof createColors>;

export const colorEnabled = (stream: Stream, env: Record<string, string | undefined>, wanted = true): boolean =>
  wanted && stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === '');

export class Output {
  /** Colours for stdout and stderr, each on only when that stream is a terminal. */
  readonly c: Colors;
  readonly e: Colors;

  constructor(
    readonly io: CliIO,
    readonly json: boolean,
    color = true,
  ) {
    this.c = createColors(!json && colorEnabled(io.stdout, io.env, color));
    this.e = createColors(colorEnabled(io.stderr, io.env, color));
  }

  /** A result line on stdout (human mode only). */
  line(text = ''): void {
    if (!this.json) this.io.stdout.write(`${text}\n`);
  }

  /** The command's one JSON document (json mode only). */
  document(value: unknown): void {
    if (this.json) this.io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** Progress or a note, on stderr in every mode. */
  note(text: string): void {
    this.io.stderr.write(`${text}\n`);
  }

  spinner(): Progress {
    return new Progress(this.io.stderr, this.e);
  }
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * On a terminal, one line redrawn in place with a spinner; elsewhere (CI logs, pipes) a line
 * each time the state changes, so logs stay short.
 */
export class Progress {
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private text = '';
  private lastKey: string | undefined;

  constructor(
    private readonly stream: Stream,
    private readonly colors: Colors,
  ) {}

  get interactive(): boolean {
    return this.stream.isTTY === true;
  }

  /** Shows `text`; `key` is what counts as a change of state for non-terminal output. */
  update(text: string, key: string = text): void {
    this.text = text;
    if (!this.interactive) {
      if (key !== this.lastKey) this.stream.write(`${text}\n`);
      this.lastKey = key;
      return;
    }
    if (!this.timer) {
      this.timer = setInterval(() => this.draw(), 80);
      this.timer.unref();
    }
    this.draw();
  }

  stop(): void {
    if (this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.stream.write('\r\x1b[2K');
    }
  }

  private draw(): void {
    this.frame = (this.frame + 1) % FRAMES.length;
    this.stream.write(`\r\x1b[2K${this.colors.cyan(FRAMES[this.frame] ?? '')} ${this.text}`);
  }
}

/** Visible width, ignoring colour escapes. */
const width = (s: string): number => [...stripVTControlCharacters(s)].length;

/** Left-aligned columns with two spaces between, header first; no trailing blanks. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[], colors?: Colors): string {
  const all = [headers, ...rows];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => width(r[i] ?? ''))));
  const render = (r: readonly string[], head: boolean) =>
    r
      .map((cell, i) => {
        const text = head && colors ? colors.bold(cell) : cell;
        return i === r.length - 1 ? text : text + ' '.repeat((widths[i] ?? 0) - width(cell));
      })
      .join('  ')
      .trimEnd();
  return [render(headers, true), ...rows.map((r) => render(r, false))].join('\n');
}

/** Label/value pairs with the values aligned. */
export function fields(pairs: readonly (readonly [string, string])[], colors?: Colors, indent = '  '): string {
  const w = Math.max(0, ...pairs.map(([k]) => width(k)));
  return pairs.map(([k, v]) => `${indent}${colors ? colors.dim(k.padEnd(w)) : k.padEnd(w)}  ${v}`.trimEnd()).join('\n');
}

/** A RAW value as a person reads it: strings bare, numbers and booleans as written. */
export const showValue = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v)));

/** A RAW value as it would appear in a command or JSON: strings quoted. */
export const literal = (v: unknown): string => JSON.stringify(v) ?? String(v);

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/**
 * The line that says a run's stored values are gone (values_expired), so empty inputs or
 * outputs are not taken for what the run produced; null when nothing expired.
 */
export function expiredValuesLine(fields: readonly string[] | undefined): string | null {
  if (!fields || fields.length === 0) return null;
  return `stored values expired: ${fields.join(', ')} (values too large for the record are kept 8 days; they show as empty)`;
}

/** One entry of an execution's `waiting` list. */
export interface WaitingEntry {
  node_id: string;
  resume_url: string;
  expires_at: string;
}

/**
 * An execution's waiting list: each wait node, the URL to POST its event to (a JSON object, no
 * key), and until when. Nothing when it waits on none.
 */
export function waitingLines(waiting: readonly WaitingEntry[] | undefined, c: Colors): string[] {
  if (waiting === undefined || waiting.length === 0) return [];
  const until = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  return [
    c.bold('waiting for an event (POST a JSON object to the URL)'),
    fields(
      waiting.map((w) => [w.node_id, `${w.resume_url}  ${c.dim(`until ${until(w.expires_at)}`)}`] as const),
      c,
    ),
  ];
}
