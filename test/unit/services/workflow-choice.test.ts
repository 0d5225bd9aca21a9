/**
 * The state machine each execution runs on: decided when its version is pushed, kept with the
 * version, its deployment and its executions, named in every message that starts a workflow, and
 * shown in the owner's views (callers' answers do not say).
 */
import type { Context, SQSEvent } from 'aws-lambda';
import { contentHash, validateDefinition } from '../../../functions/core/pipeline';
import { createHandler as createRunnerHandler } from '../../../functions/runner/handler';
import { execute, status } from '../../../functions/services/caller.service';
import { getExecution } from '../../../functions/services/owner-executions.service';
import { push } from '../../../functions/services/push.service';
import { getRun, startRun } from '../../../functions/services/runs.service';
import { aDeploymentRecord, testDeps, type TestDeps } from '../../support/fakes';
import { memoryStores } from '../../support/memory-stores';
import { publishPipeline, TEST_BASE_URL } from '../../support/published';
import { greeting } from '../../support/runtime';

/** A pipeline that never waits but may take ten minutes: Standard, and it completes in one step. */
const tenMinutes = { ...greeting, timeout_ms: 600_000 };
const job = {
  nodes: {
    prompt: { type: 'input', value_type: 'string', value: 'a cat' },
    render: {
      type: 'http',
      method: 'POST',
      url: 'https://jobs.example/v1/jobs',
      inputs: ['prompt'],
      body: "{'prompt': prompt}",
      poll: { url: "'https://jobs.example/v1/jobs/' & id", done: "status = 'done'" },
    },
    image: { type: 'output', from: 'render' },
  },
};

async function runnerStarts(d: TestDeps): Promise<void> {
  const runner = createRunnerHandler(() => d);
  for (const m of d.queue.on('executions')) {
    const event = { Records: [{ messageId: 'm', receiptHandle: 'r', body: JSON.stringify(m.body), attributes: {} }] };
    await runner(event as unknown as SQSEvent, {} as Context);
  }
}

describe('the state machine a version runs on', () => {
  it('is decided at push and said in its answer: Express for the greeting, Standard for a polled job', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    // Act
    const short = await push(d, 'greet', JSON.stringify(greeting));
    const long = await push(d, 'render', JSON.stringify(job));
    const longer = await push(d, 'slow', JSON.stringify(tenMinutes));
    // Assess
    expect(short.body).toMatchObject({ workflow: 'express', workflow_reason: expect.stringContaining('fits an Express execution') });
    expect(long.body).toMatchObject({
      workflow: 'standard',
      workflow_reason: expect.stringContaining("node 'render' (http) may wait up to 3600000 ms"),
    });
    expect(longer.body).toMatchObject({ workflow: 'standard', workflow_reason: expect.stringContaining('timeout_ms 600000') });
    expect((await d.pipelines.getVersion('render', 1))?.workflow).toBe('standard');
  });

  it('stays what it was when the version was first pushed: pushing the same definition again changes nothing', async () => {
    // Prepare: a version stored as Standard (as an earlier rule could have decided) whose definition would now be Express.
    const d = testDeps(memoryStores());
    const checked = validateDefinition(greeting);
    if (!checked.ok) throw new Error('greeting is invalid');
    await d.pipelines.push('greet', checked.definition, contentHash(checked.definition), new Date().toISOString(), 'standard');
    // Act
    const again = await push(d, 'greet', JSON.stringify(greeting));
    // Assess
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      version: 1,
      created: false,
      workflow: 'standard',
      workflow_reason: 'as decided when version 1 was first pushed',
    });
  });

  it("goes with a run to its record, its message and the runner's start, and shows in the owner's run view", async () => {
    // Prepare
    const d = testDeps(memoryStores());
    await push(d, 'render', JSON.stringify(job));
    // Act
    const run = await startRun(d, 'render', null, TEST_BASE_URL);
    await runnerStarts(d);
    // Assess
    expect(d.queue.on('executions').map((m) => m.body)).toEqual([{ execution_id: run.run_id, workflow: 'standard' }]);
    expect(d.workflow.on.get(run.run_id)).toBe('standard');
    expect((await getRun(d, 'render', run.run_id)).body).toMatchObject({ workflow: 'standard' });
  });

  it("goes with a publish to the deployment, and from it to each caller's execution; the owner sees it, the caller does not", async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const p = await publishPipeline(d, 'slow', { definition: tenMinutes });
    // Act
    const accepted = await execute(d, p.auth, {
      deploymentId: p.deploymentId,
      body: '{}',
      contentType: 'application/json',
      idempotencyKey: undefined,
      baseUrl: TEST_BASE_URL,
    });
    const id = accepted.body.execution_id;
    await runnerStarts(d);
    // Assess
    expect((await d.deployments.get(p.deploymentId))?.workflow).toBe('standard');
    expect(d.workflow.on.get(id)).toBe('standard');
    expect(await getExecution(d, 'slow', id)).toMatchObject({ execution_id: id, workflow: 'standard' });
    const callerView = (await status(d, p.auth, id, TEST_BASE_URL)).body;
    expect(callerView).not.toHaveProperty('workflow');
    expect(JSON.stringify(accepted.body)).not.toContain('standard');
  });

  it("takes, for a deployment published before it was recorded, its version's", async () => {
    // Prepare: a deployment record as an older publish wrote it (no machine), of a pushed version.
    const d = testDeps(memoryStores());
    await push(d, 'render', JSON.stringify(job));
    const legacy = aDeploymentRecord({ pipeline_id: 'render', version: 1 });
    expect(legacy.workflow).toBeUndefined();
    await d.deployments.create(legacy);
    // Act
    const accepted = await execute(
      d,
      { deploymentId: legacy.deployment_id, revision: legacy.revision, deleted: false },
      {
        deploymentId: legacy.deployment_id,
        body: '{}',
        contentType: 'application/json',
        idempotencyKey: undefined,
        baseUrl: TEST_BASE_URL,
      },
    );
    // Assess
    expect((await d.executions.get(accepted.body.execution_id, new Date()))?.workflow).toBe('standard');
    expect(d.queue.on('executions').map((m) => m.body.workflow)).toEqual(['standard']);
  });
});
