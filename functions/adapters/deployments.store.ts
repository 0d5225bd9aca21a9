import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DeploymentsPort, Republished } from '../core/ports';
import type { Limits } from '../core/consumers';
import type { DeploymentRecord, FormSettings, KeyHash, SealedSecret } from '../core/types';
import { conditionalWrite, keys } from './dynamo';

const FIELDS: readonly (keyof DeploymentRecord)[] = [
  'deployment_id',
  'pipeline_id',
  'version',
  'revision',
  'status',
  'inputs',
  'outputs',
  'waits',
  'published_at',
  'created_at',
  'key_hashes',
  'signing_secrets',
  'deleted_at',
  'key_limits',
  'form',
  'node_detail',
  'workflow',
];

function toRecord(item: Record<string, unknown>): DeploymentRecord {
  const r: Record<string, unknown> = {};
  for (const f of FIELDS) r[f] = item[f] ?? null;
  return r as unknown as DeploymentRecord;
}

export class DeploymentsStore implements DeploymentsPort {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async get(id: string, consistent = false): Promise<DeploymentRecord | null> {
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: keys.deployment(id), ConsistentRead: consistent }));
    return out.Item ? toRecord(out.Item) : null;
  }

  async create(r: DeploymentRecord): Promise<boolean> {
    const out = await conditionalWrite(
      this.db.send(
        new PutCommand({
          TableName: this.table,
          Item: { ...keys.deployment(r.deployment_id), ...r },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    return out !== null;
  }

  /** Republishes a live deployment, only if nobody changed it since `revision` was read. */
  async republish(id: string, revision: number, next: Republished): Promise<DeploymentRecord | null> {
    return this.update(
      id,
      revision,
      'SET version = :v, inputs = :i, outputs = :o, waits = :wt, published_at = :p, node_detail = :nd, workflow = :w',
      {
        ':v': next.version,
        ':i': next.inputs,
        ':o': next.outputs,
        ':wt': next.waits,
        ':p': next.published_at,
        ':nd': next.node_detail,
        ':w': next.workflow,
      },
    );
  }

  async replaceKeys(id: string, revision: number, keyHashes: KeyHash[]): Promise<DeploymentRecord | null> {
    return this.update(id, revision, 'SET key_hashes = :k', { ':k': keyHashes });
  }

  async setKeyLimits(id: string, revision: number, limits: Limits | null): Promise<DeploymentRecord | null> {
    return this.update(id, revision, 'SET key_limits = :l', { ':l': limits });
  }

  async replaceSigningSecrets(id: string, revision: number, secrets: SealedSecret[]): Promise<DeploymentRecord | null> {
    return this.update(id, revision, 'SET signing_secrets = :s', { ':s': secrets });
  }

  async setForm(id: string, revision: number, form: FormSettings): Promise<DeploymentRecord | null> {
    return this.update(id, revision, 'SET form = :f', { ':f': form });
  }

  /**
   * Deletion keeps a tombstone: the key hashes stay so that a request with the deleted
   * deployment's key is recognised and answered 404 rather than 401, and the id is never reused.
   */
  async markDeleted(id: string, at: string): Promise<boolean> {
    return (await this.update(id, null, 'SET deleted_at = :at', { ':at': at }, 'deleted')) !== null;
  }

  private async update(
    id: string,
    revision: number | null,
    expression: string,
    values: Record<string, unknown>,
    status: 'live' | 'deleted' = 'live',
  ): Promise<DeploymentRecord | null> {
    const out = await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.deployment(id),
          UpdateExpression: `${expression}, revision = revision + :one, #status = :status`,
          ConditionExpression: `#status = :live${revision === null ? '' : ' AND revision = :rev'}`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ...values,
            ':one': 1,
            ':status': status,
            ':live': 'live',
            ...(revision === null ? {} : { ':rev': revision }),
          },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return out && toRecord(out.Attributes ?? {});
  }
}
