/**
 * Status polls read the execution's head with a projection (ExecutionsStore.getHead): the
 * fields a status answer shows, the same as a whole read's, a few hundred bytes whatever the
 * record holds, with error messages the claim check moved to storage read back.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, keys } from '../../functions/adapters/dynamo';
import { EXECUTION_HEAD_FIELDS } from '../../functions/core/ports';
import type { Execution } from '../../functions/core/types';
import { statusBody } from '../../functions/core/views';
import { startTestDb, type TestDb } from '../support/dynamo';
import { anExecution } from '../support/fakes';
import { MemoryObjects } from '../support/memory-objects';

const objects = new MemoryObjects();
let db: TestDb;
let raw: ReturnType<typeof createDocumentClient>;

beforeAll(async () => {
  db = await startTestDb({ objects });
  raw = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
});
afterAll(async () => {
  raw.destroy();
  await db.close();
});

async function created(over: Partial<Execution> = {}): Promise<Execution> {
  const e = anExecution(over);
  expect(await db.executions.create(e)).toBe(true);
  return e;
}

/** The read units DynamoDB charges an eventually consistent read of `bytes`: 0.5 per 4 KB started. */
const readUnits = (bytes: number) => Math.ceil(bytes / 4096) / 2;

describe('the head of an execution', () => {
  it('holds exactly the status fields, equal to a whole read, and none of the values', async () => {
    // Prepare: 100 KB of inputs, stored in the item.
    const e = await created({ inputs: { note: 'x'.repeat(100_000) } });
    await db.executions.transition(e.execution_id, 'running', { started_at: new Date().toISOString() });

    // Act
    const head = await db.executions.getHead(e.execution_id, new Date());
    const whole = await db.executions.get(e.execution_id, new Date(), true);

    // Assess
    expect(Object.keys(head ?? {}).sort()).toEqual([...EXECUTION_HEAD_FIELDS].sort());
    for (const f of EXECUTION_HEAD_FIELDS) expect(head?.[f]).toEqual(whole?.[f]);
    expect(statusBody('https://x', head!)).toEqual(statusBody('https://x', whole!));
    expect(head?.status).toBe('running');
  });

  it('is a read unit where the whole item is dozens: the projection is what DynamoDB returns and charges', async () => {
    // Prepare
    const e = await created({ inputs: { note: 'x'.repeat(100_000) } });
    // Act: the store's own request, as sent, against the whole item.
    const send = jest.spyOn(db.client as unknown as { send: (c: unknown) => Promise<unknown> }, 'send');
    await db.executions.getHead(e.execution_id, new Date());
    const command = send.mock.calls[0]?.[0] as GetCommand;
    send.mockRestore();
    const projected = (await raw.send(new GetCommand(command.input))).Item ?? {};
    const whole = (await raw.send(new GetCommand({ TableName: db.table, Key: keys.execution(e.execution_id) }))).Item ?? {};
    // Assess
    expect(command.input.ProjectionExpression).toBeDefined();
    expect(command.input.ConsistentRead).toBe(false);
    expect(readUnits(Buffer.byteLength(JSON.stringify(projected)))).toBe(0.5);
    expect(readUnits(Buffer.byteLength(JSON.stringify(whole)))).toBeGreaterThanOrEqual(12);
  });

  it('reads back an error message the claim check moved to storage', async () => {
    // Prepare: a failure whose message is too large to stay in the item.
    const e = await created();
    await db.executions.transition(e.execution_id, 'running', { started_at: new Date().toISOString() });
    const message = `Node 'n' failed: ${'y'.repeat(420_000)}`;
    const done = await db.executions.transition(e.execution_id, 'failed', {
      error_message: message,
      caller_error_message: "Node 'n' failed",
      completed_at: new Date().toISOString(),
    });
    expect(done.ok).toBe(true);
    // Act
    const head = await db.executions.getHead(e.execution_id, new Date(), true);
    // Assess
    expect(head?.error_message).toBe(message);
    expect(head?.caller_error_message).toBe("Node 'n' failed");
  });

  it('is null for an unknown or expired execution, and for an id that is no UUID', async () => {
    // Prepare
    const e = await created({ expires_at: Math.floor(Date.now() / 1000) - 10 });
    // Act / Assess
    await expect(db.executions.getHead(e.execution_id, new Date())).resolves.toBeNull();
    await expect(db.executions.getHead('00000000-0000-4000-8000-000000000000', new Date())).resolves.toBeNull();
    await expect(db.executions.getHead('not-a-uuid', new Date())).resolves.toBeNull();
  });
});
