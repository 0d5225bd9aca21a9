import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isUuid } from '../core/ids';
import type { UploadRecord, UploadsPort } from '../core/ports';
import { epochSeconds } from '../core/time';
import { isConditionFailure, keys } from './dynamo';

const FIELDS: readonly (keyof UploadRecord)[] = ['upload_id', 'deployment_id', 'media_type', 'bytes', 'created_at', 'expires_at', 'used_by'];

function toRecord(item: Record<string, unknown>): UploadRecord {
  const r: Record<string, unknown> = {};
  for (const f of FIELDS) r[f] = item[f] ?? null;
  return r as unknown as UploadRecord;
}

/** Uploads, one item each; single use is one conditional update (dynalite has no transactions). */
export class UploadsStore implements UploadsPort {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async create(u: UploadRecord): Promise<void> {
    // No used_by attribute until used: the single-use condition asks whether it exists.
    const { used_by: _unused, ...rest } = u;
    await this.db.send(new PutCommand({ TableName: this.table, Item: { ...keys.upload(u.upload_id), ...rest }, ConditionExpression: 'attribute_not_exists(pk)' }));
  }

  async get(id: string, now: Date): Promise<UploadRecord | null> {
    if (!isUuid(id)) return null;
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: keys.upload(id), ConsistentRead: true }));
    if (!out.Item) return null;
    const r = toRecord(out.Item);
    // TTL deletes lazily: an expired upload is gone for every reader.
    return typeof r.expires_at === 'number' && r.expires_at > epochSeconds(now) ? r : null;
  }

  async consume(id: string, deploymentId: string, executionId: string, now: Date): Promise<boolean> {
    if (!isUuid(id)) return false;
    try {
      await this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.upload(id),
          UpdateExpression: 'SET used_by = :e',
          ConditionExpression: 'attribute_exists(pk) AND deployment_id = :d AND expires_at > :now AND (attribute_not_exists(used_by) OR used_by = :e)',
          ExpressionAttributeValues: { ':e': executionId, ':d': deploymentId, ':now': epochSeconds(now) },
        }),
      );
      return true;
    } catch (e) {
      if (isConditionFailure(e)) return false;
      throw e;
    }
  }
}
