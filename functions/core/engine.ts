import { setMaxListeners } from 'node:events';
import { isOwnApiUrl, LOOP_GUARD_REASON } from './address-guard';
import { ExpressionError, evaluateExpression } from './jsonata-limits';
import { bodySecretsBinding, MissingSecretError, redactDeep, secretRedactor, substituteSecrets } from './owner-secrets';
import { DEFAULT_HTTP_TIMEOUT_MS, nodeDependencies, outputNodeIds, topologicalOrder } from './pipeline';
import { answerObjectName, HTTP_ASSET_MAX_BYTES } from './output-assets';
import type { HttpPort, ObjectRef, SizedStream } from './ports';
import type { NodeProgress } from './progress';
import type {
  DelayNode,
  NodeTrace,
  HttpNode,
  InputNode,
  OutputNode,
  PipelineDefinition,
  PipelineNode,
  RawValue,
  TransformNode,
} from './types';
import { isRawValue } from './values';

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

/** What the engine needs of object storage; the task supplies it (functions/services/tasks.service.ts). */
export interface EngineObjects {
  /**
   * Stores a binary answer as the object `name` of this execution as its bytes arrive: sniffs,
   * counts and hashes them on the way (more than `maxBytes` fails, naming the limit, and leaves
   * no object), and answers its reference and how nodes see it.
   */
  store(
    name: string,
    body: AsyncIterable<Uint8Array>,
    declaredType: string | undefined,
    maxBytes: number,
  ): Promise<{ ref: ObjectRef; view: AssetView }>;
  /** A stored object's bytes as a stream of `ref.bytes` bytes, read as it is sent. */
  open(ref: ObjectRef): Promise<SizedStream>;
}

/** An asset as a transform or http node sees it. */
export interface AssetView {
  url: string;
  media_type: string;
  bytes: number;
  sha256: string;
  /** When `url` stops working (ISO 8601). */
  expires_at: string;
}

export type EngineResult =
  | {
      status: 'completed';
      outputs: Record<string, RawValue>;
      /** ASSET outputs, when there are any: what each refers to. */ output_assets?: Record<string, ObjectRef>;
    }
  | { status: 'failed'; error_message: string; /** The same failure for callers (callerReason). */ caller_message: string }
  | { status: 'cancelled' };

export const HTTP_MAX_RESPONSE_BYTES = 1_048_576;

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
 * them, in the owner's views).
 */
export function callerReason(e: unknown, nodeType: string): string {
  if (e instanceof HttpNodeError) return `upstream answered ${e.httpStatus}`;
  if (e instanceof LoopGuardError) return "the loop guard refused its URL (this service's own API)";
  if (e instanceof MissingSecretError) return 'the pipeline is missing a setting';
  if (nodeType === 'http') return /timed? ?out/i.test(reasonOf(e)) ? 'the upstream request timed out' : 'the upstream request failed';
  if (nodeType === 'transform') return 'its expression failed';
  if (nodeType === 'output') return 'it produced no usable value';
  return 'it failed';
}

/** The run's deadline passed while a node was busy (seen from inside a JSONata evaluation). */
class RunTimedOut extends Error {}

/** Work interrupted because the run had already ended; nothing to report. */
class RunStopped extends Error {}

export function timeoutMessage(timeoutMs: number): string {
  return timeoutMs % 1000 === 0 ? `Execution timed out after ${timeoutMs / 1000} s` : `Execution timed out after ${timeoutMs} ms`;
}

function reasonOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === 'object' && e !== null && 'message' in e && typeof e.message === 'string') return e.message;
  return String(e);
}

function describeType(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'array';
  if (typeof x === 'number') return 'a number that is not finite';
  return typeof x;
}

/** An http node's URL on this service's own API, refused before any connection. */
export class LoopGuardError extends Error {
  override readonly name = 'LoopGuardError';
}

/** A non-2xx answer to an http node: the upstream's status travels with the failure. */
export class HttpNodeError extends Error {
  constructor(
    readonly httpStatus: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpNodeError';
  }
}

export const HTTP_ERROR_EXCERPT_CHARS = 160;

/** What the node itself sent that must never come back in a message: header values, query values, URL credentials. */
function sensitiveValues(url: string, headers: Record<string, string>): string[] {
  const values = Object.values(headers).flatMap((h) => [h, ...h.split(/\s+/)]);
  try {
    const u = new URL(url);
    values.push(...u.searchParams.values(), decodeURIComponent(u.password), decodeURIComponent(u.username));
  } catch {
    // An invalid URL never reached the network.
  }
  return values.filter((x) => x.length >= 4);
}

/**
 * A short, single-line excerpt of an upstream's error body, fit for error_message: control
 * characters gone, whatever the node sent as a credential (or anything that reads like one)
 * replaced, and cut to HTTP_ERROR_EXCERPT_CHARS.
 */
export function bodyExcerpt(body: string, sensitive: readonly string[] = []): string {
  let text = body.slice(0, 4096);
  for (const s of [...sensitive].sort((a, b) => b.length - a.length)) text = text.split(s).join('[redacted]');
  text = redactCredentials(text)
    // eslint-disable-next-line no-control-regex -- control characters are exactly what is removed
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return text.length > HTTP_ERROR_EXCERPT_CHARS ? `${text.slice(0, HTTP_ERROR_EXCERPT_CHARS)}…` : text;
}

/** Credential-shaped text: auth schemes with their token, key=value pairs named like secrets, and long opaque tokens. */
export function redactCredentials(text: string): string {
  return text
    .replace(/\b(bearer|basic|api-key|token)(\s+)[^\s"',;]+/gi, '$1$2[redacted]')
    .replace(/("?[\w-]*(?:secret|password|passwd|token|api[_-]?key|authorization)[\w-]*"?\s*[:=]\s*"?)([^"\s,;}&]+)/gi, '$1[redacted]')
    .replace(/[A-Za-z0-9_\-+/=]{32,}/g, '[redacted]');
}

/** The URL without query, fragment or credentials: those may hold secrets. */
function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
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

function parseResponseBody(body: string): unknown {
  if (body.trim() === '') return body;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}

interface RunContext {
  http: HttpPort;
  secrets: ReadonlyMap<string, string>;
  signal: AbortSignal;
  deadline: number;
  expressionTimeLimitMs: number | undefined;
  assets: Readonly<Record<string, AssetView>> | undefined;
  assetRefs: Readonly<Record<string, ObjectRef>> | undefined;
  objects: EngineObjects | undefined;
  ownApiUrls: readonly (string | undefined)[];
  /** Every asset this run holds, by its URL: inputs and binary answers. Only these become ASSET outputs or bodies. */
  known: Map<string, { ref: ObjectRef; view: AssetView }>;
}

/** An output node's value when it is an asset of this run; stored as its reference only. */
class AssetOutput {
  constructor(readonly ref: ObjectRef) {}

  /** What the owner's trace preview shows: never a URL. */
  toJSON(): Record<string, unknown> {
    return { value_type: 'ASSET', media_type: this.ref.media_type, bytes: this.ref.bytes };
  }
}

/**
 * The asset of this run a value stands for, or null. A value is one only when it is an object
 * whose `url` is that of an asset the run holds, and whose other fields, if given, agree with it:
 * nothing a transform writes can name an object the run does not hold.
 */
function heldAsset(value: unknown, ctx: RunContext): { ref: ObjectRef; view: AssetView } | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const o = value as Record<string, unknown>;
  if (typeof o.url !== 'string') return null;
  const held = ctx.known.get(o.url);
  if (held === undefined) return null;
  for (const field of ['media_type', 'bytes', 'sha256'] as const) {
    if (Object.hasOwn(o, field) && o[field] !== held.view[field]) return null;
  }
  return held;
}

/** The object a JSONata expression sees: each dependency's value by id, absent when it has none. */
function scope(ids: string[], values: unknown[]): Record<string, unknown> {
  // No prototype, so a node id can never reach Object.prototype members.
  const out = Object.create(null) as Record<string, unknown>;
  ids.forEach((id, i) => {
    const value = values[i];
    if (value !== undefined) out[id] = value;
  });
  return out;
}

async function evaluate(
  text: string,
  input: Record<string, unknown>,
  ctx: RunContext,
  bindings?: Record<string, unknown>,
): Promise<unknown> {
  return evaluateExpression(text, input, {
    timeLimitMs: ctx.expressionTimeLimitMs,
    deadline: ctx.deadline,
    signal: ctx.signal,
    ...(bindings === undefined ? {} : { bindings }),
  });
}

async function runInput(id: string, node: InputNode, inputValues: Record<string, RawValue>, ctx: RunContext): Promise<unknown> {
  if (node.value_type === 'asset') {
    const view = ctx.assets !== undefined && Object.hasOwn(ctx.assets, id) ? ctx.assets[id] : undefined;
    if (view === undefined) throw new Error('the file of this asset input was not stored');
    const ref = ctx.assetRefs !== undefined && Object.hasOwn(ctx.assetRefs, id) ? ctx.assetRefs[id] : undefined;
    if (ref !== undefined) ctx.known.set(view.url, { ref, view: { ...view } });
    return { ...view };
  }
  return Object.hasOwn(inputValues, id) ? inputValues[id] : node.value;
}

async function runOutput(node: OutputNode, [value]: unknown[], ctx: RunContext): Promise<RawValue | AssetOutput> {
  if (value === undefined) throw new Error(`'${node.from}' produced no value`);
  if (isRawValue(value)) return value;
  const held = heldAsset(value, ctx);
  if (held !== null) return new AssetOutput(held.ref);
  throw new Error(`output must be a string, a finite number, a boolean or an asset of this run, got ${describeType(value)}`);
}

async function runTransform(node: TransformNode, values: unknown[], ctx: RunContext): Promise<unknown> {
  return evaluate(node.expression, scope(node.inputs, values), ctx);
}

async function runHttp(id: string, node: HttpNode, values: unknown[], ctx: RunContext): Promise<unknown> {
  const url = substituteSecrets(node.url, ctx.secrets);
  // Checked after the secrets are in: a host may come from one.
  if (isOwnApiUrl(url, ctx.ownApiUrls ?? [])) throw new LoopGuardError(`${safeUrl(url)} ${LOOP_GUARD_REASON}`);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(node.headers ?? {})) {
    Object.defineProperty(headers, name, {
      value: substituteSecrets(value, ctx.secrets),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  const nodeHeaders = { ...headers };
  let body: string | SizedStream | undefined;
  if (node.body_asset !== undefined) {
    const i = (node.inputs ?? []).indexOf(node.body_asset);
    const held = heldAsset(values[i], ctx);
    if (held === null) throw new Error(`body_asset '${node.body_asset}' is not an asset`);
    if (held.ref.bytes > HTTP_ASSET_MAX_BYTES)
      throw new Error(
        `body_asset '${node.body_asset}' is ${held.ref.bytes} bytes, more than the http node's asset limit of ${HTTP_ASSET_MAX_BYTES} bytes`,
      );
    if (ctx.objects === undefined) throw new Error('assets cannot be sent here: no object storage');
    body = await ctx.objects.open(held.ref);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = held.ref.media_type;
  } else if (node.body !== undefined) {
    const value = await evaluate(node.body, scope(node.inputs ?? [], values), ctx, { secrets: bodySecretsBinding(node.body, ctx.secrets) });
    if (value !== undefined) {
      body = JSON.stringify(value);
      if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    }
  }
  const response = await ctx.http({
    method: node.method ?? 'GET',
    url,
    headers,
    ...(body === undefined ? {} : { body }),
    timeoutMs: node.timeout_ms ?? DEFAULT_HTTP_TIMEOUT_MS,
    signal: ctx.signal,
    maxResponseBytes: HTTP_MAX_RESPONSE_BYTES,
    ...(ctx.objects === undefined ? {} : { maxBinaryResponseBytes: HTTP_ASSET_MAX_BYTES }),
  });
  const { stream } = response;
  if (stream !== undefined && (response.status < 200 || response.status > 299 || ctx.objects === undefined)) {
    // A failed call's binary body is not read: ending it closes the connection.
    await stream[Symbol.asyncIterator]().return?.();
  }
  if (response.status < 200 || response.status > 299) {
    const excerpt = bodyExcerpt(response.body, sensitiveValues(url, nodeHeaders));
    throw new HttpNodeError(response.status, `HTTP ${response.status} from ${safeUrl(url)}${excerpt ? `: ${excerpt}` : ''}`);
  }
  if (stream !== undefined) {
    if (ctx.objects === undefined) throw new Error('a binary answer cannot be kept here: no object storage');
    const stored = await ctx.objects.store(answerObjectName(id), stream, response.headers['content-type'], HTTP_ASSET_MAX_BYTES);
    ctx.known.set(stored.view.url, { ref: stored.ref, view: { ...stored.view } });
    return { ...stored.view };
  }
  return parseResponseBody(response.body);
}

async function runDelay(node: DelayNode, [value]: unknown[], ctx: RunContext): Promise<unknown> {
  await sleep(node.ms, ctx.signal);
  return value;
}

function runNode(
  id: string,
  node: PipelineNode,
  values: unknown[],
  inputValues: Record<string, RawValue>,
  ctx: RunContext,
): Promise<unknown> {
  switch (node.type) {
    case 'input':
      return runInput(id, node, inputValues, ctx);
    case 'output':
      return runOutput(node, values, ctx);
    case 'transform':
      return runTransform(node, values, ctx);
    case 'http':
      return runHttp(id, node, values, ctx);
    case 'delay':
      return runDelay(node, values, ctx);
  }
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

    const ctx: RunContext = {
      http: opts.http,
      secrets: opts.secrets ?? new Map<string, string>(),
      signal: work.signal,
      deadline: Date.now() + opts.timeoutMs,
      expressionTimeLimitMs: opts.expressionTimeLimitMs,
      assets: opts.assets,
      assetRefs: opts.assetRefs,
      objects: opts.objects,
      ownApiUrls: opts.ownApiUrls ?? [],
      known: new Map(),
    };
    const settled = new Map<string, unknown>();
    const pending = new Map<string, Promise<unknown>>();
    for (const id of nodes.order) {
      const node = def.nodes[id];
      if (!node) continue;
      const deps = nodeDependencies(node).map((d) => pending.get(d) ?? Promise.resolve(settled.get(d)));
      // A dependency's rejection skips this node and passes the original failure on unchanged.
      const result = Promise.all(deps).then(async (values) => {
        if (work.signal.aborted) throw new RunStopped('run finished');
        const clock: NodeClock = { start: now() };
        clocks.set(id, clock);
        opts.onNode?.({ node: id, type: node.type, state: 'started', at: clock.start });
        try {
          const value = await runNode(id, node, values, inputValues, ctx);
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
          throw new NodeFailure(id, reasonOf(e), callerReason(e, node.type));
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
