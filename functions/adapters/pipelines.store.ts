import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { PipelinesPort } from '../core/ports';
import type { PipelineDefinition, PipelineListing, PipelineMeta, PipelineVersion, RunPointer, WorkflowType } from '../core/types';
import { listingOf } from '../core/views';
import { allItems, conditionalWrite, keys, nonEmpty } from './dynamo';

interface MetaItem {
  pipeline_id: string;
  version: number;
  latest_hash: string;
  description?: string | null;
  created_at: string;
  updated_at: string;
  deployment_id?: string;
  latest_finished?: RunPointer;
  latest_finished_key?: string;
  last_success?: RunPointer;
  last_success_key?: string;
}

interface VersionItem {
  pipeline_id: string;
  version: number;
  /** Kept as the JSON text pushed, so the owner's key order survives (DynamoDB maps do not keep it). */
  definition: string;
  hash: string;
  created_at: string;
  workflow?: WorkflowType;
}

const toMeta = (i: MetaItem): PipelineMeta => ({
  pipeline_id: i.pipeline_id,
  version: i.version,
  description: i.description ?? null,
  created_at: i.created_at,
  updated_at: i.updated_at,
  latest_hash: i.latest_hash,
  deployment_id: i.deployment_id ?? null,
  latest_finished: i.latest_finished ?? null,
  last_success: i.last_success ?? null,
});

const runKey = (r: RunPointer): string => `${r.created_at}#${r.run_id}`;

const PUSH_ATTEMPTS = 8;
const VERSION_CACHE_MAX = 200;

export class PipelinesStore implements PipelinesPort {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async getMeta(id: string, consistent = false): Promise<PipelineMeta | null> {
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: keys.pipeline(id), ConsistentRead: consistent }));
    return out.Item ? toMeta(out.Item as MetaItem) : null;
  }

  /** Versions never change once written, so a container keeps the ones it has read. */
  private readonly versions = new Map<string, PipelineVersion>();

  async getVersion(id: string, version: number): Promise<PipelineVersion | null> {
    const cacheKey = `${id}#${version}`;
    const hit = this.versions.get(cacheKey);
    if (hit) return hit;
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: keys.version(id, version) }));
    if (!out.Item) return null;
    const item = out.Item as VersionItem;
    const found: PipelineVersion = {
      pipeline_id: item.pipeline_id,
      version: item.version,
      definition: JSON.parse(item.definition) as PipelineDefinition,
      hash: item.hash,
      created_at: item.created_at,
      ...(item.workflow === 'express' || item.workflow === 'standard' ? { workflow: item.workflow } : {}),
    };
    if (this.versions.size >= VERSION_CACHE_MAX) this.versions.delete(this.versions.keys().next().value as string);
    this.versions.set(cacheKey, found);
    return found;
  }

  async list(): Promise<PipelineListing[]> {
    const items = (await allItems((start) =>
      this.db.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: 'gsi1',
          KeyConditionExpression: 'gsi1pk = :p',
          ExpressionAttributeValues: { ':p': 'PIPELINES' },
          ExclusiveStartKey: start,
        }),
      ),
    )) as unknown as MetaItem[];
    return items.map((i) => listingOf(toMeta(i)));
  }

  /**
   * Stores a definition as the next version unless it equals the latest one. Two writes with
   * no transaction: the immutable version item first (conditional on being new), then the
   * pipeline's pointer (conditional on the version it read). A crash between them leaves an
   * orphan version that the next push adopts, so no version number is ever given twice.
   */
  async push(
    id: string,
    definition: PipelineDefinition,
    hash: string,
    now: string,
    workflow?: WorkflowType,
  ): Promise<{ version: number; created: boolean }> {
    for (let attempt = 0; attempt < PUSH_ATTEMPTS; attempt++) {
      const meta = await this.getMeta(id, true);
      if (meta && meta.latest_hash === hash) return { version: meta.version, created: false };
      const prev = meta?.version ?? 0;
      const next = prev + 1;
      const item: Record<string, unknown> = {
        ...keys.version(id, next),
        pipeline_id: id,
        version: next,
        definition: JSON.stringify(definition),
        hash,
        created_at: now,
        ...(workflow === undefined ? {} : { workflow }),
      };
      const put = this.db.send(new PutCommand({ TableName: this.table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
      if ((await conditionalWrite(put)) === null) {
        // Another push took this version number: finish its advance if it stopped halfway, and go again.
        const orphan = await this.getVersion(id, next);
        if (orphan) await this.advance(id, prev, orphan.version, orphan.hash, orphan.definition, orphan.created_at);
        continue;
      }
      if (await this.advance(id, prev, next, hash, definition, now)) return { version: next, created: true };
    }
    throw new Error(`pipeline ${id}: too many concurrent pushes`);
  }

  /** Moves the pipeline from version `prev` to `next`; false when another push moved it first. */
  private async advance(
    id: string,
    prev: number,
    next: number,
    hash: string,
    definition: PipelineDefinition,
    now: string,
  ): Promise<boolean> {
    const out = await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.pipeline(id),
          UpdateExpression:
            'SET version = :next, latest_hash = :hash, description = :desc, updated_at = :now, created_at = if_not_exists(created_at, :now), pipeline_id = :id, gsi1pk = :list, gsi1sk = :id',
          ConditionExpression: prev === 0 ? 'attribute_not_exists(version)' : 'version = :prev',
          ExpressionAttributeValues: {
            ':next': next,
            ':hash': hash,
            ':desc': definition.description ?? null,
            ':now': now,
            ':id': id,
            ':list': 'PIPELINES',
            ...(prev === 0 ? {} : { ':prev': prev }),
          },
        }),
      ),
    );
    return out !== null;
  }

  /** Records a finished run on the pipeline, keeping only the newest (by creation time). */
  async recordRunFinished(id: string, run: RunPointer): Promise<void> {
    const key = runKey(run);
    // The success pointer first: a crash between the two writes must never leave a completed
    // latest run without a matching last success.
    if (run.status === 'completed') await this.setPointer(id, 'last_success', run, key);
    await this.setPointer(id, 'latest_finished', run, key);
  }

  private async setPointer(id: string, name: 'latest_finished' | 'last_success', run: RunPointer, key: string): Promise<void> {
    // Refused when a newer run already finished: the older one must not overwrite it.
    await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.pipeline(id),
          UpdateExpression: `SET ${name} = :run, ${name}_key = :key`,
          ConditionExpression: `attribute_exists(pk) AND (attribute_not_exists(${name}_key) OR ${name}_key <= :key)`,
          ExpressionAttributeValues: { ':run': run, ':key': key },
        }),
      ),
    );
  }

  /** Claims the pipeline's single deployment slot: succeeds only if it holds `expected`. */
  async claimDeployment(id: string, expected: string | null, next: string | null): Promise<boolean> {
    const names = { '#d': 'deployment_id' };
    const out = await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.pipeline(id),
          UpdateExpression: next === null ? 'REMOVE #d' : 'SET #d = :next',
          ConditionExpression: expected === null ? 'attribute_exists(pk) AND attribute_not_exists(#d)' : '#d = :expected',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: nonEmpty({
            ...(next === null ? {} : { ':next': next }),
            ...(expected === null ? {} : { ':expected': expected }),
          }),
        }),
      ),
    );
    return out !== null;
  }
}
