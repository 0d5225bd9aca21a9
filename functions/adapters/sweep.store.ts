/**
 * The sweep index (SweepPort): where an execution is marked while something is owed to it
 * (open, or a callback to deliver), read page by page by the sweeper and a local start-up,
 * and the repairs they make (re-queued, re-run), each a conditional write on what they saw.
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SweepKind, SweepPort } from '../core/ports';
import type { Execution } from '../core/types';
import { conditionalWrite, keys } from './dynamo';
import { SWEEP_SHARDS, type ExecutionItems } from './execution-items';

export class SweepStore implements SweepPort {
  constructor(private readonly items: ExecutionItems) {}

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
      const out = await this.items.db.send(
        new QueryCommand({
          TableName: this.items.table,
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
        const e = await this.items.read(id, new Date(0), true);
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
    const out = await conditionalWrite(
      this.items.db.send(
        new UpdateCommand({
          TableName: this.items.table,
          Key: keys.execution(id),
          UpdateExpression: opts.releaseClaim ? 'SET requeued_at = :at REMOVE callback_claim' : 'SET requeued_at = :at',
          ConditionExpression: pending ? '#status = :pending' : 'callback_delivery.attempts = :n AND callback_delivery.outcome = :pending',
          ...(pending ? { ExpressionAttributeNames: { '#status': 'status' } } : {}),
          ExpressionAttributeValues: { ':at': at, ':pending': 'pending', ...(pending ? {} : { ':n': seen.attempts }) },
        }),
      ),
    );
    return out !== null;
  }

  async markRerun(id: string, seenReruns: number, at: string): Promise<boolean> {
    return this.update({
      TableName: this.items.table,
      Key: keys.execution(id),
      // started_at stays: the execution's time-out runs from its first start, restarts included.
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
    return this.update({
      TableName: this.items.table,
      Key: keys.execution(id),
      UpdateExpression: 'SET run_by = :me REMOVE rerun_at',
      ConditionExpression: '#status = :running AND attribute_exists(rerun_at)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':me': runBy, ':running': 'running' },
    });
  }

  /** Takes a settled execution (terminal, no callback owed) off the sweep index; false if it is not settled. */
  clearSweep(id: string): Promise<boolean> {
    return this.items.clearSweep(id);
  }

  private async update(input: ConstructorParameters<typeof UpdateCommand>[0]): Promise<boolean> {
    return (await conditionalWrite(this.items.db.send(new UpdateCommand(input)))) !== null;
  }
}
