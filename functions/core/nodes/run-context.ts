/**
 * What a node's run receives from the engine (functions/core/engine.ts builds it): the run's
 * ports and limits, and the engine's own services (expression evaluation within the run's
 * limits, the loop guard, sleeping until the run ends). Node kinds import none of those
 * themselves, so declaring a kind pulls no evaluator into a bundle.
 */
import type { HttpPort, ObjectRef, OutputAssetRef, SizedStream } from '../ports';
import type { RawValue } from '../types';

/** An asset as a transform or http node sees it. */
export interface AssetView {
  url: string;
  media_type: string;
  bytes: number;
  sha256: string;
  /** When `url` stops working (ISO 8601). */
  expires_at: string;
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

/** An asset this run holds: where it is stored and how nodes see it. */
export interface HeldAsset {
  ref: ObjectRef;
  view: AssetView;
}

/** An output node's value when it is an asset of this run, or a list of them; stored as references only. */
export class AssetOutput {
  constructor(readonly ref: OutputAssetRef) {}

  /** What the owner's trace preview shows: never a URL. */
  toJSON(): Record<string, unknown> {
    const r = this.ref;
    if (Array.isArray(r))
      return { value_type: 'ASSET', files: r.map((f) => (f === null ? null : { media_type: f.media_type, bytes: f.bytes })) };
    return { value_type: 'ASSET', media_type: r.media_type, bytes: r.bytes };
  }
}

/**
 * A wait this short is made inside the step: the state machine's Wait counts whole seconds, and
 * a transition costs more than the wait.
 */
export const IN_STEP_WAIT_MAX_MS = 1_000;

/**
 * One item of a map as its step left it: done (a failure recorded under `on_item_error: "skip"`
 * is done, its value null and `error` why), failed just now (the error, not recorded), waiting
 * until a time (a job between polls: it keeps its place among the items under way), or not
 * started because the step's time is spent.
 */
export type ItemOutcome = { value: unknown; error?: string } | { failed: unknown } | { waiting: number } | { later: true };

/** What a map node's run is given to run its items, each a checkpointed step of its own. */
export interface MapItems {
  /** Whether an earlier step recorded the item as ended. */
  ended(index: number): boolean;
  /**
   * The item's next step: its recorded value, its first step or its next one, recorded as the
   * map's node `node` (given `values` in its `inputs` order) under `<map id>.<index>`. With
   * `recordFailure`, a failure is recorded as the item's end (null, and why).
   */
  run(index: number, node: ItemNode, values: readonly unknown[], recordFailure: boolean): Promise<ItemOutcome>;
  /** Told each time an item ends in this step: how many have ended of how many. */
  progress(done: number, total: number): void;
}

/** A map's node as each item runs it: an http or transform node reading the map's inputs, `item` and `index`. */
export type ItemNode = Extract<import('./index').PipelineNode, { type: 'http' | 'transform' }>;

export interface RunContext {
  http: HttpPort;
  /** The execution's id (absent in a run outside any execution). */
  executionId: string | undefined;
  /** Epoch milliseconds now. */
  now(): number;
  /** When the whole run must have ended (epoch ms). */
  deadline: number;
  /** Aborts when the run ends (finished, failed, timed out or cancelled). */
  signal: AbortSignal;
  /** Owner secret values the definition references, by name. */
  secrets: ReadonlyMap<string, string>;
  /** Each wait node's resume URL, by node id (`$resume_url('id')`, `{{resume_url.id}}`). */
  resumeUrls: Readonly<Record<string, string>>;
  /** The values the run was given, by input id (asset inputs: see `assets`). */
  inputValues: Readonly<Record<string, RawValue>>;
  /** Asset inputs by id, as nodes see them. */
  assets: Readonly<Record<string, AssetView>> | undefined;
  /** Where each asset input of `assets` is stored. */
  assetRefs: Readonly<Record<string, ObjectRef>> | undefined;
  /** Object storage for assets the run makes and sends; absent where there is none. */
  objects: EngineObjects | undefined;
  /** A JSONata expression over `input`, within the run's expression limits and deadline. */
  evaluate(text: string, input: Record<string, unknown>, bindings?: Record<string, unknown>): Promise<unknown>;
  /** Refuses (throws LoopGuardError) a URL on this service's own API. */
  guard(url: string): void;
  /** Resolves after `ms`, or rejects as soon as the run ends. */
  sleep(ms: number): Promise<void>;
  /** Records an asset the run now holds, so that outputs and bodies may pass it on. */
  hold(asset: HeldAsset): void;
  /**
   * The asset of this run a value stands for, or null. A value is one only when it is an object
   * whose `url` is that of an asset the run holds, and whose other fields, if given, agree with
   * it: nothing a transform writes can name an object the run does not hold.
   */
  held(value: unknown): HeldAsset | null;
  /** A map node's items (functions/core/nodes/map.ts), by the map's id. */
  items(mapId: string): MapItems;
}

/** The object a JSONata expression sees: each dependency's value by id, absent when it has none. */
export function scope(ids: readonly string[], values: readonly unknown[]): Record<string, unknown> {
  // No prototype, so a node id can never reach Object.prototype members.
  const out = Object.create(null) as Record<string, unknown>;
  ids.forEach((id, i) => {
    const value = values[i];
    if (value !== undefined) out[id] = value;
  });
  return out;
}
