/**
 * The concurrency budget: how the account's Lambda concurrency is shared between pipegate's
 * function classes, as reserved concurrency per function and as the maximum concurrency of
 * each SQS event source. The one place these figures come from; the stack and the docs read
 * them. Plain data: no aws-cdk-lib.
 *
 * Without it every function draws on the account's shared pool (1,000 concurrent executions by
 * default, less on a new account), so one class at load (callers holding `Prefer: wait` open
 * for 25 s each: 40 a second fill 1,000) throttles every other function of the account, the
 * authorizer and MarkFailed included. Reserved concurrency both guarantees a class its share
 * and caps it there; AWS keeps 100 of the account's concurrency unreserved, always.
 */
import { ROUTES, WORKERS } from './routes';
import type { QueueName } from './queues';

/** Lambda refuses a reservation that leaves the account less than this unreserved. */
export const AWS_MIN_UNRESERVED = 100;
/** An SQS event source's maximum concurrency lies in 2..1000. */
export const SQS_MIN_MAX_CONCURRENCY = 2;
export const SQS_MAX_MAX_CONCURRENCY = 1000;
/** AWS's default account concurrency in a Region; the `accountConcurrency` setting overrides it. */
export const DEFAULT_ACCOUNT_CONCURRENCY = 1000;

export type FunctionClass = 'authorizer' | 'waiting' | 'caller' | 'stream' | 'form' | 'owner' | 'workflow' | 'consumer' | 'sweeper';

/** Each class's share of the reservable concurrency (account − 100), in percent; they add up to 100. */
export const CLASS_SHARES: Readonly<Record<FunctionClass, number>> = {
  // Every caller request passes it: starving it locks every caller out.
  authorizer: 10,
  // Held up to 28 s by `Prefer: wait`: the class that can eat the rest if left alone.
  waiting: 34,
  caller: 4,
  // An event stream holds its Lambda for as long as the execution runs (up to 14 min): each
  // concurrent viewer is one, so the share is the number of viewers at once (63 of 1,000:
  // API callers' streams and the web form's, by WEIGHTS).
  stream: 7,
  // A web form's page, upload, run and progress: people at a browser, a few at a time per
  // link (the form's own limits), kept apart so visitors cannot starve API callers or back.
  form: 4,
  owner: 5,
  // task-run holds one for the whole pipeline; MarkRunning and MarkFailed briefly.
  workflow: 27,
  // A batch of up to 10 messages per invocation, each a StartExecution or a delivery.
  consumer: 8,
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
  // The stream share, split 5:2 between API callers' streams and the web form's: 45 and 18 of
  // 63 with the default 1,000 (the total stays whole at 1,000, 5,000 and 10,000 alike).
  'execution-events': 5,
  'form-events': 2,
};

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
  /** The account concurrency the plan was made for. */
  accountConcurrency: number;
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

/**
 * The plan for an account with `accountConcurrency` concurrent executions: each class gets its
 * share of what may be reserved, split over its functions by weight and rounded down, at least
 * 1 each (2 for a queue consumer, SQS's least maximum concurrency). Throws when the account is
 * too small for even that, naming the figure to raise.
 */
export function concurrencyPlan(functionNames: readonly string[], accountConcurrency: number): ConcurrencyPlan {
  const reservable = accountConcurrency - AWS_MIN_UNRESERVED;
  const byClass = new Map<FunctionClass, string[]>();
  for (const name of functionNames) byClass.set(classOf(name), [...(byClass.get(classOf(name)) ?? []), name]);
  const reserved: Record<string, number> = {};
  for (const [cls, names] of byClass) {
    const share = Math.floor((reservable * (CLASS_SHARES[cls] ?? 0)) / 100);
    const total = names.reduce((n, f) => n + (WEIGHTS[f] ?? 1), 0);
    const least = cls === 'consumer' ? SQS_MIN_MAX_CONCURRENCY : 1;
    for (const f of names) reserved[f] = Math.max(least, Math.floor((share * (WEIGHTS[f] ?? 1)) / total));
  }
  const sum = Object.values(reserved).reduce((a, b) => a + b, 0);
  if (sum > reservable) {
    throw new Error(
      `accountConcurrency ${accountConcurrency} is too small to reserve concurrency for ${functionNames.length} functions ` +
        `(${sum} reserved + ${AWS_MIN_UNRESERVED} unreserved): raise the account's "Concurrent executions" quota ` +
        `and set accountConcurrency to it, or set accountConcurrency=0 to reserve nothing`,
    );
  }
  const queueMaxConcurrency = {} as Record<QueueName, number>;
  for (const [q, fn] of Object.entries(CONSUMER_OF) as [QueueName, string][]) {
    queueMaxConcurrency[q] = Math.min(SQS_MAX_MAX_CONCURRENCY, Math.max(SQS_MIN_MAX_CONCURRENCY, reserved[fn] ?? SQS_MIN_MAX_CONCURRENCY));
  }
  return { accountConcurrency, reserved, queueMaxConcurrency };
}
