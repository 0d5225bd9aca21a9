/**
 * What the stores of the execution items share (executions.store.ts, deliveries.store.ts,
 * sweep.store.ts, execution-lists.store.ts): reading an item back as an Execution (the claim
 * check's objects included), the sweep index's keys, and list cursors. One item per
 * execution; each store owns the conditional writes of one concern of it.
 */
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  CLAIM_FIELDS,
  claimsOf,
  goneValue,
  readClaim,
  type ClaimField,
  type ClaimOwner,
  type ClaimPlan,
  type ClaimValues,
} from '../core/claim-check';
import { executionObjectKey } from '../core/object-keys';
import {
  EXECUTION_HEAD_FIELDS,
  EXECUTION_SUMMARY_FIELDS,
  InvalidCursorError,
  type ExecutionHead,
  type ExecutionSummaryRecord,
  type ObjectStorePort,
  type SweepKind,
} from '../core/ports';
import { epochSeconds } from '../core/time';
import { packTrace, unpackTrace } from '../core/trace-codec';
import type { Execution, NodeTrace } from '../core/types';
import { isUuid } from '../core/ids';
import { conditionalWrite, keys } from './dynamo';

const FIELDS: readonly (keyof Execution)[] = [
  'execution_id',
  'kind',
  'pipeline_id',
  'version',
  'deployment_id',
  'status',
  'inputs',
  'outputs',
  'visible_outputs',
  'visible_waits',
  'callback',
  'callback_delivery',
  'error_message',
  'caller_error_message',
  'created_at',
  'started_at',
  'completed_at',
  'expires_at',
  'run_by',
  'gen',
  'workflow',
  'requeued_at',
  'reruns',
  'rerun_at',
  'trace',
  'trace_truncated',
  'assets',
  'output_assets',
  'base_url',
  'progress',
  'waiting',
  'consumer_id',
  'source',
  'form_link',
];

export function toExecution(item: Record<string, unknown>): Execution {
  const e: Record<string, unknown> = {};
  for (const f of FIELDS) e[f] = item[f] ?? null;
  e.trace = unpackTrace(item.trace);
  return e as unknown as Execution;
}

/** The head's fields the claim check may move to storage. */
export const HEAD_CLAIM_FIELDS: readonly ClaimField[] = ['error_message', 'caller_error_message'];

export const headOf = (e: Execution): ExecutionHead => Object.fromEntries(EXECUTION_HEAD_FIELDS.map((f) => [f, e[f]])) as ExecutionHead;
export const summaryOf = (e: Execution): ExecutionSummaryRecord =>
  Object.fromEntries(EXECUTION_SUMMARY_FIELDS.map((f) => [f, e[f]])) as ExecutionSummaryRecord;

/** The summary's fields the claim check may move to storage (views.ts executionSummaryBody shows the error message). */
export const SUMMARY_CLAIM_FIELDS: readonly ClaimField[] = ['error_message'];

/** A record's value fields as one write stores them (the trace packed), for the claim check to weigh. */
export function claimValues(set: Partial<Record<string, unknown>>): ClaimValues {
  const values: ClaimValues = {};
  for (const f of CLAIM_FIELDS) {
    if (!(f in set)) continue;
    const v = set[f];
    values[f] = f === 'trace' && Array.isArray(v) ? packTrace(v as NodeTrace[]) : v;
  }
  return values;
}

/** A list position as an opaque string: the index key DynamoDB returned, base64url JSON. */
export const encodeCursor = (k: Record<string, unknown> | undefined): string | null =>
  k === undefined ? null : Buffer.from(JSON.stringify(k)).toString('base64url');

export function decodeCursor(c: string | undefined, partition: string, attribute = 'gsi1pk'): Record<string, unknown> | undefined {
  if (c === undefined || c === '') return undefined;
  let k: Record<string, unknown>;
  try {
    k = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    throw new InvalidCursorError('not a cursor this list returned');
  }
  if (typeof k !== 'object' || k === null || k[attribute] !== partition) throw new InvalidCursorError('a cursor of another list');
  return k;
}

export const expired = (e: { expires_at: number | null }, now: Date): boolean => e.expires_at !== null && e.expires_at <= epochSeconds(now);

/**
 * The sweep index's partition key is spread over SWEEP_SHARDS values per kind
 * (`open#0` … `open#7`), chosen from the execution id so every write of one execution names the
 * same one: a constant key written twice per execution would hold every open execution in one
 * index partition (≈ 1,000 writes/s, ≈ 500 executions/s), and a throttled index throttles the
 * table's writes. The sweeper reads the shards one after another (sweepPage).
 */
export const SWEEP_SHARDS = 8;

export function sweepKey(kind: SweepKind, executionId: string): string {
  let h = 0;
  for (let i = 0; i < executionId.length; i += 1) h = (h * 31 + executionId.charCodeAt(i)) >>> 0;
  return `${kind}#${h % SWEEP_SHARDS}`;
}

export interface ExecutionItemsOptions {
  /**
   * Keep open executions on the sweep index. The local runtime needs it (its state machine
   * dies with the process, so a restart must find what was running); on AWS the queue and Step
   * Functions' Catch already carry every open execution to a terminal status, and the index
   * would cost two write units per execution.
   */
  trackOpen?: boolean;
  /**
   * Never change the sweep marker in the write that changes what it is for; remove it in a
   * write of its own once nothing is owed. For stores that write index entries before the item
   * (dynalite: `actions/updateItem.js`): a process killed between the two would otherwise leave
   * an open item with no index entry, invisible to the sweeper. A kill between the marker's own
   * removal and its item write loses nothing: the item is settled by then. DynamoDB writes both
   * at once, so on AWS the marker moves in the same write.
   */
  markerFollowUp?: boolean;
  /** The bucket, for values too large for the record (the claim check); asked for on first need only. */
  objects?: () => ObjectStorePort;
}

/** The execution items of one table, as the stores of each concern read them. */
export class ExecutionItems {
  readonly trackOpen: boolean;
  readonly markerFollowUp: boolean;
  private readonly objects?: () => ObjectStorePort;

  constructor(
    readonly db: DynamoDBDocumentClient,
    readonly table: string,
    opts: ExecutionItemsOptions = {},
  ) {
    this.trackOpen = opts.trackOpen ?? true;
    this.markerFollowUp = opts.markerFollowUp ?? false;
    this.objects = opts.objects;
  }

  /*
   * The claim check (functions/core/claim-check.ts). Values too large for the item go to one
   * object under the execution's prefix, written before the record that points at it: a crash
   * between the two leaves an object nothing points at (the bucket's lifecycle expiry, or the
   * deployment's removal by prefix, takes it), never a record pointing at nothing. The object's
   * name is its text's hash, so a retried write of the same values rewrites the same object, and
   * the record's conditional write still decides which write counts.
   */

  private objectStore(): ObjectStorePort {
    if (!this.objects) throw new Error('a value too large for the record needs object storage, and this store was given none');
    return this.objects();
  }

  async putClaim(owner: ClaimOwner, plan: ClaimPlan): Promise<void> {
    if (plan.claim) await this.objectStore().put(executionObjectKey(owner, plan.claim.ref.name), plan.claim.body, 'application/json');
  }

  /** What an object's key needs of a record (kind, deployment, pipeline), read only when a write has a claim. */
  async ownerOf(id: string): Promise<ClaimOwner | null> {
    const out = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: keys.execution(id),
        ProjectionExpression: '#kind, deployment_id, pipeline_id, execution_id',
        ExpressionAttributeNames: { '#kind': 'kind' },
        ConsistentRead: true,
      }),
    );
    return out.Item ? (out.Item as ClaimOwner) : null;
  }

  /**
   * A stored item as an Execution, every claimed field read back from its object (`known`: an
   * object this very write stored, not read again). A missing object (expired, or removed with
   * its deployment) reads as goneValue; one whose text does not match its reference is an error.
   * `only`: read just the objects holding one of these fields; the others' fields read as goneValue.
   */
  async resolve(item: Record<string, unknown>, known: ClaimPlan['claim'] = null, only?: readonly ClaimField[]): Promise<Execution> {
    const e = toExecution(item);
    const claims = claimsOf(item.claims);
    if (claims.length === 0) return e;
    const fields = e as unknown as Record<string, unknown>;
    const expired: ClaimField[] = [];
    const unread: ClaimField[] = [];
    for (const ref of claims) {
      let values: ClaimValues | null;
      if (only && !ref.fields.some((f) => only.includes(f))) {
        values = null;
        unread.push(...ref.fields);
      } else if (known?.ref.name === ref.name) {
        values = known.values;
      } else {
        const body = await this.objectStore().read(executionObjectKey(e, ref.name));
        values = body === null ? null : readClaim(ref, body);
        if (body !== null && values === null)
          throw new Error(`the stored values ${ref.name} of execution ${e.execution_id} do not match their reference`);
        if (body === null) expired.push(...ref.fields);
      }
      for (const f of ref.fields) {
        const v = values === null ? goneValue(f) : (values[f] ?? null);
        fields[f] = f === 'trace' ? unpackTrace(v) : v;
      }
    }
    if (expired.length > 0) e.expired_values = expired;
    if (unread.length > 0) e.unread_values = unread;
    return e;
  }

  /** The execution, or null when unknown or past its retention (TTL deletes lazily). */
  async read(id: string, now: Date, consistent = false): Promise<Execution | null> {
    // Ids come from request paths too: only a UUID can name an execution, and a key over
    // DynamoDB's 2 KB limit would fail the read with a ValidationException (a 500).
    if (!isUuid(id)) return null;
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: keys.execution(id), ConsistentRead: consistent }));
    if (!out.Item) return null;
    if (expired(toExecution(out.Item), now)) return null;
    return this.resolve(out.Item);
  }

  /**
   * The execution's `fields` only (a ProjectionExpression: DynamoDB returns and charges those
   * bytes, not the item's), with `claimed` read back from storage when the claim check moved
   * them there; the claims come along for that. Other fields read as null.
   */
  async getProjected(
    id: string,
    now: Date,
    consistent: boolean,
    fields: readonly string[],
    claimed: readonly ClaimField[],
  ): Promise<Execution | null> {
    if (!isUuid(id)) return null;
    const names = [...fields, 'claims'];
    const out = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: keys.execution(id),
        ProjectionExpression: names.map((_, i) => `#h${i}`).join(', '),
        ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#h${i}`, n])),
        ConsistentRead: consistent,
      }),
    );
    if (!out.Item) return null;
    if (expired(toExecution(out.Item), now)) return null;
    return this.resolve(out.Item, null, claimed);
  }

  /** Takes a settled execution (terminal, no callback owed) off the sweep index; false if it is not settled. */
  async clearSweep(id: string): Promise<boolean> {
    const out = await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.execution(id),
          UpdateExpression: 'REMOVE sweep, sweep_at, requeued_at',
          ConditionExpression:
            'attribute_exists(sweep) AND #status IN (:c, :f, :x) AND (attribute_not_exists(callback_delivery.outcome) OR callback_delivery.outcome <> :pending)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':c': 'completed', ':f': 'failed', ':x': 'cancelled', ':pending': 'pending' },
        }),
      ),
    );
    return out !== null;
  }

  /** The follow-up write of markerFollowUp: its failure leaves a marker the sweeper clears later. */
  async clearSweepQuietly(id: string): Promise<void> {
    await this.clearSweep(id).catch(() => undefined);
  }
}
