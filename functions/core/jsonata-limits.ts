import jsonata from 'jsonata';

/**
 * JSONata with bounds. Expressions come from pipeline owners and run inside our process, so
 * each evaluation is limited in nesting depth, sequence size and time, and stops when the run
 * it belongs to is aborted.
 *
 * Evaluation is a chain of awaits that never yields to the timer queue, so a `setTimeout`
 * cannot interrupt it: the time limit is enforced from inside, through the evaluation-entry
 * hook that JSONata itself uses in its test suite (`Symbol.for('jsonata.__evaluate_entry')`).
 */
export const EXPRESSION_LIMITS = {
  /** Evaluation nesting depth; a plain recursive function uses about three levels per call. */
  maxDepth: 5000,
  /** Items in any one sequence JSONata builds. */
  maxSequence: 1_000_000,
  /** Default time one evaluation may take. */
  timeLimitMs: 1000,
  /** Compiled expressions kept for reuse. */
  cacheSize: 512,
} as const;

export type ExpressionFailureKind = 'compile' | 'evaluate' | 'time_limit' | 'deadline' | 'aborted' | 'not_a_value';

export class ExpressionError extends Error {
  constructor(
    message: string,
    readonly kind: ExpressionFailureKind,
    readonly position?: number,
  ) {
    super(message);
    this.name = 'ExpressionError';
  }
}

export interface EvaluationLimits {
  /** Longest this evaluation may take, in milliseconds. */
  timeLimitMs?: number;
  /** Epoch milliseconds past which the enclosing run has timed out. */
  deadline?: number;
  signal?: AbortSignal;
  /** Variables the expression may read, by name without the `$` (an http body's `$secrets`). */
  bindings?: Record<string, unknown>;
}

/** The per-evaluation state the entry hook checks; found through a binding no expression can name. */
interface Guard {
  stopAt: number;
  deadline: number;
  signal: AbortSignal | undefined;
  tripped: 'time_limit' | 'deadline' | 'aborted' | null;
}

// A variable name with a space cannot be written in JSONata, so expressions cannot read or shadow it.
const GUARD_BINDING = 'pipegate guard';
const ENTRY_HOOK = Symbol.for('jsonata.__evaluate_entry');

function isGuard(x: unknown): x is Guard {
  return typeof x === 'object' && x !== null && 'stopAt' in x && 'tripped' in x;
}

function entryHook(_expr: unknown, _input: unknown, environment: unknown): void {
  if (typeof environment !== 'object' || environment === null || !('lookup' in environment)) return;
  const lookup = environment.lookup;
  if (typeof lookup !== 'function') return;
  const guard: unknown = lookup.call(environment, GUARD_BINDING);
  if (!isGuard(guard)) return;
  if (guard.signal?.aborted) {
    guard.tripped = 'aborted';
    throw new Error('evaluation aborted');
  }
  const now = Date.now();
  if (now >= guard.deadline) {
    guard.tripped = 'deadline';
    throw new Error('run deadline passed');
  }
  if (now >= guard.stopAt) {
    guard.tripped = 'time_limit';
    throw new Error('evaluation time limit reached');
  }
}

type Assign = (name: string | symbol, value: unknown) => void;

const cache = new Map<string, jsonata.Expression>();

function describeJsonataError(e: unknown): { message: string; position?: number } {
  if (typeof e === 'object' && e !== null) {
    const message = 'message' in e && typeof e.message === 'string' ? e.message : String(e);
    const position = 'position' in e && typeof e.position === 'number' ? e.position : undefined;
    return { message: message.replace(/\s+/g, ' ').trim(), position };
  }
  return { message: String(e) };
}

/**
 * Compiles an expression once and keeps it (least recently used entries are dropped).
 * Throws an ExpressionError of kind `compile` with JSONata's message and position.
 */
export function compileExpression(text: string): jsonata.Expression {
  const hit = cache.get(text);
  if (hit) {
    cache.delete(text);
    cache.set(text, hit);
    return hit;
  }
  let compiled: jsonata.Expression;
  try {
    compiled = jsonata(text, { stack: EXPRESSION_LIMITS.maxDepth, sequence: EXPRESSION_LIMITS.maxSequence });
  } catch (e) {
    const { message, position } = describeJsonataError(e);
    const where = position === undefined ? '' : ` at position ${position}`;
    throw new ExpressionError(`invalid JSONata${where}: ${message}`, 'compile', position);
  }
  // The typings only allow string names; JSONata's environment accepts symbols too.
  (compiled.assign as Assign).call(compiled, ENTRY_HOOK, entryHook);
  cache.set(text, compiled);
  if (cache.size > EXPRESSION_LIMITS.cacheSize) {
    const oldest = cache.keys().next();
    if (!oldest.done) cache.delete(oldest.value);
  }
  return compiled;
}

/** Null when the expression compiles, else why not (JSONata's message with its position). */
export function expressionProblem(text: string): string | null {
  try {
    compileExpression(text);
    return null;
  } catch (e) {
    return e instanceof ExpressionError ? e.message : `invalid JSONata: ${String(e)}`;
  }
}

/**
 * Evaluates an expression over `input` within the limits and returns plain JSON (or
 * `undefined` for "no value"). Throws an ExpressionError saying which limit stopped it.
 */
export async function evaluateExpression(text: string, input: unknown, limits: EvaluationLimits = {}): Promise<unknown> {
  const compiled = compileExpression(text);
  const start = Date.now();
  const guard: Guard = {
    stopAt: start + (limits.timeLimitMs ?? EXPRESSION_LIMITS.timeLimitMs),
    deadline: limits.deadline ?? Number.POSITIVE_INFINITY,
    signal: limits.signal,
    tripped: null,
  };
  let result: unknown;
  try {
    result = await compiled.evaluate(input, { ...limits.bindings, [GUARD_BINDING]: guard });
  } catch (e) {
    // $eval wraps errors from nested evaluations, so the guard's own record says which limit hit.
    switch (guard.tripped) {
      case 'aborted':
        throw new ExpressionError('evaluation aborted', 'aborted');
      case 'deadline':
        throw new ExpressionError('run deadline passed during evaluation', 'deadline');
      case 'time_limit':
        throw new ExpressionError(
          `expression ran for more than ${guard.stopAt - start} ms (is there an endless loop or recursion?)`,
          'time_limit',
        );
      default: {
        const { message, position } = describeJsonataError(e);
        const where = position === undefined ? '' : ` at position ${position}`;
        throw new ExpressionError(`expression error${where}: ${message}`, 'evaluate', position);
      }
    }
  }
  return toPlainJson(result);
}

function isJsonataFunction(x: object): boolean {
  return '_jsonata_lambda' in x || '_jsonata_function' in x;
}

/**
 * Turns a JSONata result into plain JSON: sequences become ordinary arrays, undefined object
 * members are dropped (as JSON.stringify would) and array holes become null. Functions and
 * non-finite numbers are not values, so they throw.
 */
export function toPlainJson(value: unknown): unknown {
  const ancestors = new Set<object>();
  const walk = (v: unknown): unknown => {
    if (v === undefined || v === null || typeof v === 'string' || typeof v === 'boolean') return v;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new ExpressionError('expression produced a number that is not finite', 'not_a_value');
      return v;
    }
    if (typeof v === 'function' || (typeof v === 'object' && isJsonataFunction(v))) {
      throw new ExpressionError('expression produced a function, which is not a value', 'not_a_value');
    }
    if (typeof v !== 'object') {
      throw new ExpressionError(`expression produced a ${typeof v}, which is not a JSON value`, 'not_a_value');
    }
    if (ancestors.has(v)) throw new ExpressionError('expression produced a value that contains itself', 'not_a_value');
    ancestors.add(v);
    try {
      if (Array.isArray(v)) {
        const out: unknown[] = [];
        for (const item of v) {
          const plain = walk(item);
          out.push(plain === undefined ? null : plain);
        }
        return out;
      }
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(v)) {
        const plain = walk((v as Record<string, unknown>)[key]);
        if (plain !== undefined) Object.defineProperty(out, key, { value: plain, enumerable: true, writable: true, configurable: true });
      }
      return out;
    } finally {
      ancestors.delete(v);
    }
  };
  return walk(value);
}
