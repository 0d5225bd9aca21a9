/**
 * The transition table as the store enforces it: random concurrent attempts against one
 * record never produce a move outside the table or a second terminal status.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { canTransition, isTerminal, STATUSES, type ExecutionStatus } from '../../functions/core/transitions';
import { startTestDb, type TestDb } from '../support/dynamo';

/** Whether some ordering of `moves` is a path of legal transitions from `from` ending at `to`. */
function chainExists(from: ExecutionStatus, to: ExecutionStatus, moves: ExecutionStatus[]): boolean {
  if (moves.length === 0) return from === to;
  return moves.some((m, i) => canTransition(from, m) && chainExists(m, to, [...moves.slice(0, i), ...moves.slice(i + 1)]));
}

let db: TestDb;
beforeAll(async () => {
  db = await startTestDb();
});
afterAll(async () => {
  await db.close();
});

it('never records an illegal move, even when attempts race', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(fc.constantFrom(...STATUSES), { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 6 }),
      async (rounds) => {
        const id = randomUUID();
        await db.executions.create({
          execution_id: id,
          kind: 'api',
          pipeline_id: 'p',
          version: 1,
          deployment_id: null,
          status: 'pending',
          inputs: {},
          outputs: null,
          visible_outputs: null,
          callback: null,
          callback_delivery: null,
          error_message: null,
          created_at: new Date().toISOString(),
          started_at: null,
          completed_at: null,
          expires_at: null,
        });
        let current: ExecutionStatus = 'pending';
        for (const round of rounds) {
          // Each round's attempts are sent at the same time, as retries and races would.
          const results = await Promise.all(round.map((to) => db.executions.transition(id, to, {}).then((r) => ({ to, ok: r.ok }))));
          const won = results.filter((r) => r.ok).map((r) => r.to);
          const after = (await db.executions.get(id, new Date(), true))?.status as ExecutionStatus;
          // The winners, in some order, must form a chain of legal moves from `current` to `after`.
          expect(chainExists(current, after, won)).toBe(true);
          // Whatever raced, a terminal status is never left again.
          if (isTerminal(current)) expect(after).toBe(current);
          current = after;
        }
      },
    ),
    { numRuns: 40 },
  );
});
