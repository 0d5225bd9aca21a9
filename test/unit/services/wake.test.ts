/** A waiting execution woken early: a workflow of the next generation takes it over, the older one stands down. */
import { markRunning } from '../../../functions/services/lifecycle.service';
import { taskRun } from '../../../functions/services/tasks.service';
import { wakeExecution } from '../../../functions/services/wake';
import { anExecution, testDeps } from '../../support/fakes';
import { memoryStores } from '../../support/memory-stores';

describe('wakeExecution', () => {
  it('starts the next generation, moves the record to it once, and stops the older workflow', async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const e = anExecution({ status: 'running', started_at: new Date().toISOString() });
    await d.executions.create(e);

    // Act
    const first = await wakeExecution(d, e);
    const again = await wakeExecution(d, e);

    // Assess: the second wake saw generation 0, which is gone.
    expect([first, again]).toEqual([true, false]);
    expect((await d.executions.get(e.execution_id, new Date()))?.gen).toBe(1);
    expect(d.queue.on('executions').map((m) => m.body)).toEqual([
      { execution_id: e.execution_id, gen: 1 },
      { execution_id: e.execution_id, gen: 1 },
    ]);
    expect(d.workflow.stopped).toEqual([e.execution_id]);
  });

  it("starts the next generation on the execution's own machine, and stops the older one only where it can be stopped", async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const standard = anExecution({ status: 'running', started_at: new Date().toISOString(), workflow: 'standard' });
    const express = anExecution({ status: 'running', started_at: new Date().toISOString(), workflow: 'express' });
    await d.executions.create(standard);
    await d.executions.create(express);

    // Act
    await wakeExecution(d, standard);
    await wakeExecution(d, express);

    // Assess
    expect(d.queue.on('executions').map((m) => m.body)).toEqual([
      { execution_id: standard.execution_id, gen: 1, workflow: 'standard' },
      { execution_id: express.execution_id, gen: 1, workflow: 'express' },
    ]);
    expect(d.workflow.stopped).toEqual([standard.execution_id]);
  });

  it('lets the woken generation run, and the older one stand down at its next step', async () => {
    const d = testDeps(memoryStores());
    const e = anExecution({ status: 'running', started_at: new Date().toISOString() });
    await d.executions.create(e);
    await wakeExecution(d, e);

    expect(await markRunning(d, e.execution_id, 'wf-g1', 1)).toEqual({ proceed: true });
    expect(await taskRun(d, e.execution_id, 0)).toEqual({ status: 'superseded', next: 'done' });
    // A workflow of a generation a later wake has passed does not proceed either.
    await wakeExecution(d, { ...e, gen: 1 });
    expect(await markRunning(d, e.execution_id, 'wf-g1-late', 1)).toEqual({ proceed: false });
  });

  it('wakes nothing that is not running', async () => {
    const d = testDeps(memoryStores());
    const e = anExecution({ status: 'completed' });
    await d.executions.create(e);
    expect(await wakeExecution(d, e)).toBe(false);
    expect(await markRunning(d, e.execution_id, 'wf', 1)).toEqual({ proceed: false });
  });
});
