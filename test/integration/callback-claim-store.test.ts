/**
 * The claim on a callback attempt, on dynalite: one conditional UpdateItem per attempt, so of
 * duplicate messages exactly one sends; the holder's own message (same message id) may take it
 * again, anyone may once it has run out; never shown in any view.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, keys } from '../../functions/adapters/dynamo';
import type { CallbackDelivery, Execution } from '../../functions/core/types';
import { executionSummaryBody, ownerExecutionBody, resultBody, statusBody } from '../../functions/core/views';
import { anExecution } from '../support/fakes';
import { startTestDb, type TestDb } from '../support/dynamo';

let db: TestDb;
beforeAll(async () => {
  db = await startTestDb();
});
afterAll(async () => {
  await db.close();
});

const T = Date.parse('2026-11-22T12:00:00.000Z');
const pending = (attempts: number): CallbackDelivery => ({
  webhook_id: 'msg_w1',
  attempts,
  outcome: 'pending',
  last_status: null,
  last_error: null,
  last_attempt_at: null,
  next_attempt_at: null,
});

/** A finished API execution whose callback is owed, `attempts` attempts made. */
async function owed(attempts = 0): Promise<Execution> {
  const e = anExecution({ callback: 'https://hooks.example/x', inputs: { name: 'x' }, visible_outputs: ['out'] });
  await db.executions.create(e);
  await db.executions.transition(e.execution_id, 'running', {});
  await db.executions.transition(e.execution_id, 'completed', {
    outputs: { out: 'x' },
    completed_at: new Date(T).toISOString(),
    callback_delivery: pending(attempts),
  });
  return e;
}

async function rawItem(id: string): Promise<Record<string, unknown> | undefined> {
  const raw = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
  try {
    return (await raw.send(new GetCommand({ TableName: db.table, Key: keys.execution(id), ConsistentRead: true }))).Item;
  } finally {
    raw.destroy();
  }
}

describe('claimDelivery', () => {
  it('holds an attempt against other messages while it lives, and lets its own message or anyone after it take it again', async () => {
    // Prepare
    const e = await owed(2);
    const id = e.execution_id;
    // Act
    const taken = await db.deliveries.claimDelivery(id, 2, 'm1', T + 20_000, T);
    const other = await db.deliveries.claimDelivery(id, 2, 'm2', T + 25_000, T + 5_000);
    const atTheEnd = await db.deliveries.claimDelivery(id, 2, 'm2', T + 40_000, T + 20_000);
    const own = await db.deliveries.claimDelivery(id, 2, 'm1', T + 30_000, T + 10_000);
    const expired = await db.deliveries.claimDelivery(id, 2, 'm3', T + 50_000, T + 30_001);
    // Assess
    expect([taken, other, atTheEnd, own, expired]).toEqual([true, false, false, true, true]);
    expect((await rawItem(id))?.callback_claim).toEqual({ attempt: 2, by: 'm3', until_ms: T + 50_000 });
  });

  it('claims only the attempt the delivery is at, only while it is pending, and never creates an item', async () => {
    // Prepare
    const e = await owed(1);
    const id = e.execution_id;
    const missing = anExecution().execution_id;
    // Act
    const stale = await db.deliveries.claimDelivery(id, 0, 'm1', T + 20_000, T);
    const ahead = await db.deliveries.claimDelivery(id, 2, 'm1', T + 20_000, T);
    const recorded = await db.deliveries.recordDelivery(id, 1, { ...pending(2), outcome: 'delivered', last_status: 204 });
    const settled = await db.deliveries.claimDelivery(id, 2, 'm1', T + 20_000, T);
    const absent = await db.deliveries.claimDelivery(missing, 0, 'm1', T + 20_000, T);
    await db.sweep.markRequeued(missing, { attempts: 0 }, new Date(T).toISOString(), { releaseClaim: true });
    // Assess
    expect([stale, ahead, recorded, settled, absent]).toEqual([false, false, true, false, false]);
    expect(await rawItem(missing)).toBeUndefined();
  });

  it('lets exactly one of 16 concurrent claims of one attempt win, 10 times over', async () => {
    const winners: number[] = [];
    for (let round = 0; round < 10; round += 1) {
      // Prepare
      const e = await owed(0);
      // Act
      const claims = await Promise.all(
        Array.from({ length: 16 }, (_, i) => db.deliveries.claimDelivery(e.execution_id, 0, `m${i}`, T + 20_000, T)),
      );
      // Assess
      winners.push(claims.filter(Boolean).length);
      const held = (await rawItem(e.execution_id))?.callback_claim as { by: string } | undefined;
      expect(held?.by).toBe(`m${claims.indexOf(true)}`);
    }
    expect(winners).toEqual(winners.map(() => 1));
  });

  it('is released whole at a local start-up, so a new message can take the attempt at once', async () => {
    // Prepare
    const e = await owed(0);
    expect(await db.deliveries.claimDelivery(e.execution_id, 0, 'dead', T + 20_000, T)).toBe(true);
    // Act
    const marked = await db.sweep.markRequeued(e.execution_id, { attempts: 0 }, new Date(T).toISOString(), { releaseClaim: true });
    const taken = await db.deliveries.claimDelivery(e.execution_id, 0, 'new', T + 21_000, T + 1_000);
    // Assess
    expect(marked).toBe(true);
    expect(taken).toBe(true);
  });

  it('appears in no execution the store returns and in no view, through recording, redelivery and lists', async () => {
    // Prepare: a claim held while the attempt is recorded, then a redelivery and its claim.
    const e = await owed(0);
    const id = e.execution_id;
    expect(await db.deliveries.claimDelivery(id, 0, 'm1', T + 20_000, T)).toBe(true);
    const delivered: CallbackDelivery = {
      ...pending(1),
      outcome: 'delivered',
      last_status: 204,
      last_attempt_at: new Date(T).toISOString(),
    };
    expect(await db.deliveries.recordDelivery(id, 0, delivered)).toBe(true);
    const again = await db.deliveries.redeliver(id, delivered, new Date(T + 1_000).toISOString());
    expect(await db.deliveries.claimDelivery(id, 1, 'm2', T + 21_000, T + 1_000)).toBe(true);
    // Act
    const read = await db.executions.get(id, new Date(T), true);
    const listed = (await db.executionLists.listByDeployment(e.deployment_id ?? '', { limit: 10, now: new Date(T) })).executions;
    const swept = await db.sweep.listSweep('callback', 1000);
    const returned = [read, again, ...swept.filter((x) => x.execution_id === id)];
    // Assess: the claim is stored, and nothing read back carries it.
    expect((await rawItem(id))?.callback_claim).toMatchObject({ attempt: 1, by: 'm2' });
    expect(again?.callback_delivery).toMatchObject({ attempts: 1, outcome: 'pending', redelivery: true });
    expect(listed.map((x) => x.execution_id)).toEqual([id]);
    for (const x of returned) {
      if (!x) throw new Error('an execution went missing');
      const answers = [x, ownerExecutionBody(x), executionSummaryBody(x), statusBody('https://api.example', x), resultBody(x)];
      for (const answer of answers) expect(JSON.stringify(answer)).not.toMatch(/claim|"by"|until_ms/);
    }
    // A list reads summaries only (EXECUTION_SUMMARY_FIELDS), shown by the summary view.
    for (const x of listed)
      for (const answer of [x, executionSummaryBody(x)]) expect(JSON.stringify(answer)).not.toMatch(/claim|"by"|until_ms/);
  });
});
