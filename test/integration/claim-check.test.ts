/**
 * The claim check on dynalite (functions/core/claim-check.ts, ExecutionsStore): values too
 * large for a 400 KB item round-trip through the bucket, the item stays under the limit, and a
 * crash between the object and the record leaves nothing a caller sees and loses no execution.
 */
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { itemSize } from 'dynalite/db';
import { createDocumentClient, keys } from '../../functions/adapters/dynamo';
import { attributeBytes, INLINE_VALUES_MAX_BYTES, ITEM_MAX_BYTES } from '../../functions/core/claim-check';
import { executionPrefix } from '../../functions/core/object-keys';
import type { HttpPort } from '../../functions/core/ports';
import type { Execution, NodeTrace, PipelineDefinition } from '../../functions/core/types';
import { resultBody, runBody } from '../../functions/core/views';
import { sweepAll } from '../../functions/services/sweeper.service';
import { taskFail, taskRun, taskStart } from '../../functions/services/tasks.service';
import { startTestDb, type TestDb } from '../support/dynamo';
import { anExecution, testDeps } from '../support/fakes';
import { MemoryObjects } from '../support/memory-objects';

/** Object storage whose next put lands and then fails: the process died between the object and the record. */
class CrashingObjects extends MemoryObjects {
  crashAfterNextPut = false;
  override async put(key: string, body: Uint8Array, mediaType: string): Promise<void> {
    await super.put(key, body, mediaType);
    if (this.crashAfterNextPut) {
      this.crashAfterNextPut = false;
      throw new Error('the process died after storing the object');
    }
  }
  reads = 0;
  override async read(key: string, maxBytes?: number): Promise<Uint8Array | null> {
    this.reads++;
    return super.read(key, maxBytes);
  }
  keysUnder(prefix: string): string[] {
    return [...this.objects.keys()].filter((k) => k.startsWith(prefix));
  }
}

const objects = new CrashingObjects();
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
beforeEach(() => {
  objects.crashAfterNextPut = false;
});

const big = (n: number, c = 'x') => c.repeat(n);
const rawItem = async (id: string) =>
  (await raw.send(new GetCommand({ TableName: db.table, Key: keys.execution(id), ConsistentRead: true }))).Item ?? {};
/** The item as dynalite weighs it against its 400 KB limit, and as DynamoDB's rules count it (attributeBytes, erring high). */
const sizes = (item: Record<string, unknown>) => ({
  dynalite: itemSize(marshall(item, { removeUndefinedValues: true })),
  dynamodb: Object.entries(item).reduce((n, [k, v]) => n + Buffer.byteLength(k) + attributeBytes(v), 0),
});

const trace: NodeTrace[] = [
  {
    node: 'call',
    type: 'http',
    outcome: 'completed',
    started_at: '2026-01-01T00:00:00.000Z',
    completed_at: '2026-01-01T00:00:01.000Z',
    duration_ms: 1000,
    error: null,
    http_status: 200,
    preview: '{"items":[…',
  },
];

async function running(over: Partial<Execution> = {}): Promise<Execution> {
  const e = anExecution(over);
  expect(await db.executions.create(e)).toBe(true);
  expect((await db.executions.transition(e.execution_id, 'running', { started_at: new Date().toISOString() })).ok).toBe(true);
  return e;
}

describe("dynalite holds items to DynamoDB's 400 KB, as AWS does", () => {
  it('refuses a 560 KB item and an update that grows one past the limit with a ValidationException', async () => {
    const e = anExecution();
    await expect(
      raw.send(new PutCommand({ TableName: db.table, Item: { ...keys.execution(e.execution_id), ...e, outputs: { body: big(560_000) } } })),
    ).rejects.toMatchObject({
      name: 'ValidationException',
      message: expect.stringMatching(/Item size has exceeded/),
    });
    await raw.send(new PutCommand({ TableName: db.table, Item: { ...keys.execution(e.execution_id), ...e } }));
    await expect(
      raw.send(
        new UpdateCommand({
          TableName: db.table,
          Key: keys.execution(e.execution_id),
          UpdateExpression: 'SET outputs = :o',
          ExpressionAttributeValues: { ':o': { body: big(560_000) } },
        }),
      ),
    ).rejects.toMatchObject({ name: 'ValidationException' });
  });
});

describe('values too large for the item', () => {
  it("a 300 KB input and a 560 KB output round-trip exactly; the item stays small; both objects lie under the execution's prefix", async () => {
    const input = big(300_000, 'é');
    const output = big(560_000);
    const e = await running({ inputs: { note: input, n: 3 }, visible_outputs: ['body'] });

    const done = await db.executions.transition(e.execution_id, 'completed', {
      outputs: { body: output, small: 1 },
      trace,
      trace_truncated: false,
      completed_at: new Date().toISOString(),
    });

    expect(done.ok && done.execution.outputs).toEqual({ body: output, small: 1 });
    const read = await db.executions.get(e.execution_id, new Date(), true);
    expect(read?.inputs).toEqual({ note: input, n: 3 });
    expect(read?.outputs).toEqual({ body: output, small: 1 });
    expect(read?.trace).toEqual(trace);
    expect(resultBody(read!).response_data).toEqual({ body: { value: output, value_type: 'RAW' } });
    const item = await rawItem(e.execution_id);
    expect(sizes(item).dynalite).toBeLessThan(4_096);
    expect(sizes(item).dynamodb).toBeLessThan(4_096);
    const stored = objects.keysUnder(executionPrefix(e));
    expect(stored).toHaveLength(2);
    expect(stored.every((k) => /^d\/[0-9a-f-]{36}\/e\/[0-9a-f-]{36}\/values\.[0-9a-f]{32}\.json$/.test(k))).toBe(true);
  });

  it("a deployment's list reads stored values for the error message only (a summary must not read every output)", async () => {
    const deployment = anExecution().deployment_id!;
    const ok = await running({ deployment_id: deployment, created_at: '2026-01-01T00:00:00.000Z' });
    await db.executions.transition(ok.execution_id, 'completed', { outputs: { body: big(500_000) } });
    const bad = await running({ deployment_id: deployment, created_at: '2026-01-01T00:00:01.000Z' });
    await db.executions.transition(bad.execution_id, 'failed', { error_message: `Node 't' failed: ${big(300_000)}` });
    const reads = objects.reads;

    const page = await db.executionLists.listByDeployment(deployment, { limit: 5, now: new Date() });

    expect(page.executions.map((e) => e.execution_id)).toEqual([bad.execution_id, ok.execution_id]);
    expect(page.executions[0]?.error_message).toBe(`Node 't' failed: ${big(300_000)}`);
    expect(page.executions[1]).not.toHaveProperty('outputs');
    expect(objects.reads - reads).toBe(1);
  });

  it('keeps values up to the threshold in the item (no object), under the limit whatever both writes hold', async () => {
    const e = await running({ inputs: { note: big(120_000) } });
    const before = objects.keysUnder(executionPrefix(e)).length;

    await db.executions.transition(e.execution_id, 'completed', {
      outputs: { body: big(120_000) },
      trace,
      completed_at: new Date().toISOString(),
    });

    expect(objects.keysUnder(executionPrefix(e)).length).toBe(before);
    expect(sizes(await rawItem(e.execution_id)).dynamodb).toBeLessThan(ITEM_MAX_BYTES);
    expect((await db.executions.get(e.execution_id, new Date()))?.outputs).toEqual({ body: big(120_000) });
  });

  it("an owner run keeps its values under the pipeline's prefix; its list names them unread and reads none, the run reads them", async () => {
    const e = await running({ kind: 'run', deployment_id: null, pipeline_id: 'big-run', inputs: {} });
    const small = await running({
      kind: 'run',
      deployment_id: null,
      pipeline_id: 'big-run',
      inputs: { note: 'hi' },
      created_at: '2026-01-01T00:00:00.000Z',
    });

    await db.executions.transition(e.execution_id, 'completed', {
      outputs: { body: big(450_000) },
      completed_at: new Date().toISOString(),
    });
    await db.executions.transition(small.execution_id, 'completed', { outputs: { body: 'small' }, completed_at: new Date().toISOString() });
    const reads = objects.reads;

    expect(objects.keysUnder(`p/big-run/r/${e.execution_id}/`)).toHaveLength(1);
    const runs = await db.executionLists.listRuns('big-run', { limit: 5 });
    expect(objects.reads - reads).toBe(0);
    const listed = runs.runs.find((r) => r.execution_id === e.execution_id);
    expect(listed?.outputs).toEqual({});
    expect(listed?.unread_values).toEqual(['outputs']);
    expect(listed?.expired_values).toBeUndefined();
    const other = runs.runs.find((r) => r.execution_id === small.execution_id);
    expect(other?.outputs).toEqual({ body: 'small' });
    expect(other?.unread_values).toBeUndefined();
    const whole = await db.executions.get(e.execution_id, new Date());
    expect(whole?.outputs).toEqual({ body: big(450_000) });
    expect(whole?.unread_values).toBeUndefined();
    expect(whole?.expired_values).toBeUndefined();
  });

  it('a callback URL and visible output ids too large for the item are stored the same way', async () => {
    const callback = `http://127.0.0.1:9/hook?token=${big(200_000)}`;
    const visible = Array.from({ length: 1_000 }, (_, i) => `output_${i}_${big(50, 'o')}`);
    const e = anExecution({ callback, visible_outputs: visible, inputs: { note: big(100_000) } });

    expect(await db.executions.create(e)).toBe(true);

    const read = await db.executions.get(e.execution_id, new Date());
    expect(read?.callback).toBe(callback);
    expect(read?.visible_outputs).toEqual(visible);
    expect(read?.inputs).toEqual({ note: big(100_000) });
    expect(sizes(await rawItem(e.execution_id)).dynamodb).toBeLessThan(INLINE_VALUES_MAX_BYTES + 4_096);
  });

  it('a large error message is stored the same way', async () => {
    const e = await running();

    await db.executions.transition(e.execution_id, 'failed', {
      error_message: `Node 't' failed: ${big(500_000)}`,
      caller_error_message: "Node 't' failed",
      completed_at: new Date().toISOString(),
    });

    const read = await db.executions.get(e.execution_id, new Date());
    expect(read?.error_message).toBe(`Node 't' failed: ${big(500_000)}`);
    expect(read?.caller_error_message).toBe("Node 't' failed");
  });
});

describe('retried and duplicate terminal writes', () => {
  it('the same values again: the same object, and the conditional write still decides', async () => {
    const e = await running();
    const set = { outputs: { body: big(500_000) }, completed_at: '2026-01-01T00:00:00.000Z' };

    const first = await db.executions.transition(e.execution_id, 'completed', set);
    const again = await db.executions.transition(e.execution_id, 'completed', set);

    expect(first.ok).toBe(true);
    expect(again.ok).toBe(false);
    expect(!again.ok && again.current?.outputs).toEqual({ body: big(500_000) });
    expect(objects.keysUnder(executionPrefix(e))).toHaveLength(1);
  });

  it("another write that loses leaves its object unreferenced; every read keeps the winner's values", async () => {
    const e = await running();
    await db.executions.transition(e.execution_id, 'completed', { outputs: { body: big(500_000, 'a') } });

    const loser = await db.executions.transition(e.execution_id, 'failed', { error_message: big(500_000, 'b') });

    expect(loser.ok).toBe(false);
    const read = await db.executions.get(e.execution_id, new Date(), true);
    expect(read?.status).toBe('completed');
    expect(read?.outputs).toEqual({ body: big(500_000, 'a') });
    expect(read?.error_message).toBeNull();
    // Two objects under the prefix, one referenced: the other goes with the prefix (lifecycle expiry, deployment delete).
    expect(objects.keysUnder(executionPrefix(e))).toHaveLength(2);
  });
});

describe('a crash between the object and the record', () => {
  it('leaves the record as it was (no reference to anything), and the retried write completes it with the same object', async () => {
    const e = await running();
    objects.crashAfterNextPut = true;

    await expect(db.executions.transition(e.execution_id, 'completed', { outputs: { body: big(500_000) } })).rejects.toThrow(
      /process died/,
    );

    const item = await rawItem(e.execution_id);
    expect(item.status).toBe('running');
    expect(item.claims).toBeUndefined();
    expect((await db.executions.get(e.execution_id, new Date(), true))?.outputs).toBeNull();
    expect(objects.keysUnder(executionPrefix(e))).toHaveLength(1);

    const retried = await db.executions.transition(e.execution_id, 'completed', { outputs: { body: big(500_000) } });

    expect(retried.ok && retried.execution.outputs).toEqual({ body: big(500_000) });
    expect(objects.keysUnder(executionPrefix(e))).toHaveLength(1);
  });

  it('at create: no record, so no execution was accepted, and the object is only under the prefix', async () => {
    const e = anExecution({ inputs: { note: big(300_000) } });
    objects.crashAfterNextPut = true;

    await expect(db.executions.create(e)).rejects.toThrow(/process died/);

    expect(await db.executions.get(e.execution_id, new Date(), true)).toBeNull();
    expect(objects.keysUnder(executionPrefix(e))).toHaveLength(1);
  });

  it('an object that is gone (expired, or removed with its deployment) reads as empty values; one altered is an error', async () => {
    const e = await running({ kind: 'run', deployment_id: null, pipeline_id: 'gone-run' });
    await db.executions.transition(e.execution_id, 'completed', { outputs: { body: big(500_000) } });
    const [key] = objects.keysUnder(executionPrefix(e));

    objects.objects.set(key!, { body: new TextEncoder().encode('{"outputs":{"body":"forged"}}'), media_type: 'application/json' });
    await expect(db.executions.get(e.execution_id, new Date())).rejects.toThrow(/do not match/);

    await objects.removePrefix(executionPrefix(e));
    const read = await db.executions.get(e.execution_id, new Date());
    expect(read?.status).toBe('completed');
    expect(read?.outputs).toEqual({});
    // Said, not silently empty: the view lists what is gone (views.ts runBody values_expired).
    expect(read?.expired_values).toEqual(['outputs']);
    expect(runBody(read!).values_expired).toEqual(['outputs']);
  });

  it('what a read learned about the values is never stored by a create', async () => {
    const e = anExecution({ expired_values: ['outputs'], unread_values: ['inputs'] });
    expect(await db.executions.create(e)).toBe(true);
    const item = await rawItem(e.execution_id);
    expect(item).not.toHaveProperty('expired_values');
    expect(item).not.toHaveProperty('unread_values');
  });
});

describe('through the task that runs the nodes: no orphan visible, no execution lost', () => {
  const answer = JSON.stringify({ items: Array.from({ length: 5_000 }, (_, i) => ({ id: i, text: big(100) })) });
  const http: HttpPort = async () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: answer });
  const def: PipelineDefinition = {
    nodes: {
      call: { type: 'http', url: 'http://127.0.0.1:9/big' },
      text: { type: 'transform', inputs: ['call'], expression: '$string(call)' },
      body: { type: 'output', from: 'text' },
    },
  };

  async function pending(
    d: ReturnType<typeof testDeps>,
    over: Partial<Execution> = {},
    definition: PipelineDefinition = def,
  ): Promise<Execution> {
    const pipeline = definition === def ? 'big-answers' : 'big-answers-once';
    const { version } = await db.pipelines.push(pipeline, definition, `h-${pipeline}`, new Date().toISOString());
    const e = anExecution({ pipeline_id: pipeline, version, visible_outputs: ['body'], ...over });
    await d.executions.create(e);
    expect((await taskStart(d, e.execution_id, 'wf-1')).proceed).toBe(true);
    return e;
  }

  it("RunNodes dies after storing the object: callers see no values, and MarkFailed (the state machine's Catch) ends it failed", async () => {
    const d = testDeps(db, { http, objects });
    const e = await pending(d);
    objects.crashAfterNextPut = true;

    await expect(taskRun(d, e.execution_id)).rejects.toThrow(/process died/);

    const meanwhile = await d.executions.get(e.execution_id, new Date(), true);
    expect(meanwhile?.status).toBe('running');
    expect(resultBody(meanwhile!).response_data).toEqual({});
    expect(await taskFail(d, e.execution_id, { Error: 'Error', Cause: 'process died' })).toEqual({ status: 'failed' });
    expect((await d.executions.get(e.execution_id, new Date(), true))?.status).toBe('failed');
  });

  it('when nothing followed the crash (the whole process died), the sweeper queues it to run again, no value visible meanwhile', async () => {
    const d = testDeps(db, { http, objects });
    const e = await pending(d, { callback: 'http://127.0.0.1:9/hook' });
    objects.crashAfterNextPut = true;
    await expect(taskRun(d, e.execution_id)).rejects.toThrow(/process died/);

    const report = await sweepAll(d, { startup: true });

    expect(report.rerun).toBeGreaterThanOrEqual(1);
    const read = await d.executions.get(e.execution_id, new Date(), true);
    expect(read?.status).toBe('running');
    expect(read?.reruns).toBe(1);
    expect(resultBody(read!).response_data).toEqual({});
    expect(d.queue.on('executions').map((m) => m.body.execution_id)).toContain(e.execution_id);
  });

  it('when nothing followed the crash and the pipeline opted out of re-runs, the sweeper fails it, its callback owed', async () => {
    const d = testDeps(db, { http, objects });
    const e = await pending(d, { callback: 'http://127.0.0.1:9/hook' }, { ...def, retry_interrupted: false });
    objects.crashAfterNextPut = true;
    await expect(taskRun(d, e.execution_id)).rejects.toThrow(/process died/);

    const report = await sweepAll(d, { startup: true });

    expect(report.interrupted).toBeGreaterThanOrEqual(1);
    const read = await d.executions.get(e.execution_id, new Date(), true);
    expect(read?.status).toBe('failed');
    expect(read?.outputs).toBeNull();
    expect(read?.callback_delivery?.outcome).toBe('pending');
    expect(d.queue.on('callbacks').map((m) => m.body.execution_id)).toContain(e.execution_id);
  });

  it('RunNodes retried after the crash completes it with the very value, over the same object', async () => {
    const d = testDeps(db, { http, objects });
    const e = await pending(d);
    objects.crashAfterNextPut = true;
    await expect(taskRun(d, e.execution_id)).rejects.toThrow(/process died/);

    expect(await taskRun(d, e.execution_id)).toEqual({ status: 'completed', next: 'done' });

    const read = await d.executions.get(e.execution_id, new Date(), true);
    expect(resultBody(read!).response_data).toEqual({ body: { value: answer, value_type: 'RAW' } });
    // One object for the node's recorded answer, one for the record's values: each written
    // again under the same name by the retry, never a second copy.
    const keys = objects.keysUnder(executionPrefix(e)).map((k) => k.slice(executionPrefix(e).length));
    expect(keys).toHaveLength(2);
    expect(keys.filter((k) => k.startsWith('node.call.value.'))).toHaveLength(1);
    expect(keys.filter((k) => k.startsWith('values.'))).toHaveLength(1);
  });
});
