/**
 * The state machine's tasks hold a long execution to its definition's own `timeout_ms` (a job
 * polled for hours), not the service's default: the links a run hands its nodes for files last
 * that long plus the margin (a link that expired under a render farm still working on it would
 * fail the job for no reason), and a step cut off at the deadline says that time-out.
 */
import { createHash } from 'node:crypto';
import type { PipelineDefinition } from '../../functions/core/types';
import { NODE_LINK_MARGIN_SECONDS } from '../../functions/core/asset-links';
import { taskFail, taskRun, taskStart } from '../../functions/services/tasks.service';
import { startTestDb, type TestDb } from '../support/dynamo';
import { anExecution, testDeps } from '../support/fakes';
import { MemoryObjects } from '../support/memory-objects';
import { STANDARD_HISTORY_EVENTS, STANDARD_STEPS_PER_WORKFLOW } from '../../lib/workflow-budget';
import { png } from '../support/media';

let db: TestDb;
beforeAll(async () => {
  db = await startTestDb();
});
afterAll(async () => {
  await db?.close();
});

const TWO_HOURS_MS = 7_200_000;

it("an asset input's link lasts the definition's timeout_ms plus the margin, past the configured default", async () => {
  // Prepare: a two-hour pipeline whose output is when its file's link expires.
  const objects = new MemoryObjects();
  const bytes = png(2, 2);
  const key = 'd/dep/e/exec/inputs/photo';
  await objects.put(key, bytes, 'image/png');
  const def: PipelineDefinition = {
    timeout_ms: TWO_HOURS_MS,
    nodes: {
      photo: { type: 'input', value_type: 'asset', value: `data:image/png;base64,${bytes.toString('base64')}` },
      expires: { type: 'transform', inputs: ['photo'], expression: 'photo.expires_at' },
      out: { type: 'output', from: 'expires' },
    },
  };
  const d = testDeps(db, { objects });
  expect(d.config.executionTimeoutMs).toBeLessThan(TWO_HOURS_MS);
  const { version } = await db.pipelines.push('long-job', def, 'h-long-job', new Date().toISOString());
  const e = anExecution({
    pipeline_id: 'long-job',
    version,
    visible_outputs: ['out'],
    base_url: 'http://127.0.0.1:3000',
    workflow: 'standard',
    assets: { photo: { key, media_type: 'image/png', bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') } },
  });
  await d.executions.create(e);
  expect((await taskStart(d, e.execution_id, 'wf-1')).proceed).toBe(true);

  // Act
  const before = Date.now();
  await taskRun(d, e.execution_id);
  const after = Date.now();

  // Assess
  const done = await d.executions.get(e.execution_id, new Date(), true);
  expect(done?.status).toBe('completed');
  const expires = Date.parse(String(done?.outputs?.out));
  expect(expires).toBeGreaterThanOrEqual(before + TWO_HOURS_MS + NODE_LINK_MARGIN_SECONDS * 1000 - 1000);
  expect(expires).toBeLessThanOrEqual(after + TWO_HOURS_MS + NODE_LINK_MARGIN_SECONDS * 1000 + 1000);
});

it("a step cut off at the deadline (States.Timeout) fails the execution naming the definition's timeout_ms, not the default", async () => {
  // Prepare
  const def: PipelineDefinition = {
    timeout_ms: TWO_HOURS_MS,
    nodes: {
      name: { type: 'input', value_type: 'string', value: 'x' },
      out: { type: 'output', from: 'name' },
    },
  };
  const d = testDeps(db);
  const { version } = await db.pipelines.push('long-timeout', def, 'h-long-timeout', new Date().toISOString());
  const e = anExecution({ pipeline_id: 'long-timeout', version, workflow: 'standard' });
  await d.executions.create(e);
  expect((await taskStart(d, e.execution_id, 'wf-1')).proceed).toBe(true);

  // Act
  const failed = await taskFail(d, e.execution_id, { Error: 'States.Timeout' });

  // Assess
  expect(failed).toEqual({ status: 'failed' });
  expect((await d.executions.get(e.execution_id, new Date(), true))?.error_message).toBe('Execution timed out after 7200 s');
});

describe('a Standard workflow hands its execution on before its history fills', () => {
  const def: PipelineDefinition = {
    timeout_ms: TWO_HOURS_MS,
    nodes: {
      name: { type: 'input', value_type: 'string', value: 'x' },
      later: { type: 'delay', inputs: ['name'], ms: 3_600_000 },
      out: { type: 'output', from: 'later' },
    },
  };

  async function waitingExecution(pipeline: string) {
    const d = testDeps(db);
    const { version } = await db.pipelines.push(pipeline, def, `h-${pipeline}`, new Date().toISOString());
    const e = anExecution({ pipeline_id: pipeline, version, workflow: 'standard' });
    await d.executions.create(e);
    expect((await taskStart(d, e.execution_id, 'wf-1')).proceed).toBe(true);
    return { d, e };
  }

  it('counts its steps in each answer', async () => {
    // Prepare
    const { d, e } = await waitingExecution('hand-over-count');

    // Act
    const answer = await taskRun(d, e.execution_id, 0, 41);

    // Assess
    expect(answer).toMatchObject({ status: 'running', next: 'wait', steps: 42 });
    expect(d.queue.sent).toEqual([]);
  });

  it(`after ${STANDARD_STEPS_PER_WORKFLOW} steps ends, and a workflow of the next generation goes on with it`, async () => {
    // Prepare
    const { d, e } = await waitingExecution('hand-over');

    // Act: the step that makes the workflow's last.
    const answer = await taskRun(d, e.execution_id, 0, STANDARD_STEPS_PER_WORKFLOW - 1);

    // Assess: this workflow is done; the next generation's is queued, on the same machine, and the
    // execution (still running, its wait recorded) is that generation's.
    expect(answer).toEqual({ status: 'handed_over', next: 'done' });
    expect(d.queue.on('executions').map((m) => m.body)).toEqual([{ execution_id: e.execution_id, gen: 1, workflow: 'standard' }]);
    const after = await d.executions.get(e.execution_id, new Date(), true);
    expect(after).toMatchObject({ status: 'running', gen: 1 });
    // The old generation's next step would stand down; the new one's goes on.
    expect(await taskRun(d, e.execution_id, 0, 0)).toEqual({ status: 'superseded', next: 'done' });
    expect(await taskRun(d, e.execution_id, 1, 0)).toMatchObject({ status: 'running', next: 'wait', steps: 1 });
  });

  it('the quota holds the steps a workflow makes: each writes at most 9 events when nothing is retried', () => {
    expect(STANDARD_STEPS_PER_WORKFLOW * 9).toBeLessThan(STANDARD_HISTORY_EVENTS * 0.75);
  });
});
