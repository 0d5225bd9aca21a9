import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isUuid } from '../core/ids';
import type { ObjectOwner } from '../core/object-keys';
import type { UploadRecord, UploadsPort } from '../core/ports';
import { epochSeconds } from '../core/time';
import { conditionalWrite, keys } from './dynamo';

const FIELDS: readonly (keyof UploadRecord)[] = ['upload_id', 'media_type', 'bytes', 'created_at', 'expires_at', 'used_by'];

/**
 * The owner is one attribute, `deployment_id` (a caller's upload) or `pipeline_id` (an owner's),
 * never both: a consume conditioned on one cannot match an upload of the other kind.
 */
const ownerAttribute = (o: ObjectOwner): { name: 'deployment_id' | 'pipeline_id'; value: string } =>
  o.kind === 'deployment' ? { name: 'deployment_id', value: o.deployment_id } : { name: 'pipeline_id', value: o.pipeline_id };

function toRecord(item: Record<string, unknown>): UploadRecord | null {
  const r: Record<string, unknown> = {};
  for (const f of FIELDS) r[f] = item[f] ?? null;
  if (typeof item.deployment_id === 'string') r.owner = { kind: 'deployment', deployment_id: item.deployment_id };
  else if (typeof item.pipeline_id === 'string') r.owner = { kind: 'pipeline', pipeline_id: item.pipeline_id };
  else return null;
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
    const { used_by: _unused, owner, ...rest } = u;
    const o = ownerAttribute(owner);
    await this.db.send(
      new PutCommand({
        TableName: this.table,
        Item: { ...keys.upload(u.upload_id), ...rest, [o.name]: o.value },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  async get(id: string, now: Date): Promise<UploadRecord | null> {
    if (!isUuid(id)) return null;
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: keys.upload(id), ConsistentRead: true }));
    if (!out.Item) return null;
    const r = toRecord(out.Item);
    // TTL deletes lazily: an expired upload is gone for every reader.
    return r !== null && typeof r.expires_at === 'number' && r.expires_at > epochSeconds(now) ? r : null;
  }

  async consume(id: string, owner: ObjectOwner, executionId: string, now: Date): Promise<boolean> {
    if (!isUuid(id)) return false;
    const o = ownerAttribute(owner);
    const out = await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.upload(id),
          UpdateExpression: 'SET used_by = :e',
          ConditionExpression:
            'attribute_exists(pk) AND #owner = :o AND expires_at > :now AND (attribute_not_exists(used_by) OR used_by = :e)',
          ExpressionAttributeNames: { '#owner': o.name },
          ExpressionAttributeValues: { ':e': executionId, ':o': o.value, ':now': epochSeconds(now) },
        }),
      ),
    );
    return out !== null;
  }
}
