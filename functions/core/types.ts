import type * as v from 'valibot';
import type { ClaimField } from './claim-check';
import type { Limits } from './consumers';
import type { ObjectRef, OutputAssetRef } from './ports';
import type { ExecutionStatus } from './transitions';
import type { InputValueType } from './value-types';

/** A RAW value: what inputs hold and outputs must produce. */
export type RawValue = string | number | boolean;
export type { InputValueType };

/*
 * A definition's types are its schemas' (definition-schema.ts, and each node type's in
 * functions/core/nodes/), so a field added there is typed here at once.
 */
type Schemas = typeof import('./definition-schema');
type Nodes = typeof import('./nodes');

/** What an asset input accepts; both optional (no list: any media type; no size: up to the route's limits). */
export type AssetRestrictions = v.InferOutput<v.ObjectSchema<Schemas['ASSET_RESTRICTIONS'], undefined>>;
export type NodeType = import('./nodes').NodeType;
export type PipelineNode = import('./nodes').PipelineNode;
/** A validated node of one type (`NodeOf<'http'>`), inferred from its kind's schema. */
export type NodeOf<K extends NodeType> = v.InferOutput<Nodes['NODE_KINDS'][K]['object']>;
export type HttpMethod = NonNullable<NodeOf<'http'>['method']>;
/**
 * `retry_interrupted` false: an execution interrupted by a crash of the local runtime is failed
 * rather than run again from the start (for http nodes that are not safe to repeat). Absent
 * means true.
 */
export type PipelineDefinition = Omit<v.InferOutput<Schemas['PipelineDefinitionSchema']>, 'nodes'> & {
  nodes: Record<string, PipelineNode>;
};

/** One problem found in a definition or request: where, and why. */
export interface Problem {
  path: string;
  reason: string;
}

export interface ContractInput extends AssetRestrictions {
  id: string;
  value_type: InputValueType;
  value: RawValue;
  visible: boolean;
}
/** What an output answers: a value (RAW) or a file (ASSET). */
export type OutputKind = 'RAW' | 'ASSET';
export interface ContractOutput {
  id: string;
  visible: boolean;
  /**
   * What the successful run the contract was discovered from answered for it. Absent on
   * contracts published before it was recorded, and where that run's record is gone: RAW or ASSET.
   */
  value_type?: OutputKind;
  /**
   * An ASSET output whose value is a list of files (a map's): its links in order. Absent: one file
   * (or a RAW value).
   */
  list?: boolean;
  /**
   * It may be absent from a completed execution's result and callback: the nodes it comes from
   * may all be skipped (conditions). Absent: always there once completed.
   */
  optional?: boolean;
}
/** A field of a wait node's event (its `fields`). */
export interface ContractWaitField {
  value_type: 'string' | 'integer' | 'float' | 'boolean';
  label?: string;
  description?: string;
}
/**
 * A wait node as the contract shows it: a visible one's resume URL reaches callers (the
 * execution's `waiting` list) and its form is shown on the web form.
 */
export interface ContractWait {
  id: string;
  visible: boolean;
  timeout_ms: number;
  label?: string;
  description?: string;
  /** What its event holds, field by field; absent: any JSON object. */
  fields?: Record<string, ContractWaitField>;
}
export interface Contract {
  inputs: ContractInput[];
  outputs: ContractOutput[];
  /** Wait nodes; absent or null on contracts published before wait nodes (none). */
  waits?: ContractWait[] | null;
}

export type ExecutionKind = 'run' | 'api';
/**
 * Where an execution of a deployment came from: a caller with the key (the REST API), the
 * deployment's web form, or an MCP client's tools/call (with the key too).
 */
export type ExecutionSource = 'api' | 'form' | 'mcp';

/**
 * A deployment's web form (GET /v1/forms/{form_token}). The link's token is never stored: it is
 * derived from `salt` with the master key (functions/core/form-link.ts), so the owner can be
 * shown it again; its lookup item is keyed by `token_hash` (HMAC with the pepper).
 */
export interface FormSettings {
  enabled: boolean;
  title: string | null;
  description: string | null;
  salt: string;
  token_hash: string;
}

export type CallbackOutcome = 'pending' | 'delivered' | 'dead_lettered';
/** One try at delivering a callback, as the owner sees it. */
export interface DeliveryAttempt {
  at: string;
  duration_ms: number;
  /** The receiver's HTTP status, or null when no answer came (see error). */
  status: number | null;
  error: string | null;
  /** Sent because the owner asked for it again (redeliver), not by the retry schedule. */
  redelivery: boolean;
}

export interface CallbackDelivery {
  webhook_id: string;
  attempts: number;
  /** The latest attempts, oldest first (at most DELIVERY_LOG_MAX; `attempts` counts them all). Absent on records from before the log. */
  log?: DeliveryAttempt[];
  /** Set while an owner's redelivery is owed: one attempt, no retry schedule. */
  redelivery?: boolean;
  outcome: CallbackOutcome;
  last_status: number | null;
  last_error: string | null;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
}

/** One execution record: an owner's run or a caller's API execution. */
/**
 * The state machine an execution runs on (functions/core/workflow-type.ts): Express for what
 * ends within its five minutes, Standard for what may wait or run longer.
 */
export type WorkflowType = 'express' | 'standard';

export interface Execution {
  execution_id: string;
  kind: ExecutionKind;
  pipeline_id: string;
  version: number;
  deployment_id: string | null;
  /** The consumer whose key submitted it; null (or absent) for the deployment's own key and runs. */
  consumer_id?: string | null;
  status: ExecutionStatus;
  /** The effective input values the engine runs with (asset inputs: see `assets`). */
  inputs: Record<string, RawValue>;
  /** Asset inputs: where their bytes are stored (never the bytes). Absent on records without assets. */
  assets?: Record<string, ObjectRef> | null;
  /** Every RAW output's value once completed (ASSET outputs: see `output_assets`). */
  outputs: Record<string, RawValue> | null;
  /**
   * ASSET outputs once completed: where their bytes are stored (never the bytes; links are
   * minted from these when the result is read). Absent on records without asset outputs.
   */
  output_assets?: Record<string, OutputAssetRef> | null;
  /**
   * The service's base URL the execution was submitted at: where the links in its callback
   * point when the service has no configured public URL. Absent on older records.
   */
  base_url?: string | null;
  /** Output ids a caller may see (API executions); null for runs, which see all. */
  visible_outputs: string[] | null;
  /**
   * Wait nodes whose resume URL a caller may learn (API executions: the deployment's visible
   * waits when it was submitted). Absent or null: none (runs: the owner sees every one).
   */
  visible_waits?: string[] | null;
  /** 'form': submitted through the deployment's web form; 'mcp': a tools/call. Absent: a caller with the key (or a run). */
  source?: ExecutionSource | null;
  /** A form execution: the hash of the form link that made it, the only link that reads it. */
  form_link?: string | null;
  callback: string | null;
  callback_delivery: CallbackDelivery | null;
  /** Why it failed, for the owner: node, reason, upstream URL and answer, secret names. */
  error_message: string | null;
  /**
   * Why it failed, for callers: the node and a reason that names no URL, body, header or
   * secret. Absent on records written before it existed (see callerErrorMessage).
   */
  caller_error_message?: string | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  /** Epoch seconds after which the record is treated as gone (API executions). */
  expires_at: number | null;
  /**
   * The state-machine execution that moved it to `running`, so a retried MarkRunning whose
   * first write landed recognises its own work.
   */
  run_by?: string | null;
  /** When the sweeper last queued it (or its callback) again. */
  requeued_at?: string | null;
  /**
   * Which workflow runs it (absent: 0, the first): bumped when a waiting execution is woken
   * early (functions/services/wake.ts); a workflow of an older generation stands down.
   */
  gen?: number | null;
  /**
   * The state machine it runs on, from its version (decided at push). Absent on records written
   * before there were two: those run on Standard, which runs anything.
   */
  workflow?: WorkflowType | null;
  /** Times it was run again from the start after a crash of the local runtime interrupted it. */
  reruns?: number | null;
  /** Set while a re-run is owed and no workflow has taken it yet (see ExecutionsPort.markRerun). */
  rerun_at?: string | null;
  /** What each node did (see NodeTrace); null until the engine ran it. */
  trace?: NodeTrace[] | null;
  /** The stored trace was cut to fit the item size limit. */
  trace_truncated?: boolean | null;
  /**
   * Node progress written while the run goes on (functions/core/progress.ts, packed); what a
   * caller's event stream shows of the nodes. Absent until the first node starts.
   */
  progress?: string | null;
  /**
   * While a running execution waits (a long delay, a job between polls, an event): the nodes it
   * waits on, as its last step left them. Packed JSON (WaitingNode[]); absent or null otherwise.
   */
  waiting?: string | null;
  /**
   * Read-time only, never stored: value fields whose object the claim check moved them to is
   * gone (the bucket's expiry, a deleted deployment), so they read as goneValue.
   */
  expired_values?: ClaimField[];
  /** Read-time only, never stored: value fields a list left unread in storage (they read as goneValue). */
  unread_values?: ClaimField[];
}

export interface Deployment {
  deployment_id: string;
  pipeline_id: string;
  version: number;
  /** Bumped on every publish and key rotation; lets readers cache by (id, revision). */
  revision: number;
  status: 'live' | 'deleted';
  inputs: ContractInput[];
  outputs: ContractOutput[];
  /** Wait nodes; absent or null on deployments published before wait nodes (none). */
  waits?: ContractWait[] | null;
  published_at: string;
  created_at: string;
  /** The web form; absent or null when the owner never enabled one. */
  form?: FormSettings | null;
  /**
   * Whether callers' event streams name each node (`node` events with ids, types and times);
   * false leaves only counts `{done, total}`. Absent or null: true.
   */
  node_detail?: boolean | null;
  /** The state machine its version runs on (copied from the version at publish); absent on older records. */
  workflow?: WorkflowType | null;
}

export interface PipelineSummary {
  pipeline_id: string;
  version: number;
  description: string | null;
  created_at: string;
  updated_at: string;
}

export interface RunPointer {
  run_id: string;
  status: ExecutionStatus;
  version: number;
  created_at: string;
}

/** The pipeline's summary item: latest version, run pointers, its deployment slot. */
export interface PipelineMeta extends PipelineSummary {
  latest_hash: string;
  deployment_id: string | null;
  latest_finished: RunPointer | null;
  last_success: RunPointer | null;
}

/** A pipeline as the owner's list shows it: its summary and whether it is live. */
export type PipelineListing = PipelineSummary & { deployment_id: string | null };

/** One immutable version of a pipeline's definition. */
export interface PipelineVersion {
  pipeline_id: string;
  version: number;
  definition: PipelineDefinition;
  hash: string;
  created_at: string;
  /** The state machine its executions run on, decided when it was pushed; absent on versions pushed before. */
  workflow?: WorkflowType;
}

/**
 * An API key's stored hash: current (`expires_at` null), in a rotation's grace period, or
 * retired (past `expires_at`), kept so that a caller can be told why the key stopped.
 */
export interface KeyHash {
  hash: string;
  expires_at: number | null;
  /** Set when a rotation without grace period replaced the key (epoch seconds). */
  revoked_at?: number;
}
export interface SealedSecret {
  sealed: string;
  expires_at: number | null;
}

/** A deployment as stored: the contract plus its key hashes and sealed signing secrets. */
export interface DeploymentRecord extends Deployment {
  key_hashes: KeyHash[];
  signing_secrets: SealedSecret[];
  deleted_at: string | null;
  /** Limits of the deployment's own key (its consumers carry their own); null: none. */
  key_limits?: Limits | null;
}

/** What an Idempotency-Key claimed: the execution it started and the request it carried. */
export interface IdempotencyRecord {
  execution_id: string;
  request_hash: string;
  created_at: string;
}

/**
 * What one node did in a run, for the owner: when it started and ended, how it came out, and a
 * short preview of its value. Previews are cut short (engine.ts TRACE_PREVIEW_CHARS) and
 * redacted; an http node's request (headers, body) is never recorded.
 */
export interface NodeTrace {
  node: string;
  type: NodeType;
  /**
   * completed · failed · stopped (the run ended while it was busy) · not_run (never started) ·
   * skipped (its `if` was false, or a node it reads was skipped).
   */
  outcome: 'completed' | 'failed' | 'stopped' | 'not_run' | 'skipped';
  started_at: string | null;
  completed_at: string | null;
  duration_ms: number | null;
  error: string | null;
  /** An http node's upstream status, when it answered. */
  http_status: number | null;
  preview: string | null;
  /** A map: its items that failed under `on_item_error: "skip"` (the first TRACE_ITEM_ERRORS), and why. */
  item_errors?: { index: number; error: string }[];
}
