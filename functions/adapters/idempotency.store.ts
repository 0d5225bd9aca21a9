/**
 * Idempotency-Key claims of the execute route (IdempotencyPort): one item per deployment and
 * key hash, claimed for 24 hours by one conditional write.
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { IdempotencyPort } from '../core/ports';
import { epochSeconds } from '../core/time';
import type { IdempotencyRecord } from '../core/types';
import { conditionalWrite, keys } from './dynamo';

export class IdempotencyStore implements IdempotencyPort {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

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
    const put = await conditionalWrite(
      this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: { ...key, ...record, expires_at: expiresAt },
          ConditionExpression: 'attribute_not_exists(pk) OR expires_at <= :now',
          ExpressionAttributeValues: { ':now': epochSeconds(now) },
        }),
      ),
    );
    if (put !== null) return { claimed: true };
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true }));
    const item = out.Item as (IdempotencyRecord & { expires_at: number }) | undefined;
    if (!item) throw new Error('idempotency record vanished while being read');
    return {
      claimed: false,
      existing: { execution_id: item.execution_id, request_hash: item.request_hash, created_at: item.created_at },
    };
  }
}
