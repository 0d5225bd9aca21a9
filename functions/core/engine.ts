import { setMaxListeners } from 'node:events';
import { isOwnApiUrl, LOOP_GUARD_REASON } from './address-guard';
import { ExpressionError, evaluateExpression } from './jsonata-limits';
import { kindOf, kindOfType, type NodeType } from './nodes';
import { HttpNodeError, LoopGuardError, redactCredentials, safeUrl } from './nodes/http-errors';
import { reasonOf } from './nodes/kind';
import { AssetOutput, type AssetView, type EngineObjects, type HeldAsset, type RunContext } from './nodes/run-context';
import { redactDeep, secretRedactor } from './owner-secrets';
import { outputNodeIds, topologicalOrder } from './pipeline';
import type { HttpPort, ObjectRef } from './ports';
import type { NodeProgress } from './progress';
import type { NodeTrace, PipelineDefinition, RawValue } from './types';
import { isRawValue } from './values';

export type { AssetView, EngineObjects } from './nodes/run-context';
export { HTTP_MAX_RESPONSE_BYTES } from './nodes/http';
export { bodyExcerpt, HTTP_ERROR_EXCERPT_CHARS, HttpNodeError, LoopGuardError, redactCredentials } from './nodes/http-errors';

export interface EngineOptions {
  http: HttpPort;
  /** Whole-run time limit in milliseconds. */
  timeoutMs: number;
  /** Cancellation: when it aborts, the run resolves `cancelled` and its work is stopped. */
  signal?: AbortSignal;
  /** Longest a single JSONata evaluation may take (default EXPRESSION_LIMITS.timeLimitMs). */
  expressionTimeLimitMs?: number;
  /**
   * Owner secret values the definition references, by name (a name without a value fails the
   * node that needs it). Every one of them is redacted from the result: error message and outputs.
   */
  secrets?: ReadonlyMap<string, string>;
  /** Milliseconds since the epoch, for the trace's times (default Date.now). */
  now?: () => number;
  /** Asset inputs by id, as nodes see them: where to fetch the file and what it is, never its bytes. */
  assets?: Readonly<Record<string, AssetView>>;
  /** Where each asset input of `assets` is stored (same ids): what an ASSET output passing it on refers to. */
  assetRefs?: Readonly<Record<string, ObjectRef>>;
  /** Object storage for assets the run makes (an http node's binary answer) and sends (`body_asset`). */
  objects?: EngineObjects;
  /** This service's own base URLs: an http node may not call them (the loop guard). */
  ownApiUrls?: readonly (string | undefined)[];
  /**
   * Told as each node starts and as it finishes or fails (never a stopped one), in the order it
   * happens: ids, types and times only, never values. Must not throw.
   */
  onNode?: (p: NodeProgress) => void;
}

export type EngineResult =
  | {
      status: 'completed';
      outputs: Record<string, RawValue>;
      /** ASSET outputs, when there are any: what each refers to. */ output_assets?: Record<string, ObjectRef>;
    }
  | { status: 'failed'; error_message: string; /** The same failure for callers (callerReason). */ caller_message: string }
  | { status: 'cancelled' };

// setTimeout treats anything longer than this as 1 ms.
const MAX_TIMER_MS = 2_147_483_647;

/** A node's own failure, carried unchanged through its dependents to the run. */
class NodeFailure extends Error {
  constructor(
    readonly nodeId: string,
    readonly reason: string,
    readonly callerReason: string,
  ) {
    super(`Node '${nodeId}' failed: ${reason}`);
    this.name = 'NodeFailure';
  }

  get callerMessage(): string {
    return `Node '${this.nodeId}' failed: ${this.callerReason}`;
  }
}

/**
 * A node's failure as a caller may read it: what kind of thing went wrong, never the upstream's
 * URL or answer, a header, an expression's text or a secret's name (the owner's message has
 * them, in the owner's views). Each node type says its own (functions/core/nodes/).
 */
export function callerReason(e: unknown, nodeType: NodeType): string {
  return kindOfType(nodeType).callerReason(e);
}

/** The run's deadline passed while a node was busy (seen from inside a JSONata evaluation). */
class RunTimedOut extends Error {}

/** Work interrupted because the run had already ended; nothing to report. */
class RunStopped extends Error {}

export function timeoutMessage(timeoutMs: number): string {
  return timeoutMs % 1000 === 0 ? `Execution timed out after ${timeoutMs / 1000} s` : `Execution timed out after ${timeoutMs} ms`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new RunStopped('aborted'));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new RunStopped('aborted'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

interface EngineLimits {
  deadline: number;
  expressionTimeLimitMs: number | undefined;
  ownApiUrls: readonly (string | undefined)[];
}

/** The context every node of one run receives (functions/core/nodes/run-context.ts). */
function runContext(opts: EngineOptions, inputValues: Record<string, RawValue>, signal: AbortSignal, limits: EngineLimits): RunContext {
  const known = new Map<string, HeldAsset>();
  return {
    http: opts.http,
    signal,
    secrets: opts.secrets ?? new Map<string, string>(),
    inputValues,
    assets: opts.assets,
    assetRefs: opts.assetRefs,
    objects: opts.objects,
    evaluate: (text, input, bindings) =>
      evaluateExpression(text, input, {
        timeLimitMs: limits.expressionTimeLimitMs,
        deadline: limits.deadline,
        signal,
        ...(bindings === undefined ? {} : { bindings }),
      }),
    guard(url) {
      if (isOwnApiUrl(url, limits.ownApiUrls)) throw new LoopGuardError(`${safeUrl(url)} ${LOOP_GUARD_REASON}`);
    },
    sleep: (ms) => sleep(ms, signal),
    hold(asset) {
      known.set(asset.view.url, asset);
    },
    held(value) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
      const o = value as Record<string, unknown>;
      if (typeof o.url !== 'string') return null;
      const held = known.get(o.url);
      if (held === undefined) return null;
      for (const field of ['media_type', 'bytes', 'sha256'] as const) {
        if (Object.hasOwn(o, field) && o[field] !== held.view[field]) return null;
      }
      return held;
    },
  };
}

/** Longest value preview kept per node, in characters of its JSON text. */
export const TRACE_PREVIEW_CHARS = 200;
/** Longest error kept per node. */
export const TRACE_ERROR_CHARS = 500;
/**
 * Most JSON a stored trace may take. 64 nodes with full previews and errors stay well below it
 * (≈ 55 KB), and it leaves room in the 400 KB item for inputs, outputs and the delivery log.
 */
export const TRACE_MAX_BYTES = 64 * 1024;

const cut = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max)}…` : text);

/** A node's value as capped, redacted JSON text. */
export function previewOf(value: unknown): string | null {
  if (value === undefined) return null;
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  // Cut before and after: redaction must not see (or leave) half a token at the edge.
  return cut(redactCredentials(text.slice(0, TRACE_PREVIEW_CHARS * 4)), TRACE_PREVIEW_CHARS);
}

/**
 * The trace as stored with the execution: DynamoDB items hold at most 400 KB, and the record
 * also carries inputs and outputs, so a trace is held to `maxBytes` of JSON. Previews go first
 * (from the last node back), then errors are cut shorter; `truncated` says it happened.
 */
export function capTrace(trace: readonly NodeTrace[], maxBytes: number): { trace: NodeTrace[]; truncated: boolean } {
  const size = (t: readonly NodeTrace[]): number => Buffer.byteLength(JSON.stringify(t), 'utf8');
  const out = trace.map((t) => ({ ...t }));
  if (size(out) <= maxBytes) return { trace: out, truncated: false };
  for (let i = out.length - 1; i >= 0 && size(out) > maxBytes; i--) {
    const t = out[i];
    if (t) t.preview = null;
  }
  for (let i = out.length - 1; i >= 0 && size(out) > maxBytes; i--) {
    const t = out[i];
    if (t?.error) t.error = cut(t.error, 80);
  }
  return { trace: out, truncated: true };
}

/**
 * The run's node order, worked out once and used by both the run and its trace. A definition
 * that has none (a cycle: validation refuses those, so only a corrupt record) runs nothing,
 * and its trace lists the nodes as written.
 */
type NodeOrder = { ok: true; order: string[] } | { ok: false; order: string[]; problem: string };

function nodeOrder(def: PipelineDefinition): NodeOrder {
  try {
    return { ok: true, order: topologicalOrder(def) };
  } catch (e) {
    return { ok: false, order: Object.keys(def.nodes), problem: reasonOf(e) };
  }
}

function buildTrace(
  def: PipelineDefinition,
  order: readonly string[],
  clocks: ReadonlyMap<string, NodeClock>,
  redact: (text: string) => string,
): NodeTrace[] {
  const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());
  return order.flatMap((id): NodeTrace[] => {
    const node = def.nodes[id];
    if (!node) return [];
    const c = clocks.get(id);
    const ended = c?.end !== undefined;
    const outcome: NodeTrace['outcome'] = !c ? 'not_run' : c.error !== undefined ? 'failed' : ended ? 'completed' : 'stopped';
    return [
      {
        node: id,
        type: node.type,
        outcome,
        started_at: iso(c?.start),
        completed_at: iso(c?.end),
        duration_ms: c && c.end !== undefined ? Math.max(0, c.end - c.start) : null,
        error: c?.error === undefined ? null : cut(redact(c.error), TRACE_ERROR_CHARS),
        http_status: c?.httpStatus ?? null,
        // Secrets come out of the value before it is turned into text (JSON escaping would hide them).
        preview: outcome === 'completed' ? previewOf(redactDeep(c?.value, redact)) : null,
      },
    ];
  });
}

/**
 * Runs a validated definition. Each node starts as soon as every node it reads is done; the
 * first node failure, the time-out or a cancellation ends the run at once and aborts whatever
 * is still in flight. Never rejects, and leaves no timer behind once resolved.
 */
export async function runPipeline(
  def: PipelineDefinition,
  inputValues: Record<string, RawValue>,
  opts: EngineOptions,
): Promise<EngineResult> {
  return (await runPipelineTraced(def, inputValues, opts)).result;
}

/**
 * runPipeline, plus what each node did (see NodeTrace). An upstream may echo a credential back
 * (in an error body, a header dump, a JSON field), and a URL may carry one: nothing that leaves
 * the run, result or trace, keeps an owner secret's value.
 */
export async function runPipelineTraced(
  def: PipelineDefinition,
  inputValues: Record<string, RawValue>,
  opts: EngineOptions,
): Promise<{ result: EngineResult; trace: NodeTrace[] }> {
  const redact = secretRedactor(opts.secrets?.values() ?? []);
  const order = nodeOrder(def);
  const { result, clocks } = await runUnredacted(def, order, inputValues, opts);
  const trace = buildTrace(def, order.order, clocks, redact);
  if (result.status === 'failed')
    return {
      result: { status: 'failed', error_message: redact(result.error_message), caller_message: redact(result.caller_message) },
      trace,
    };
  if (result.status === 'completed')
    return {
      result: {
        status: 'completed',
        outputs: redactDeep(result.outputs, redact),
        ...(result.output_assets === undefined ? {} : { output_assets: result.output_assets }),
      },
      trace,
    };
  return { result, trace };
}

type NodeClock = { start: number; end?: number; value?: unknown; error?: string; httpStatus?: number };

function runUnredacted(
  def: PipelineDefinition,
  nodes: NodeOrder,
  inputValues: Record<string, RawValue>,
  opts: EngineOptions,
): Promise<{ result: EngineResult; clocks: ReadonlyMap<string, NodeClock> }> {
  const now = opts.now ?? Date.now;
  const clocks = new Map<string, NodeClock>();
  return new Promise<{ result: EngineResult; clocks: ReadonlyMap<string, NodeClock> }>((resolveTraced) => {
    const resolve = (result: EngineResult): void => resolveTraced({ result, clocks });
    if (opts.signal?.aborted) {
      resolve({ status: 'cancelled' });
      return;
    }
    const work = new AbortController();
    // Every in-flight http and delay node listens on this signal; 64 nodes outgrow Node's default warning threshold.
    setMaxListeners(0, work.signal);
    const timedOut: EngineResult = {
      status: 'failed',
      error_message: timeoutMessage(opts.timeoutMs),
      caller_message: timeoutMessage(opts.timeoutMs),
    };
    let finished = false;

    const onCancel = (): void => finish({ status: 'cancelled' });
    const timer = setTimeout(() => finish(timedOut), Math.min(Math.max(opts.timeoutMs, 0), MAX_TIMER_MS));
    function finish(result: EngineResult): void {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onCancel);
      work.abort(new RunStopped('run finished'));
      resolve(result);
    }
    opts.signal?.addEventListener('abort', onCancel, { once: true });

    const onFailure = (e: unknown): void => {
      if (e instanceof RunStopped) return;
      if (e instanceof RunTimedOut) finish(timedOut);
      else if (e instanceof NodeFailure) finish({ status: 'failed', error_message: e.message, caller_message: e.callerMessage });
      else finish({ status: 'failed', error_message: `Execution failed: ${reasonOf(e)}`, caller_message: 'Execution failed' });
    };

    if (!nodes.ok) {
      finish({ status: 'failed', error_message: `Invalid pipeline: ${nodes.problem}`, caller_message: 'Invalid pipeline' });
      return;
    }

    const ctx = runContext(opts, inputValues, work.signal, {
      deadline: Date.now() + opts.timeoutMs,
      expressionTimeLimitMs: opts.expressionTimeLimitMs,
      ownApiUrls: opts.ownApiUrls ?? [],
    });
    const settled = new Map<string, unknown>();
    const pending = new Map<string, Promise<unknown>>();
    for (const id of nodes.order) {
      const node = def.nodes[id];
      if (!node) continue;
      const deps = kindOf(node)
        .dependencies(node)
        .map((d) => pending.get(d) ?? Promise.resolve(settled.get(d)));
      // A dependency's rejection skips this node and passes the original failure on unchanged.
      const result = Promise.all(deps).then(async (values) => {
        if (work.signal.aborted) throw new RunStopped('run finished');
        const clock: NodeClock = { start: now() };
        clocks.set(id, clock);
        opts.onNode?.({ node: id, type: node.type, state: 'started', at: clock.start });
        try {
          const value = await kindOf(node).run(node, values, ctx, id);
          if (!finished) {
            const end = now();
            Object.assign(clock, { end, value: value instanceof AssetOutput ? value.toJSON() : value });
            opts.onNode?.({ node: id, type: node.type, state: 'finished', at: end, duration_ms: Math.max(0, end - clock.start) });
          }
          settled.set(id, value);
          return value;
        } catch (e) {
          if (work.signal.aborted || (e instanceof ExpressionError && e.kind === 'aborted')) throw new RunStopped('run finished');
          if (e instanceof ExpressionError && e.kind === 'deadline') throw new RunTimedOut();
          const end = now();
          Object.assign(clock, { end, error: reasonOf(e), ...(e instanceof HttpNodeError ? { httpStatus: e.httpStatus } : {}) });
          if (!finished)
            opts.onNode?.({ node: id, type: node.type, state: 'failed', at: end, duration_ms: Math.max(0, end - clock.start) });
          throw new NodeFailure(id, reasonOf(e), kindOf(node).callerReason(e));
        }
      });
      result.catch(onFailure);
      pending.set(id, result);
    }

    Promise.all(pending.values()).then(
      () => {
        const outputs: Record<string, RawValue> = {};
        const outputAssets: Record<string, ObjectRef> = {};
        const define = <T>(o: Record<string, T>, id: string, value: T) =>
          Object.defineProperty(o, id, { value, enumerable: true, writable: true, configurable: true });
        for (const id of outputNodeIds(def)) {
          const value = settled.get(id);
          if (isRawValue(value)) define(outputs, id, value);
          else if (value instanceof AssetOutput) define(outputAssets, id, { ...value.ref });
        }
        finish({ status: 'completed', outputs, ...(Object.keys(outputAssets).length > 0 ? { output_assets: outputAssets } : {}) });
      },
      () => undefined,
    );
  });
}
