/**
 * The cost model's workflow lists (bench/aws-calls.ts WORKFLOW_CALLS) against what the state
 * machine's tasks really ask of DynamoDB, on dynalite, counted at the document client as `npm
 * run bench` counts them: a caller's execution of each scenario from MarkRunning to its terminal
 * write, the clock moved on by each Wait the steps ask for (so a ten-minute job takes no ten
 * minutes here), the upstream a fake that answers at once. A task that reads or writes once more
 * fails here until the list, and the priced figures in docs/aws.md, follow.
 */
import { randomUUID } from 'node:crypto';
import { createDocumentClient } from '../../functions/adapters/dynamo';
import { DeploymentsStore } from '../../functions/adapters/deployments.store';
import { executionStores } from '../../functions/adapters/execution-stores';
import { PipelinesStore } from '../../functions/adapters/pipelines.store';
import { StepsStore } from '../../functions/adapters/steps.store';
import type { HttpPort } from '../../functions/core/ports';
import { submit } from '../../functions/services/caller.service';
import { markRunning } from '../../functions/services/lifecycle.service';
import { wakeExecution } from '../../functions/services/wake';
import { push } from '../../functions/services/push.service';
import { taskRun, taskStart, type StepAnswer } from '../../functions/services/tasks.service';
import { pollWaitsSeconds, WORKFLOW_CALLS, WORKFLOW_SCENARIOS, type StepCalls } from '../../bench/aws-calls';
import { cloneCounts, countDynamo, diffCounts, emptyCounts, type Counts } from '../../bench/instrument';
import { startTestDb, type TestDb } from '../support/dynamo';
import { aDeploymentRecord, testConfig, testDeps, type TestDeps } from '../support/fakes';
import { MemoryObjects } from '../support/memory-objects';
import { TEST_BASE_URL } from '../support/published';

let db: TestDb;
beforeAll(async () => {
  db = await startTestDb();
});
afterAll(async () => {
  await db.close();
});

const T0 = Date.parse('2026-11-22T12:00:00.000Z');

/** A job service: the POST submits, GETs answer running until `jobMs` after the submit, then the result. */
function jobService(clock: { now: number }, jobMs: number): HttpPort {
  let submitted = 0;
  const json = (status: number, body: unknown) => ({ status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return async (req) => {
    if (req.url.endsWith('/jobs') && req.method === 'POST') {
      submitted = clock.now;
      return json(202, { id: 'j1', status: 'queued', url: 'https://jobs.example/v1/jobs/j1' });
    }
    if (req.url.endsWith('/jobs/j1'))
      return json(200, clock.now - submitted >= jobMs ? { status: 'succeeded', output: 'done' } : { status: 'running' });
    return json(200, 'ok');
  };
}

interface Run {
  d: TestDeps;
  clock: { now: number };
  executionId: string;
  counts: Counts;
}

/** A caller's execution of `definition`, accepted (its message sent), nothing run yet; DynamoDB counted from here on. */
async function accepted(definition: unknown, http: (clock: { now: number }) => HttpPort): Promise<Run> {
  const counts = emptyCounts();
  const client = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
  let counting = false;
  countDynamo(client, counts, () => counting);
  const clock = { now: T0 };
  const objects = new MemoryObjects();
  const d = testDeps(
    {
      table: db.table,
      pipelines: new PipelinesStore(client, db.table),
      ...executionStores(client, db.table, { trackOpen: true, markerFollowUp: false }),
      deployments: new DeploymentsStore(client, db.table),
      steps: new StepsStore(client, db.table, () => objects),
    },
    {
      objects,
      clock: { now: () => new Date(clock.now) },
      http: http(clock),
      // As on AWS: a step of a few hundred ms does not look at its record again for a cancel.
      config: { ...testConfig(db), cancelPollMs: 2_000 },
    },
  );
  const pipelineId = `calls-${randomUUID().slice(0, 8)}`;
  await push(d, pipelineId, JSON.stringify(definition));
  const dep = aDeploymentRecord({ pipeline_id: pipelineId, version: 1, workflow: (await d.pipelines.getVersion(pipelineId, 1))?.workflow });
  await d.deployments.create(dep);
  const auth = { deploymentId: dep.deployment_id, revision: dep.revision, deleted: false };
  const answer = await submit(d, auth, {
    deploymentId: dep.deployment_id,
    body: '{}',
    contentType: 'application/json',
    idempotencyKey: undefined,
    baseUrl: TEST_BASE_URL,
  });
  counting = true;
  return { d, clock, executionId: answer.body.execution_id, counts };
}

/** DynamoDB's read and write units (index copies included) of what `act` did. */
async function units<T>(run: Run, act: () => Promise<T>): Promise<{ result: T; calls: StepCalls }> {
  const before = cloneCounts(run.counts);
  const result = await act();
  const c = diffCounts(before, run.counts);
  return { result, calls: { readUnits: c.readUnits, writeUnits: c.writeUnits + c.indexWriteUnits } };
}

/** MarkRunning, then every step, the clock moved on by each Wait asked for: the answers and each task's units. */
async function toTheEnd(run: Run, gen = 0) {
  const start = await units(run, () =>
    gen === 0
      ? taskStart(run.d, run.executionId, 'arn:aws:states:us-east-1:1:execution:m:x')
      : markRunning(run.d, run.executionId, 'w', gen),
  );
  const steps: { answer: StepAnswer; calls: StepCalls }[] = [];
  for (;;) {
    const { result: answer, calls } = await units(run, () => taskRun(run.d, run.executionId, gen));
    steps.push({ answer, calls });
    if (answer.next !== 'wait') return { start: start.calls, steps };
    run.clock.now += (answer.seconds ?? 0) * 1000;
  }
}

const sum = (list: StepCalls[]): StepCalls => ({
  readUnits: list.reduce((n, c) => n + c.readUnits, 0),
  writeUnits: list.reduce((n, c) => n + c.writeUnits, 0),
});
const answering = () => async () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '"ok"' });

it('(a) five nodes, two calls: Express, MarkRunning and one step, as WORKFLOW_CALLS.fiveNodes prices them', async () => {
  // Prepare
  const run = await accepted(WORKFLOW_SCENARIOS.fiveNodes.definition, answering);
  // Act
  const { start, steps } = await toTheEnd(run);
  // Assess
  const listed = WORKFLOW_CALLS.fiveNodes;
  expect((await run.d.executions.get(run.executionId, new Date(run.clock.now)))?.workflow).toBe('express');
  expect(steps.map((s) => s.answer.next)).toEqual(['done']);
  expect(steps[0]?.answer.status).toBe('completed');
  expect({ markRunning: start, steps: steps.length, stepUnits: sum(steps.map((s) => s.calls)) }).toEqual(listed);
});

it('(b) a ten-minute job by poll: Standard, a step per poll on the back-off pollWaitsSeconds computes, as WORKFLOW_CALLS.polledJob prices them', async () => {
  // Prepare
  const { jobMs } = WORKFLOW_SCENARIOS.polledJob;
  const run = await accepted(WORKFLOW_SCENARIOS.polledJob.definition, (clock) => jobService(clock, jobMs));
  // Act
  const { start, steps } = await toTheEnd(run);
  // Assess: the waits the steps asked for are the schedule the model prices.
  const waits = steps.filter((s) => s.answer.next === 'wait').map((s) => s.answer.seconds);
  expect(waits).toEqual(pollWaitsSeconds(jobMs));
  expect(steps.at(-1)?.answer).toMatchObject({ status: 'completed', next: 'done' });
  expect((await run.d.executions.get(run.executionId, new Date(run.clock.now)))?.workflow).toBe('standard');
  expect({ markRunning: start, steps: steps.length, stepUnits: sum(steps.map((s) => s.calls)) }).toEqual(WORKFLOW_CALLS.polledJob);
});

it("(c) a webhook job's parts: its first step and, after a resume's event kept and the wake (RESUME_CALLS, counted on the route), the woken generation to the end, as WORKFLOW_CALLS.webhookJob prices them", async () => {
  // Prepare: a job whose node waits after its submit (the first step), done by the time it is woken.
  const run = await accepted(WORKFLOW_SCENARIOS.polledJob.definition, (clock) => jobService(clock, 1_000));
  const first = await units(run, () => taskStart(run.d, run.executionId, 'arn:aws:states:us-east-1:1:execution:m:x'));
  const step = await units(run, () => taskRun(run.d, run.executionId, 0));
  expect(step.result.next).toBe('wait');
  run.clock.now += (step.result.seconds ?? 0) * 1000;
  const e = await run.d.executions.get(run.executionId, new Date(run.clock.now), true);
  if (!e) throw new Error('no execution');
  // Act: the resume's writes (its event on the node, the wake), then the woken workflow.
  const resume = await units(run, async () => {
    const kept = await run.d.steps.keepEvent(e, 'render', { value: { status: 'succeeded' }, at: run.clock.now });
    expect(kept).toEqual({ kept: true, state: 'waiting' });
    return wakeExecution(run.d, e);
  });
  const woken = await toTheEnd(run, 1);
  // Assess
  expect(resume.result).toBe(true);
  expect(run.d.queue.on('executions').at(-1)?.body).toEqual({ execution_id: run.executionId, gen: 1, workflow: 'standard' });
  expect(woken.steps.map((s) => s.answer)).toEqual([expect.objectContaining({ status: 'completed', next: 'done' })]);
  expect({
    markRunning: first.calls,
    firstStep: step.calls,
    wokenMarkRunning: woken.start,
    lastStep: sum(woken.steps.map((s) => s.calls)),
  }).toEqual(WORKFLOW_CALLS.webhookJob);
});
