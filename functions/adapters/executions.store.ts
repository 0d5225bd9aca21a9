/**
 * The execution records (ExecutionsPort): written once, then moved by conditional writes only,
 * the status by the transition table (functions/core/transitions.ts). Callback deliveries, the
 * sweep index, the owner's lists, usage counters and idempotency keys have stores of their own
 * (execution-stores.ts builds them all over one ExecutionItems).
 */
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { planClaim } from '../core/claim-check';
import {
  EXECUTION_HEAD_FIELDS,
  type ExecutionHead,
  type ExecutionsPort,
  type TransitionFields,
  type TransitionResult,
} from '../core/ports';
import { allowedFrom, isTerminal, type ExecutionStatus } from '../core/transitions';
import { packTrace } from '../core/trace-codec';
import type { Execution, NodeTrace } from '../core/types';
import { conditionalWrite, keys } from './dynamo';
import { claimValues, ExecutionItems, HEAD_CLAIM_FIELDS, headOf, sweepKey } from './execution-items';

export { SWEEP_SHARDS, sweepKey } from './execution-items';

export class ExecutionsStore implements ExecutionsPort {
  constructor(private readonly items: ExecutionItems) {}

  /** Writes a new execution; false when one with that id already exists. */
  async create(full: Execution): Promise<boolean> {
    // What reads learned about the values is never stored.
    const { expired_values: _expired, unread_values: _unread, ...e } = full;
    const plan = planClaim(claimValues(e as unknown as Record<string, unknown>));
    await this.items.putClaim(e, plan);
    const item: Record<string, unknown> = {
      ...keys.execution(e.execution_id),
      ...e,
      ...plan.inline,
      ...(plan.claim ? { claims: [plan.claim.ref] } : {}),
      ...(this.items.trackOpen ? { sweep: sweepKey('open', e.execution_id), sweep_at: e.created_at } : {}),
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
    const out = await conditionalWrite(
      this.items.db.send(new PutCommand({ TableName: this.items.table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' })),
    );
    return out !== null;
  }

  /** The execution, or null when unknown or past its retention (TTL deletes lazily). */
  get(id: string, now: Date, consistent = false): Promise<Execution | null> {
    return this.items.read(id, now, consistent);
  }

  /**
   * The execution's head (EXECUTION_HEAD_FIELDS), projected: DynamoDB charges a read by the
   * bytes it returns, so a poll of a record holding 128 KiB of values costs one read unit, not 33,
   * and values the claim check moved to storage are not fetched.
   * The claims come along in case the error messages were moved to storage.
   */
  async getHead(id: string, now: Date, consistent = false): Promise<ExecutionHead | null> {
    const e = await this.items.getProjected(id, now, consistent, EXECUTION_HEAD_FIELDS, HEAD_CLAIM_FIELDS);
    return e === null ? null : headOf(e);
  }

  /**
   * Moves an execution to `to` only from a status the transition table allows, in one
   * conditional write, so retries, duplicates and races can never produce a second terminal
   * status. A terminal move leaves the record on the sweep index only while a callback is owed.
   */
  async transition(id: string, to: ExecutionStatus, set: TransitionFields): Promise<TransitionResult> {
    const from = allowedFrom(to);
    if (from.length === 0) return { ok: false, current: await this.items.read(id, new Date(0), true) };
    const plan = planClaim(claimValues(set));
    if (plan.claim) {
      const owner = await this.items.ownerOf(id);
      if (!owner) return { ok: false, current: null };
      await this.items.putClaim(owner, plan);
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
    if (isTerminal(to) && !this.items.markerFollowUp) {
      if (set.callback_delivery) {
        sets.push('sweep = :cb', 'sweep_at = :cbAt');
        values[':cb'] = sweepKey('callback', id);
        values[':cbAt'] = set.completed_at ?? new Date().toISOString();
      } else {
        removes.push('sweep', 'sweep_at');
      }
    }
    const out = await conditionalWrite(
      this.items.db.send(
        new UpdateCommand({
          TableName: this.items.table,
          Key: keys.execution(id),
          UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: `attribute_exists(pk) AND #status IN (${from.map((_, i) => `:from${i}`).join(', ')})`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    if (out === null) {
      const now = await this.items.db.send(new GetCommand({ TableName: this.items.table, Key: keys.execution(id), ConsistentRead: true }));
      return { ok: false, current: now.Item ? await this.items.resolve(now.Item) : null };
    }
    const execution = await this.items.resolve(out.Attributes ?? {}, plan.claim);
    if (this.items.markerFollowUp && isTerminal(to) && !set.callback_delivery) await this.items.clearSweepQuietly(id);
    return { ok: true, execution };
  }

  /**
   * Deletes an execution that is still `pending` (its queue message could not be sent); false
   * when it has moved on meanwhile, so it was queued after all.
   */
  async withdrawPending(id: string): Promise<boolean> {
    const out = await conditionalWrite(
      this.items.db.send(
        new DeleteCommand({
          TableName: this.items.table,
          Key: keys.execution(id),
          ConditionExpression: '#status = :pending',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':pending': 'pending' },
        }),
      ),
    );
    return out !== null;
  }

  /** The next generation of a running execution (see ExecutionsPort). */
  async bumpGeneration(id: string, seen: number): Promise<boolean> {
    const out = await conditionalWrite(
      this.items.db.send(
        new UpdateCommand({
          TableName: this.items.table,
          Key: keys.execution(id),
          UpdateExpression: 'SET gen = :next',
          ConditionExpression: `attribute_exists(pk) AND #status = :running AND ${seen === 0 ? '(attribute_not_exists(gen) OR gen = :seen)' : 'gen = :seen'}`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':next': seen + 1, ':seen': seen, ':running': 'running' },
        }),
      ),
    );
    return out !== null;
  }

  /** Node progress of a running execution: one conditional UpdateItem (see ExecutionsPort). */
  async recordProgress(id: string, progress: string, waiting?: string | null): Promise<boolean> {
    const out = await conditionalWrite(
      this.items.db.send(
        new UpdateCommand({
          TableName: this.items.table,
          Key: keys.execution(id),
          // A step's end (waiting given) starts the re-run count afresh (ports.ts recordProgress).
          UpdateExpression: `SET progress = :p${waiting === undefined ? '' : ', waiting = :w REMOVE reruns'}`,
          ConditionExpression: 'attribute_exists(pk) AND #status = :running',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':p': progress, ':running': 'running', ...(waiting === undefined ? {} : { ':w': waiting }) },
        }),
      ),
    );
    return out !== null;
  }

  /** The waiting list of a running execution, replaced only if unchanged: one conditional UpdateItem (see ExecutionsPort). */
  async replaceWaiting(id: string, before: string, after: string | null): Promise<boolean> {
    const out = await conditionalWrite(
      this.items.db.send(
        new UpdateCommand({
          TableName: this.items.table,
          Key: keys.execution(id),
          UpdateExpression: 'SET waiting = :after',
          ConditionExpression: 'attribute_exists(pk) AND #status = :running AND waiting = :before',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':after': after, ':before': before, ':running': 'running' },
        }),
      ),
    );
    return out !== null;
  }

  /** Stores the trace of an execution that was cancelled while it ran (once; the status is not touched). */
  async recordTrace(id: string, set: { trace: NodeTrace[]; trace_truncated: boolean }): Promise<boolean> {
    // The engine holds a trace to TRACE_MAX_BYTES, under the claim threshold; weighed all the same.
    const plan = planClaim({ trace: packTrace(set.trace) });
    if (plan.claim) {
      const owner = await this.items.ownerOf(id);
      if (!owner) return false;
      await this.items.putClaim(owner, plan);
    }
    const out = await conditionalWrite(
      this.items.db.send(
        new UpdateCommand({
          TableName: this.items.table,
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
      ),
    );
    return out !== null;
  }
}
