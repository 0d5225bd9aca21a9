/**
 * The concurrency budget: how much of the account's Lambda concurrency pipegate reserves, and
 * how it shares that between its function classes, as reserved concurrency per function and as
 * the maximum concurrency of each SQS event source. The one place these figures come from; the
 * stack, the deploy-time check (lib/stacks/concurrency-check.handler.ts) and the docs read them.
 * Plain data: no aws-cdk-lib.
 *
 * Nothing is reserved unless the `reservedConcurrency` setting asks for it: Lambda refuses any
 * reservation that leaves the account fewer than 100 unreserved units, and a new account starts
 * with a quota of 10, so a stack that reserved by default would not deploy there (nor beside
 * other reservations, nor twice in a Region). Left shared, every function draws on the account's
 * pool, and one class at load (callers holding `Prefer: wait` open for 25 s each: 40 a second
 * fill 1,000) can throttle every other function of the account. A reservation both guarantees a
 * class its share and caps it there; the check refuses, before any function is touched, a
 * reservation the account cannot give or one above `maxAccountShare` of its quota.
 */
import { ROUTES, WORKERS } from './routes';
import type { QueueName } from './queues';

/** Lambda refuses a reservation that leaves the account less than this unreserved. */
export const AWS_MIN_UNRESERVED = 100;
/** An SQS event source's maximum concurrency lies in 2..1000. */
export const SQS_MIN_MAX_CONCURRENCY = 2;
export const SQS_MAX_MAX_CONCURRENCY = 1000;
/** AWS's default account concurrency in a Region once an account is established (new ones start lower). */
export const DEFAULT_ACCOUNT_CONCURRENCY = 1000;
/** The largest `reservedConcurrency` the setting takes (far above any account's quota). */
export const MAX_RESERVED_CONCURRENCY = 1_000_000;
/** The share of the account's quota pipegate may reserve unless `maxAccountShare` says otherwise, in percent. */
export const DEFAULT_MAX_ACCOUNT_SHARE = 50;

export type FunctionClass =
  'authorizer' | 'waiting' | 'caller' | 'download' | 'stream' | 'form' | 'owner' | 'workflow' | 'consumer' | 'sweeper';

/**
 * Each class's share, in percent, of what is left once every function has its least (1, or 2
 * for a queue consumer); they add up to 100.
 */
export const CLASS_SHARES: Readonly<Record<FunctionClass, number>> = {
  // Every caller request passes it: starving it locks every caller out.
  authorizer: 10,
  // Held up to 28 s by `Prefer: wait`: the class that can eat the rest if left alone.
  waiting: 32,
  caller: 3,
  // Asset links: a file past 10 MB streams at 2 MB/s (API Gateway's streamed throughput), so a
  // 100 MiB file holds its Lambda ≈ 47 s; the share is the viewers of large files at once
  // (DOWNLOAD_VIEW_SECONDS and docs/aws.md's arithmetic).
  download: 8,
  // An event stream holds its Lambda for as long as the execution runs (up to 14 min): each
  // concurrent viewer is one, so the share is the number of viewers at once (API callers'
  // streams and the web form's, by WEIGHTS).
  stream: 7,
  // A web form's page, upload, run and progress: people at a browser, a few at a time per
  // link (the form's own limits), kept apart so visitors cannot starve API callers or back.
  form: 4,
  owner: 5,
  // task-run holds one for the whole pipeline; MarkRunning and MarkFailed briefly.
  workflow: 24,
  // A batch of up to 10 messages per invocation, each a StartExecution or a delivery.
  consumer: 6,
  // One pass a minute; a few so an overlapping schedule is not throttled.
  sweeper: 1,
};

/** Within a class, how its share is split (relative weights; a function not named weighs 1). */
const WEIGHTS: Readonly<Record<string, number>> = {
  execute: 5,
  'execution-status': 2,
  'execution-result': 1,
  // MCP clients' calls wait like an execute with `Prefer: wait`, and tasks/result may hold one
  // longer: a share beside execute's, smaller while agents are fewer than programs.
  'deployment-mcp': 2,
  'task-run': 4,
  'task-start': 1,
  'task-fail': 1,
  runner: 1,
  'callback-dispatch': 1,
  // A run and its progress are held longer than the page and its uploads.
  'form-execute': 2,
  'form-execution': 2,
  // The stream share, split 5:2 between API callers' streams and the web form's.
  'execution-events': 5,
  'form-events': 2,
};

/** The function serving asset links (files of any size, streamed). */
export const DOWNLOAD_FUNCTION = 'asset-get';

/** API Gateway's streamed answers: the first 10 MB at full speed, then 2 MB/s (TOOLCHAIN, AWS's streaming quotas). */
export const STREAM_FULL_SPEED_BYTES = 10_000_000;
export const STREAM_THROTTLED_BYTES_PER_SECOND = 2_000_000;

/** Seconds a streamed file of `bytes` holds its Lambda at least: the part past the first 10 MB at 2 MB/s. */
export const DOWNLOAD_VIEW_SECONDS = (bytes: number): number =>
  Math.max(0, bytes - STREAM_FULL_SPEED_BYTES) / STREAM_THROTTLED_BYTES_PER_SECOND;

/** The web form's routes (lib/stacks/service-stack.ts's FORM_PATH_PREFIX, which imports CDK). */
const isFormPath = (path: string): boolean => path.startsWith('/v1/forms/');
/** Server-sent events held open while an execution runs (a streamed file is short, not one). */
const isEventStream = (r: (typeof ROUTES)[number]): boolean => r.streams === true && r.path.endsWith('/events');

/** Which class a function belongs to, from the route table and the workers. */
export function classOf(name: string): FunctionClass {
  if (name === WORKERS.authorizer) return 'authorizer';
  if (name === WORKERS.sweeper) return 'sweeper';
  if (name === WORKERS.runner || name === WORKERS.callbackDispatch) return 'consumer';
  if (name === WORKERS.taskStart || name === WORKERS.taskRun || name === WORKERS.taskFail) return 'workflow';
  if (name === DOWNLOAD_FUNCTION) return 'download';
  const routes = ROUTES.filter((r) => r.handler === name);
  // A function serving no route and not a known worker shares the callers' small pool.
  if (routes.length === 0) return 'caller';
  // Owner routes (one operator's CLI) stay in their small pool even where they wait.
  if (routes.every((r) => r.auth === 'owner')) return 'owner';
  if (routes.some(isEventStream)) return 'stream';
  if (routes.every((r) => isFormPath(r.path))) return 'form';
  return routes.some((r) => r.waits) ? 'waiting' : 'caller';
}

export interface ConcurrencyPlan {
  /** The `reservedConcurrency` setting the plan was made for. */
  requested: number;
  /** What the plan reserves in all (at most `requested`: rounding down leaves the rest shared). */
  total: number;
  /** Reserved concurrency per function name. */
  reserved: Record<string, number>;
  /** Maximum concurrency per SQS event source, at most its consumer's reservation. */
  queueMaxConcurrency: Record<QueueName, number>;
}

/** Whether a function serves a route that honours `Prefer: wait` (and so gets a wait bound). */
export const waits = (name: string): boolean => ROUTES.some((r) => r.handler === name && r.waits === true);

/**
 * Callers of a waiting route that may hold `Prefer: wait` at once: under half its reservation,
 * since the bound's counters (functions/adapters/wait-slots.store.ts) can let through twice it
 * where two 30 s windows meet, and the route must keep room to answer those it does not hold.
 */
export const waitersBound = (reserved: number): number => Math.max(1, Math.floor(reserved * 0.45));

const CONSUMER_OF: Record<QueueName, string> = { executions: WORKERS.runner, callbacks: WORKERS.callbackDispatch };

/** The least a function is given: 1, or 2 for a queue consumer (SQS's least maximum concurrency). */
const leastOf = (name: string): number => (classOf(name) === 'consumer' ? SQS_MIN_MAX_CONCURRENCY : 1);

/** The smallest `reservedConcurrency` that plans for these functions: each one its least. */
export const minimumReservation = (functionNames: readonly string[]): number => functionNames.reduce((n, f) => n + leastOf(f), 0);

/**
 * The plan for reserving `requested` units: every function gets its least, and what is left is
 * shared by class (CLASS_SHARES), then within a class by weight, rounded down. So the plan never
 * reserves more than asked, and asking more never gives any function less. Throws, naming the
 * setting, below `minimumReservation`.
 */
export function concurrencyPlan(functionNames: readonly string[], requested: number): ConcurrencyPlan {
  const least = minimumReservation(functionNames);
  if (!Number.isInteger(requested) || requested < least) {
    throw new Error(
      `reservedConcurrency ${requested} cannot give each of pipegate's ${functionNames.length} functions its least ` +
        `(${least} in all): set reservedConcurrency to at least ${least}, or to 0 to reserve nothing`,
    );
  }
  const rest = requested - least;
  const byClass = new Map<FunctionClass, string[]>();
  for (const name of functionNames) byClass.set(classOf(name), [...(byClass.get(classOf(name)) ?? []), name]);
  const reserved: Record<string, number> = {};
  for (const [cls, names] of byClass) {
    const share = Math.floor((rest * CLASS_SHARES[cls]) / 100);
    const weights = names.reduce((n, f) => n + (WEIGHTS[f] ?? 1), 0);
    for (const f of names) reserved[f] = leastOf(f) + Math.floor((share * (WEIGHTS[f] ?? 1)) / weights);
  }
  const queueMaxConcurrency = {} as Record<QueueName, number>;
  for (const [q, fn] of Object.entries(CONSUMER_OF) as [QueueName, string][]) {
    queueMaxConcurrency[q] = Math.min(SQS_MAX_MAX_CONCURRENCY, Math.max(SQS_MIN_MAX_CONCURRENCY, reserved[fn] ?? SQS_MIN_MAX_CONCURRENCY));
  }
  const total = Object.values(reserved).reduce((a, b) => a + b, 0);
  return { requested, total, reserved, queueMaxConcurrency };
}

/** What Lambda's GetAccountSettings says of the account's concurrency in the Region. */
export interface AccountConcurrency {
  /** AccountLimit.ConcurrentExecutions: the account's quota. */
  quota: number;
  /** AccountLimit.UnreservedConcurrentExecutions: what no function has reserved. */
  unreserved: number;
}

/** What a deploy asks of the account: the plan's total and what this stack held before it. */
export interface ReservationRequest {
  /** The `reservedConcurrency` setting. */
  requested: number;
  /** The plan's total for it (ConcurrencyPlan.total). */
  total: number;
  /** What this stack's functions hold now (the previous plan's total; 0 on a first deploy). */
  held: number;
  /** The `maxAccountShare` setting, in percent of the quota. */
  maxAccountShare: number;
  /** The least `reservedConcurrency` that plans (minimumReservation). */
  least: number;
}

/**
 * The most this stack may reserve in an account: Lambda's rule (100 left unreserved, what other
 * functions hold untouched) and the stated share of the quota, whichever is less.
 */
export function mostReservable(account: AccountConcurrency, held: number, maxAccountShare: number): number {
  const free = account.unreserved + held - AWS_MIN_UNRESERVED;
  return Math.max(0, Math.min(free, Math.floor((account.quota * maxAccountShare) / 100)));
}

/**
 * Why the account cannot take the reservation, naming the setting to change, or undefined when
 * it can. The deploy-time check answers CloudFormation with this before any function is touched.
 */
export function reservationRefusal(account: AccountConcurrency, r: ReservationRequest): string | undefined {
  if (r.total === 0) return undefined;
  const free = account.unreserved + r.held - AWS_MIN_UNRESERVED;
  const byShare = Math.floor((account.quota * r.maxAccountShare) / 100);
  const most = mostReservable(account, r.held, r.maxAccountShare);
  if (r.total <= most) return undefined;
  const others = account.quota - account.unreserved - r.held;
  const said =
    `reservedConcurrency=${r.requested} reserves ${r.total} units, and this account's Lambda concurrency quota in the Region is ${account.quota}` +
    (others > 0 ? ` with ${others} reserved by other functions` : '');
  const why =
    r.total > free
      ? `Lambda keeps ${AWS_MIN_UNRESERVED} unreserved, so at most ${Math.max(0, free)} can be reserved here`
      : `maxAccountShare=${r.maxAccountShare} lets pipegate take at most ${byShare} (${r.maxAccountShare} % of the quota)`;
  const fix =
    most >= r.least
      ? `set reservedConcurrency to at most ${most} (at least ${r.least} plans), or 0 to reserve nothing`
      : `no plan fits (the least is ${r.least}): set reservedConcurrency=0 to reserve nothing`;
  const raise = r.total > free ? `, or raise the account's "Concurrent executions" quota (Service Quotas)` : ', or raise maxAccountShare';
  return `${said}: ${why}; ${fix}${raise}`;
}
