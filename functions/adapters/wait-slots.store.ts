import { randomInt } from 'node:crypto';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { WaitSlot, WaitSlotsPort } from '../core/ports';
import { conditionalWrite } from './dynamo';

/** A waiter holds a Lambda 28 s at most, so it outlives its window by one at most. */
export const WAIT_WINDOW_SECONDS = 30;
/**
 * Counters per function, written at random: one item takes about 1,000 writes a second, and
 * every waiting request writes twice (take, give back), refused ones included.
 */
export const WAIT_SHARDS = 10;

/**
 * Wait slots as counters in the table, one per shard and 30 s window: taking a slot is a
 * conditional ADD under the shard's share of the bound, giving it back an ADD of −1. A slot
 * never given back (a Lambda cut off) lapses with its window; since a waiter can span two
 * windows, up to twice the bound can be waiting at a window's turn, which the stack's bound
 * (under half the function's reserved concurrency) allows for.
 */
export class DynamoWaitSlots implements WaitSlotsPort {
  private readonly perShard: number;
  private readonly shards: number;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly scope: string,
    bound: number,
    shards: number = WAIT_SHARDS,
  ) {
    // No more shards than the bound: a share of at least 1 on each of 10 would let 10 wait
    // where the bound says 1 (run-start's, or any bound of a small reservation).
    this.shards = Math.max(1, Math.min(shards, bound));
    this.perShard = Math.max(1, Math.floor(bound / this.shards));
  }

  async acquire(now: Date): Promise<WaitSlot | null> {
    const window = Math.floor(now.getTime() / (WAIT_WINDOW_SECONDS * 1000));
    const Key = { pk: `WAITERS#${this.scope}#${randomInt(this.shards)}`, sk: `W#${window}` };
    const taken = await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key,
          UpdateExpression: 'ADD n :one SET expires_at = if_not_exists(expires_at, :expires)',
          ConditionExpression: 'attribute_not_exists(n) OR n < :cap',
          ExpressionAttributeValues: { ':one': 1, ':cap': this.perShard, ':expires': (window + 3) * WAIT_WINDOW_SECONDS },
        }),
      ),
    );
    if (taken === null) return null;
    return {
      release: async () => {
        await this.db.send(
          new UpdateCommand({ TableName: this.table, Key, UpdateExpression: 'ADD n :minus', ExpressionAttributeValues: { ':minus': -1 } }),
        );
      },
    };
  }
}
