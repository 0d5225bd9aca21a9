/**
 * An execution's node records (functions/core/engine.ts NodeRecord): one item per node beside
 * the execution's own, `EXEC#<id> / NODE#<node>`, so a step reads them all with one Query and
 * the execution's record (which every status read reads) does not grow with them. Values and a
 * node's memo travel as JSON text; past NODE_INLINE_MAX_BYTES they go to an object under the
 * execution's prefix (written before the item that points at it, named by its text's hash).
 */
import { createHash } from 'node:crypto';
import { GetCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { NodeRecord, NodeRecordState } from '../core/engine';
import type { Resumed } from '../core/nodes/kind';
import type { HeldAsset } from '../core/nodes/run-context';
import { executionObjectKey } from '../core/object-keys';
import type { KeptEvent, ObjectStorePort, OutputAssetRef, StepOwner, StepsPort } from '../core/ports';
import type { ItemError } from '../core/nodes/kind';
import { allItems, conditionalWrite, keys } from './dynamo';

/** Most JSON text a node's value or memo keeps in its item; more goes to the bucket. */
export const NODE_INLINE_MAX_BYTES = 32 * 1024;

const NODE_SK = 'NODE#';

/** The item attributes of a record: short names, since every item is billed by its size. */
type Item = {
  st?: NodeRecordState;
  rev?: number;
  t0?: number;
  t1?: number;
  /** value, as JSON text, or `vo` naming the object that holds it */
  v?: string;
  vo?: string;
  oa?: OutputAssetRef;
  /** a map item's failure (under on_item_error skip) */
  er?: string;
  /** a map's failed items, as JSON text */
  ie?: string;
  /** assets the node made, as JSON text */
  as?: string;
  /** memo, as JSON text, or `mo` naming the object */
  m?: string;
  mo?: string;
  /** until: a number, or -1 for null */
  u?: number;
  pl?: number;
  us?: string;
  lu?: number;
  /** the event: its value as JSON text (or `eo`) and when it came */
  ev?: string;
  eo?: string;
  et?: number;
};

export class StepsStore implements StepsPort {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly objects: () => ObjectStorePort,
  ) {}

  private key(e: StepOwner, node: string): Record<string, string> {
    return { pk: keys.execution(e.execution_id).pk, sk: `${NODE_SK}${node}` };
  }

  /** JSON text small enough for the item, or the name of the object it was written to. */
  private async text(e: StepOwner, node: string, what: string, value: unknown): Promise<{ inline: string } | { object: string }> {
    const text = JSON.stringify(value) ?? 'null';
    if (Buffer.byteLength(text, 'utf8') <= NODE_INLINE_MAX_BYTES) return { inline: text };
    const name = `node.${node}.${what}.${createHash('sha256').update(text).digest('hex').slice(0, 32)}.json`;
    await this.objects().put(executionObjectKey(e, name), Buffer.from(text, 'utf8'), 'application/json');
    return { object: name };
  }

  private async read(e: StepOwner, inline: string | undefined, object: string | undefined): Promise<unknown> {
    if (inline !== undefined) return JSON.parse(inline) as unknown;
    if (object === undefined) return undefined;
    const body = await this.objects().read(executionObjectKey(e, object));
    if (body === null) throw new Error(`the stored value ${object} of execution ${e.execution_id} is gone`);
    return JSON.parse(Buffer.from(body).toString('utf8')) as unknown;
  }

  async load(e: StepOwner): Promise<Map<string, NodeRecord>> {
    const pk = keys.execution(e.execution_id).pk;
    const items = await allItems((start) =>
      this.db.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :node)',
          ExpressionAttributeValues: { ':pk': pk, ':node': NODE_SK },
          ConsistentRead: true,
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      ),
    );
    const out = new Map<string, NodeRecord>();
    for (const item of items) {
      const node = String(item.sk).slice(NODE_SK.length);
      out.set(node, await this.toRecord(e, item as Item));
    }
    return out;
  }

  private async toRecord(e: StepOwner, i: Item): Promise<NodeRecord> {
    const rec: NodeRecord = {};
    if (i.st !== undefined) rec.state = i.st;
    if (i.rev !== undefined) rec.rev = i.rev;
    if (i.t0 !== undefined) rec.started_at = i.t0;
    if (i.t1 !== undefined) rec.ended_at = i.t1;
    if (i.v !== undefined || i.vo !== undefined) rec.value = await this.read(e, i.v, i.vo);
    if (i.oa !== undefined) rec.output_asset = i.oa;
    if (i.er !== undefined) rec.error = i.er;
    if (i.ie !== undefined) rec.item_errors = JSON.parse(i.ie) as ItemError[];
    if (i.as !== undefined) rec.assets = JSON.parse(i.as) as HeldAsset[];
    if (i.m !== undefined || i.mo !== undefined) rec.memo = (await this.read(e, i.m, i.mo)) as Record<string, unknown>;
    if (i.u !== undefined) rec.until = i.u < 0 ? null : i.u;
    if (i.pl !== undefined) rec.polls = i.pl;
    if (i.us !== undefined) rec.status = i.us;
    if (i.lu !== undefined) rec.lease_until = i.lu;
    if (i.et !== undefined) rec.event = { value: await this.read(e, i.ev, i.eo), at: i.et };
    return rec;
  }

  async save(e: StepOwner, node: string, rec: NodeRecord, prev: number | undefined, sawEvent: boolean): Promise<boolean> {
    const set: Partial<Item> = {};
    if (rec.state !== undefined) set.st = rec.state;
    if (rec.rev !== undefined) set.rev = rec.rev;
    if (rec.started_at !== undefined) set.t0 = rec.started_at;
    if (rec.ended_at !== undefined) set.t1 = rec.ended_at;
    if (rec.value !== undefined) {
      const t = await this.text(e, node, 'value', rec.value);
      if ('inline' in t) set.v = t.inline;
      else set.vo = t.object;
    }
    if (rec.output_asset !== undefined) set.oa = rec.output_asset;
    if (rec.error !== undefined) set.er = rec.error;
    if (rec.item_errors !== undefined) set.ie = JSON.stringify(rec.item_errors);
    if (rec.assets !== undefined) set.as = JSON.stringify(rec.assets);
    if (rec.memo !== undefined) {
      const t = await this.text(e, node, 'memo', rec.memo);
      if ('inline' in t) set.m = t.inline;
      else set.mo = t.object;
    }
    if (rec.until !== undefined) set.u = rec.until === null ? -1 : rec.until;
    if (rec.polls !== undefined) set.pl = rec.polls;
    if (rec.status !== undefined) set.us = rec.status;
    if (rec.lease_until !== undefined) set.lu = rec.lease_until;
    // The record replaces the last one whole: what it does not say is removed (the event stays).
    const all: (keyof Item)[] = ['st', 'rev', 't0', 't1', 'v', 'vo', 'oa', 'er', 'ie', 'as', 'm', 'mo', 'u', 'pl', 'us', 'lu'];
    const removed = all.filter((k) => !Object.hasOwn(set, k));
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const sets = Object.entries(set).map(([k, v]) => {
      names[`#${k}`] = k;
      values[`:${k}`] = v;
      return `#${k} = :${k}`;
    });
    if (e.expires_at !== null && e.expires_at !== undefined) {
      names['#exp'] = 'expires_at';
      values[':exp'] = e.expires_at;
      sets.push('#exp = :exp');
    }
    for (const k of removed) names[`#${k}`] = k;
    names['#revc'] = 'rev';
    const conditions = [prev === undefined ? 'attribute_not_exists(#revc)' : '#revc = :prev'];
    if (prev !== undefined) values[':prev'] = prev;
    if (!sawEvent) {
      names['#et'] = 'et';
      conditions.push('attribute_not_exists(#et)');
    }
    const out = await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: this.key(e, node),
          UpdateExpression: `SET ${sets.join(', ')}${removed.length > 0 ? ` REMOVE ${removed.map((k) => `#${k}`).join(', ')}` : ''}`,
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      ),
    );
    return out !== null;
  }

  async keepEvent(e: StepOwner, node: string, event: Resumed): Promise<KeptEvent> {
    const t = await this.text(e, node, 'event', event.value);
    const values: Record<string, unknown> = {
      ':et': event.at,
      ':done': 'done',
      ':skipped': 'skipped',
      ...('inline' in t ? { ':ev': t.inline } : { ':eo': t.object }),
    };
    const sets = ['et = :et', 'inline' in t ? 'ev = :ev' : 'eo = :eo'];
    if (e.expires_at !== null && e.expires_at !== undefined) {
      values[':exp'] = e.expires_at;
      sets.push('expires_at = if_not_exists(expires_at, :exp)');
    }
    const out = await conditionalWrite(
      this.db.send(
        new UpdateCommand({
          TableName: this.table,
          Key: this.key(e, node),
          UpdateExpression: `SET ${sets.join(', ')}`,
          // Once, and never on a node that is over (timed out without one) or was skipped.
          ConditionExpression: 'attribute_not_exists(et) AND (attribute_not_exists(st) OR (st <> :done AND st <> :skipped))',
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_OLD',
        }),
      ),
    );
    if (out !== null) return { kept: true, state: (out.Attributes as Item | undefined)?.st };
    // Which condition failed: an event stays once kept, and a node that is done or skipped stays so.
    const seen = await this.peek(e, node);
    return { kept: false, why: seen.evented ? 'used' : seen.state === 'skipped' ? 'skipped' : 'ended' };
  }

  async peek(e: StepOwner, node: string): Promise<{ state: NodeRecordState | undefined; evented: boolean }> {
    const out = await this.db.send(
      new GetCommand({
        TableName: this.table,
        Key: this.key(e, node),
        ConsistentRead: true,
        ProjectionExpression: 'st, et',
      }),
    );
    const item = out.Item as Pick<Item, 'st' | 'et'> | undefined;
    return { state: item?.st, evented: item?.et !== undefined };
  }
}
