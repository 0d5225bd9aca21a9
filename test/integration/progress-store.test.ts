/**
 * Node progress on DynamoDB (dynalite): written only while the execution is running, so a
 * progress write that comes late never lands after the terminal write, and the terminal write
 * carries the list the event stream then reads.
 */
import { anExecution } from '../support/fakes';
import { startTestDb, type TestDb } from '../support/dynamo';

let db: TestDb;
beforeAll(async () => {
  db = await startTestDb();
});
afterAll(async () => {
  await db.close();
});

const list = (n: number) => JSON.stringify({ t: 1000, n: Array.from({ length: n }, (_v, i) => [`n${i}`, 't', 's', i]) });

it('records progress while running only, never after the terminal write', async () => {
  // Prepare
  const e = anExecution();
  await db.executions.create(e);
  // Act / Assess: pending refuses it.
  expect(await db.executions.recordProgress(e.execution_id, list(1))).toBe(false);
  await db.executions.transition(e.execution_id, 'running', { started_at: new Date().toISOString() });
  expect(await db.executions.recordProgress(e.execution_id, list(2))).toBe(true);
  expect((await db.executions.get(e.execution_id, new Date(), true))?.progress).toBe(list(2));
  // The terminal write carries the whole list; a late write afterwards is refused.
  const done = await db.executions.transition(e.execution_id, 'completed', {
    completed_at: new Date().toISOString(),
    outputs: {},
    progress: list(4),
  });
  expect(done.ok).toBe(true);
  expect(await db.executions.recordProgress(e.execution_id, list(3))).toBe(false);
  expect((await db.executions.get(e.execution_id, new Date(), true))?.progress).toBe(list(4));
  // Unknown executions are refused, not created.
  expect(await db.executions.recordProgress(anExecution().execution_id, list(1))).toBe(false);
});
