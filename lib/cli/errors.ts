/**
 * How the CLI fails. Every failure ends as one of three exit codes (contract §10):
 * 0 ok, 1 a failure the service reported (or a run that ended failed), 2 a usage error.
 */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The user asked for something the CLI cannot do as asked: bad flags, files, input syntax. */
export class UsageError extends Error {
  readonly exitCode = EXIT.usage;
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

/** One problem the service listed: where in the request, and why. */
export interface Problem {
  path: string;
  reason: string;
}

/** The service answered with an error status; `body` is its `{error, detail?}` document. */
export class ServiceError extends Error {
  readonly exitCode = EXIT.failure;
  /** A hint the command knows better than the generic one (set where the request was made). */
  hint?: string;
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly audience: 'owner' | 'caller',
    /** The pipeline the request was about, so hints can name it. */
    readonly pipeline?: string,
  ) {
    super(serviceMessage(status, body));
    this.name = 'ServiceError';
  }

  /** The `detail` of a 400 as a list of problems, when it is one. */
  get problems(): Problem[] {
    return problemsOf(this.body.detail);
  }
}

/** The service could not be reached at all (refused, unknown host, timed out). */
export class UnreachableError extends Error {
  readonly exitCode = EXIT.failure;
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`cannot reach pipegate at ${url} — is it running? (npm start)`);
    this.name = 'UnreachableError';
  }
}

/** Something the service did that the command counts as failure: a failed run, a refusal. */
export class FailureError extends Error {
  readonly exitCode = EXIT.failure;
  constructor(message: string) {
    super(message);
    this.name = 'FailureError';
  }
}

function serviceMessage(status: number, body: Record<string, unknown>): string {
  // API Gateway's own refusals (IAM, throttling before our code runs) carry `message`.
  const text = typeof body.error === 'string' ? body.error : typeof body.message === 'string' ? body.message : `HTTP ${status}`;
  return text;
}

export function problemsOf(detail: unknown): Problem[] {
  if (!Array.isArray(detail)) return [];
  const out: Problem[] = [];
  for (const p of detail) {
    if (typeof p === 'object' && p !== null && typeof (p as Problem).path === 'string' && typeof (p as Problem).reason === 'string') {
      out.push({ path: (p as Problem).path, reason: (p as Problem).reason });
    }
  }
  return out;
}

const hasExitCode = (e: unknown): e is { exitCode: number } =>
  typeof e === 'object' && e !== null && typeof (e as { exitCode?: unknown }).exitCode === 'number';

/**
 * The exit code for anything a command threw. Commander's own errors (unknown option, missing
 * argument) are usage errors; its help and version "errors" are successes.
 */
export function exitCodeFor(e: unknown): ExitCode {
  if (e instanceof UsageError) return EXIT.usage;
  if (
    typeof e === 'object' &&
    e !== null &&
    typeof (e as { code?: unknown }).code === 'string' &&
    (e as { code: string }).code.startsWith('commander.')
  ) {
    return hasExitCode(e) && e.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  return EXIT.failure;
}
