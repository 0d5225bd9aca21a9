/**
 * What the domain needs from the outside world. Adapters implement these; services and core
 * depend on them only, never on an adapter, so every rule can be tested on in-memory fakes
 * (test/support/memory-stores.ts) as well as on DynamoDB.
 */
import type { NodeRecord, NodeRecordState } from './engine';
import type { ResumeClaims } from './resume-token';
import type { Resumed } from './nodes/kind';
import type { ObjectOwner } from './object-keys';
import type { ExecutionStatus } from './transitions';
import type { UsageBucket } from './usage';
import type { ConsumerRecord, Limits } from './consumers';
import type {
  CallbackDelivery,
  FormSettings,
  DeploymentRecord,
  ContractInput,
  ContractOutput,
  ContractWait,
  Execution,
  IdempotencyRecord,
  KeyHash,
  NodeTrace,
  PipelineDefinition,
  PipelineMeta,
  PipelineListing,
  PipelineVersion,
  RunPointer,
  SealedSecret,
  WorkflowType,
} from './types';

/** The queues the domain sends to; lib/queues.ts defines each one (time-outs, receives, batches) by these names. */
export const QUEUE_NAMES = ['executions', 'callbacks'] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];
export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  /**
   * Text is sent as UTF-8; bytes as they are; a sized stream (an http node's `body_asset`, read
   * from storage as it is sent) with that Content-Length, and the call fails if the stream
   * yields any other number of bytes.
   */
  body?: string | Uint8Array | SizedStream;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Bodies past this size are cut off and the call fails. */
  maxResponseBytes?: number;
  /**
   * When set, an answer whose Content-Type is binary (output-assets.ts isBinaryMediaType) may be
   * this large instead, and comes back as `stream` (with `body` empty) rather than as text.
   */
  maxBinaryResponseBytes?: number;
  /**
   * With maxBinaryResponseBytes: every answer comes back as `stream`, whatever its Content-Type
   * (none, or a text type): a file fetched for its bytes, which decoding as text would change.
   */
  bytesWhateverType?: boolean;
}

/** Bytes that arrive as they are read, with their size known up front. */
export interface SizedStream {
  bytes: number;
  stream: AsyncIterable<Uint8Array>;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /**
   * A binary answer's bytes as they arrive, when the request set maxBinaryResponseBytes: never
   * held whole. Reading past maxBinaryResponseBytes throws an error naming the limit; the
   * exchange's time-out and signal still apply while it is read. Whoever receives it must read
   * it to the end or end it early (its iterator's `return`), which closes the connection.
   */
  stream?: AsyncIterable<Uint8Array>;
}

/**
 * One HTTP exchange through the address guard. It rejects (throws an Error whose message is
 * fit to show a user) on a blocked address, a time-out, an abort or a network failure; it
 * never follows redirects (a 3xx is returned as it is).
 */
export type HttpPort = (req: HttpRequest) => Promise<HttpResponse>;

/** What the steps store needs of an execution: where its objects live and when its records expire. */
export type StepOwner = Pick<Execution, 'execution_id' | 'kind' | 'deployment_id' | 'pipeline_id' | 'expires_at'>;

/**
 * An execution's nodes as its steps record them (functions/core/engine.ts NodeRecord), one item
 * each beside the execution's record; values too large for an item live in the bucket.
 */
export interface StepsPort {
  /** Every node record of the execution, read strongly. */
  load(e: StepOwner): Promise<Map<string, NodeRecord>>;
  /** The step's conditional write (functions/core/engine.ts Journal.save). */
  save(e: StepOwner, node: string, rec: NodeRecord, prev: number | undefined, sawEvent: boolean): Promise<boolean>;
  /**
   * A resume's event, kept once, in one conditional write: not kept when one was kept before
   * (`used`) or the node is done without one (`ended`: it timed out); otherwise the node's
   * state before it (`waiting`: the execution is parked on it and must be woken).
   */
  keepEvent(e: StepOwner, node: string, event: Resumed): Promise<KeptEvent>;
  /** Whether a node has an event and its state, without its values (undefined state: no step wrote it yet). */
  peek(e: StepOwner, node: string): Promise<{ state: NodeRecordState | undefined; evented: boolean }>;
}

/** Not kept: `used`, one was kept before; `ended`, the node is done (timed out); `skipped`, its `if` skipped it. */
export type KeptEvent = { kept: false; why: 'used' | 'ended' | 'skipped' } | { kept: true; state: NodeRecordState | undefined };

/** An owner secret as anyone may see it: never its value. */
export interface OwnerSecretSummary {
  name: string;
  updated_at: string;
}

/** Owner secrets, sealed at rest (see functions/core/owner-secrets.ts for their use). */
export interface OwnerSecretsPort {
  /** Creates or replaces a secret. */
  put(name: string, value: string, updatedAt: string): Promise<OwnerSecretSummary>;
  /** Every secret's name and when it was last set, by name. */
  list(): Promise<OwnerSecretSummary[]>;
  /** False when there was no such secret. */
  remove(name: string): Promise<boolean>;
  /**
   * The values of those of `names` that are set. Read at most once per process per TTL: a
   * changed value is seen within the TTL, a write through this same port at once.
   */
  values(names: readonly string[]): Promise<Map<string, string>>;
}

export interface Clock {
  now(): Date;
}

export interface IdSource {
  uuid(): string;
}

/** Messages out to the executions and callbacks queues (SQS on AWS, durable local queues). */
export interface QueuePort {
  send(queue: QueueName, body: Record<string, unknown>, opts?: { delaySeconds?: number }): Promise<void>;
}

/**
 * The state machines, Express and Standard (one document, two types): one workflow execution
 * per pipegate execution and generation, named by its id, on the machine its version chose.
 */
export interface WorkflowPort {
  /** Starts the workflow; a second start of the same name is harmless and reports so. */
  start(workflow: WorkflowType, name: string, input: Record<string, unknown>): Promise<'started' | 'already_exists'>;
  /**
   * Stops it if it is still going; stopping a finished or unknown one is not an error. Only a
   * Standard workflow can be stopped: on Express there is nothing to call.
   */
  stop(workflow: WorkflowType, name: string, cause: string): Promise<void>;
}

/**
 * Wakes callers that wait for an execution to finish (`Prefer: wait`). A wake only means "read
 * the record again": it may come before the execution is terminal, and the reader decides.
 */
/**
 * Admission to wait: a bounded number of callers of one function may hold a request open at
 * once. `acquire` answers null when the bound is reached (the caller is answered at once
 * instead); a slot is given back with `release`, and one that is never given back (a process
 * that died) lapses on its own.
 */
export interface WaitSlotsPort {
  acquire(now: Date): Promise<WaitSlot | null>;
}

export interface WaitSlot {
  release(): Promise<void>;
}

export interface CompletionsPort {
  /**
   * Starts watching one execution. Watch first, then read the record: a completion written
   * between the read and the wait still wakes the watcher.
   */
  watch(executionId: string): CompletionWatch;
  /** Called by the one place that writes terminal states, after the write won. */
  notify(executionId: string): void;
}

export interface CompletionWatch {
  /** Resolves true when the record is worth reading again, false when `ms` passed first. */
  next(ms: number): Promise<boolean>;
  /** Stops watching; always called, also when the wait ends early. */
  close(): void;
}

/* ------------------------------------------------------------------ stores */

/** The sweep index names what a restart or a sweeper must look at again. */
export type SweepKind = 'open' | 'callback';

export type TransitionResult = { ok: true; execution: Execution } | { ok: false; current: Execution | null };

export type TransitionFields = Partial<
  Pick<
    Execution,
    | 'started_at'
    | 'completed_at'
    | 'error_message'
    | 'caller_error_message'
    | 'outputs'
    | 'callback_delivery'
    | 'run_by'
    | 'trace'
    | 'trace_truncated'
    | 'progress'
  >
>;

/** A list cursor that this store did not hand out (or handed out for another list). */
export class InvalidCursorError extends Error {}

/**
 * What a status poll shows of an execution (views.ts statusBody) and what tells whose it is:
 * a few hundred bytes whatever the record holds (inputs and outputs up to 256 KiB each).
 */
export const EXECUTION_HEAD_FIELDS = [
  'execution_id',
  'kind',
  'deployment_id',
  'pipeline_id',
  'status',
  'created_at',
  'started_at',
  'completed_at',
  'expires_at',
  'error_message',
  'caller_error_message',
  // While it waits: which wait nodes (and the caller may learn the URL of which), for its `waiting` list.
  'waiting',
  'visible_waits',
] as const;
export type ExecutionHead = Pick<Execution, (typeof EXECUTION_HEAD_FIELDS)[number]>;

/**
 * What an owner's list of a deployment's executions shows of each (views.ts
 * executionSummaryBody), and what its filters and expiry read: no inputs, outputs or trace.
 */
export const EXECUTION_SUMMARY_FIELDS = [
  'execution_id',
  'kind',
  'source',
  'consumer_id',
  'deployment_id',
  'pipeline_id',
  'status',
  'created_at',
  'started_at',
  'completed_at',
  'expires_at',
  'error_message',
  'callback_delivery',
] as const;
export type ExecutionSummaryRecord = Pick<Execution, (typeof EXECUTION_SUMMARY_FIELDS)[number]>;

/**
 * The execution records: one item each, written once and then moved only by conditional
 * writes (functions/adapters/executions.store.ts).
 */
export interface ExecutionsPort {
  /** Writes a new execution; false when one with that id already exists. */
  create(e: Execution): Promise<boolean>;
  /** The execution, or null when unknown, malformed or past its retention. */
  get(id: string, now: Date, consistent?: boolean): Promise<Execution | null>;
  /** Its head only (EXECUTION_HEAD_FIELDS), read with a projection: a read unit whatever the record's size. */
  getHead(id: string, now: Date, consistent?: boolean): Promise<ExecutionHead | null>;
  /**
   * Moves an execution to `to` only from a status the transition table allows, in one
   * conditional write: retries, duplicates and races never produce a second terminal status.
   */
  transition(id: string, to: ExecutionStatus, set: TransitionFields): Promise<TransitionResult>;
  /** Deletes an execution only while it is still `pending` (its queue message could not be sent). */
  withdrawPending(id: string): Promise<boolean>;
  /**
   * Replaces the node progress (packed, functions/core/progress.ts) of a running execution, in
   * one conditional write; false once it is no longer running (a cancel won), so a late write
   * never lands after the terminal one. `waiting` is given by a step that ended (it parked, or
   * its time ran out): that write also clears `reruns`, so an execution's re-runs after crashes
   * are counted from its last finished step, as a RunNodes state on AWS gets its retries afresh
   * each time it is entered. A crash that keeps killing one step still runs out of re-runs; a
   * job polled for a day lives through any number of restarts between its polls.
   */
  recordProgress(id: string, progress: string, waiting?: string | null): Promise<boolean>;
  /**
   * Replaces a running execution's `waiting` list, only if it is still `before` (a resume takes
   * its node off the list at once, so views stop offering a URL that was used); false otherwise.
   */
  replaceWaiting(id: string, before: string, after: string | null): Promise<boolean>;
  /**
   * Moves a running execution to its next generation (`seen` + 1), once: false when it is not
   * running or another wake moved it first. The workflow of that generation takes it over.
   */
  bumpGeneration(id: string, seen: number): Promise<boolean>;
  /** Stores the trace of an execution cancelled while it ran (once; only on a cancelled one). */
  recordTrace(id: string, set: { trace: NodeTrace[]; trace_truncated: boolean }): Promise<boolean>;
}

/** A finished execution's callback delivery, kept on its record (functions/adapters/deliveries.store.ts). */
export interface DeliveriesPort {
  /**
   * Claims the next delivery attempt (the one after `attempts`) for `by` until `untilMs`, so
   * that of duplicate messages only one sends it. Conditional on the attempt count and a
   * pending outcome, and on no live claim of another for this attempt; `by`'s own claim may be
   * taken again (its message came back). False when any of that does not hold.
   */
  claimDelivery(id: string, attempts: number, by: string, untilMs: number, nowMs: number): Promise<boolean>;
  /** Records a delivery attempt, conditional on the attempt count read before. */
  recordDelivery(id: string, previousAttempts: number, delivery: CallbackDelivery): Promise<boolean>;
  /** Puts a settled callback back to pending as one owner redelivery, conditional on `previous`; null if it changed. */
  redeliver(id: string, previous: CallbackDelivery, at: string): Promise<Execution | null>;
  /**
   * Brings a callback's next scheduled attempt forward to `at`, conditional on `previous`
   * (same attempts, still pending, the same next attempt time); null if it changed.
   */
  attemptNow(id: string, previous: CallbackDelivery, at: string): Promise<Execution | null>;
}

/**
 * The sweep index and the repairs made from it: what the sweeper and a local start-up find
 * open, re-queue or re-run (functions/adapters/sweep.store.ts).
 */
export interface SweepPort {
  /** One page of the sweep index: ids of `kind` marked before `before`, oldest first. */
  sweepPage(
    kind: SweepKind,
    before: string,
    limit: number,
    cursor?: Record<string, unknown>,
  ): Promise<{ ids: string[]; next: Record<string, unknown> | undefined }>;
  /** Executions on the sweep index of that kind (oldest first), at most `limit`. */
  listSweep(kind: SweepKind, limit?: number): Promise<Execution[]>;
  /**
   * Notes that the sweeper queued an execution (or its callback) again, conditional on what it
   * saw. `releaseClaim` drops any claim on the next delivery attempt in the same write: only for
   * a local start-up, when every holder is known dead (its process was the one before this one).
   */
  markRequeued(
    id: string,
    seen: { status: 'pending' } | { attempts: number },
    at: string,
    opts?: { releaseClaim?: boolean },
  ): Promise<boolean>;
  /**
   * A `running` execution whose process died is owed a run from its last recorded step: one
   * write, conditional on the status and on the re-run count seen (`reruns`), bumps the count,
   * sets `rerun_at` and drops `run_by`. `started_at` stays: the execution's time-out runs from
   * its first start, restarts included. False when it moved on, or another recovery won.
   */
  markRerun(id: string, seenReruns: number, at: string): Promise<boolean>;
  /**
   * The workflow `runBy` takes an owed re-run: `run_by` set and `rerun_at` removed, only while the
   * execution is `running` with a re-run owed, so one workflow alone proceeds.
   */
  claimRerun(id: string, runBy: string): Promise<boolean>;
  /** Takes a settled execution (terminal, no callback owed) off the sweep index; false if it is not settled. */
  clearSweep(id: string): Promise<boolean>;
}

/** The owner's lists of runs and of a deployment's executions, read from indexes (functions/adapters/execution-lists.store.ts). */
export interface ExecutionListsPort {
  /** A pipeline's runs, newest first, a page at a time; `cursor` is what the previous page returned. */
  listRuns(pipelineId: string, opts: { limit: number; cursor?: string }): Promise<{ runs: Execution[]; next: string | null }>;
  /**
   * A deployment's API executions, newest first, from an index (never a scan); with `status`,
   * the page may hold fewer than `limit` (a bounded number of entries is looked at) and `next`
   * continues after the last one looked at. `since`: created at or after (ISO time). The
   * executions are summaries (EXECUTION_SUMMARY_FIELDS, read with a projection): an error
   * message kept in the bucket (functions/core/claim-check.ts) is read back, no other value;
   * `get` reads one whole.
   */
  listByDeployment(
    deploymentId: string,
    opts: { limit: number; since?: string; status?: ExecutionStatus; cursor?: string; now: Date },
  ): Promise<{ executions: ExecutionSummaryRecord[]; next: string | null }>;
}

/** A deployment's usage counters (functions/adapters/usage.store.ts). */
export interface UsagePort {
  /** Counts a finished API execution in its deployment's usage bucket. */
  countFinished(e: Execution): Promise<void>;
  /** A deployment's usage buckets from `from` on. */
  usageSince(deploymentId: string, from: Date): Promise<UsageBucket[]>;
}

/** Idempotency-Key claims of the execute route (functions/adapters/idempotency.store.ts). */
export interface IdempotencyPort {
  /** Claims an Idempotency-Key until `expiresAt` (epoch seconds) with one conditional write. */
  claimIdempotency(
    deploymentId: string,
    keyHash: string,
    record: IdempotencyRecord,
    expiresAt: number,
    now: Date,
  ): Promise<{ claimed: true } | { claimed: false; existing: IdempotencyRecord }>;
}

export interface PipelinesPort {
  getMeta(id: string, consistent?: boolean): Promise<PipelineMeta | null>;
  getVersion(id: string, version: number): Promise<PipelineVersion | null>;
  list(): Promise<PipelineListing[]>;
  /**
   * Stores a definition as the next version unless it equals the latest one, with the state
   * machine its executions run on (kept with the version; absent: decided when it is read).
   */
  push(
    id: string,
    definition: PipelineDefinition,
    hash: string,
    now: string,
    workflow?: WorkflowType,
  ): Promise<{ version: number; created: boolean }>;
  /** Records a finished run on the pipeline, keeping only the newest (by creation time). */
  recordRunFinished(id: string, run: RunPointer): Promise<void>;
  /** Claims the pipeline's single deployment slot: succeeds only if it holds `expected`. */
  claimDeployment(id: string, expected: string | null, next: string | null): Promise<boolean>;
}

/** What the owner may change of a consumer (revision and revocation are the store's). */
export type ConsumerChanges = Partial<
  Pick<
    ConsumerRecord,
    'name' | 'rate_limit' | 'quota' | 'expires_at' | 'metadata' | 'key_hashes' | 'key_prefix' | 'updated_at' | 'revoked_at'
  >
>;
/** What the usage view counts of a caller besides its finished executions. */
export type CallerTally = 'accepted' | 'refused_rate' | 'refused_quota';

export interface ConsumersPort {
  get(deploymentId: string, consumerId: string, consistent?: boolean): Promise<ConsumerRecord | null>;
  list(deploymentId: string): Promise<ConsumerRecord[]>;
  create(c: ConsumerRecord): Promise<boolean>;
  /** Applies to a consumer not revoked and still at `revision`; null otherwise. */
  update(deploymentId: string, consumerId: string, revision: number, changes: ConsumerChanges): Promise<ConsumerRecord | null>;
  touch(deploymentId: string, consumerId: string, at: string, olderThan: string): Promise<void>;
  /** One more on a limit counter unless it reached `limit`: the new count, or null (refused). */
  take(deploymentId: string, subject: string, counter: string, limit: number, expiresAt: number): Promise<number | null>;
  giveBack(deploymentId: string, subject: string, counter: string): Promise<void>;
  tally(deploymentId: string, subject: string, what: CallerTally, at: Date): Promise<void>;
}

/** What a publish of another version replaces on a live deployment. */
export interface Republished {
  version: number;
  inputs: ContractInput[];
  outputs: ContractOutput[];
  /** Wait nodes, with their visibility. */
  waits: ContractWait[];
  published_at: string;
  node_detail: boolean;
  workflow: WorkflowType;
}

export interface DeploymentsPort {
  get(id: string, consistent?: boolean): Promise<DeploymentRecord | null>;
  create(r: DeploymentRecord): Promise<boolean>;
  /** Each update below applies only to a live deployment still at `revision`; null otherwise. */
  republish(id: string, revision: number, next: Republished): Promise<DeploymentRecord | null>;
  replaceKeys(id: string, revision: number, keyHashes: KeyHash[]): Promise<DeploymentRecord | null>;
  replaceSigningSecrets(id: string, revision: number, secrets: SealedSecret[]): Promise<DeploymentRecord | null>;
  /** The limits of the deployment's own key (null: none). */
  setKeyLimits(id: string, revision: number, limits: Limits | null): Promise<DeploymentRecord | null>;
  /** Deletion keeps a tombstone (key hashes stay, so the deleted deployment's key answers 404). */
  markDeleted(id: string, at: string): Promise<boolean>;
  /** Sets the web form (a live deployment still at `revision`); null otherwise. */
  setForm(id: string, revision: number, form: FormSettings): Promise<DeploymentRecord | null>;
}

/**
 * Web-form links and their rate counters. A link's lookup item maps the token's hash to its
 * deployment; the deployment's own `form` decides whether it still works (so a rotation, a
 * disable or a delete is one conditional write on the deployment, effective at once).
 */
export interface FormsPort {
  /** Records a link's hash for a deployment, before the deployment names it. */
  putLink(tokenHash: string, deploymentId: string): Promise<void>;
  /** The deployment a link's hash was recorded for, or null. */
  findLink(tokenHash: string): Promise<string | null>;
  removeLink(tokenHash: string): Promise<void>;
  /**
   * Counts one action against `key` in the fixed window starting at `windowStart` (epoch
   * seconds) and returns the window's count including it. The counter lapses at `expiresAt`.
   */
  count(key: string, windowStart: number, expiresAt: number): Promise<number>;
}

/**
 * Store adapters signal a store that cannot be reached or is overloaded with these error
 * names or socket codes (the AWS SDK's own): worth a 503 and a wait, not a 500.
 */
export const isStoreUnavailable = (e: unknown): boolean => {
  if (typeof e !== 'object' || e === null) return false;
  const name = (e as { name?: string }).name ?? '';
  const code = (e as { code?: string }).code ?? '';
  return (
    [
      'ProvisionedThroughputExceededException',
      'ThrottlingException',
      'RequestLimitExceeded',
      'ServiceUnavailable',
      'InternalServerError',
      'TimeoutError',
    ].includes(name) || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'].includes(code)
  );
};

/* ------------------------------------------------------------------ key material */

/** The service's own key material: the pepper for API-key hashes and the key that seals signing secrets. */
export interface KeyMaterial {
  pepper: Buffer;
  masterKey: Buffer;
}
export interface KeyMaterialPort {
  material(): Promise<KeyMaterial>;
}

/**
 * Data keys for envelope encryption (functions/core/envelope.ts), from a KMS key: a fresh one
 * for each seal, and an encrypted one opened again under the same encryption context only.
 */
export interface DataKeysPort {
  /** A new 32-byte data key, in plaintext (used once, then dropped) and encrypted under the KMS key (stored). */
  generate(context: Readonly<Record<string, string>>): Promise<{ plaintext: Buffer; encrypted: Buffer }>;
  /** The plaintext of an encrypted data key; a wrong context, key or blob throws. */
  decrypt(encrypted: Buffer, context: Readonly<Record<string, string>>): Promise<Buffer>;
}

/* ------------------------------------------------------------------ object storage */

/**
 * Bytes never live in a record: asset values and any value too large for an execution item
 * are kept as objects (S3 on AWS; the local runtimes' S3 emulation elsewhere) and records hold
 * an `ObjectRef`. Keys are chosen by the domain (functions/core), never by a caller, and always
 * start with the deployment or pipeline they belong to, so deleting one can remove or refuse
 * them all.
 */
export interface ObjectRef {
  /** The object's key in the one bucket, e.g. `d/<deployment_id>/e/<execution_id>/<node>`. */
  key: string;
  /** Sniffed from the bytes, never trusted from a caller. */
  media_type: string;
  bytes: number;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
}

/**
 * What an ASSET output refers to: one stored file, or a list of them in order (a map's files;
 * null where an item failed under `on_item_error: "skip"`).
 */
export type OutputAssetRef = ObjectRef | (ObjectRef | null)[];

/** Bytes `start` to `end` of an object, both inclusive (HTTP's Range arithmetic). */
export interface ByteRange {
  start: number;
  end: number;
}

export interface OpenedObject {
  /** The whole object's size, whatever range was asked for. */
  bytes: number;
  media_type: string;
  body: AsyncIterable<Uint8Array>;
}

/** Where a client sends the bytes of an upload itself: a presigned PUT of exactly `bytes`. */
export interface PresignedUpload {
  url: string;
  method: 'PUT';
  /** Headers the PUT must carry exactly as given (Content-Type, Content-Length, …). */
  headers: Record<string, string>;
  expires_at: string;
}

/** A time-limited URL that serves one object's bytes. */
export interface PresignedDownload {
  url: string;
  expires_at: string;
}

/**
 * An object being written in parts: nothing is visible at its key until `complete`, and `abort`
 * leaves nothing behind (on S3, the bucket's lifecycle rule also removes the parts of an upload
 * neither completed nor aborted, a day after it began).
 */
export interface PartedWrite {
  /** Sends the next part, numbered from 1 in call order: each but the last at least MIN_PART_BYTES. */
  part(bytes: Uint8Array): Promise<void>;
  complete(): Promise<void>;
  abort(): Promise<void>;
}

/** S3's smallest part of a multipart upload, the last one excepted (5 MiB). */
export const MIN_PART_BYTES = 5 * 1024 * 1024;

export interface ObjectStorePort {
  /** Stores the bytes under `key` (replacing any object there). */
  put(key: string, body: Uint8Array, mediaType: string): Promise<void>;
  /** Size and stored media type, or null when there is no such object. */
  head(key: string): Promise<{ bytes: number; media_type: string } | null>;
  /** The bytes (or the first `maxBytes` of them), or null when there is no such object. */
  read(key: string, maxBytes?: number): Promise<Uint8Array | null>;
  /**
   * The bytes as a stream, for answers too large to hold in memory (the asset route): the
   * object's size and media type, and its body (bytes `range.start`..`range.end` inclusive when
   * a range is given, which must lie within the object). Null when there is no such object.
   * Optional: where an adapter lacks it, the asset route falls back to `read`, whole.
   */
  open?(key: string, range?: ByteRange): Promise<OpenedObject | null>;
  /**
   * Starts an object written in parts as its bytes arrive (S3's multipart upload), stored as
   * `mediaType`. Optional: where an adapter lacks it, a streamed write is held whole and `put`.
   */
  begin?(key: string, mediaType: string): Promise<PartedWrite>;
  /** Removes the objects; unknown keys are not an error. */
  remove(keys: readonly string[]): Promise<void>;
  /**
   * Removes every object whose key starts with `prefix` (a deployment's or execution's), or the
   * first `maxKeys` of them (a bounded pass; what is left stays for the next pass or the
   * bucket's lifecycle expiry); answers how many it removed.
   */
  removePrefix(prefix: string, opts?: { maxKeys?: number }): Promise<number>;
  /** A PUT URL accepting exactly `bytes` bytes of `mediaType` at `key`, valid `ttlSeconds`. */
  presignUpload(key: string, mediaType: string, bytes: number, ttlSeconds: number): Promise<PresignedUpload>;
  /**
   * A GET URL for `key`, valid `ttlSeconds`, answering with `mediaType`, `nosniff`, and
   * `Content-Disposition: attachment` when `attachment` (anything a browser could run).
   */
  presignDownload(key: string, mediaType: string, ttlSeconds: number, attachment: boolean): Promise<PresignedDownload>;
}

/**
 * Capability links to stored objects, as callers, callbacks and browsers receive them: a URL
 * on this service that serves one object's exact bytes with its media type, `nosniff`, and
 * `attachment` where a browser could run it; signed and expiring, it cannot be listed, guessed
 * or altered, and stops working at once when the deployment (or pipeline) it belongs to is
 * deleted. A fresh link is minted every time a result is read.
 */
/** Wait nodes' resume URLs (functions/core/resume-token.ts): derived where shown, checked where used. */
export interface ResumeLinksPort {
  /** The resume URL of one wait node of an execution, under `baseUrl`. */
  url(baseUrl: string, executionId: string, nodeId: string): Promise<string>;
  /** Whose wait a token resumes; null for a token this service never issued. */
  check(token: string): Promise<ResumeClaims | null>;
}

export interface AssetLinksPort {
  /**
   * `baseUrl` is the service's public base (functions/adapters/api.ts publicBaseUrl); the link
   * works for `ttlSeconds` (default: the configured link lifetime); a browser saves it as
   * `fileName` (else after the object key).
   */
  link(ref: ObjectRef, baseUrl: string, now: Date, ttlSeconds?: number, fileName?: string): Promise<PresignedDownload>;
}

/* ------------------------------------------------------------------ uploads */

/**
 * An upload: a presigned PUT handed out by an uploads route, usable in one execution of its
 * owner until it expires. A caller's belongs to a deployment (`d/<deployment>/u/<upload>`), an
 * owner's to a pipeline (`p/<pipeline>/u/<upload>`), whose runs alone may use it.
 */
export interface UploadRecord {
  upload_id: string;
  owner: ObjectOwner;
  /** What the caller said it would send; the bytes are sniffed again when the upload is used. */
  media_type: string;
  bytes: number;
  created_at: string;
  /** Epoch seconds after which the upload is treated as gone. */
  expires_at: number;
  /** The execution that used it (single use), or null. */
  used_by: string | null;
}

export interface UploadsPort {
  create(u: UploadRecord): Promise<void>;
  /** The upload, or null when unknown, malformed or expired. */
  get(id: string, now: Date): Promise<UploadRecord | null>;
  /**
   * Marks the upload used by `executionId`, in one conditional write: only while it belongs to
   * `owner`, has not expired, and is unused or already used by that same execution (a retried
   * request). False when any of that does not hold.
   */
  consume(id: string, owner: ObjectOwner, executionId: string, now: Date): Promise<boolean>;
}
