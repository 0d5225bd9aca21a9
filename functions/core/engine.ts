import { setMaxListeners } from 'node:events';
import { isOwnApiUrl, LOOP_GUARD_REASON } from './address-guard';
import { ExpressionError, evaluateExpression } from './jsonata-limits';
import { kindOf, kindOfType, type NodeType, type PipelineNode } from './nodes';
import { HttpNodeError, LoopGuardError, redactCredentials, safeUrl } from './nodes/http-errors';
import { describeType, reasonOf } from './nodes/kind';
import { InterruptedCallError, Waiting, type ItemError, type Resumed } from './nodes/kind';
import {
  AssetOutput,
  scope,
  type AssetView,
  type EngineObjects,
  type HeldAsset,
  type ItemNode,
  type MapItems,
  type RunContext,
} from './nodes/run-context';
import { redactDeep, secretRedactor } from './owner-secrets';
import { tokenOfResumeUrl } from './resume-token';
import { outputNodeIds, topologicalOrder } from './pipeline';
import type { HttpPort, ObjectRef, OutputAssetRef } from './ports';
import type { NodeProgress } from './progress';
import type { NodeTrace, PipelineDefinition, RawValue } from './types';
import { isRawValue } from './values';

export type { AssetView, EngineObjects } from './nodes/run-context';
export { HTTP_MAX_RESPONSE_BYTES } from './nodes/http';
export { bodyExcerpt, HTTP_ERROR_EXCERPT_CHARS, HttpNodeError, LoopGuardError, redactCredentials } from './nodes/http-errors';

export interface EngineOptions {
  http: HttpPort;
  /** Whole-run time limit in milliseconds, from the run's start (`startedAt`). */
  timeoutMs: number;
  /** When the run started (epoch ms): its deadline is this plus `timeoutMs` (default: now). */
  startedAt?: number;
  /** Cancellation: when it aborts, the run resolves `cancelled` and its work is stopped. */
  signal?: AbortSignal;
  /** Longest a single JSONata evaluation may take (default EXPRESSION_LIMITS.timeLimitMs). */
  expressionTimeLimitMs?: number;
  /**
   * Owner secret values the definition references, by name (a name without a value fails the
   * node that needs it). Every one of them is redacted from the result: error message and outputs.
   */
  secrets?: ReadonlyMap<string, string>;
  /** Milliseconds since the epoch, for the trace's times and the nodes' waits (default Date.now). */
  now?: () => number;
  /** Asset inputs by id, as nodes see them: where to fetch the file and what it is, never its bytes. */
  assets?: Readonly<Record<string, AssetView>>;
  /** Where each asset input of `assets` is stored (same ids): what an ASSET output passing it on refers to. */
  assetRefs?: Readonly<Record<string, ObjectRef>>;
  /** Object storage for assets the run makes (an http node's binary answer) and sends (`body_asset`). */
  objects?: EngineObjects;
  /** This service's own base URLs: an http node may not call them (the loop guard). */
  ownApiUrls?: readonly (string | undefined)[];
  /** The execution's id: http nodes send `Idempotency-Key: <execution id>.<node id>`. */
  executionId?: string;
  /**
   * The resume URL of each wait node, by id: what `$resume_url('id')` gives an http node. Each
   * is a capability, taken out of whatever the run keeps (values, traces, messages) as owner
   * secrets are: an upstream that echoes its webhook URL does not get it stored.
   */
  resumeUrls?: Readonly<Record<string, string>>;
  /**
   * Told as each node starts, waits, polls, and finishes or fails (never a stopped one), in the
   * order it happens: ids, types, times and counts only, never values. Must not throw.
   */
  onNode?: (p: NodeProgress) => void;
}

export type EngineResult =
  | {
      status: 'completed';
      outputs: Record<string, RawValue>;
      /** ASSET outputs, when there are any: what each refers to. */ output_assets?: Record<string, OutputAssetRef>;
    }
  | { status: 'failed'; error_message: string; /** The same failure for callers (callerReason). */ caller_message: string }
  | { status: 'cancelled' };

/* ------------------------------------------------------------------ the journal: nodes recorded across steps */

/** `skipped`: its `if` was false, or a node it reads was skipped (functions/core/nodes/kind.ts FLOW_FIELDS). */
export type NodeRecordState = 'calling' | 'waiting' | 'done' | 'skipped';

/**
 * One node as the execution keeps it between steps (the store keeps one item per node). Written
 * only by steps, with a conditional write on `rev`; `event` alone is written by a resume, which
 * may come before the node's first step (the item then holds the event and nothing else).
 */
export interface NodeRecord {
  /** Absent on an item that holds only an event. */
  state?: NodeRecordState;
  /** Bumped by every step's write; absent before the first. */
  rev?: number;
  started_at?: number;
  ended_at?: number;
  /** done: the value (assets as their views at the time; see `assets`). */
  value?: unknown;
  /** done, an output node passing an asset (or a list of them) on: what it refers to. */
  output_asset?: OutputAssetRef;
  /** done, a map's item that failed under `on_item_error: "skip"`: why (its value is null). */
  error?: string;
  /** done, a map: the items that failed under `on_item_error: "skip"`, and why. */
  item_errors?: ItemError[];
  /** Assets the node made (an http node's binary answer), each with the URL its value holds. */
  assets?: HeldAsset[];
  /** waiting: what the node's kind keeps until its next step. */
  memo?: Record<string, unknown>;
  /** waiting: when its next step is due (epoch ms); null: only an event or its own time-out. */
  until?: number | null;
  /** waiting: polls made so far and the upstream's last status, for views. */
  polls?: number;
  status?: string;
  /** calling: a call that must not be made twice is under way until then (epoch ms). */
  lease_until?: number;
  /** A wait node's event: the object posted to its resume URL. */
  event?: Resumed;
}

/** The nodes an execution has recorded, and the conditional write that records one more. */
export interface Journal {
  /** The records as read when the step began. */
  readonly nodes: ReadonlyMap<string, NodeRecord>;
  /**
   * Records `rec` (every field but `event`, which it keeps) if the node's revision is still
   * `prev` (undefined: no step wrote it yet) and, unless `sawEvent`, no event came since the
   * step read it: a step never records a wait for an event it has not seen. False when another
   * step (or an event) moved it first.
   */
  save(id: string, rec: NodeRecord, prev: number | undefined, sawEvent?: boolean): Promise<boolean>;
}

/** A journal held in memory: a whole run in one process (tests, runPipeline). */
export class MemoryJournal implements Journal {
  readonly nodes = new Map<string, NodeRecord>();
  async save(id: string, rec: NodeRecord, prev: number | undefined, sawEvent = false): Promise<boolean> {
    const current = this.nodes.get(id);
    if (current?.rev !== prev) return false;
    if (!sawEvent && current?.event !== undefined) return false;
    this.nodes.set(id, { ...rec, ...(current?.event === undefined ? {} : { event: current.event }) });
    return true;
  }
  /** A resume: the event is kept once, on a node that is not over (false: one was kept before, or the node is done or skipped). */
  resume(id: string, event: Resumed): boolean {
    const current = this.nodes.get(id);
    if (current?.event !== undefined || current?.state === 'done' || current?.state === 'skipped') return false;
    this.nodes.set(id, { ...(current ?? {}), event });
    return true;
  }
}

/** A node waiting at the end of a step. */
export interface WaitingNode {
  node: string;
  type: NodeType;
  /** When its next step is due; null: an event (or its own time-out, kept in `until` by its kind). */
  until: number | null;
  started_at: number;
  polls?: number;
  status?: string;
  /**
   * Set by the task that records the list (functions/services/tasks.service.ts), not the step:
   * a wait node whose URL the pipeline hands to its own http nodes (`$resume_url`), which the
   * job it submitted resumes. A reader's `Prefer: wait` does not end for it.
   */
  webhook?: boolean;
}

export type StepResult =
  | EngineResult
  /** Nothing more can run now: the next step is due at `wake` (epoch ms; null: only an event wakes the execution). */
  | { status: 'waiting'; wake: number | null; waiting: WaitingNode[] }
  /** The step's time ran out with work left: the next step may start at once. */
  | { status: 'continue' };

// setTimeout treats anything longer than this as 1 ms.
const MAX_TIMER_MS = 2_147_483_647;

export { IN_STEP_WAIT_MAX_MS } from './nodes/run-context';

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

/** Work interrupted because the step had already ended; nothing to report. */
class RunStopped extends Error {}

/** A node that cannot finish in this step (waiting, or not started for lack of time): its dependents wait too. */
class Parked extends Error {
  constructor(readonly waiting: WaitingNode | null) {
    super('parked');
  }
}

/** Another step recorded the node first: this step leaves it to that one. */
class Overtaken extends Error {}

/** A node's (or a map item's) own failure, with its journal revision at the time. */
class Failed {
  constructor(
    readonly error: unknown,
    readonly rev: number | undefined,
    readonly start: number,
  ) {}
}

/**
 * A node's value when it was skipped (its `if` was false, or what it reads was skipped). Kinds
 * never see it: the nodes they read that were skipped come to them as undefined.
 */
const SKIPPED: unique symbol = Symbol('skipped');

/** Most `items` progress events one map reports in a run (more items: every n-th, and the last). */
export const ITEM_PROGRESS_STEPS = 20;

/** How a node's `if` came out: anything but true or false fails the node. */
class ConditionError extends Error {}

const conditionOf = (node: PipelineNode): string | undefined => (node.type === 'input' ? undefined : node.if);
const joinsAny = (node: PipelineNode): boolean => kindOf(node).joinsAny?.(node) ?? ('join' in node && node.join === 'any');

/**
 * The journal could not be written (the store failed): not the node's failure. The step ends
 * by throwing it, so that the state machine tries the step again (it resumes from what was
 * recorded), as it would after a crash.
 */
export class JournalError extends Error {
  constructor(readonly original: unknown) {
    super(`the step's record could not be written: ${reasonOf(original)}`);
    this.name = 'JournalError';
  }
}

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
    const timer = setTimeout(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.min(Math.max(ms, 0), MAX_TIMER_MS),
    );
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

interface EngineLimits {
  /** For evaluations: by Date.now. */
  deadline: number;
  /** For nodes: by the run's own clock (`now`). */
  runDeadline: number;
  expressionTimeLimitMs: number | undefined;
  ownApiUrls: readonly (string | undefined)[];
}

/** The context every node of one step receives (functions/core/nodes/run-context.ts). */
function runContext(
  opts: EngineOptions,
  inputValues: Record<string, RawValue>,
  signal: AbortSignal,
  limits: EngineLimits,
  known: Map<string, HeldAsset>,
  items: (mapId: string) => MapItems,
): RunContext {
  return {
    items,
    http: opts.http,
    signal,
    secrets: opts.secrets ?? new Map<string, string>(),
    resumeUrls: opts.resumeUrls ?? {},
    inputValues,
    assets: opts.assets,
    assetRefs: opts.assetRefs,
    objects: opts.objects,
    executionId: opts.executionId,
    now: opts.now ?? Date.now,
    deadline: limits.runDeadline,
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

/** Replaces every asset view (an object whose `url` is in `fresh`) with its fresh one, deep. */
function relinked(value: unknown, fresh: ReadonlyMap<string, HeldAsset>): unknown {
  if (fresh.size === 0 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((v) => relinked(v, fresh));
  const o = value as Record<string, unknown>;
  if (typeof o.url === 'string') {
    const held = fresh.get(o.url);
    if (held !== undefined) return { ...held.view };
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o))
    Object.defineProperty(out, k, { value: relinked(v, fresh), enumerable: true, writable: true, configurable: true });
  return out;
}

export interface StepOptions extends EngineOptions {
  /** The execution's recorded nodes, and where this step records more. */
  journal: Journal;
  /**
   * The step starts no node after this long (ms) and answers `continue`; nodes under way
   * finish. Default: no limit.
   */
  budgetMs?: number;
  /** A fresh view of an asset a node made in an earlier step (its link may have expired since). */
  relink?: (asset: HeldAsset) => Promise<AssetView>;
}

type NodeClock = {
  start: number;
  end?: number;
  value?: unknown;
  error?: string;
  httpStatus?: number;
  stopped?: boolean;
  skipped?: boolean;
  itemErrors?: ItemError[];
};

/** What a step did, for its trace: each node's times and outcome. */
export interface StepTraced {
  result: StepResult;
  clocks: ReadonlyMap<string, NodeClock>;
}

/**
 * One step of an execution: every node that can run now runs (each as soon as the nodes it
 * reads are done, independent ones at the same time), nodes recorded by earlier steps are not
 * run again, and a node that has to wait (a long delay, a job's next poll, an event) is recorded
 * waiting with its dependents left for a later step. Ends with the run's outcome, or with when
 * the next step is due. The first node failure, the deadline or a cancellation ends the step at
 * once and aborts whatever is in flight. Rejects only with a JournalError (the store failed: the
 * step is to be tried again), and leaves no timer behind once settled.
 */
export function runStep(def: PipelineDefinition, inputValues: Record<string, RawValue>, opts: StepOptions): Promise<StepTraced> {
  return runUnredacted(def, nodeOrder(def), inputValues, opts);
}

async function runUnredacted(
  def: PipelineDefinition,
  nodes: NodeOrder,
  inputValues: Record<string, RawValue>,
  opts: StepOptions,
): Promise<StepTraced> {
  const now = opts.now ?? Date.now;
  const clocks = new Map<string, NodeClock>();
  const deadline = (opts.startedAt ?? now()) + opts.timeoutMs;
  const timedOut: EngineResult = {
    status: 'failed',
    error_message: timeoutMessage(opts.timeoutMs),
    caller_message: timeoutMessage(opts.timeoutMs),
  };
  if (opts.signal?.aborted) return { result: { status: 'cancelled' }, clocks };
  if (!nodes.ok)
    return {
      result: { status: 'failed', error_message: `Invalid pipeline: ${nodes.problem}`, caller_message: 'Invalid pipeline' },
      clocks,
    };
  if (now() >= deadline) return { result: timedOut, clocks };

  const given = opts.journal;
  const hidden = redactables(opts);
  const redact = secretRedactor(hidden);
  const hasSecrets = hidden.length > 0;
  // Whatever the store throws is the step's failure, never the node's. What is recorded leaves
  // the step: an owner secret's value an upstream echoed is taken out, as from outputs and traces.
  const journal: Journal = {
    nodes: given.nodes,
    save: (id, rec, prev, sawEvent) =>
      given
        .save(
          id,
          hasSecrets
            ? {
                ...rec,
                ...(rec.value === undefined ? {} : { value: redactDeep(rec.value, redact) }),
                ...(rec.memo === undefined ? {} : { memo: redactDeep(rec.memo, redact) }),
              }
            : rec,
          prev,
          sawEvent,
        )
        .catch((e: unknown) => {
          throw new JournalError(e);
        }),
  };
  let journalError: JournalError | undefined;
  // What earlier steps recorded: values back, with fresh links for the assets they made.
  const known = new Map<string, HeldAsset>();
  const fresh = new Map<string, HeldAsset>();
  for (const rec of journal.nodes.values()) {
    for (const asset of rec.assets ?? []) {
      const view = opts.relink ? await opts.relink(asset) : asset.view;
      const held = { ref: asset.ref, view: { ...view } };
      fresh.set(asset.view.url, held);
      known.set(asset.view.url, held);
      known.set(view.url, held);
    }
  }
  const recorded = (id: string): NodeRecord | undefined => journal.nodes.get(id);
  const doneValue = (rec: NodeRecord): unknown =>
    rec.output_asset !== undefined ? new AssetOutput(rec.output_asset) : relinked(rec.value, fresh);

  const traced = await new Promise<StepTraced>((resolveTraced) => {
    const resolve = (result: StepResult): void => resolveTraced({ result, clocks });
    const work = new AbortController();
    // Every in-flight http and delay node listens on this signal; 64 nodes outgrow Node's default warning threshold.
    setMaxListeners(0, work.signal);
    let finished = false;
    const stepStart = now();
    const budgetEnd = opts.budgetMs === undefined ? Infinity : stepStart + opts.budgetMs;

    const onCancel = (): void => finish({ status: 'cancelled' });
    const timer = setTimeout(() => finish(timedOut), Math.min(Math.max(deadline - now(), 0), MAX_TIMER_MS));
    function finish(result: StepResult): void {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onCancel);
      work.abort(new RunStopped('step finished'));
      resolve(result);
    }
    opts.signal?.addEventListener('abort', onCancel, { once: true });

    const onFailure = (e: unknown): void => {
      if (e instanceof RunStopped || e instanceof Parked || e instanceof Overtaken) return;
      if (e instanceof JournalError) {
        journalError ??= e;
        finish({ status: 'continue' });
        return;
      }
      if (e instanceof RunTimedOut) finish(timedOut);
      else if (e instanceof NodeFailure) finish({ status: 'failed', error_message: e.message, caller_message: e.callerMessage });
      else finish({ status: 'failed', error_message: `Execution failed: ${reasonOf(e)}`, caller_message: 'Execution failed' });
    };

    const ctx = runContext(
      opts,
      inputValues,
      work.signal,
      // Evaluations measure their limits by the process's own clock: the deadline, as much later.
      {
        deadline: Date.now() + Math.max(0, deadline - now()),
        runDeadline: deadline,
        expressionTimeLimitMs: opts.expressionTimeLimitMs,
        ownApiUrls: opts.ownApiUrls ?? [],
      },
      known,
      (mapId) => mapItems(mapId),
    );
    const settled = new Map<string, unknown>();
    const pending = new Map<string, Promise<unknown>>();
    /** Pure nodes computed (or skipped) in this step and not recorded yet, by journal id. */
    const unrecorded = new Map<string, { value: unknown; start: number; end: number; skipped?: boolean }>();
    const parked: WaitingNode[] = [];
    let leftForLater = false;
    let overtaken = false;
    /** Asset URLs a record written in this step already lists (a map's items' files): not listed again. */
    const inRecords = new Set<string>();

    /** Records every pure value computed so far, so that a later step reads rather than computes them. */
    const recordPure = async (): Promise<void> => {
      const batch = [...unrecorded.entries()];
      unrecorded.clear();
      await Promise.all(
        batch.map(async ([id, { value, start, end, skipped }]) => {
          const rec: NodeRecord = skipped
            ? { state: 'skipped', rev: 1, started_at: start, ended_at: end }
            : { state: 'done', rev: 1, started_at: start, ended_at: end, ...storedValue(value) };
          // A pure node recorded by another step meanwhile holds the same value: nothing to do.
          await journal.save(id, rec, recorded(id)?.rev, recorded(id)?.event !== undefined);
        }),
      );
    };

    type Advanced =
      | { state: 'done'; value: unknown; itemErrors?: ItemError[]; start: number; end: number }
      | { state: 'waiting'; rec: NodeRecord; until: number | null; start: number }
      | { state: 'later' };
    /** What a top-level node tells as it moves (a map's items tell nothing on their own). */
    interface Reporter {
      begin(start: number): void;
      /** `until`: when a waiting node's next step is due (null or absent: an event it waits for). */
      event(state: 'started' | 'waiting' | 'polled', at: number, polls?: number, until?: number | null): void;
    }

    /**
     * One step of a node not done yet, under its journal id (a node's id, or `<map>.<index>` for
     * a map's item): its first step, or its next one if it waits, recorded as its kind says.
     * Answers its value, its wait (a record waiting since an earlier step and not due yet, a job
     * between polls, a call another step still holds), or that it was left for the next step for
     * lack of time. A failure of the node's own is thrown as Failed; the engine's own signals
     * (stopped, overtaken, the store failing, the deadline) as they are.
     */
    const advance = async (
      jid: string,
      node: PipelineNode,
      values: unknown[],
      rec: NodeRecord | undefined,
      report: Reporter | null,
    ): Promise<Advanced> => {
      const kind = kindOf(node);
      if (work.signal.aborted) throw new RunStopped('step finished');
      const at = now();
      const sawEvent = rec?.event !== undefined;
      // A node whose event came before its first step takes it at once (a fast webhook).
      const resuming = rec?.state === 'waiting' || (rec?.state === undefined && sawEvent);
      if (rec?.state === 'waiting' && rec.until !== null && rec.until !== undefined && rec.until > at && rec.event === undefined) {
        return { state: 'waiting', rec, until: rec.until, start: rec.started_at ?? at };
      }
      if (!resuming && at >= budgetEnd) {
        leftForLater = true;
        return { state: 'later' };
      }
      const start = resuming || rec?.state === 'calling' ? (rec.started_at ?? at) : at;
      report?.begin(start);
      let prev = rec?.rev;
      if (resuming && rec?.state === undefined) report?.event('started', start);
      if (!resuming) {
        if (rec?.state === 'calling') {
          // A step before this one began the node and never recorded how it went.
          if ((rec.lease_until ?? 0) > at) return { state: 'waiting', rec, until: rec.lease_until ?? at, start };
          if (!kind.repeatable(node)) throw new Failed(new InterruptedCallError(), prev, start);
        } else report?.event('started', start);
        if (kind.durability === 'recorded' && !kind.repeatable(node)) {
          // Pure values it reads are recorded first, so a repeat after a crash sees the same ones.
          await recordPure();
          const lease = at + kind.longestMs(node) + LEASE_MARGIN_MS;
          if (
            !(await journal.save(jid, { state: 'calling', rev: (prev ?? 0) + 1, started_at: start, lease_until: lease }, prev, sawEvent))
          ) {
            throw new Overtaken();
          }
          prev = (prev ?? 0) + 1;
        }
      }
      try {
        const outcome =
          resuming && rec !== undefined ? await resumeOf(kind, node, values, jid, rec) : await kind.run(node, values, ctx, jid);
        if (finished) throw new RunStopped('step finished');
        const end = now();
        if (outcome instanceof Waiting) {
          const waitingRec: NodeRecord = {
            state: 'waiting',
            rev: (prev ?? 0) + 1,
            started_at: start,
            memo: { ...outcome.memo },
            until: outcome.until,
            ...(outcome.detail.polls === undefined ? {} : { polls: outcome.detail.polls }),
            ...(outcome.detail.status === undefined ? {} : { status: outcome.detail.status }),
          };
          if (!(await journal.save(jid, waitingRec, prev, sawEvent))) throw new Overtaken();
          const polled = outcome.detail.polls !== undefined && outcome.detail.polls !== rec?.polls;
          if (!resuming) report?.event('waiting', end, undefined, outcome.until);
          else if (polled) report?.event('polled', end, outcome.detail.polls);
          return { state: 'waiting', rec: waitingRec, until: outcome.until, start };
        }
        const value = outcome.value;
        if (kind.durability === 'recorded') {
          const made = [...known.values()].filter(
            (h) => !fresh.has(h.view.url) && !inRecords.has(h.view.url) && containsUrl(value, h.view.url),
          );
          const doneRec: NodeRecord = {
            state: 'done',
            rev: (prev ?? 0) + 1,
            started_at: start,
            ended_at: end,
            ...storedValue(value),
            ...(made.length > 0 ? { assets: made.map((h) => ({ ref: h.ref, view: { ...h.view } })) } : {}),
            ...(outcome.itemErrors === undefined ? {} : { item_errors: outcome.itemErrors }),
          };
          if (!(await journal.save(jid, doneRec, prev, sawEvent))) throw new Overtaken();
          for (const h of made) inRecords.add(h.view.url);
        } else unrecorded.set(jid, { value, start, end });
        return { state: 'done', value, ...(outcome.itemErrors === undefined ? {} : { itemErrors: outcome.itemErrors }), start, end };
      } catch (e) {
        if (e instanceof Overtaken || e instanceof JournalError || e instanceof RunStopped || e instanceof RunTimedOut) throw e;
        if (work.signal.aborted || (e instanceof ExpressionError && e.kind === 'aborted')) throw new RunStopped('step finished');
        if (e instanceof ExpressionError && e.kind === 'deadline') throw new RunTimedOut();
        throw new Failed(e, prev, start);
      }
    };

    const resumeOf = (kind: ReturnType<typeof kindOf>, node: PipelineNode, values: unknown[], id: string, rec: NodeRecord) => {
      if (kind.resume === undefined) throw new Error(`a ${node.type} node cannot be resumed`);
      return kind.resume(node, values, ctx, id, rec.memo ?? {}, rec.event);
    };

    const parkedFor = (id: string, node: PipelineNode, rec: NodeRecord, until: number | null): Parked => {
      const w: WaitingNode = {
        node: id,
        type: node.type,
        until,
        started_at: rec.started_at ?? now(),
        ...(rec.polls === undefined ? {} : { polls: rec.polls }),
        ...(rec.status === undefined ? {} : { status: rec.status }),
      };
      parked.push(w);
      return new Parked(w);
    };

    /** A node's own failure, as the run reports it; its clock says how it ended. */
    const nodeFailure = (id: string, node: PipelineNode, e: unknown, clock: NodeClock): NodeFailure => {
      const end = now();
      Object.assign(clock, { end, error: reasonOf(e), ...(e instanceof HttpNodeError ? { httpStatus: e.httpStatus } : {}) });
      if (!finished) opts.onNode?.({ node: id, type: node.type, state: 'failed', at: end, duration_ms: Math.max(0, end - clock.start) });
      const callerWords =
        e instanceof InterruptedCallError
          ? 'it was interrupted in the middle of its call'
          : e instanceof ConditionError
            ? 'its condition failed'
            : kindOf(node).callerReason(e);
      return new NodeFailure(id, reasonOf(e), callerWords);
    };

    /**
     * Whether a node is skipped: a node it reads was skipped (every one, for a node that joins
     * any), or its `if` is false. Evaluated before its first step only: a node under way ran its
     * condition already.
     */
    const skips = async (id: string, node: PipelineNode, given: readonly unknown[], values: readonly unknown[]): Promise<boolean> => {
      const skipped = given.map((x) => x === SKIPPED);
      if (given.length > 0 && (joinsAny(node) ? skipped.every(Boolean) : skipped.some(Boolean))) return true;
      const condition = conditionOf(node);
      if (condition === undefined) return false;
      let verdict: unknown;
      try {
        verdict = await ctx.evaluate(condition, scope(kindOf(node).dependencies(node), values));
      } catch (e) {
        if (work.signal.aborted || (e instanceof ExpressionError && e.kind === 'aborted')) throw new RunStopped('step finished');
        if (e instanceof ExpressionError && e.kind === 'deadline') throw new RunTimedOut();
        const clock: NodeClock = { start: now() };
        clocks.set(id, clock);
        throw nodeFailure(id, node, new ConditionError(`its if failed: ${reasonOf(e)}`), clock);
      }
      if (verdict === true || verdict === false) return !verdict;
      const clock: NodeClock = { start: now() };
      clocks.set(id, clock);
      const got = verdict === undefined ? 'no value' : describeType(verdict);
      throw nodeFailure(id, node, new ConditionError(`its if must give true or false, got ${got}`), clock);
    };

    const runOne = async (id: string, node: PipelineNode, given: unknown[]): Promise<unknown> => {
      const rec = recorded(id);
      if (rec?.state === 'done') {
        const value = doneValue(rec);
        settled.set(id, value);
        return value;
      }
      if (rec?.state === 'skipped') {
        settled.set(id, SKIPPED);
        return SKIPPED;
      }
      if (work.signal.aborted) throw new RunStopped('step finished');
      // What the node's kind sees: the nodes it reads that were skipped are absent.
      const values = given.map((x) => (x === SKIPPED ? undefined : x));
      if (rec?.state === undefined && (await skips(id, node, given, values))) {
        const at = now();
        clocks.set(id, { start: at, end: at, skipped: true });
        unrecorded.set(id, { value: undefined, start: at, end: at, skipped: true });
        if (!finished) opts.onNode?.({ node: id, type: node.type, state: 'skipped', at });
        settled.set(id, SKIPPED);
        return SKIPPED;
      }
      let clock: NodeClock = { start: now() };
      const report: Reporter = {
        begin(start) {
          clock = { start };
          clocks.set(id, clock);
        },
        event(state, at, polls, until) {
          if (state === 'polled') opts.onNode?.({ node: id, type: node.type, state, at, ...(polls === undefined ? {} : { polls }) });
          else if (state === 'waiting' && typeof until === 'number') opts.onNode?.({ node: id, type: node.type, state, at, until });
          else opts.onNode?.({ node: id, type: node.type, state, at });
        },
      };
      let out: Advanced;
      try {
        out = await advance(id, node, values, rec, report);
      } catch (e) {
        if (!(e instanceof Failed)) throw e;
        if (!clocks.has(id)) report.begin(e.start);
        throw nodeFailure(id, node, e.error, clock);
      }
      if (out.state === 'later') throw new Parked(null);
      if (out.state === 'waiting') throw parkedFor(id, node, out.rec, out.until);
      const { value, end } = out;
      if (!finished) {
        Object.assign(clock, {
          end,
          value: value instanceof AssetOutput ? value.toJSON() : value,
          ...(out.itemErrors === undefined ? {} : { itemErrors: out.itemErrors }),
        });
        opts.onNode?.({ node: id, type: node.type, state: 'finished', at: end, duration_ms: Math.max(0, end - clock.start) });
      }
      settled.set(id, value);
      return value;
    };

    /** A map's items, each a step of its own under `<map>.<index>` (functions/core/nodes/map.ts). */
    const mapItems = (mapId: string): MapItems => {
      const every = (total: number): number => Math.max(1, Math.ceil(total / ITEM_PROGRESS_STEPS));
      return {
        ended: (index) => recorded(`${mapId}.${index}`)?.state === 'done',
        async run(index: number, node: ItemNode, values: readonly unknown[], recordFailure: boolean) {
          const jid = `${mapId}.${index}`;
          const rec = recorded(jid);
          if (rec?.state === 'done') return rec.error === undefined ? { value: doneValue(rec) } : { value: null, error: rec.error };
          try {
            const out = await advance(jid, node, [...values], rec, null);
            if (out.state === 'later') return { later: true as const };
            if (out.state === 'waiting') return { waiting: out.until ?? now() };
            return { value: out.value };
          } catch (e) {
            if (!(e instanceof Failed)) throw e;
            if (!recordFailure) return { failed: e.error };
            // Its place holds null, and the owner's trace says why; it is not run again.
            const error = cut(redact(reasonOf(e.error)), TRACE_ERROR_CHARS);
            const end = now();
            const failedRec: NodeRecord = { state: 'done', rev: (e.rev ?? 0) + 1, started_at: e.start, ended_at: end, value: null, error };
            if (!(await journal.save(jid, failedRec, e.rev, rec?.event !== undefined))) throw new Overtaken();
            return { value: null, error };
          }
        },
        progress(done, total) {
          if (finished || (done !== total && done % every(total) !== 0)) return;
          opts.onNode?.({ node: mapId, type: 'map', state: 'items', at: now(), done, total });
        },
      };
    };
    for (const id of nodes.order) {
      const node = def.nodes[id];
      if (!node) continue;
      const deps = kindOf(node)
        .dependencies(node)
        .map((d) => pending.get(d) ?? Promise.resolve(settled.get(d)));
      // A dependency's rejection skips this node and passes the original failure on unchanged.
      const result = Promise.all(deps).then((values) => runOne(id, node, values));
      result.catch((e: unknown) => {
        if (e instanceof Overtaken) overtaken = true;
        onFailure(e);
      });
      pending.set(id, result);
    }

    Promise.allSettled(pending.values()).then(async (outcomes) => {
      if (finished) return;
      if (outcomes.some((o) => o.status === 'rejected' && !(o.reason instanceof Parked) && !(o.reason instanceof Overtaken))) return;
      if (overtaken) {
        finish({ status: 'continue' });
        return;
      }
      if (parked.length > 0 || leftForLater) {
        try {
          await recordPure();
        } catch (e) {
          onFailure(e);
          return;
        }
        if (leftForLater && parked.every((w) => w.until !== null && w.until <= now())) {
          finish({ status: 'continue' });
          return;
        }
        if (leftForLater) {
          finish({ status: 'continue' });
          return;
        }
        const timers = parked.map((w) => w.until).filter((u): u is number => u !== null);
        const wake = timers.length > 0 ? Math.min(...timers) : null;
        finish({ status: 'waiting', wake, waiting: parked });
        return;
      }
      const outputs: Record<string, RawValue> = {};
      const outputAssets: Record<string, OutputAssetRef> = {};
      const define = <T>(o: Record<string, T>, id: string, value: T) =>
        Object.defineProperty(o, id, { value, enumerable: true, writable: true, configurable: true });
      for (const id of outputNodeIds(def)) {
        const value = settled.get(id);
        if (isRawValue(value)) define(outputs, id, value);
        else if (value instanceof AssetOutput) define(outputAssets, id, copyRef(value.ref));
      }
      finish({ status: 'completed', outputs, ...(Object.keys(outputAssets).length > 0 ? { output_assets: outputAssets } : {}) });
    });
  });
  if (journalError !== undefined) throw journalError;
  return traced;
}

/** What nothing a run keeps may hold: owner secrets' values, and the resume URLs' tokens. */
function redactables(opts: Pick<EngineOptions, 'secrets' | 'resumeUrls'>): string[] {
  return [...(opts.secrets?.values() ?? []), ...Object.values(opts.resumeUrls ?? {}).map(tokenOfResumeUrl)];
}

/** Beyond a non-repeatable call's own time-out, how long its claim keeps another step off it. */
export const LEASE_MARGIN_MS = 30_000;

/** A node's value as a record keeps it: an output passing an asset on keeps the asset's reference. */
function storedValue(value: unknown): Pick<NodeRecord, 'value' | 'output_asset'> {
  if (value instanceof AssetOutput) return { output_asset: copyRef(value.ref) };
  return value === undefined ? {} : { value };
}

/** A copy of what an ASSET output refers to: one file, or a list. */
function copyRef(ref: OutputAssetRef): OutputAssetRef {
  return Array.isArray(ref) ? ref.map((r) => (r === null ? null : { ...r })) : { ...ref };
}

function containsUrl(value: unknown, url: string): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return value.some((v) => containsUrl(v, url));
  const o = value as Record<string, unknown>;
  return o.url === url || Object.values(o).some((v) => containsUrl(v, url));
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

/** Most failed items a map's trace entry lists (the first ones); `item_errors_total` counts them all. */
export const TRACE_ITEM_ERRORS = 20;

function traceItemErrors(errors: readonly ItemError[], redact: (text: string) => string): ItemError[] {
  return errors.slice(0, TRACE_ITEM_ERRORS).map((e) => ({ index: e.index, error: cut(redact(e.error), TRACE_ERROR_CHARS) }));
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
  journal: ReadonlyMap<string, NodeRecord>,
  redact: (text: string) => string,
): NodeTrace[] {
  const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());
  return order.flatMap((id): NodeTrace[] => {
    const node = def.nodes[id];
    if (!node) return [];
    const rec = journal.get(id);
    // A node done in an earlier step: its record says how it went.
    const c: NodeClock | undefined =
      clocks.get(id) ??
      (rec?.state === 'done' && rec.started_at !== undefined
        ? {
            start: rec.started_at,
            end: rec.ended_at ?? rec.started_at,
            value: rec.output_asset ? new AssetOutput(rec.output_asset).toJSON() : rec.value,
            ...(rec.item_errors === undefined ? {} : { itemErrors: rec.item_errors }),
          }
        : rec?.state === 'skipped'
          ? { start: rec.started_at ?? 0, end: rec.ended_at ?? rec.started_at ?? 0, skipped: true }
          : rec?.started_at !== undefined
            ? { start: rec.started_at }
            : undefined);
    const ended = c?.end !== undefined;
    const outcome: NodeTrace['outcome'] = !c
      ? 'not_run'
      : c.skipped
        ? 'skipped'
        : c.error !== undefined
          ? 'failed'
          : ended
            ? 'completed'
            : 'stopped';
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
        ...(c?.itemErrors === undefined || c.itemErrors.length === 0 ? {} : { item_errors: traceItemErrors(c.itemErrors, redact) }),
      },
    ];
  });
}

/** A step's result with every owner secret's value taken out of what leaves it. */
function redactResult<R extends StepResult>(result: R, redact: (text: string) => string): StepResult {
  if (result.status === 'failed')
    return { status: 'failed', error_message: redact(result.error_message), caller_message: redact(result.caller_message) };
  if (result.status === 'completed')
    return {
      status: 'completed',
      outputs: redactDeep(result.outputs, redact),
      ...(result.output_assets === undefined ? {} : { output_assets: result.output_assets }),
    };
  return result;
}

/**
 * One step, plus what each node did so far (see NodeTrace: nodes recorded by earlier steps
 * included). An upstream may echo a credential back (in an error body, a header dump, a JSON
 * field), and a URL may carry one: nothing that leaves the step, result or trace, keeps an
 * owner secret's value.
 */
export async function runStepTraced(
  def: PipelineDefinition,
  inputValues: Record<string, RawValue>,
  opts: StepOptions,
): Promise<{ result: StepResult; trace: NodeTrace[] }> {
  const redact = secretRedactor(redactables(opts));
  const order = nodeOrder(def);
  const before = new Map(opts.journal.nodes);
  const { result, clocks } = await runUnredacted(def, order, inputValues, opts);
  return { result: redactResult(result, redact), trace: buildTrace(def, order.order, clocks, before, redact) };
}

/**
 * Runs a validated definition whole, in this process: steps one after another, waiting between
 * them as the state machine would, with a journal in memory. Each node starts as soon as every
 * node it reads is done; the first node failure, the time-out or a cancellation ends the run at
 * once and aborts whatever is still in flight. Never rejects, and leaves no timer behind once
 * resolved.
 */
export async function runPipeline(
  def: PipelineDefinition,
  inputValues: Record<string, RawValue>,
  opts: EngineOptions,
): Promise<EngineResult> {
  return (await runPipelineTraced(def, inputValues, opts)).result;
}

/** runPipeline, plus what each node did (see NodeTrace). */
export async function runPipelineTraced(
  def: PipelineDefinition,
  inputValues: Record<string, RawValue>,
  opts: EngineOptions & { journal?: MemoryJournal },
): Promise<{ result: EngineResult; trace: NodeTrace[] }> {
  const now = opts.now ?? Date.now;
  const startedAt = opts.startedAt ?? now();
  const journal = opts.journal ?? new MemoryJournal();
  const redact = secretRedactor(redactables(opts));
  const order = nodeOrder(def);
  const clocks = new Map<string, NodeClock>();
  const deadline = startedAt + opts.timeoutMs;
  for (;;) {
    const step = await runUnredacted(def, order, inputValues, { ...opts, startedAt, journal });
    for (const [id, c] of step.clocks) clocks.set(id, c);
    const { result } = step;
    if (result.status === 'waiting' || result.status === 'continue') {
      const until = result.status === 'waiting' ? Math.min(result.wake ?? deadline, deadline) : now();
      const signal = opts.signal ?? new AbortController().signal;
      try {
        await sleep(Math.max(0, until - now()), signal);
      } catch {
        return { result: { status: 'cancelled' }, trace: buildTrace(def, order.order, clocks, journal.nodes, redact) };
      }
      continue;
    }
    return { result: redactResult(result, redact) as EngineResult, trace: buildTrace(def, order.order, clocks, journal.nodes, redact) };
  }
}
