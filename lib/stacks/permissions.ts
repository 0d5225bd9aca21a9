/**
 * What each function may touch on AWS, as data: the service stack grants exactly this and the
 * stack tests check the synthesized policies against it. Plain data: no aws-cdk-lib.
 */
import { routeHandlers, WORKERS, type FunctionName } from '../routes';
import type { QueueName } from '../queues';

/** Item actions on the main table. */
export type TableAction = 'GetItem' | 'PutItem' | 'UpdateItem' | 'DeleteItem';
/** What a Query reads: the table itself (by partition key) or one of its indexes. */
export type QueryTarget = 'table' | 'gsi1' | 'sweep' | 'executions';
export type StatesAction = 'StartExecution' | 'StopExecution';
export type OwnerSecretsAction = 'seal' | 'open';
/** What each owner-secrets action is on the KMS key. */
export const OWNER_SECRETS_KMS_ACTIONS: Readonly<Record<OwnerSecretsAction, string>> = { seal: 'kms:GenerateDataKey', open: 'kms:Decrypt' };
/**
 * What a function does with objects in the one bucket: read (GetObject, which HeadObject and
 * presigned GETs are authorized as), delete (DeleteObject and, to find what a prefix holds,
 * ListBucket). Writes are PutObject on one key family each (functions/core/object-keys.ts):
 * caller-execution under the API executions (`d/<deployment>/e/<execution>/…`), owner-run under
 * the owners' runs (`p/<pipeline>/r/<run>/…`), caller-upload and owner-upload under the callers'
 * and owners' uploads (`d/<deployment>/u/<upload>`, `p/<pipeline>/u/<upload>`), for the presigned
 * PUTs. multipart-abort is AbortMultipartUpload under both execution families, for a streamed
 * write that fails (PutObject covers a multipart upload's Create, UploadPart and Complete).
 */
export type ObjectAction = 'read' | 'delete' | 'caller-execution' | 'owner-run' | 'multipart-abort' | 'owner-upload' | 'caller-upload';
export type { QueueName };

export interface FunctionAccess {
  /** DynamoDB item actions on the main table. */
  table: readonly TableAction[];
  /** Where the function Queries: each index by name (no index wildcard), the table only if listed. */
  query: readonly QueryTarget[];
  /** Queues the function sends to. */
  send: readonly QueueName[];
  /** The queue whose event source invokes the function. */
  consumes?: QueueName;
  /**
   * Reads the key material secret (pepper and master key); 'pepper': the pepper's own secret
   * only, for the functions that never need the master key (the authorizer, the form page and
   * upload, consumer keys).
   */
  secret: boolean | 'pepper';
  /**
   * The owner secrets' KMS key: 'seal' is kms:GenerateDataKey, 'open' is kms:Decrypt, each only
   * under an owner secret's encryption context (functions/core/envelope.ts).
   */
  ownerSecrets: readonly OwnerSecretsAction[];
  /** Step Functions actions: StartExecution on both state machines, StopExecution on the Standard machine's executions. */
  states: readonly StatesAction[];
  /** Object storage (Deps.objects); a function that only reads neither loads nor bundles the S3 client. */
  objects: readonly ObjectAction[];
  /**
   * UpdateItem on these partition keys only (`dynamodb:LeadingKeys` patterns), for a function
   * that must not update anything else: the execute route claims uploads this way.
   */
  updateKeys: readonly string[];
  /**
   * UpdateItem may change these top-level attributes only (`dynamodb:Attributes`; the table's
   * key attributes, which AWS requires in the list, are added), and return none of the item.
   * Unset: any attribute of the items `updateKeys` allows.
   */
  updateAttributes?: readonly string[];
}

// Derived from what each handler's code calls, through functions/services to the stores'
// commands: reads are GetItem; pipeline and run lists Query gsi1 (pipelines.list,
// executions.listRuns); owner secrets are one partition of the table itself (ownerSecrets.list
// and values); creates are conditional PutItems; state changes, run pointers, claims and
// deliveries are conditional UpdateItems. The sweep index is read by the sweeper alone.
const READ: readonly TableAction[] = ['GetItem'];
const UPDATE: readonly TableAction[] = ['GetItem', 'UpdateItem'];
// DeleteItem: a pending execution whose queue message could not be sent is withdrawn (enqueue.ts).
const CREATE_EXECUTION: readonly TableAction[] = ['GetItem', 'PutItem', 'DeleteItem'];
const ALL: readonly TableAction[] = ['GetItem', 'PutItem', 'UpdateItem'];
const RUNS: readonly QueryTarget[] = ['gsi1'];
const OWNER_SECRETS: readonly QueryTarget[] = ['table'];
const EXECUTIONS: readonly QueryTarget[] = ['executions'];
const USAGE: readonly QueryTarget[] = ['table'];
/** The partitions of the limit counters and the usage buckets a caller's request may count in. */
const LIMITS: readonly string[] = ['LIMIT#*', 'USAGE#*'];

const access = (table: readonly TableAction[], more: Partial<Omit<FunctionAccess, 'table'>> = {}): FunctionAccess => ({
  table,
  query: more.query ?? [],
  send: more.send ?? [],
  consumes: more.consumes,
  secret: more.secret ?? false,
  ownerSecrets: more.ownerSecrets ?? [],
  states: more.states ?? [],
  objects: more.objects ?? [],
  updateKeys: more.updateKeys ?? [],
  ...(more.updateAttributes ? { updateAttributes: more.updateAttributes } : {}),
});

/**
 * Keyed by function name (the folder under functions/): every route handler of the table and
 * every worker must have its entry, or this does not compile.
 */
export const ACCESS: Readonly<Record<FunctionName, FunctionAccess>> = {
  // Callers.
  // A consumer's last use is a conditional update of its item, beside its deployment's: of that
  // one attribute, so a compromised authorizer cannot revoke, re-key or re-scope a deployment.
  authorizer: access(READ, { secret: 'pepper', updateKeys: ['DEPLOYMENT#*'], updateAttributes: ['last_used_at'] }),
  // Idempotency claim and execution record are conditional puts; an upload it uses is claimed
  // with a conditional update (single use).
  // Inline assets and inputs too large for the record are written under the execution
  // (d/*/e/*, nothing else: an upload it uses is read where it is, sniffed and hashed, never copied).
  // Its waited answer, like every read of a result, mints links to ASSET outputs (the master key).
  // Every caller route spends its key's rate limit (LIMIT#) and counts refusals (USAGE#); execute
  // also spends the quota and counts acceptances there (services/limits.service.ts).
  execute: access(CREATE_EXECUTION, {
    send: ['executions'],
    secret: true,
    objects: ['read', 'caller-execution'],
    updateKeys: ['UPLOAD#*', ...LIMITS],
  }),
  // Reads the deployment, records the upload (conditional put); the PUT URL is presigned, under
  // the deployment's upload prefix only (d/*/u/*).
  'upload-create': access(['GetItem', 'PutItem'], { objects: ['caller-upload'], updateKeys: LIMITS }),
  // Every reader of an execution record may meet values kept in the bucket (the claim check,
  // functions/core/claim-check.ts): `objects: ['read']`, used only when a record holds a reference.
  // While the execution waits on a visible wait node, the status carries its resume URL (the master key).
  'execution-status': access(READ, { secret: true, objects: ['read'], updateKeys: LIMITS }),
  // Reading a result mints links to ASSET outputs (the master key).
  'execution-result': access(READ, { secret: true, objects: ['read'], updateKeys: LIMITS }),
  // Reads the record while the execution runs; its `done` is the result, with links to ASSET outputs (the master key).
  'execution-events': access(READ, { secret: true, objects: ['read'], updateKeys: LIMITS }),
  // Cancel moves the execution, then records the run pointer and owes a callback (afterTerminal).
  'execution-cancel': access(UPDATE, { states: ['StopExecution'], send: ['callbacks'], objects: ['read'] }),
  'deployment-contract': access(READ, { updateKeys: LIMITS }),
  // The MCP server: tools/call is an execute (the same records, queue, inline files and limits),
  // then a waited read of the result (links: the master key); its tool reads the published
  // version; tasks/cancel is the caller's cancel (the transition, StopExecution, the owed callback).
  'deployment-mcp': access(['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'], {
    send: ['executions', 'callbacks'],
    secret: true,
    states: ['StopExecution'],
    objects: ['read', 'caller-execution'],
    updateKeys: ['UPLOAD#*', ...LIMITS],
  }),
  'deployment-openapi': access(READ, { updateKeys: LIMITS }),
  // Serves a page shell and static files: nothing to read or write.
  'deployment-docs': access([]),
  // Checks the link with a key derived from the master key, then that the deployment (or
  // pipeline) the object belongs to is still there.
  'asset-get': access(READ, { secret: true, objects: ['read'] }),
  // A wait node's resume URL: checked with a key derived from the master key; reads the
  // execution, its version and the node's item, keeps the event with one conditional update of
  // the node's item (an event too large for the item goes to the bucket under the execution it
  // belongs to: an API execution's or a run's family), and wakes a waiting execution (a message
  // for its next generation, the generation's conditional update, StopExecution of the old one).
  resume: access(UPDATE, {
    secret: true,
    send: ['executions'],
    states: ['StopExecution'],
    objects: ['read', 'caller-execution', 'owner-run'],
  }),
  // Web forms: each request reads the link's lookup item and the deployment (the pepper hashes
  // the token); the page reads the published version for the descriptions. Runs and uploads
  // count against their rate counters (conditional-free UpdateItem on FORMRATE# only).
  // The token is hashed with the pepper alone: the pepper's own secret, as the authorizer's.
  'form-page': access(READ, { secret: 'pepper' }),
  // As execute (inline assets, uploads claimed), plus the rate counters.
  'form-execute': access(CREATE_EXECUTION, {
    send: ['executions'],
    secret: true,
    objects: ['read', 'caller-execution'],
    updateKeys: ['UPLOAD#*', 'FORMRATE#*'],
  }),
  // As execution-result: the result's links need the master key.
  'form-execution': access(READ, { secret: true, objects: ['read'] }),
  // As form-execution (the record while it runs; `done` mints the result's links), plus the rate counters.
  'form-events': access(READ, { secret: true, objects: ['read'], updateKeys: ['FORMRATE#*'] }),
  // As upload-create, plus the rate counters.
  'form-upload': access(['GetItem', 'PutItem'], { secret: 'pepper', objects: ['caller-upload'], updateKeys: ['FORMRATE#*'] }),
  // Owners.
  'pipeline-list': access([], { query: RUNS }),
  'pipeline-get': access(READ),
  // Query lists the owner secrets' names, to warn about references to missing ones.
  'pipeline-push': access(ALL, { query: OWNER_SECRETS }),
  // A run's asset inputs (data URIs) and inputs too large for the record are stored under the
  // run (p/*/r/*, nothing else); an owner's upload it uses is read (sniffed, hashed) where it is
  // and claimed with a conditional update (single use); with `Prefer: wait` it reads the run
  // back. Runs' views (run-start's waited answer too) mint links to ASSET outputs.
  'run-start': access(CREATE_EXECUTION, { send: ['executions'], secret: true, objects: ['read', 'owner-run'], updateKeys: ['UPLOAD#*'] }),
  // Reads the pipeline's latest version, records the upload (conditional put); the PUT URL is
  // presigned, under the pipeline's upload prefix only (p/*/u/*).
  'pipeline-upload': access(['GetItem', 'PutItem'], { objects: ['owner-upload'] }),
  'run-list': access(READ, { query: RUNS, secret: true, objects: ['read'] }),
  'run-get': access(READ, { secret: true, objects: ['read'] }),
  // A run's event stream: reads the record while it runs; `done` is the run's view (links: the master key).
  'run-events': access(READ, { secret: true, objects: ['read'] }),
  'owner-execution-get': access(READ, { secret: true, objects: ['read'] }),
  // Cancels through the one lifecycle (conditional write, run pointer, owed callback, usage
  // counter), then stops the state machine.
  'owner-execution-cancel': access(UPDATE, { states: ['StopExecution'], send: ['callbacks'], objects: ['read'] }),
  // Puts a settled callback back to pending (conditional) and queues it.
  'owner-callback-redeliver': access(UPDATE, { send: ['callbacks'], objects: ['read'] }),
  // The executions index (keys only), then each item read.
  'deployment-executions': access(READ, { query: EXECUTIONS, objects: ['read'] }),
  // The deployment's usage counters: one partition of the table itself.
  'deployment-usage': access(READ, { query: USAGE }),
  // Readiness brings the run pointers up to date (syncRunPointers -> recordRunFinished).
  // Both read the newest runs, and discovery reads the inputs of the run it publishes.
  // The form link is derived again from its salt with the master key.
  'deployment-readiness': access(UPDATE, { query: RUNS, secret: true, objects: ['read'] }),
  'deployment-publish': access(ALL, { query: RUNS, secret: true, objects: ['read'] }),
  // Rotation replaces keys, signing secrets or the form link (a new lookup item, the old one deleted) in the deployment item.
  'deployment-keys': access(['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'], { secret: true }),
  // Consumers are items of the deployment's partition: created (conditional put), listed (a
  // Query of that partition), changed and revoked (conditional updates); a key needs the pepper.
  'deployment-consumers': access(ALL, { query: ['table'], secret: 'pepper' }),
  // A deleted deployment's objects go with it (removePrefix: ListObjectsV2, then DeleteObjects);
  // so does its form link's lookup item.
  'deployment-delete': access(['GetItem', 'UpdateItem', 'DeleteItem'], { objects: ['delete'] }),
  // Owner secrets: sealing asks KMS for a data key (no key material); listing never opens a value.
  'secret-put': access(['PutItem'], { ownerSecrets: ['seal'] }),
  'secret-list': access([], { query: OWNER_SECRETS }),
  'secret-delete': access(['DeleteItem']),
  // Workers. The runner only starts the workflow, with no read first (runner.service.ts).
  runner: access([], { consumes: 'executions', states: ['StartExecution'] }),
  'task-start': access(UPDATE, { send: ['callbacks'], objects: ['read'] }),
  // Reads the owner secrets a pipeline references (one Query per container per TTL) and opens them:
  // their data keys with KMS; values sealed before the KMS key (v1) with the master key, until set again.
  // Reads input assets and large values, stores outputs and values too large for the record
  // under the execution it runs: one state machine runs both API executions (d/*/e/*) and owners'
  // runs (p/*/r/*), so it writes both families. A binary answer is streamed in parts, and a
  // stream that fails is aborted (multipart-abort).
  'task-run': access(UPDATE, {
    query: OWNER_SECRETS,
    send: ['callbacks'],
    secret: true,
    ownerSecrets: ['open'],
    objects: ['read', 'caller-execution', 'owner-run', 'multipart-abort'],
  }),
  'task-fail': access(UPDATE, { send: ['callbacks'], objects: ['read'] }),
  // Retries go back onto its own queue with a delay; the payload carries outputs kept in the bucket too.
  'callback-dispatch': access(UPDATE, { consumes: 'callbacks', secret: true, send: ['callbacks'], objects: ['read'] }),
  // Reads the sweep index, then the items; repairs are conditional updates, re-queued messages,
  // and the run pointer and callback of an execution it fails (afterTerminal).
  // Removes the objects of executions it finds expired.
  sweeper: access(UPDATE, { query: ['sweep'], send: ['executions', 'callbacks'], objects: ['read', 'delete'] }),
};

/** Every function pipegate deploys: the route handlers and the workers. */
export const allFunctionNames = (): FunctionName[] => [...new Set([...routeHandlers(), ...Object.values(WORKERS)])];

export const accessFor = (name: FunctionName): FunctionAccess => ACCESS[name];

/** Whether the function writes or deletes objects: only then does it load (and bundle) the S3 client. */
export const writesObjects = (a: FunctionAccess): boolean => a.objects.some((o) => o !== 'read');

/**
 * SDK packages a function's bundle leaves out. Clients are created lazily (functions/adapters/
 * deps.ts), so a function never loads a client its access does not include, and the credential
 * providers beyond the environment's are never used in Lambda. Should one be required all the
 * same, the Lambda Node.js runtime ships the SDK v3, so nothing breaks: it only is not bundled.
 */
export function bundleExternals(name: FunctionName): string[] {
  const a = accessFor(name);
  const unused: string[] = [];
  if (a.send.length === 0) unused.push('@aws-sdk/client-sqs');
  if (a.states.length === 0) unused.push('@aws-sdk/client-sfn');
  // Objects are read and key material is read by signed requests (functions/adapters/object-reads.ts,
  // key-material.ts): the S3 client is for writes alone, the Secrets Manager client for nothing.
  if (!writesObjects(a)) unused.push('@aws-sdk/client-s3', '@aws-sdk/s3-request-presigner');
  return [
    '@aws-sdk/client-secrets-manager',
    ...unused,
    '@aws-sdk/nested-clients',
    '@aws-sdk/token-providers',
    '@aws-sdk/credential-provider-ini',
    '@aws-sdk/credential-provider-sso',
    '@aws-sdk/credential-provider-login',
    '@aws-sdk/credential-provider-process',
    '@aws-sdk/credential-provider-web-identity',
    // Container and instance-metadata credentials: Lambda hands credentials in the environment.
    '@aws-sdk/credential-provider-http',
    '@smithy/credential-provider-imds',
  ];
}
