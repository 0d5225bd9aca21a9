/**
 * A deployment's usage counters (UsagePort): finished executions by status and duration bin,
 * per five-minute bucket, sharded over USAGE_SHARDS items; read back a day at a time.
 */
import { randomInt } from 'node:crypto';
import { QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { UsagePort } from '../core/ports';
import { epochSeconds } from '../core/time';
import type { Execution } from '../core/types';
import { addUsageAttribute, bucketOf, usageAttributes, usageIncrement, USAGE_SHARDS, type UsageBucket } from '../core/usage';
import { allItems } from './dynamo';

/** Usage buckets outlive the longest window asked for (a day) by a day. */
const USAGE_RETENTION_SECONDS = 2 * 24 * 3600;

export class UsageStore implements UsagePort {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

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
}
