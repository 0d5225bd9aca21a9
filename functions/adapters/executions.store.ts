import { randomInt } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  CLAIM_FIELDS,
  claimsOf,
  goneValue,
  planClaim,
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
  type ExecutionsPort,
  type ObjectStorePort,
  type SweepKind,
  type TransitionFields,
  type TransitionResult,
} from '../core/ports';
import { epochSeconds } from '../core/time';
import { allowedFrom, isTerminal, type ExecutionStatus } from '../core/transitions';
import { packTrace, unpackTrace } from '../core/trace-codec';
import type { CallbackDelivery, Execution, IdempotencyRecord, NodeTrace } from '../core/types';
import { addUsageAttribute, bucketOf, usageAttributes, usageIncrement, USAGE_SHARDS, type UsageBucket } from '../core/usage';
import { allItems, isConditionFailure, keys } from './dynamo';
import { isUuid } from '../core/ids';

/** Usage buckets outlive the longest window asked for (a day) by a day. */
const USAGE_RETENTION_SECONDS = 2 * 24 * 3600;

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

function toExecution(item: Record<string, unknown>): Execution {
  const e: Record<string, unknown> = {};
  for (const f of FIELDS) e[f] = item[f] ?? null;
  e.trace = unpackTrace(item.trace);
  return e as unknown as Execution;
}

/** The head's fields the claim check may move to storage. */
const HEAD_CLAIM_FIELDS: readonly ClaimField[] = ['error_message', 'caller_error_message'];

const headOf = (e: Execution): ExecutionHead => Object.fromEntries(EXECUTION_HEAD_FIELDS.map((f) => [f, e[f]])) as ExecutionHead;
const summaryOf = (e: Execution): ExecutionSummaryRecord =>
  Object.fromEntries(EXECUTION_SUMMARY_FIELDS.map((f) => [f, e[f]])) as ExecutionSummaryRecord;

/** The summary's fields the claim check may move to storage (views.ts executionSummaryBody shows the error message). */
const SUMMARY_CLAIM_FIELDS: readonly ClaimField[] = ['error_message'];

/** A record's value fields as one write stores them (the trace packed), for the claim check to weigh. */
function claimValues(set: Partial<Record<string, unknown>>): ClaimValues {
  const values: ClaimValues = {};
  for (const f of CLAIM_FIELDS) {
    if (!(f in set)) continue;
    const v = set[f];
    values[f] = f === 'trace' && Array.isArray(v) ? packTrace(v as NodeTrace[]) : v;
  }
  return values;
}

/** A list position as an opaque string: the index key DynamoDB returned, base64url JSON. */
const encodeCursor = (k: Record<string, unknown> | undefined): string | null =>
  k === undefined ? null : Buffer.from(JSON.stringify(k)).toString('base64url');

function decodeCursor(c: string | undefined, partition: string, attribute = 'gsi1pk'): Record<string, unknown> | undefined {
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

const expired = (e: { expires_at: number | null }, now: Date): boolean => e.expires_at !== null && e.expires_at <= epochSeconds(now);

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

export class ExecutionsStore implements ExecutionsPort {
  /**
   * @param trackOpen keep open executions on the sweep index. The local runtime needs it (its
   * state machine dies with the process, so a restart must find what was running); on AWS the
   * queue and Step Functions' Catch already carry every open execution to a terminal status, and
   * the index would cost two write units per execution.
   */
  /**
   * @param markerFollowUp never change the sweep marker in the write that changes what it is
   * for; remove it in a write of its own once nothing is owed. For stores that write index
   * entries before the item (dynalite: `actions/updateItem.js`): a process killed between the
   * two would otherwise leave an open item with no index entry, invisible to the sweeper. A
   * kill between the marker's own removal and its item write loses nothing: the item is
   * settled by then. DynamoDB writes both at once, so on AWS the marker moves in the same write.
   */
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly trackOpen = true,
    private readonly markerFollowUp = false,
    private readonly objects?: () => ObjectStorePort,
  ) {}

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

  private async putClaim(owner: ClaimOwner, plan: ClaimPlan): Promise<void> {
    if (plan.claim) await this.objectStore().put(executionObjectKey(owner, plan.claim.ref.name), plan.claim.body, 'application/json');
  }

  /** What an object's key needs of a record (kind, deployment, pipeline), read only when a write has a claim. */
  private async ownerOf(id: string): Promise<ClaimOwner | null> {
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
  private async resolve(item: Record<string, unknown>, known: ClaimPlan['claim'] = null, only?: readonly ClaimField[]): Promise<Execution> {
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

  /** Writes a new execution; false when one with that id already exists. */
  async create(full: Execution): Promise<boolean> {
    // What reads learned about the values is never stored.
    const { expired_values: _expired, unread_values: _unread, ...e } = full;
    const plan = planClaim(claimValues(e as unknown as Record<string, unknown>));
    await this.putClaim(e, plan);
    const item: Record<string, unknown> = {
      ...keys.execution(e.execution_id),
      ...e,
      ...plan.inline,
      ...(plan.claim ? { claims: [plan.claim.ref] } : {}),
      ...(this.trackOpen ? { sweep: sweepKey('open', e.execution_id), sweep_at: e.created_at } : {}),
    };
    if (e.kind === 'run') {
      item.gsi1pk = `RUNS#${e.pipeline_id}`;
      item.gsi1sk = `${e.created_at}#${e.execution_id}`;
    }
    if (e.kind === 'api' && e.deployment_id) {
      // The owner's list of a deployment's executions: keys only, written once (they never change).
      item.dep_pk = `EXECS#${e.deployment_id}`;
      item.dep_sk = `${e.created_at}#${e.execution_id}`;
    }
    try {
      await this.db.send(new PutCommand({ TableName: this.table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** The execution, or null when unknown or past its retention (TTL deletes lazily). */
  async get(id: string, now: Date, consistent = false): Promise<Execution | null> {
    // Ids come from request paths too: only a UUID can name an execution, and a key over
    // DynamoDB's 2 KB limit would fail the read with a ValidationException (a 500).
    if (!isUuid(id)) return null;
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: keys.execution(id), ConsistentRead: consistent }));
    if (!out.Item) return null;
    if (expired(toExecution(out.Item), now)) return null;
    return this.resolve(out.Item);
  }

  /**
   * The execution's head (EXECUTION_HEAD_FIELDS), projected: DynamoDB charges a read by the
   * bytes it returns, so a poll of a record holding 128 KiB of values costs one read unit, not 33,
   * and values the claim check moved to storage are not fetched.
   * The claims come along in case the error messages were moved to storage.
   */
  async getHead(id: string, now: Date, consistent = false): Promise<ExecutionHead | null> {
    const e = await this.getProjected(id, now, consistent, EXECUTION_HEAD_FIELDS, HEAD_CLAIM_FIELDS);
    return e === null ? null : headOf(e);
  }

  /**
   * The execution's `fields` only (a ProjectionExpression: DynamoDB returns and charges those
   * bytes, not the item's), with `claimed` read back from storage when the claim check moved
   * them there; the claims come along for that. Other fields read as null.
   */
  private async getProjected(
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

  /**
   * Moves an execution to `to` only from a status the transition table allows, in one
   * conditional write, so retries, duplicates and races can never produce a second terminal
   * status. A terminal move leaves the record on the sweep index only while a callback is owed.
   */
  async transition(id: string, to: ExecutionStatus, set: TransitionFields): Promise<TransitionResult> {
    const from = allowedFrom(to);
    if (from.length === 0) return { ok: false, current: await this.get(id, new Date(0), true) };
    const plan = planClaim(claimValues(set));
    if (plan.claim) {
      const owner = await this.ownerOf(id);
      if (!owner) return { ok: false, current: null };
      await this.putClaim(owner, plan);
    }
    const names: Record<string, string> = { '#status': 'status' };
    const values: Record<string, unknown> = { ':to': to };
    const sets = ['#status = :to'];
    const removes: string[] = [];
    for (const [k, v] of Object.entries({ ...set, ...plan.inline })) {
      names[`#${k}`] = k;
      values[`:${k}`] = k === 'trace' && Array.isArray(v) ? packTrace(v as NodeTrace[]) : v;
      sets.push(`#${k} = :${k}`);
    }
    if (plan.claim) {
      sets.push('claims = list_append(if_not_exists(claims, :noClaims), :claims)');
      values[':noClaims'] = [];
      values[':claims'] = [plan.claim.ref];
    }
    from.forEach((s, i) => (values[`:from${i}`] = s));
    if (isTerminal(to) && !this.markerFollowUp) {
      if (set.callback_delivery) {
        sets.push('sweep = :cb', 'sweep_at = :cbAt');
        values[':cb'] = sweepKey('callback', id);
        values[':cbAt'] = set.completed_at ?? new Date().toISOString();
      } else {
        removes.push('sweep', 'sweep_at');
      }
    }
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.execution(id),
          UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: `attribute_exists(pk) AND #status IN (${from.map((_, i) => `:from${i}`).join(', ')})`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      );
      const execution = await this.resolve(out.Attributes ?? {}, plan.claim);
      if (this.markerFollowUp && isTerminal(to) && !set.callback_delivery) await this.clearSweepQuietly(id);
      return { ok: true, execution };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      const out = await this.db.send(new GetCommand({ TableName: this.table, Key: keys.execution(id), ConsistentRead: true }));
      return { ok: false, current: out.Item ? await this.resolve(out.Item) : null };
    }
  }

  /**
   * Deletes an execution that is still `pending` (its queue message could not be sent); false
   * when it has moved on meanwhile, so it was queued after all.
   */
  async withdrawPending(id: string): Promise<boolean> {
    try {
      await this.db.send(
        new DeleteCommand({
          TableName: this.table,
          Key: keys.execution(id),
          ConditionExpression: '#status = :pending',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':pending': 'pending' },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** The next generation of a running execution (see ExecutionsPort). */
  async bumpGeneration(id: string, seen: number): Promise<boolean> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.execution(id),
          UpdateExpression: 'SET gen = :next',
          ConditionExpression: `attribute_exists(pk) AND #status = :running AND ${seen === 0 ? '(attribute_not_exists(gen) OR gen = :seen)' : 'gen = :seen'}`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':next': seen + 1, ':seen': seen, ':running': 'running' },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** Node progress of a running execution: one conditional UpdateItem (see ExecutionsPort). */
  async recordProgress(id: string, progress: string, waiting?: string | null): Promise<boolean> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.execution(id),
          // A step's end (waiting given) starts the re-run count afresh (ports.ts recordProgress).
          UpdateExpression: `SET progress = :p${waiting === undefined ? '' : ', waiting = :w REMOVE reruns'}`,
          ConditionExpression: 'attribute_exists(pk) AND #status = :running',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':p': progress, ':running': 'running', ...(waiting === undefined ? {} : { ':w': waiting }) },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** Stores the trace of an execution that was cancelled while it ran (once; the status is not touched). */
  async recordTrace(id: string, set: { trace: NodeTrace[]; trace_truncated: boolean }): Promise<boolean> {
    // The engine holds a trace to TRACE_MAX_BYTES, under the claim threshold; weighed all the same.
    const plan = planClaim({ trace: packTrace(set.trace) });
    if (plan.claim) {
      const owner = await this.ownerOf(id);
      if (!owner) return false;
      await this.putClaim(owner, plan);
    }
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.execution(id),
          UpdateExpression: `SET #trace = :t, trace_truncated = :tt${plan.claim ? ', claims = list_append(if_not_exists(claims, :noClaims), :claims)' : ''}`,
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#trace) AND #status = :cancelled',
          ExpressionAttributeNames: { '#trace': 'trace', '#status': 'status' },
          ExpressionAttributeValues: {
            ':t': plan.inline.trace,
            ':tt': set.trace_truncated,
            ':cancelled': 'cancelled',
            ...(plan.claim ? { ':noClaims': [], ':claims': [plan.claim.ref] } : {}),
          },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /**
   * The claim is an attribute of its own (`callback_claim`), outside the delivery record, so
   * recording an attempt never copies it and no view ever shows it.
   */
  async claimDelivery(id: string, attempts: number, by: string, untilMs: number, nowMs: number): Promise<boolean> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.execution(id),
          UpdateExpression: 'SET callback_claim = :claim',
          ConditionExpression:
            'callback_delivery.attempts = :n AND callback_delivery.outcome = :pending AND ' +
            '(attribute_not_exists(callback_claim) OR callback_claim.attempt <> :n OR callback_claim.until_ms < :now OR callback_claim.#by = :by)',
          ExpressionAttributeNames: { '#by': 'by' },
          ExpressionAttributeValues: {
            ':claim': { attempt: attempts, by, until_ms: untilMs },
            ':n': attempts,
            ':pending': 'pending',
            ':now': nowMs,
            ':by': by,
          },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /**
   * Records a delivery attempt. Conditional on the attempt count read before, so two
   * dispatchers working on the same execution cannot both count (or both settle) one attempt.
   */
  async recordDelivery(id: string, previousAttempts: number, delivery: CallbackDelivery): Promise<boolean> {
    const settled = delivery.outcome !== 'pending';
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.execution(id),
          UpdateExpression: `SET callback_delivery = :d${settled && !this.markerFollowUp ? ' REMOVE sweep, sweep_at, requeued_at' : ''}`,
          ConditionExpression: 'callback_delivery.attempts = :prev AND callback_delivery.outcome = :pending',
          ExpressionAttributeValues: { ':d': delivery, ':prev': previousAttempts, ':pending': 'pending' },
        }),
      );
      if (settled && this.markerFollowUp) await this.clearSweepQuietly(id);
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /**
   * One page of the sweep index: entries of `kind` marked before `before`, oldest first. Keys
   * only; the caller reads each item, which says what is owed now.
   */
  async sweepPage(
    kind: SweepKind,
    before: string,
    limit: number,
    cursor?: Record<string, unknown>,
  ): Promise<{ ids: string[]; next: Record<string, unknown> | undefined }> {
    // Scatter-gather over the shards, one after another; the cursor says which shard and where in it.
    const ids: string[] = [];
    let shard = typeof cursor?.shard === 'number' ? cursor.shard : 0;
    let start = cursor?.key as Record<string, unknown> | undefined;
    while (shard < SWEEP_SHARDS && ids.length < limit) {
      const out = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: 'sweep',
          KeyConditionExpression: 'sweep = :k AND sweep_at < :before',
          ExpressionAttributeValues: { ':k': `${kind}#${shard}`, ':before': before },
          ExclusiveStartKey: start,
          Limit: limit - ids.length,
        }),
      );
      for (const item of out.Items ?? []) ids.push(String(item.pk).slice('EXEC#'.length));
      if (out.LastEvaluatedKey) return { ids, next: { shard, key: out.LastEvaluatedKey } };
      shard += 1;
      start = undefined;
    }
    return { ids, next: shard < SWEEP_SHARDS ? { shard } : undefined };
  }

  /** Every execution of one kind on the sweep index, read from the items (tests and tools). */
  async listSweep(kind: SweepKind, limit = 100): Promise<Execution[]> {
    const found: Execution[] = [];
    let cursor: Record<string, unknown> | undefined;
    do {
      const page = await this.sweepPage(kind, '\uffff', limit - found.length, cursor);
      for (const id of page.ids) {
        const e = await this.get(id, new Date(0), true);
        if (e) found.push(e);
      }
      cursor = page.next;
    } while (cursor && found.length < limit);
    return found;
  }

  /**
   * Notes that the sweeper queued an execution (or its callback) again, so the next passes
   * leave it alone for a while. Conditional on what the sweeper saw: a pending execution, or a
   * delivery still at that attempt. Touches no key, so no index entry moves.
   */
  async markRequeued(
    id: string,
    seen: { status: 'pending' } | { attempts: number },
    at: string,
    opts: { releaseClaim?: boolean } = {},
  ): Promise<boolean> {
    const pending = 'status' in seen;
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.execution(id),
          UpdateExpression: opts.releaseClaim ? 'SET requeued_at = :at REMOVE callback_claim' : 'SET requeued_at = :at',
          ConditionExpression: pending ? '#status = :pending' : 'callback_delivery.attempts = :n AND callback_delivery.outcome = :pending',
          ...(pending ? { ExpressionAttributeNames: { '#status': 'status' } } : {}),
          ExpressionAttributeValues: { ':at': at, ':pending': 'pending', ...(pending ? {} : { ':n': seen.attempts }) },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  async markRerun(id: string, seenReruns: number, at: string): Promise<boolean> {
    return this.conditionalUpdate({
      TableName: this.table,
      Key: keys.execution(id),
      UpdateExpression: 'SET reruns = :next, rerun_at = :at, requeued_at = :at REMOVE run_by',
      ConditionExpression:
        seenReruns === 0 ? '#status = :running AND attribute_not_exists(reruns)' : '#status = :running AND reruns = :seen',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':next': seenReruns + 1,
        ':at': at,
        ':running': 'running',
        ...(seenReruns === 0 ? {} : { ':seen': seenReruns }),
      },
    });
  }

  async claimRerun(id: string, runBy: string): Promise<boolean> {
    return this.conditionalUpdate({
      TableName: this.table,
      Key: keys.execution(id),
      UpdateExpression: 'SET run_by = :me REMOVE rerun_at',
      ConditionExpression: '#status = :running AND attribute_exists(rerun_at)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':me': runBy, ':running': 'running' },
    });
  }

  private async conditionalUpdate(input: ConstructorParameters<typeof UpdateCommand>[0]): Promise<boolean> {
    try {
      await this.db.send(new UpdateCommand(input));
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** Takes a settled execution (terminal, no callback owed) off the sweep index; false if it is not settled. */
  async clearSweep(id: string): Promise<boolean> {
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.execution(id),
          UpdateExpression: 'REMOVE sweep, sweep_at, requeued_at',
          ConditionExpression:
            'attribute_exists(sweep) AND #status IN (:c, :f, :x) AND (attribute_not_exists(callback_delivery.outcome) OR callback_delivery.outcome <> :pending)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':c': 'completed', ':f': 'failed', ':x': 'cancelled', ':pending': 'pending' },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** The follow-up write of markerFollowUp: its failure leaves a marker the sweeper clears later. */
  private async clearSweepQuietly(id: string): Promise<void> {
    await this.clearSweep(id).catch(() => undefined);
  }

  /** A pipeline's runs, newest first, a page at a time. */
  async listRuns(pipelineId: string, opts: { limit: number; cursor?: string }): Promise<{ runs: Execution[]; next: string | null }> {
    const out = await this.db.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :p',
        ExpressionAttributeValues: { ':p': `RUNS#${pipelineId}` },
        ScanIndexForward: false,
        Limit: opts.limit,
        ExclusiveStartKey: decodeCursor(opts.cursor, `RUNS#${pipelineId}`),
      }),
    );
    // A page shows each run's values only where its record holds them: one with values in
    // storage would cost a GET per run (up to 100 a page, each up to MBs), so they stay unread
    // (unread_values) but for an error message, which the list's rows show.
    return {
      runs: await Promise.all((out.Items ?? []).map((i) => this.resolve(i, null, SUMMARY_CLAIM_FIELDS))),
      next: encodeCursor(out.LastEvaluatedKey),
    };
  }

  /**
   * A deployment's API executions, newest first, from the keys-only `executions` index; the
   * items themselves are then read (the index holds no attributes, so status updates never
   * write it). With a status filter, keys are read until `limit` match or 5 × limit were
   * looked at, so one request stays bounded; `next` continues from there.
   */
  async listByDeployment(
    deploymentId: string,
    opts: { limit: number; since?: string; status?: ExecutionStatus; cursor?: string; now: Date },
  ): Promise<{ executions: ExecutionSummaryRecord[]; next: string | null }> {
    const partition = `EXECS#${deploymentId}`;
    const found: ExecutionSummaryRecord[] = [];
    let start = decodeCursor(opts.cursor, partition, 'dep_pk');
    let looked = 0;
    const budget = opts.status ? opts.limit * 5 : opts.limit;
    do {
      const out = await this.db.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: 'executions',
          KeyConditionExpression: opts.since ? 'dep_pk = :p AND dep_sk >= :since' : 'dep_pk = :p',
          ExpressionAttributeValues: { ':p': partition, ...(opts.since ? { ':since': opts.since } : {}) },
          ScanIndexForward: false,
          Limit: opts.limit,
          ExclusiveStartKey: start,
        }),
      );
      const items = out.Items ?? [];
      // A summary shows the error message of the values: a page of 100 must not read 100 items
      // of 400 KB each, nor their outputs moved to storage.
      const fetched = await Promise.all(
        items.map(async (k) => {
          const e = await this.getProjected(
            String(k.pk).slice('EXEC#'.length),
            opts.now,
            false,
            EXECUTION_SUMMARY_FIELDS,
            SUMMARY_CLAIM_FIELDS,
          );
          return e === null ? null : summaryOf(e);
        }),
      );
      start = out.LastEvaluatedKey;
      for (let i = 0; i < items.length; i++) {
        looked++;
        const e = fetched[i];
        if (!e || (opts.status && e.status !== opts.status)) continue;
        found.push(e);
        const k = items[i];
        if (found.length === opts.limit) {
          // Continue right after this one, so the cursor never skips a match.
          if (k && i < items.length - 1) start = { pk: k.pk, sk: k.sk, dep_pk: k.dep_pk, dep_sk: k.dep_sk };
          return { executions: found, next: encodeCursor(start) };
        }
      }
    } while (start && looked < budget);
    return { executions: found, next: encodeCursor(start) };
  }

  /**
   * Starts an owner's redelivery of a settled callback: outcome back to pending, flagged as a
   * single redelivery, the same webhook id. Conditional on the settled delivery read before, so
   * two requests cannot both start one; returns the updated record, or null when it was not settled.
   */
  async redeliver(id: string, previous: CallbackDelivery, at: string): Promise<Execution | null> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.execution(id),
          UpdateExpression:
            'SET callback_delivery.outcome = :pending, callback_delivery.redelivery = :yes, callback_delivery.next_attempt_at = :none, sweep = :cb, sweep_at = :at',
          ConditionExpression: 'callback_delivery.attempts = :prev AND callback_delivery.outcome = :was',
          ExpressionAttributeValues: {
            ':pending': 'pending',
            ':yes': true,
            ':none': null,
            ':cb': sweepKey('callback', id),
            ':at': at,
            ':prev': previous.attempts,
            ':was': previous.outcome,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return this.resolve(out.Attributes ?? {});
    } catch (err) {
      if (isConditionFailure(err)) return null;
      throw err;
    }
  }

  async attemptNow(id: string, previous: CallbackDelivery, at: string): Promise<Execution | null> {
    try {
      const out = await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.execution(id),
          UpdateExpression: 'SET callback_delivery.next_attempt_at = :at, sweep = :cb, sweep_at = :at',
          ConditionExpression:
            'callback_delivery.attempts = :prev AND callback_delivery.outcome = :pending AND callback_delivery.next_attempt_at = :was',
          ExpressionAttributeValues: {
            ':at': at,
            ':cb': 'callback',
            ':prev': previous.attempts,
            ':pending': 'pending',
            ':was': previous.next_attempt_at,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return this.resolve(out.Attributes ?? {});
    } catch (err) {
      if (isConditionFailure(err)) return null;
      throw err;
    }
  }

  /**
   * Counts a finished API execution in its deployment's five-minute usage bucket (one small
   * write). Called once by whoever won the terminal write; a crash between the two leaves it
   * uncounted, never counted twice. The bucket is split over USAGE_SHARDS items written at
   * random (`<bucket>#<shard>`): one item takes about 1,000 writes a second, and a busy
   * deployment finishes more than that; usageSince adds the shards up.
   */
  async countFinished(e: Execution): Promise<void> {
    const inc = usageIncrement(e);
    if (inc === null) return;
    const names = usageAttributes(inc);
    await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: `USAGE#${inc.deploymentId}`, sk: `${inc.bucket}#${randomInt(USAGE_SHARDS)}` },
        // A consumer's execution also counts under its consumer, in the same write.
        UpdateExpression: `ADD ${names.map((_, i) => `#a${i} :one`).join(', ')} SET expires_at = if_not_exists(expires_at, :exp)`,
        ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#a${i}`, name])),
        ExpressionAttributeValues: { ':one': 1, ':exp': epochSeconds(inc.at) + USAGE_RETENTION_SECONDS },
      }),
    );
  }

  /** The usage buckets of a deployment from `from` on (one Query, at most 288 items a day). */
  async usageSince(deploymentId: string, from: Date): Promise<UsageBucket[]> {
    const items = await allItems((start) =>
      this.db.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :p AND sk >= :from',
          ExpressionAttributeValues: { ':p': `USAGE#${deploymentId}`, ':from': bucketOf(from) },
          ExclusiveStartKey: start,
        }),
      ),
    );
    // Items come sorted by sort key, so a bucket's shards are adjacent.
    const buckets: UsageBucket[] = [];
    for (const item of items) {
      const bucket = String(item.sk).split('#')[0] ?? '';
      let b = buckets.at(-1);
      if (b?.bucket !== bucket) buckets.push((b = { bucket, counts: {}, bins: {} }));
      for (const [k, v] of Object.entries(item)) if (typeof v === 'number' && k !== 'expires_at') addUsageAttribute(b, k, v);
    }
    return buckets;
  }

  /**
   * Claims an Idempotency-Key for 24 hours with one conditional write: of concurrent
   * requests with the same key exactly one claims it; the others get the record it wrote.
   */
  async claimIdempotency(
    deploymentId: string,
    keyHash: string,
    record: IdempotencyRecord,
    expiresAt: number,
    now: Date,
  ): Promise<{ claimed: true } | { claimed: false; existing: IdempotencyRecord }> {
    const key = keys.idempotency(deploymentId, keyHash);
    try {
      await this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: { ...key, ...record, expires_at: expiresAt },
          ConditionExpression: 'attribute_not_exists(pk) OR expires_at <= :now',
          ExpressionAttributeValues: { ':now': epochSeconds(now) },
        }),
      );
      return { claimed: true };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true }));
    const item = out.Item as (IdempotencyRecord & { expires_at: number }) | undefined;
    if (!item) throw new Error('idempotency record vanished while being read');
    return {
      claimed: false,
      existing: { execution_id: item.execution_id, request_hash: item.request_hash, created_at: item.created_at },
    };
  }
}
