import { randomUUID } from 'node:crypto';
import { anExecution } from '../support/fakes';
import type { Execution, PipelineDefinition } from '../../functions/core/types';
import { startTestDb, type TestDb } from '../support/dynamo';

let db: TestDb;
beforeAll(async () => {
  db = await startTestDb();
});
afterAll(async () => {
  await db.close();
});

const def = (greeting: string): PipelineDefinition => ({
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    msg: { type: 'transform', inputs: ['name'], expression: `'${greeting}, ' & name` },
    out: { type: 'output', from: 'msg' },
  },
});

const execution = (over: Partial<Execution> = {}): Execution => anExecution({ inputs: { name: 'x' }, visible_outputs: ['out'], ...over });

describe('pipelines store', () => {
  it('numbers versions from 1 and returns the latest unchanged for identical content', async () => {
    const a = await db.pipelines.push('greet', def('Hello'), 'h1', '2026-01-01T00:00:00.000Z');
    const same = await db.pipelines.push('greet', def('Hello'), 'h1', '2026-01-01T00:00:01.000Z');
    const b = await db.pipelines.push('greet', def('Hi'), 'h2', '2026-01-01T00:00:02.000Z');

    expect(a).toEqual({ version: 1, created: true });
    expect(same).toEqual({ version: 1, created: false });
    expect(b).toEqual({ version: 2, created: true });
    expect((await db.pipelines.getVersion('greet', 1))?.definition).toEqual(def('Hello'));
    expect((await db.pipelines.getMeta('greet'))?.version).toBe(2);
  });

  it('gives every concurrent push of different content its own version', async () => {
    const pushes = await Promise.all(
      Array.from({ length: 6 }, (_, i) => db.pipelines.push('race', def(`G${i}`), `hash-${i}`, new Date().toISOString())),
    );

    const versions = pushes.map((p) => p.version).sort((x, y) => x - y);
    expect(versions).toEqual([1, 2, 3, 4, 5, 6]);
    expect((await db.pipelines.getMeta('race'))?.version).toBe(6);
  });

  it('adopts a version left behind by a push that stopped half-way', async () => {
    await db.pipelines.push('orphan', def('A'), 'ha', '2026-01-01T00:00:00.000Z');
    // A push that wrote version 2 but died before moving the pointer:
    const { PutCommand } = await import('@aws-sdk/lib-dynamodb');
    const { createDocumentClient, keys } = await import('../../functions/adapters/dynamo');
    const raw = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
    await raw.send(
      new PutCommand({
        TableName: db.table,
        Item: {
          ...keys.version('orphan', 2),
          pipeline_id: 'orphan',
          version: 2,
          definition: JSON.stringify(def('B')),
          hash: 'hb',
          created_at: 'x',
        },
      }),
    );
    raw.destroy();

    const next = await db.pipelines.push('orphan', def('C'), 'hc', '2026-01-01T00:00:05.000Z');

    expect(next).toEqual({ version: 3, created: true });
    expect((await db.pipelines.getVersion('orphan', 2))?.hash).toBe('hb');
  });

  it('lists pipelines through the index', async () => {
    const ids = (await db.pipelines.list()).map((p) => p.pipeline_id);
    expect(ids).toEqual(expect.arrayContaining(['greet', 'race', 'orphan']));
  });

  it('keeps the newest finished run and the newest success, whatever order they are recorded in', async () => {
    await db.pipelines.push('runs', def('A'), 'r1', '2026-01-01T00:00:00.000Z');
    const newer = { run_id: 'b', status: 'failed' as const, version: 1, created_at: '2026-01-01T00:00:02.000Z' };
    const older = { run_id: 'a', status: 'completed' as const, version: 1, created_at: '2026-01-01T00:00:01.000Z' };

    await db.pipelines.recordRunFinished('runs', newer);
    await db.pipelines.recordRunFinished('runs', older);

    const m = await db.pipelines.getMeta('runs');
    expect(m?.latest_finished?.run_id).toBe('b');
    expect(m?.last_success?.run_id).toBe('a');
  });

  it('lets only one claimant take the deployment slot', async () => {
    await db.pipelines.push('slot', def('A'), 's1', '2026-01-01T00:00:00.000Z');
    const claims = await Promise.all(['d1', 'd2', 'd3'].map((id) => db.pipelines.claimDeployment('slot', null, id)));
    expect(claims.filter(Boolean)).toHaveLength(1);
  });
});

describe('executions store', () => {
  it('creates once per id', async () => {
    const e = execution();
    expect(await db.executions.create(e)).toBe(true);
    expect(await db.executions.create(e)).toBe(false);
    expect((await db.executions.get(e.execution_id, new Date()))?.status).toBe('pending');
  });

  it('treats an expired execution as absent', async () => {
    const e = execution({ expires_at: Math.floor(Date.now() / 1000) - 1 });
    await db.executions.create(e);
    expect(await db.executions.get(e.execution_id, new Date())).toBeNull();
  });

  it('allows only the moves of the transition table', async () => {
    const e = execution();
    await db.executions.create(e);

    expect((await db.executions.transition(e.execution_id, 'completed', {})).ok).toBe(false);
    expect((await db.executions.transition(e.execution_id, 'running', { started_at: 'now' })).ok).toBe(true);
    expect((await db.executions.transition(e.execution_id, 'running', {})).ok).toBe(false);
    const done = await db.executions.transition(e.execution_id, 'completed', { outputs: { out: 'x' } });
    expect(done.ok && done.execution.outputs).toEqual({ out: 'x' });
    const late = await db.executions.transition(e.execution_id, 'cancelled', {});
    expect(late).toEqual({ ok: false, current: expect.objectContaining({ status: 'completed' }) });
  });

  it('settles a race of cancel against complete with exactly one terminal status, 200 times', async () => {
    const outcomes = { completed: 0, cancelled: 0 };
    for (let i = 0; i < 200; i++) {
      const e = execution({ status: 'running', started_at: new Date().toISOString() });
      await db.executions.create(e);
      const [done, cancelled] = await Promise.all([
        db.executions.transition(e.execution_id, 'completed', { outputs: { out: 'x' } }),
        db.executions.transition(e.execution_id, 'cancelled', {}),
      ]);
      expect(Number(done.ok) + Number(cancelled.ok)).toBe(1);
      const final = await db.executions.get(e.execution_id, new Date(), true);
      expect(final?.status).toBe(done.ok ? 'completed' : 'cancelled');
      outcomes[done.ok ? 'completed' : 'cancelled']++;
    }
    expect(outcomes.completed + outcomes.cancelled).toBe(200);
  });

  it('keeps open executions and owed callbacks on the sweep index, and only those', async () => {
    const open = execution();
    const owed = execution({ callback: 'http://127.0.0.1/cb' });
    const plain = execution();
    for (const e of [open, owed, plain]) await db.executions.create(e);
    for (const e of [owed, plain]) await db.executions.transition(e.execution_id, 'running', {});
    await db.executions.transition(owed.execution_id, 'completed', {
      callback_delivery: {
        webhook_id: 'msg_1',
        attempts: 0,
        outcome: 'pending',
        last_status: null,
        last_error: null,
        last_attempt_at: null,
        next_attempt_at: null,
      },
    });
    await db.executions.transition(plain.execution_id, 'completed', {});

    const openIds = (await db.sweep.listSweep('open', 1000)).map((e) => e.execution_id);
    const owedIds = (await db.sweep.listSweep('callback', 1000)).map((e) => e.execution_id);
    expect(openIds).toContain(open.execution_id);
    expect(openIds).not.toContain(plain.execution_id);
    expect(owedIds).toContain(owed.execution_id);
    expect(owedIds).not.toContain(plain.execution_id);

    const first = {
      webhook_id: 'msg_1',
      attempts: 1,
      outcome: 'delivered' as const,
      last_status: 200,
      last_error: null,
      last_attempt_at: 'now',
      next_attempt_at: null,
    };
    expect(await db.deliveries.recordDelivery(owed.execution_id, 0, first)).toBe(true);
    expect(await db.deliveries.recordDelivery(owed.execution_id, 0, first)).toBe(false);
    expect((await db.sweep.listSweep('callback', 1000)).map((e) => e.execution_id)).not.toContain(owed.execution_id);
  });

  it('without open tracking (AWS) indexes only owed callbacks', async () => {
    const { executionStores } = await import('../../functions/adapters/execution-stores');
    const { createDocumentClient } = await import('../../functions/adapters/dynamo');
    const raw = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
    const { executions: store, sweep } = executionStores(raw, db.table, { trackOpen: false });
    const e = execution({ callback: 'https://hooks.example.com/x' });
    await store.create(e);
    expect((await sweep.listSweep('open', 1000)).map((x) => x.execution_id)).not.toContain(e.execution_id);

    await store.transition(e.execution_id, 'running', {});
    await store.transition(e.execution_id, 'failed', {
      completed_at: new Date().toISOString(),
      callback_delivery: {
        webhook_id: 'msg_2',
        attempts: 0,
        outcome: 'pending',
        last_status: null,
        last_error: null,
        last_attempt_at: null,
        next_attempt_at: null,
      },
    });
    expect((await sweep.listSweep('callback', 1000)).map((x) => x.execution_id)).toContain(e.execution_id);
    raw.destroy();
  });

  it("lists a pipeline's runs newest first, a page at a time", async () => {
    for (let i = 0; i < 5; i++) {
      await db.executions.create(
        execution({ kind: 'run', pipeline_id: 'lister', deployment_id: null, created_at: `2026-01-01T00:00:0${i}.000Z` }),
      );
    }
    const first = await db.executionLists.listRuns('lister', { limit: 3 });
    const second = await db.executionLists.listRuns('lister', { limit: 3, cursor: first.next ?? undefined });

    expect(first.runs.map((r) => r.created_at)).toEqual([
      '2026-01-01T00:00:04.000Z',
      '2026-01-01T00:00:03.000Z',
      '2026-01-01T00:00:02.000Z',
    ]);
    expect(second.runs.map((r) => r.created_at)).toEqual(['2026-01-01T00:00:01.000Z', '2026-01-01T00:00:00.000Z']);
  });

  it('claims an idempotency key exactly once among concurrent requests', async () => {
    const now = new Date();
    const claims = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        db.idempotency.claimIdempotency(
          'dep',
          'keyhash',
          { execution_id: `e${i}`, request_hash: 'h', created_at: now.toISOString() },
          Math.floor(now.getTime() / 1000) + 60,
          now,
        ),
      ),
    );
    const winners = claims.filter((c) => c.claimed);
    expect(winners).toHaveLength(1);
    const ids = new Set(claims.map((c) => (c.claimed ? null : c.existing.execution_id)).filter(Boolean));
    expect(ids.size).toBe(1);
  });

  it('lets an expired idempotency key be claimed again', async () => {
    const now = new Date();
    const past = Math.floor(now.getTime() / 1000) - 1;
    await db.idempotency.claimIdempotency('dep', 'old', { execution_id: 'a', request_hash: 'h', created_at: 'x' }, past, now);
    const again = await db.idempotency.claimIdempotency(
      'dep',
      'old',
      { execution_id: 'b', request_hash: 'h2', created_at: 'y' },
      past + 100,
      now,
    );
    expect(again.claimed).toBe(true);
  });
});

describe('deployments store', () => {
  const record = (id: string) => ({
    deployment_id: id,
    pipeline_id: 'p',
    version: 1,
    revision: 1,
    status: 'live' as const,
    inputs: [],
    outputs: [{ id: 'out', visible: true }],
    published_at: 'now',
    created_at: 'now',
    key_hashes: [{ hash: 'h', expires_at: null }],
    signing_secrets: [{ sealed: 's', expires_at: null }],
    deleted_at: null,
  });

  it('republishes only from the revision that was read', async () => {
    const id = randomUUID();
    await db.deployments.create(record(id));
    const waits = [{ id: 'approval', visible: false, timeout_ms: 60_000, fields: { ok: { value_type: 'boolean' as const } } }];
    const next = { version: 2, inputs: [], outputs: [], waits, published_at: 'later', node_detail: false, workflow: 'standard' as const };

    const first = await db.deployments.republish(id, 1, next);
    const stale = await db.deployments.republish(id, 1, next);

    expect(first?.revision).toBe(2);
    expect(first?.version).toBe(2);
    expect(first?.node_detail).toBe(false);
    expect((await db.deployments.get(id))?.waits).toEqual(waits);
    // The state machine of the version it now serves goes with it.
    expect(first?.workflow).toBe('standard');
    expect(stale).toBeNull();
  });

  it('keeps a tombstone with the key hashes on delete, and deletes once', async () => {
    const id = randomUUID();
    await db.deployments.create(record(id));

    expect(await db.deployments.markDeleted(id, 'then')).toBe(true);
    expect(await db.deployments.markDeleted(id, 'then')).toBe(false);
    const tomb = await db.deployments.get(id);
    expect(tomb?.status).toBe('deleted');
    expect(tomb?.key_hashes).toHaveLength(1);
    expect(
      await db.deployments.republish(id, tomb?.revision ?? 0, {
        version: 3,
        inputs: [],
        outputs: [],
        waits: [],
        published_at: 'x',
        node_detail: true,
        workflow: 'express',
      }),
    ).toBeNull();
  });
});
