/**
 * The sweeper against dynalite: each kind of stuck execution is repaired once, through the
 * conditional writes, with bounded work per pass, and never by a Scan.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ExecutionsStore } from '../../functions/adapters/executions.store';
import { ExecutionItems } from '../../functions/adapters/execution-items';
import { executionStores, type ExecutionStores } from '../../functions/adapters/execution-stores';
import { createDocumentClient } from '../../functions/adapters/dynamo';
import type { Execution } from '../../functions/core/types';
import { sweepAll, sweepOnce } from '../../functions/services/sweeper.service';
import { taskStart } from '../../functions/services/tasks.service';
import { push } from '../../functions/services/push.service';
import { INTERRUPTED_RERUNS } from '../../lib/workflow-budget';
import { createHandler as createSweeperHandler } from '../../functions/sweeper/handler';
import { createHandler as createRunnerHandler } from '../../functions/runner/handler';
import type { Context, SQSEvent } from 'aws-lambda';
import { newDelivery } from '../../functions/services/delivery';
import { startTestDb, type TestDb } from '../support/dynamo';
import { anExecution, testConfig, testDeps } from '../support/fakes';

let db: TestDb;
let commands: string[];
let client: DynamoDBDocumentClient;
let store: ExecutionsStore;
/** Every store of the execution items, over the counting client. */
let stores: ExecutionStores;

beforeAll(async () => {
  db = await startTestDb();
  client = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
  // Every command the store sends, by name: the sweeper must never Scan.
  const send = client.send.bind(client) as (c: unknown) => Promise<unknown>;
  commands = [];
  (client as unknown as { send: (c: unknown) => Promise<unknown> }).send = (c: unknown) => {
    commands.push((c as object).constructor.name);
    return send(c);
  };
  stores = executionStores(client, db.table, { trackOpen: true, markerFollowUp: true });
  store = stores.executions;
});
afterAll(async () => {
  client.destroy();
  await db.close();
});

const T0 = Date.parse('2026-11-22T12:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

const execution = (over: Partial<Execution> = {}): Execution => anExecution({ created_at: at(0), ...over });

/** Deps whose clock reads `now` ms after T0, over the counting store. */
function depsAt(now: number, config: Partial<ReturnType<typeof testConfig>> = {}) {
  return testDeps(db, {
    ...stores,
    clock: { now: () => new Date(T0 + now) },
    config: {
      ...testConfig(db),
      executionTimeoutMs: 60_000,
      sweepPendingAfterSeconds: 300,
      sweepGraceSeconds: 30,
      sweepLimit: 100,
      ...config,
    },
  });
}

async function running(e: Execution, startedAt: string): Promise<Execution> {
  await store.create(e);
  const t = await store.transition(e.execution_id, 'running', { started_at: startedAt });
  if (!t.ok) throw new Error('could not start');
  return t.execution;
}

async function clearIndex(): Promise<void> {
  // Settle everything a previous test left, so each test sees only its own entries.
  for (const e of [...(await stores.sweep.listSweep('open', 10_000)), ...(await stores.sweep.listSweep('callback', 10_000))]) {
    if (e.status === 'pending') await store.withdrawPending(e.execution_id);
    if (e.status === 'running') await store.transition(e.execution_id, 'failed', { completed_at: at(0) });
    if (e.callback_delivery?.outcome === 'pending')
      await stores.deliveries.recordDelivery(e.execution_id, e.callback_delivery.attempts, {
        ...e.callback_delivery,
        outcome: 'delivered',
      });
    await stores.sweep.clearSweep(e.execution_id);
  }
}

beforeEach(clearIndex);

it('queues a pending execution with no progress again, once per quiet period, and leaves a young one alone', async () => {
  const old = execution();
  const young = execution({ created_at: at(200_000) });
  await store.create(old);
  await store.create(young);

  const d = depsAt(400_000);
  const r = await sweepOnce(d);
  expect(r.requeued).toBe(1);
  expect(d.queue.on('executions').map((m) => m.body.execution_id)).toEqual([old.execution_id]);

  // The next pass a minute later does not queue it again; one after the quiet period does.
  const again = depsAt(460_000);
  expect((await sweepOnce(again)).requeued).toBe(0);
  const later = depsAt(400_000 + 301_000);
  const r3 = await sweepOnce(later);
  expect(
    later.queue
      .on('executions')
      .map((m) => m.body.execution_id)
      .sort(),
  ).toEqual([old.execution_id, young.execution_id].sort());
  expect(r3.requeued).toBe(2);
});

it('fails a running execution past its time-out plus grace with a clear message, callback owed and sent', async () => {
  const late = await running(execution({ callback: 'https://hooks.example.com/x' }), at(0));
  const onTime = await running(execution(), at(100_000));

  const d = depsAt(120_000);
  const r = await sweepOnce(d);
  expect(r.timedOut).toBe(1);
  const after = await store.get(late.execution_id, new Date(T0), true);
  expect(after).toMatchObject({
    status: 'failed',
    error_message: 'Execution timed out after 60 s: it was still running past its time-out and was stopped',
  });
  expect(after?.callback_delivery).toMatchObject({ outcome: 'pending', attempts: 0 });
  expect(d.queue.on('callbacks').map((m) => m.body.execution_id)).toEqual([late.execution_id]);
  expect((await store.get(onTime.execution_id, new Date(T0), true))?.status).toBe('running');
});

it('loses to the normal path: a run that completes first keeps its status', async () => {
  const e = await running(execution(), at(0));
  const d = depsAt(1_000_000);
  // The run completes between the sweeper's read and its write.
  const get = store.get.bind(store);
  const racing = Object.assign(Object.create(store) as ExecutionsStore, {
    get: async (id: string, now: Date, consistent?: boolean) => {
      const seen = await get(id, now, consistent);
      await store.transition(id, 'completed', { completed_at: at(999_000), outputs: {} });
      return seen;
    },
  });
  const r = await sweepOnce({ ...d, executions: racing });
  expect(r.timedOut).toBe(0);
  expect((await store.get(e.execution_id, new Date(T0), true))?.status).toBe('completed');
});

it('queues an owed callback whose message was lost, with its due time, and leaves one that is due soon alone', async () => {
  const lost = await running(execution({ callback: 'https://hooks.example.com/x' }), at(0));
  await store.transition(lost.execution_id, 'completed', {
    completed_at: at(1_000),
    outputs: {},
    callback_delivery: newDelivery(lost.execution_id),
  });
  const waiting = await running(execution({ callback: 'https://hooks.example.com/y' }), at(0));
  await store.transition(waiting.execution_id, 'completed', {
    completed_at: at(1_000),
    outputs: {},
    callback_delivery: newDelivery(waiting.execution_id),
  });
  await stores.deliveries.recordDelivery(waiting.execution_id, 0, {
    ...newDelivery(waiting.execution_id),
    attempts: 1,
    last_attempt_at: at(1_000),
    next_attempt_at: at(900_000),
  });

  const d = depsAt(600_000);
  const r = await sweepOnce(d);
  expect(r.callbacksRequeued).toBe(1);
  expect(d.queue.on('callbacks').map((m) => m.body)).toEqual([{ execution_id: lost.execution_id }]);
});

it('takes a settled execution whose marker a crash left behind off the index', async () => {
  const e = await running(execution(), at(0));
  // The terminal write landed; its follow-up marker removal did not (the process died).
  const items = new ExecutionItems(client, db.table, { trackOpen: true, markerFollowUp: true });
  items.clearSweepQuietly = async () => undefined;
  const noFollowUp = new ExecutionsStore(items);
  await noFollowUp.transition(e.execution_id, 'completed', { completed_at: at(1_000), outputs: {} });
  expect((await stores.sweep.listSweep('open')).map((x) => x.execution_id)).toContain(e.execution_id);

  const r = await sweepOnce(depsAt(600_000));
  expect(r.markersCleared).toBe(1);
  expect((await stores.sweep.listSweep('open')).map((x) => x.execution_id)).not.toContain(e.execution_id);
});

it('looks at a bounded number of entries per pass and covers them all over successive passes, by Query only', async () => {
  const ids = [];
  for (let i = 0; i < 25; i += 1) {
    const e = execution({ created_at: at(i) });
    await store.create(e);
    ids.push(e.execution_id);
  }
  commands.length = 0;
  const d = depsAt(400_000, { sweepLimit: 10 });
  const seen = new Set<string>();
  const passes = [];
  for (let i = 0; i < 6; i += 1) {
    const r = await sweepOnce(d);
    passes.push(r.examined);
    for (const m of d.queue.on('executions')) seen.add(String(m.body.execution_id));
  }
  for (const n of passes) expect(n).toBeLessThanOrEqual(10);
  expect(ids.every((id) => seen.has(id))).toBe(true);
  expect(commands).not.toContain('ScanCommand');
  expect(commands).toContain('QueryCommand');
});

it('at start-up queues every running execution to run again from its last step, and every pending one, whatever their age', async () => {
  const pending = execution({ created_at: at(599_000) });
  await store.create(pending);
  const run = await running(execution({ created_at: at(599_500) }), at(599_500));
  const d = depsAt(600_000);
  const r = await sweepAll(d, { startup: true });
  expect(r).toMatchObject({ requeued: 1, rerun: 1, interrupted: 0 });
  const after = await store.get(run.execution_id, new Date(T0), true);
  // Its time-out still runs from its first start: what it recorded is not done again.
  expect(after).toMatchObject({ status: 'running', reruns: 1, rerun_at: at(600_000), started_at: at(599_500), run_by: null });
  expect(
    d.queue
      .on('executions')
      .map((m) => m.body.execution_id)
      .sort(),
  ).toEqual([pending.execution_id, run.execution_id].sort());
});

it('re-runs an interrupted execution once under duplicate recoveries, lets one workflow take it, and fails it once out of re-runs', async () => {
  const run = await running(execution(), at(1_000));
  // Two recoveries that read the same record: one conditional write wins.
  const d = depsAt(10_000);
  expect(
    await Promise.all([stores.sweep.markRerun(run.execution_id, 0, at(10_000)), stores.sweep.markRerun(run.execution_id, 0, at(10_000))]),
  ).toEqual(expect.arrayContaining([true, false]));

  // Two workflows for the same re-run (a duplicate message): the first to claim it runs it; a
  // retry of that one's MarkRunning still proceeds.
  expect(await taskStart(d, run.execution_id, 'wf-1')).toEqual({ proceed: true });
  expect(await taskStart(d, run.execution_id, 'wf-2')).toEqual({ proceed: false });
  expect(await taskStart(d, run.execution_id, 'wf-1')).toEqual({ proceed: true });

  // Killed again, as many times as RunNodes' retries allow, then failed with the reason.
  for (let n = 1; n <= INTERRUPTED_RERUNS; n++) {
    const r = await sweepAll(depsAt(20_000 + n * 1000), { startup: true });
    expect(r).toMatchObject(n < INTERRUPTED_RERUNS ? { rerun: 1, interrupted: 0 } : { rerun: 0, interrupted: 1 });
    if (n < INTERRUPTED_RERUNS)
      expect(await taskStart(depsAt(20_500 + n * 1000), run.execution_id, `wf-${n + 2}`)).toEqual({ proceed: true });
  }
  const failed = await store.get(run.execution_id, new Date(T0), true);
  expect(failed?.status).toBe('failed');
  expect(failed?.error_message).toBe(
    `Execution was interrupted by a service restart and did not finish; it had already been run again ${INTERRUPTED_RERUNS} times`,
  );
});

it('counts re-runs from the last finished step: a job polled across many restarts is never out of them, a step that keeps crashing is', async () => {
  // Prepare
  const run = await running(execution(), at(1_000));
  const restart = async (n: number) => {
    const r = await sweepAll(depsAt(20_000 + n * 1000), { startup: true });
    if (r.rerun === 1) expect(await taskStart(depsAt(20_500 + n * 1000), run.execution_id, `wf-${n}`)).toEqual({ proceed: true });
    return r;
  };

  // Act: each restart is followed by a step that ends (it parks until the next poll)...
  const between = [];
  for (let n = 1; n <= INTERRUPTED_RERUNS + 2; n++) {
    between.push(await restart(n));
    expect(await store.recordProgress(run.execution_id, '{"t":0,"n":[]}', '[]')).toBe(true);
  }
  // ...then restarts with no step finished in between.
  const crashing = [];
  for (let n = 10; n < 10 + INTERRUPTED_RERUNS + 1; n++) crashing.push(await restart(n));
  const after = await store.get(run.execution_id, new Date(T0), true);

  // Assess
  for (const r of between) expect(r).toMatchObject({ rerun: 1, interrupted: 0 });
  expect(crashing.map((r) => [r.rerun, r.interrupted])).toEqual([...Array(INTERRUPTED_RERUNS).fill([1, 0]), [0, 1]]);
  expect(after).toMatchObject({ status: 'failed', started_at: at(1_000) });
});

it("leaves a running execution alone past the service's default time-out while its pipeline's own timeout_ms runs, then fails it naming that", async () => {
  // Prepare: a pipeline that may take ten minutes, on a service whose default is one.
  const d = depsAt(0);
  await push(
    d,
    'long-job',
    JSON.stringify({
      timeout_ms: 600_000,
      nodes: { in: { type: 'input', value_type: 'string', value: 'x' }, out: { type: 'output', from: 'in' } },
    }),
  );
  const run = await running(execution({ pipeline_id: 'long-job', version: 1, workflow: 'standard' }), at(0));

  // Act
  const early = await sweepOnce(depsAt(300_000));
  const during = await store.get(run.execution_id, new Date(T0), true);
  const late = await sweepOnce(depsAt(600_000 + 31_000));
  const after = await store.get(run.execution_id, new Date(T0), true);

  // Assess
  expect(early.timedOut).toBe(0);
  expect(during?.status).toBe('running');
  expect(late.timedOut).toBe(1);
  expect(after).toMatchObject({ status: 'failed', error_message: expect.stringMatching(/^Execution timed out after 600 s/) });
});

it("holds an Express execution of a version to what Express allows, even when the service's default is longer", async () => {
  // Prepare: a version pushed for Express; the service's default raised to ten minutes since.
  const d = depsAt(0, { executionTimeoutMs: 600_000 });
  await push(
    d,
    'short-job',
    JSON.stringify({ nodes: { in: { type: 'input', value_type: 'string', value: 'x' }, out: { type: 'output', from: 'in' } } }),
  );
  const run = await running(execution({ pipeline_id: 'short-job', version: 1, workflow: 'express' }), at(0));

  // Act
  const late = await sweepOnce(depsAt(170_000 + 31_000, { executionTimeoutMs: 600_000 }));

  // Assess
  expect(late.timedOut).toBe(1);
  expect(await store.get(run.execution_id, new Date(T0), true)).toMatchObject({
    status: 'failed',
    error_message: expect.stringMatching(/^Execution timed out after 170 s/),
  });
});

it('queues a pending execution again on its own state machine, and the runner starts it there', async () => {
  // Prepare
  const express = execution({ workflow: 'express' });
  const standard = execution({ workflow: 'standard' });
  await store.create(express);
  await store.create(standard);
  const d = depsAt(400_000);
  const runnerHandler = createRunnerHandler(() => d);

  // Act
  expect((await sweepOnce(d)).requeued).toBe(2);
  for (const m of d.queue.on('executions')) {
    await runnerHandler(
      {
        Records: [{ messageId: 'm', receiptHandle: 'r', body: JSON.stringify(m.body), attributes: { ApproximateReceiveCount: '1' } }],
      } as unknown as SQSEvent,
      {} as Context,
    );
  }

  // Assess
  const bodies = d.queue.on('executions').map((m) => m.body);
  expect(bodies).toEqual(
    expect.arrayContaining([
      { execution_id: express.execution_id, workflow: 'express', requeued: T0 + 400_000 },
      { execution_id: standard.execution_id, workflow: 'standard', requeued: T0 + 400_000 },
    ]),
  );
  expect(d.workflow.on.get(`${express.execution_id}-r${T0 + 400_000}`)).toBe('express');
  expect(d.workflow.on.get(`${standard.execution_id}-r${T0 + 400_000}`)).toBe('standard');
});

it('fails an interrupted execution at once when its pipeline sets retry_interrupted to false', async () => {
  const d = depsAt(30_000);
  await push(
    d,
    'not-again',
    JSON.stringify({
      retry_interrupted: false,
      nodes: { out: { type: 'output', from: 'in' }, in: { type: 'input', value_type: 'string', value: 'x' } },
    }),
  );
  const run = await running(execution({ pipeline_id: 'not-again', version: 1 }), at(29_000));
  const r = await sweepAll(d, { startup: true });
  expect(r).toMatchObject({ rerun: 0, interrupted: 1 });
  expect((await store.get(run.execution_id, new Date(T0), true))?.error_message).toMatch(
    /retry_interrupted to false, so it was not run again$/,
  );
});

it('runs as the scheduled Lambda: one pass, and a pass with a failed repair throws, so the errors alarm sees it', async () => {
  const e = execution();
  await store.create(e);
  const ok = depsAt(400_000);
  const report = await createSweeperHandler(() => ok)();
  expect(report).toMatchObject({ requeued: 1, errors: 0 });

  const failing = depsAt(400_000 + 301_000);
  const broken = { ...failing, queue: { send: async () => Promise.reject(new Error('SQS unreachable')) } };
  await expect(createSweeperHandler(() => broken)()).rejects.toThrow(/1 repair\(s\) failed/);
});

it('starts a re-queued pending execution under a new workflow name when its first workflow closed (Standard names stay taken)', async () => {
  // Prepare: the first workflow ran and ended without moving the record on (MarkRunning and
  // MarkFailed both throttled out), so the name is taken for 90 days on Standard.
  const e = execution();
  await store.create(e);
  const d = depsAt(400_000);
  const runnerHandler = createRunnerHandler(() => d);
  const sqsEvent = (body: Record<string, unknown>) =>
    ({
      Records: [{ messageId: 'm', receiptHandle: 'r', body: JSON.stringify(body), attributes: { ApproximateReceiveCount: '1' } }],
    }) as unknown as SQSEvent;
  await runnerHandler(sqsEvent({ execution_id: e.execution_id }), {} as Context);
  expect(d.workflow.started).toEqual([e.execution_id]);

  // Act: the sweeper re-queues it and the runner consumes the message (twice: SQS may deliver it again).
  expect((await sweepOnce(d)).requeued).toBe(1);
  const [requeue] = d.queue.on('executions');
  await runnerHandler(sqsEvent(requeue?.body ?? {}), {} as Context);
  await runnerHandler(sqsEvent(requeue?.body ?? {}), {} as Context);

  // Assess: a second workflow was started, once, for the same execution.
  expect(d.workflow.started).toHaveLength(2);
  expect(d.workflow.started[1]).not.toBe(e.execution_id);
  expect(d.workflow.started[1]?.startsWith(e.execution_id)).toBe(true);
});

it('spreads the sweep index over several partition keys and still finds every entry (scatter-gather)', async () => {
  // Prepare
  const made = Array.from({ length: 40 }, () => execution());
  for (const e of made) await store.create(e);
  // Act
  const raw = await Promise.all(
    made.map((e) =>
      client.send(
        new GetCommand({ TableName: db.table, Key: { pk: `EXEC#${e.execution_id}`, sk: 'EXEC' }, ProjectionExpression: 'sweep' }),
      ),
    ),
  );
  const found = (await stores.sweep.listSweep('open', 10_000)).map((e) => e.execution_id);
  // Assess: no single hot key; every one of them still on the index as read by the sweeper.
  expect(new Set(raw.map((r) => r.Item?.sweep)).size).toBeGreaterThan(1);
  for (const e of made) expect(found).toContain(e.execution_id);
});
