/**
 * The owner's reads and writes on DynamoDB (dynalite): a deployment's executions from the
 * keys-only `executions` index, usage counters, the conditional redelivery, and a local table
 * made before the index existed being rebuilt with it.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, keys } from '../../functions/adapters/dynamo';
import { executionStores } from '../../functions/adapters/execution-stores';
import { InvalidCursorError } from '../../functions/core/ports';
import type { CallbackDelivery, Execution } from '../../functions/core/types';
import { executionSummaryBody } from '../../functions/core/views';
import { ensureTable, ensureTableAs } from '../../lib/local/dynamo';
import { MAIN_TABLE } from '../../lib/tables';
import { startTestDb, type TestDb } from '../support/dynamo';
import { anExecution } from '../support/fakes';

let db: TestDb;

beforeAll(async () => {
  db = await startTestDb();
});

afterAll(async () => {
  await db?.close();
});

/** The read units DynamoDB charges an eventually consistent read of `bytes`: 0.5 per 4 KB started. */
const readUnits = (bytes: number) => Math.ceil(bytes / 4096) / 2;

const at = (minute: number) => new Date(Date.UTC(2026, 10, 22, 10, minute)).toISOString();

describe("a deployment's executions", () => {
  it('come newest first from the index; a status filter continues through the cursor without skipping', async () => {
    // Prepare: 12 executions, every third failed, plus one of another deployment and one run.
    const dep = `dep-${randomUUID()}`;
    const made: Execution[] = [];
    for (let i = 0; i < 12; i++) {
      const e = anExecution({ deployment_id: dep, created_at: at(i), status: i % 3 === 0 ? 'failed' : 'completed' });
      await db.executions.create(e);
      made.push(e);
    }
    await db.executions.create(anExecution({ deployment_id: `dep-${randomUUID()}`, created_at: at(30) }));
    await db.executions.create(anExecution({ kind: 'run', deployment_id: null, created_at: at(31) }));
    const now = new Date();
    // Act
    const all = await db.executionLists.listByDeployment(dep, { limit: 100, now });
    const failed: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await db.executionLists.listByDeployment(dep, { limit: 2, status: 'failed', now, ...(cursor ? { cursor } : {}) });
      failed.push(...page.executions.map((e) => e.execution_id));
      cursor = page.next ?? undefined;
      pages++;
    } while (cursor && pages < 20);
    const since = await db.executionLists.listByDeployment(dep, { limit: 100, since: at(9), now });
    // Assess
    expect(all.executions.map((e) => e.execution_id)).toEqual([...made].reverse().map((e) => e.execution_id));
    expect(all.next).toBeNull();
    expect(failed).toEqual(
      made
        .filter((e) => e.status === 'failed')
        .reverse()
        .map((e) => e.execution_id),
    );
    expect(since.executions.map((e) => e.created_at)).toEqual([at(11), at(10), at(9)]);
    await expect(db.executionLists.listByDeployment(dep, { limit: 2, now, cursor: 'bm9wZQ' })).rejects.toBeInstanceOf(InvalidCursorError);
    const firstPage = await db.executionLists.listByDeployment(dep, { limit: 1, now });
    await expect(db.executionLists.listByDeployment('other', { limit: 2, now, cursor: firstPage.next ?? '' })).rejects.toBeInstanceOf(
      InvalidCursorError,
    );
  });
});

describe("a deployment's executions, read as summaries", () => {
  it("read each execution's summary fields only: half a read unit each where the whole item is dozens", async () => {
    // Prepare: three executions each holding 100 KB of values in the item.
    const dep = `dep-${randomUUID()}`;
    const made: Execution[] = [];
    for (let i = 0; i < 3; i++) {
      const e = anExecution({
        deployment_id: dep,
        created_at: at(i),
        status: 'completed',
        inputs: { note: 'x'.repeat(60_000) },
        outputs: { body: 'y'.repeat(40_000) },
      });
      await db.executions.create(e);
      made.push(e);
    }
    const raw = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
    const send = jest.spyOn(db.client as unknown as { send: (c: unknown) => Promise<unknown> }, 'send');
    // Act: the store's own reads, as sent, replayed against the items.
    const page = await db.executionLists.listByDeployment(dep, { limit: 10, now: new Date() });
    const reads = send.mock.calls.map((c) => c[0]).filter((c): c is GetCommand => c instanceof GetCommand);
    send.mockRestore();
    const bytes = async (input: GetCommand['input']) =>
      Buffer.byteLength(JSON.stringify((await raw.send(new GetCommand(input))).Item ?? {}));
    const projected = await Promise.all(reads.map((c) => bytes(c.input)));
    const whole = await bytes({ TableName: db.table, Key: keys.execution(made[0]?.execution_id ?? '') });
    raw.destroy();
    // Assess
    expect(page.executions.map((e) => e.execution_id)).toEqual([...made].reverse().map((e) => e.execution_id));
    expect(page.executions.map(executionSummaryBody)).toEqual([...made].reverse().map(executionSummaryBody));
    expect(reads).toHaveLength(3);
    for (const c of reads) expect(c.input.ProjectionExpression).toBeDefined();
    for (const b of projected) expect(readUnits(b)).toBe(0.5);
    expect(readUnits(whole)).toBeGreaterThanOrEqual(12);
  });
});

describe('usage counters', () => {
  it('count each finished API execution in its bucket by status and duration bin', async () => {
    // Prepare
    const dep = `dep-${randomUUID()}`;
    const finished = (status: Execution['status'], ms: number) =>
      anExecution({ deployment_id: dep, status, started_at: at(5), completed_at: new Date(Date.parse(at(5)) + ms).toISOString() });
    // Act
    for (const e of [finished('completed', 40), finished('completed', 3000), finished('failed', 40), finished('cancelled', 0)])
      await db.usage.countFinished(e);
    await db.usage.countFinished(finished('running', 10));
    await db.usage.countFinished({ ...finished('completed', 10), kind: 'run' });
    const buckets = await db.usage.usageSince(dep, new Date(at(0)));
    // Assess
    expect(buckets).toHaveLength(1);
    expect(buckets[0]?.counts).toEqual({ completed: 2, failed: 1, cancelled: 1 });
    expect(Object.values(buckets[0]?.bins ?? {}).reduce((a, b) => a + b, 0)).toBe(4);
    expect(await db.usage.usageSince(dep, new Date(at(10)))).toEqual([]);
  });

  it('spreads one bucket over several items (no hot key) and adds them up on read', async () => {
    // Prepare
    const dep = `dep-${randomUUID()}`;
    const done = () => anExecution({ deployment_id: dep, status: 'completed', started_at: at(5), completed_at: at(6) });
    // Act
    for (let i = 0; i < 40; i += 1) await db.usage.countFinished(done());
    // Assess: one bucket of 40, written to more than one item of the partition.
    const buckets = await db.usage.usageSince(dep, new Date(at(0)));
    expect(buckets).toHaveLength(1);
    expect(buckets[0]?.counts).toEqual({ completed: 40 });
    const client = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
    try {
      const raw = await client.send(
        new QueryCommand({ TableName: db.table, KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': `USAGE#${dep}` } }),
      );
      expect(raw.Items?.length ?? 0).toBeGreaterThan(1);
    } finally {
      client.destroy();
    }
  });
});

describe('redelivery', () => {
  it('puts a settled delivery back to pending once, conditional on what was read', async () => {
    // Prepare
    const delivery: CallbackDelivery = {
      webhook_id: 'msg_1',
      attempts: 2,
      outcome: 'dead_lettered',
      last_status: 500,
      last_error: 'HTTP 500',
      last_attempt_at: at(1),
      next_attempt_at: null,
      log: [],
    };
    const e = anExecution({ status: 'failed', callback: 'https://hooks.example/x', callback_delivery: delivery, completed_at: at(1) });
    await db.executions.create(e);
    // Act
    const [first, second] = await Promise.all([
      db.deliveries.redeliver(e.execution_id, delivery, at(2)),
      db.deliveries.redeliver(e.execution_id, delivery, at(2)),
    ]);
    // Assess
    expect([first, second].filter((x) => x !== null)).toHaveLength(1);
    const now = await db.executions.get(e.execution_id, new Date());
    expect(now?.callback_delivery).toMatchObject({ outcome: 'pending', redelivery: true, attempts: 2, webhook_id: 'msg_1' });
    expect((await db.sweep.listSweep('callback')).map((x) => x.execution_id)).toContain(e.execution_id);
  });
});

describe('the next attempt brought forward', () => {
  it("moves a pending delivery's next attempt once, conditional on the time that was read", async () => {
    // Prepare: on the retry schedule, next attempt at minute 30.
    const delivery: CallbackDelivery = {
      webhook_id: 'msg_2',
      attempts: 1,
      outcome: 'pending',
      last_status: 500,
      last_error: 'HTTP 500',
      last_attempt_at: at(1),
      next_attempt_at: at(30),
      log: [],
    };
    const e = anExecution({ status: 'completed', callback: 'https://hooks.example/x', callback_delivery: delivery, completed_at: at(1) });
    await db.executions.create(e);
    // Act
    const [first, second] = await Promise.all([
      db.deliveries.attemptNow(e.execution_id, delivery, at(2)),
      db.deliveries.attemptNow(e.execution_id, delivery, at(3)),
    ]);
    // Assess
    expect([first, second].filter((x) => x !== null)).toHaveLength(1);
    const now = await db.executions.get(e.execution_id, new Date());
    expect(now?.callback_delivery).toMatchObject({
      outcome: 'pending',
      attempts: 1,
      next_attempt_at: (first ?? second)?.callback_delivery?.next_attempt_at,
    });
    expect(now?.callback_delivery?.redelivery).toBeUndefined();
  });
});

describe('a local table made before the executions index', () => {
  it('is rebuilt with the index, its items kept and indexed', async () => {
    // Prepare
    const table = `old-${randomUUID().slice(0, 8)}`;
    await ensureTable(db.dynamo.endpoint, table, { ...MAIN_TABLE, indexes: MAIN_TABLE.indexes.filter((i) => i.name !== 'executions') });
    const doc = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
    const { executions: store, executionLists } = executionStores(doc, table);
    const e = anExecution({ deployment_id: 'dep-old' });
    await store.create(e);
    // Act
    await ensureTable(db.dynamo.endpoint, table);
    // Assess
    expect((await store.get(e.execution_id, new Date()))?.execution_id).toBe(e.execution_id);
    expect(
      (await executionLists.listByDeployment('dep-old', { limit: 10, now: new Date() })).executions.map((x) => x.execution_id),
    ).toEqual([e.execution_id]);
    doc.destroy();
  });
});

describe("start:synth's table, made from the template's properties", () => {
  it('is rebuilt when an older data dir lacks one of its indexes, its items kept', async () => {
    // Prepare: the template's table as an older template had it (one index fewer), with an item.
    const table = `tpl-${randomUUID().slice(0, 8)}`;
    const input = {
      TableName: table,
      BillingMode: 'PAY_PER_REQUEST' as const,
      AttributeDefinitions: ['pk', 'sk', 'g1pk', 'g1sk'].map((name) => ({ AttributeName: name, AttributeType: 'S' as const })),
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' as const },
        { AttributeName: 'sk', KeyType: 'RANGE' as const },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: 'later',
          KeySchema: [
            { AttributeName: 'g1pk', KeyType: 'HASH' as const },
            { AttributeName: 'g1sk', KeyType: 'RANGE' as const },
          ],
          Projection: { ProjectionType: 'ALL' as const },
        },
      ],
    };
    await ensureTableAs(db.dynamo.endpoint, {
      ...input,
      GlobalSecondaryIndexes: undefined,
      AttributeDefinitions: input.AttributeDefinitions.slice(0, 2),
    });
    const doc = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
    await doc.send(new PutCommand({ TableName: table, Item: { pk: 'a', sk: 'b', g1pk: 'x', g1sk: '1' } }));

    // Act
    await ensureTableAs(db.dynamo.endpoint, input);
    await ensureTableAs(db.dynamo.endpoint, input);

    // Assess
    const found = await doc.send(
      new QueryCommand({
        TableName: table,
        IndexName: 'later',
        KeyConditionExpression: 'g1pk = :x',
        ExpressionAttributeValues: { ':x': 'x' },
      }),
    );
    expect(found.Items).toEqual([{ pk: 'a', sk: 'b', g1pk: 'x', g1sk: '1' }]);
  });
});
