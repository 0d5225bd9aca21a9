/**
 * The execution lifecycle and the services around it, on in-memory stores: the rules in
 * milliseconds, no network. The same rules run against DynamoDB in test/integration.
 */
import { AppError } from '../../../functions/core/errors';
import { serviceOpenApi } from '../../../functions/core/openapi-service';
import type { Execution } from '../../../functions/core/types';
import { cancel, execute, result, status } from '../../../functions/services/caller.service';
import {
  cancelExecution,
  failExecution,
  failInterrupted,
  finishExecution,
  markRunning,
} from '../../../functions/services/lifecycle.service';
import { listRuns, startRun } from '../../../functions/services/runs.service';
import { publish } from '../../../functions/services/publish.service';
import { push } from '../../../functions/services/push.service';
import { taskFail, taskRun, taskStart } from '../../../functions/services/tasks.service';
import { anExecution, testDeps, type TestDeps } from '../../support/fakes';
import { publishPipeline } from '../../support/published';
import { memoryStores } from '../../support/memory-stores';
import { greeting } from '../../support/runtime';
import { ROUTES } from '../../../lib/routes';

const BASE = 'https://api.example';

const execution = (over: Partial<Execution> = {}): Execution => anExecution({ deployment_id: 'dep', ...over });

async function seeded(d: TestDeps, over: Partial<Execution> = {}): Promise<Execution> {
  const e = execution(over);
  await d.executions.create(e);
  return e;
}

const woken = (d: TestDeps): string[] => {
  const ids: string[] = [];
  const notify = d.completions.notify.bind(d.completions);
  d.completions.notify = (id: string) => {
    ids.push(id);
    notify(id);
  };
  return ids;
};

describe('the execution lifecycle', () => {
  it('cancels a pending execution at once: status, callback owed and queued, workflow stopped, waiters woken', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const wakes = woken(d);
    const e = await seeded(d, { callback: 'https://hooks.example/x' });
    // Act
    const out = await cancelExecution(d, e);
    // Assess
    expect(out.ok).toBe(true);
    const now = await d.executions.get(e.execution_id, new Date());
    expect(now).toMatchObject({ status: 'cancelled', callback_delivery: { outcome: 'pending', attempts: 0 } });
    expect(now?.completed_at).not.toBeNull();
    expect(d.queue.on('callbacks').map((m) => m.body)).toEqual([{ execution_id: e.execution_id }]);
    expect(d.workflow.stopped).toEqual([e.execution_id]);
    expect(wakes).toEqual([e.execution_id]);
  });

  it('stops every Standard workflow that may run a waiting execution: the one that moved it to running (a re-queue) and its generation', async () => {
    // Prepare: running since a re-queued workflow took it, then woken once (generation 1).
    const d = testDeps(memoryStores());
    const e = await seeded(d, {
      status: 'running',
      started_at: new Date().toISOString(),
      workflow: 'standard',
      gen: 1,
      run_by: 'arn:aws:states:us-east-1:123456789012:execution:Pipegate-Standard:abc-r1700000000000',
    });
    // Act
    const out = await cancelExecution(d, e);
    // Assess
    expect(out.ok).toBe(true);
    expect(d.workflow.stopped.sort()).toEqual([`${e.execution_id}-g1`, 'abc-r1700000000000'].sort());
  });

  it('stops nothing on Express, which has no StopExecution: its next step finds the execution cancelled and ends', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const e = await seeded(d, {
      status: 'running',
      started_at: new Date().toISOString(),
      workflow: 'express',
      run_by: 'arn:aws:states:us-east-1:123456789012:express:Pipegate-Express:x:run-1',
    });
    // Act
    const out = await cancelExecution(d, e);
    // Assess
    expect(out.ok).toBe(true);
    expect(d.workflow.stopped).toEqual([]);
    expect(await taskRun(d, e.execution_id)).toEqual({ status: 'cancelled', next: 'done' });
  });

  it('refuses to cancel a finished execution and reports its status, writing nothing', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const e = await seeded(d);
    await markRunning(d, e.execution_id);
    await finishExecution(d, e, 'completed', { outputs: { message: 'hi' } });
    // Act
    const out = await cancelExecution(d, e);
    // Assess
    expect(out).toEqual({ ok: false, status: 'completed' });
    expect(d.workflow.stopped).toEqual([]);
    expect((await d.executions.get(e.execution_id, new Date()))?.status).toBe('completed');
  });

  it('lets exactly one of a cancel and a completion win, and the loser still sees the follow-ups done', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const e = await seeded(d, { callback: 'https://hooks.example/x' });
    await markRunning(d, e.execution_id);
    // Act
    const [cancelled, finished] = await Promise.all([cancelExecution(d, e), finishExecution(d, e, 'completed', { outputs: {} })]);
    // Assess
    expect([cancelled.ok, finished.ok].filter(Boolean)).toHaveLength(1);
    const final = await d.executions.get(e.execution_id, new Date());
    expect(['cancelled', 'completed']).toContain(final?.status);
    // The winner queued the callback; the loser made sure of it again (duplicates are harmless).
    expect(d.queue.on('callbacks').length).toBeGreaterThanOrEqual(1);
  });

  it('fails a pending execution through running, with the message, and sets started_at', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const e = await seeded(d);
    // Act
    const out = await failExecution(d, e, 'Execution failed: States.TaskFailed');
    // Assess
    expect(out.ok).toBe(true);
    const now = await d.executions.get(e.execution_id, new Date());
    expect(now).toMatchObject({ status: 'failed', error_message: 'Execution failed: States.TaskFailed' });
    expect(now?.started_at).not.toBeNull();
  });

  it('leaves a terminal execution as it is when asked to fail it', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const e = await seeded(d);
    await cancelExecution(d, e);
    // Act
    const out = await failExecution(d, { ...e, status: 'cancelled' }, 'late failure');
    // Assess
    expect(out).toEqual({ ok: false, status: 'cancelled' });
    expect((await d.executions.get(e.execution_id, new Date()))?.error_message).toBeNull();
  });

  it('fails only running executions as interrupted, saying by what', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const pending = await seeded(d);
    const running = await seeded(d);
    await markRunning(d, running.execution_id);
    // Act
    const a = await failInterrupted(d, pending);
    const b = await failInterrupted(d, { ...running, status: 'running' }, 'a service shutdown');
    // Assess
    expect(a).toBe(false);
    expect(b).toBe(true);
    expect((await d.executions.get(running.execution_id, new Date()))?.error_message).toBe(
      'Execution was interrupted by a service shutdown and did not finish',
    );
  });

  it('waits out a briefly unreachable store for the finishing write', async () => {
    // Prepare
    const stores = memoryStores();
    const d = testDeps(stores);
    const e = await seeded(d);
    await markRunning(d, e.execution_id);
    const transition = stores.executions.transition.bind(stores.executions);
    let failures = 2;
    stores.executions.transition = async (...args) => {
      if (failures-- > 0) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      return transition(...args);
    };
    // Act
    const out = await finishExecution(d, e, 'completed', { outputs: {} });
    // Assess
    expect(out.ok).toBe(true);
    expect(failures).toBe(-1);
  });
});

describe('the services on in-memory stores', () => {
  /** Pushes the greeting pipeline, runs it to the end through the state-machine tasks, publishes it. */
  async function published(d: TestDeps) {
    const p = await publishPipeline(d, 'greet', { base: BASE });
    expect(p.status).toBe(201);
    return p;
  }

  it('refuses to publish before any successful run, with the contract message', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    await push(d, 'greet', JSON.stringify(greeting));
    // Act
    const refusal = publish(d, 'greet', null, BASE);
    // Assess
    await expect(refusal).rejects.toMatchObject({
      status: 409,
      message: 'To deploy the workflow, there must be at least one successful execution.',
    });
  });

  it('records a finished run on its pipeline (the readiness pointers)', async () => {
    // Prepare
    const stores = memoryStores();
    const d = testDeps(stores);
    await push(d, 'greet', JSON.stringify(greeting));
    const run = await startRun(d, 'greet', null, BASE);
    // Act
    await taskStart(d, run.run_id);
    await taskRun(d, run.run_id);
    // Assess
    const meta = await d.pipelines.getMeta('greet');
    expect(meta?.latest_finished).toMatchObject({ run_id: run.run_id, status: 'completed', version: 1 });
    expect(meta?.last_success?.run_id).toBe(run.run_id);
  });

  it('executes, finishes and answers status and result; a second cancel is refused', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const { deploymentId, auth } = await published(d);
    // Act
    const accepted = await execute(d, auth, {
      deploymentId,
      body: JSON.stringify({ workflow_input: { name: { value: 'Ada', value_type: 'RAW' } } }),
      contentType: 'application/json',
      idempotencyKey: undefined,
      baseUrl: BASE,
    });
    const id = accepted.body.execution_id;
    const early = result(d, auth, id);
    await taskStart(d, id);
    await taskRun(d, id);
    // Assess
    expect(accepted.status).toBe(202);
    // The greeting ends within what Express allows: its message names the Express machine.
    expect(d.queue.on('executions').map((m) => m.body)).toContainEqual({ execution_id: id, workflow: 'express' });
    await expect(early).rejects.toMatchObject({ status: 409 });
    expect((await status(d, auth, id, BASE)).body.status).toBe('completed');
    expect((await result(d, auth, id)).body.response_data).toEqual({ message: { value: 'Hello, Ada!', value_type: 'RAW' } });
    await expect(cancel(d, auth, id, BASE)).rejects.toMatchObject({ status: 409, fields: { status: 'completed' } });
  });

  it('repeats an Idempotency-Key submission without a second execution; a different body is refused', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const { deploymentId, auth } = await published(d);
    const submit = (body: string) =>
      execute(d, auth, { deploymentId, body, contentType: 'application/json', idempotencyKey: 'order-42', baseUrl: BASE });
    // Act
    const first = await submit('{}');
    const again = await submit('{ }');
    const other = submit('{"workflow_input":{"name":{"value":"x","value_type":"RAW"}}}');
    // Assess
    expect(again.body.execution_id).toBe(first.body.execution_id);
    await expect(other).rejects.toBeInstanceOf(AppError);
    await expect(other).rejects.toMatchObject({ status: 422 });
  });

  it.each([
    ['empty', '', false],
    ['with a space', 'order 42', false],
    ['not ASCII', 'ordér-42', false],
    ['256 characters', 'k'.repeat(256), false],
    ['255 printable characters', '!~'.repeat(127) + 'k', true],
  ])('takes an Idempotency-Key only as the documented schema does (%s)', async (_what, key, ok) => {
    // Prepare
    const d = testDeps(memoryStores());
    const { deploymentId, auth } = await published(d);
    const documented = (
      serviceOpenApi(ROUTES).components.parameters as Record<string, { schema: { minLength: number; maxLength: number; pattern: string } }>
    ).IdempotencyKey?.schema;
    // Act
    const submitted = execute(d, auth, { deploymentId, body: '{}', contentType: 'application/json', idempotencyKey: key, baseUrl: BASE });
    // Assess
    if (ok) await expect(submitted).resolves.toMatchObject({ status: 202 });
    else await expect(submitted).rejects.toMatchObject({ status: 400, code: 'InvalidInputStructure' });
    const fits =
      key.length >= (documented?.minLength ?? 0) &&
      key.length <= (documented?.maxLength ?? 0) &&
      new RegExp(documented?.pattern ?? '').test(key);
    expect(fits).toBe(ok);
  });

  it('ends a run that a failing step left pending as failed through MarkFailed', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    await push(d, 'greet', JSON.stringify(greeting));
    const run = await startRun(d, 'greet', null, BASE);
    // Act
    const out = await taskFail(d, run.run_id, { Error: 'States.Timeout' });
    // Assess
    expect(out).toEqual({ status: 'failed' });
    // The greeting runs on Express, which holds an execution within 170 s whatever the default says.
    expect((await d.executions.get(run.run_id, new Date()))?.error_message).toBe('Execution timed out after 170 s');
  });

  it('pages runs newest first with the store cursor, and refuses a cursor of another pipeline', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    await push(d, 'greet', JSON.stringify(greeting));
    await push(d, 'other', JSON.stringify(greeting));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await startRun(d, 'greet', null, BASE)).run_id);
    await startRun(d, 'other', null, BASE);
    await startRun(d, 'other', null, BASE);
    const otherPage = await listRuns(d, 'other', '1', undefined);
    const otherCursor = otherPage.next_cursor;
    // Act
    const first = await listRuns(d, 'greet', '2', undefined);
    const second = await listRuns(d, 'greet', '2', first.next_cursor ?? undefined);
    // Assess
    expect(otherPage.runs).toHaveLength(1);
    expect(otherCursor).not.toBeNull();
    expect([...first.runs, ...second.runs].map((r) => r.run_id).sort()).toEqual([...ids].sort());
    expect(second.next_cursor).toBeNull();
    await expect(listRuns(d, 'greet', '2', otherCursor ?? 'x')).rejects.toMatchObject({ status: 400 });
  });
});
