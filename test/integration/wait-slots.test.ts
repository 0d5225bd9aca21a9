/**
 * The wait bound's counters on dynalite: a conditional ADD per slot, refused at the shard's
 * share, given back with −1, fresh in the next window.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../functions/adapters/dynamo';
import { DynamoWaitSlots, WAIT_WINDOW_SECONDS } from '../../functions/adapters/wait-slots.store';
import { startTestDb, type TestDb } from '../support/dynamo';

let db: TestDb;
let client: DynamoDBDocumentClient;

beforeAll(async () => {
  db = await startTestDb();
  client = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
});
afterAll(async () => {
  client.destroy();
  await db.close();
});

const T0 = new Date('2026-11-24T12:00:00.000Z');

it('grants the bound and no more, takes a slot back, and starts each window afresh', async () => {
  // Prepare: one shard, so the whole bound is on one counter.
  const slots = new DynamoWaitSlots(client, db.table, 'execute', 3, 1);
  // Act
  const taken = await Promise.all([1, 2, 3, 4].map(() => slots.acquire(T0)));
  // Assess
  expect(taken.filter((s) => s !== null)).toHaveLength(3);
  expect(await slots.acquire(T0)).toBeNull();
  await taken.find((s) => s !== null)?.release();
  expect(await slots.acquire(T0)).not.toBeNull();
  expect(await slots.acquire(new Date(T0.getTime() + WAIT_WINDOW_SECONDS * 1000))).not.toBeNull();
});

it('counts each function apart', async () => {
  const a = new DynamoWaitSlots(client, db.table, 'execution-status', 1, 1);
  const b = new DynamoWaitSlots(client, db.table, 'execution-result', 1, 1);
  expect(await a.acquire(T0)).not.toBeNull();
  expect(await a.acquire(T0)).toBeNull();
  expect(await b.acquire(T0)).not.toBeNull();
});

it('lets no more wait than a bound smaller than the shard count', async () => {
  // Prepare: the default 10 shards, a bound of 2 (a small reservation's).
  const slots = new DynamoWaitSlots(client, db.table, 'run-start', 2);
  // Act
  const taken = await Promise.all(Array.from({ length: 12 }, () => slots.acquire(T0)));
  // Assess
  expect(taken.filter((s) => s !== null)).toHaveLength(2);
});
