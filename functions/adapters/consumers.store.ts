import { randomInt } from 'node:crypto';
import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ConsumerRecord } from '../core/consumers';
import type { CallerTally, ConsumerChanges, ConsumersPort } from '../core/ports';
import { bucketOf, callerAttribute, USAGE_SHARDS } from '../core/usage';
import { epochSeconds } from '../core/time';
import { allItems, conditionalWrite, keys } from './dynamo';

const FIELDS: readonly (keyof ConsumerRecord)[] = [
  'consumer_id',
  'deployment_id',
  'name',
  'rate_limit',
  'quota',
  'expires_at',
  'metadata',
  'key_hashes',
  'key_prefix',
  'created_at',
  'updated_at',
  'last_used_at',
  'revoked_at',
  'revision',
];

function toRecord(item: Record<string, unknown>): ConsumerRecord {
  const r: Record<string, unknown> = {};
  for (const f of FIELDS) r[f] = item[f] ?? null;
  return r as unknown as ConsumerRecord;
}

const withoutNulls = (c: ConsumerRecord): Record<string, unknown> => Object.fromEntries(Object.entries(c).filter(([, v]) => v !== null));

/** Usage buckets outlive the longest window asked for (a day) by a day, as the executions store's. */
const USAGE_RETENTION_SECONDS = 2 * 24 * 3600;

/**
 * Consumers (items beside their deployment's, `DEPLOYMENT#<id>` / `CONSUMER#<id>`, so one Query
 * lists them) and the limit counters (`LIMIT#<deployment>#<subject>` / `RATE#…` or `QUOTA#…`).
 */
export class ConsumersStore implements ConsumersPort {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async get(deploymentId: string, consumerId: string, consistent = false): Promise<ConsumerRecord | null> {
    const out = await this.db.send(
      new GetCommand({ TableName: this.table, Key: keys.consumer(deploymentId, consumerId), ConsistentRead: consistent }),
    );
    return out.Item ? toRecord(out.Item) : null;
  }

  async list(deploymentId: string): Promise<ConsumerRecord[]> {
    const items = await allItems((start) =>
      this.db.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :p AND begins_with(sk, :c)',
          ExpressionAttributeValues: { ':p': keys.deployment(deploymentId).pk, ':c': 'CONSUMER#' },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      ),
    );
    return items.map(toRecord);
  }

  async create(c: ConsumerRecord): Promise<boolean> {
    const out = await conditionalWrite(
      this.db.send(
        new PutCommand({
          TableName: this.table,
          // Absent rather than null: the conditions below ask attribute_not_exists of them.
          Item: { ...keys.consumer(c.deployment_id, c.consumer_id), ...withoutNulls(c) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    return out !== null;
  }

  /** Applies `changes` to a consumer not revoked and still at `revision`; null otherwise. */
  async update(deploymentId: string, consumerId: string, revision: number, changes: ConsumerChanges): Promise<ConsumerRecord | null> {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ':one': 1, ':rev': revision };
    const sets = ['revision = revision + :one'];
    for (const [k, val] of Object.entries(changes)) {
      if (val === undefined) continue;
      names[`#${k}`] = k;
      values[`:${k}`] = val;
      sets.push(`#${k} = :${k}`);
    }
    const out = await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.consumer(deploymentId, consumerId),
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: 'revision = :rev AND attribute_not_exists(revoked_at)',
          ExpressionAttributeNames: Object.keys(names).length > 0 ? names : undefined,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return out && toRecord(out.Attributes ?? {});
  }

  /** Records a use, at most once per `olderThan` (the condition skips the write otherwise). */
  async touch(deploymentId: string, consumerId: string, at: string, olderThan: string): Promise<void> {
    await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.consumer(deploymentId, consumerId),
          UpdateExpression: 'SET last_used_at = :at',
          ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(last_used_at) OR last_used_at < :old)',
          ExpressionAttributeValues: { ':at': at, ':old': olderThan },
        }),
      ),
    );
  }

  /**
   * One more on a counter unless it has reached `limit`: the new count, or null when refused.
   * One conditional write, so concurrent takers can never together pass the limit.
   */
  async take(deploymentId: string, subject: string, counter: string, limit: number, expiresAt: number): Promise<number | null> {
    const out = await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.limit(deploymentId, subject, counter),
          UpdateExpression: 'ADD n :one SET expires_at = if_not_exists(expires_at, :exp)',
          ConditionExpression: 'attribute_not_exists(n) OR n < :limit',
          ExpressionAttributeValues: { ':one': 1, ':limit': limit, ':exp': expiresAt },
          ReturnValues: 'UPDATED_NEW',
        }),
      ),
    );
    return out && Number(out.Attributes?.n ?? limit);
  }

  /** Gives back what `take` counted for a request that was not accepted after all. */
  async giveBack(deploymentId: string, subject: string, counter: string): Promise<void> {
    await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.limit(deploymentId, subject, counter),
          UpdateExpression: 'ADD n :minus',
          ConditionExpression: 'n > :zero',
          ExpressionAttributeValues: { ':minus': -1, ':zero': 0 },
        }),
      ),
    );
  }

  /**
   * Counts an accepted execution or a refusal of a subject in the deployment's usage bucket of
   * `at` (the items the executions store counts finished executions in, under attributes of
   * the subject's own: `c#<subject>#<what>`).
   */
  async tally(deploymentId: string, subject: string, what: CallerTally, at: Date): Promise<void> {
    await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: { pk: `USAGE#${deploymentId}`, sk: `${bucketOf(at)}#${randomInt(USAGE_SHARDS)}` },
        UpdateExpression: 'ADD #what :one SET expires_at = if_not_exists(expires_at, :exp)',
        ExpressionAttributeNames: { '#what': callerAttribute(subject, what) },
        ExpressionAttributeValues: { ':one': 1, ':exp': epochSeconds(at) + USAGE_RETENTION_SECONDS },
      }),
    );
  }
}
