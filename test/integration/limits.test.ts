/**
 * The limit counters against dynalite: one conditional UpdateItem per take, so no interleaving
 * of concurrent takes (and give-backs) ever counts past the limit, and a period's counter is its
 * own item (the next period starts from zero).
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { ConsumersStore } from '../../functions/adapters/consumers.store';
import { createDocumentClient } from '../../functions/adapters/dynamo';
import { quotaCounter, quotaPeriod } from '../../functions/core/consumers';
import { startTestDb, type TestDb } from '../support/dynamo';

let db: TestDb;
let store: ConsumersStore;
beforeAll(async () => {
  db = await startTestDb();
  store = new ConsumersStore(createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint }), db.table);
});
afterAll(async () => {
  await db.close();
});

const FAR = 4_102_444_800; // 2100-01-01, as epoch seconds: the counters' expiry plays no part here.

describe('limit counters', () => {
  it('no sequence of concurrent takes and give-backs holds more than the limit at once (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.record({ takes: fc.integer({ min: 0, max: 14 }), giveBacks: fc.integer({ min: 0, max: 4 }) }), {
          minLength: 1,
          maxLength: 4,
        }),
        async (limit, rounds) => {
          const subject = randomUUID();
          const counter = quotaCounter('day', '2026-11-24');
          let held = 0;
          for (const round of rounds) {
            const back = Math.min(round.giveBacks, held);
            // Takes and give-backs of one round race each other.
            const outcomes = await Promise.all([
              ...Array.from({ length: round.takes }, () => store.take('dep', subject, counter, limit, FAR)),
              ...Array.from({ length: back }, () => store.giveBack('dep', subject, counter).then(() => 'back' as const)),
            ]);
            const taken = outcomes.filter((o) => typeof o === 'number');
            held = held - back + taken.length;
            // Never over: at most what was free before the round plus what was given back in it.
            expect(held).toBeLessThanOrEqual(limit);
            for (const n of taken) expect(n).toBeLessThanOrEqual(limit);
          }
          // Whatever raced, a full counter refuses the next take and a free one accepts it.
          const next = await store.take('dep', subject, counter, limit, FAR);
          expect(next === null).toBe(held === limit);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('12 simultaneous takes of a limit of 3: exactly 3, counted 1, 2 and 3', async () => {
    const subject = randomUUID();
    const got = await Promise.all(Array.from({ length: 12 }, () => store.take('dep', subject, 'QUOTA#day#2026-11-24', 3, FAR)));
    expect(got.filter((n) => n !== null).sort()).toEqual([1, 2, 3]);
  });

  it("a new period is a new counter: the quota refills at the period's start", async () => {
    const subject = randomUUID();
    const before = quotaPeriod('day', new Date('2026-11-24T23:59:59.999Z'));
    const after = quotaPeriod('day', new Date('2026-11-25T00:00:00.000Z'));
    expect(await store.take('dep', subject, quotaCounter('day', before.label), 1, FAR)).toBe(1);
    expect(await store.take('dep', subject, quotaCounter('day', before.label), 1, FAR)).toBeNull();
    expect(await store.take('dep', subject, quotaCounter('day', after.label), 1, FAR)).toBe(1);
  });

  it('a give-back never takes a counter below zero', async () => {
    const subject = randomUUID();
    await store.giveBack('dep', subject, 'RATE#0');
    expect(await store.take('dep', subject, 'RATE#0', 1, FAR)).toBe(1);
  });
});
