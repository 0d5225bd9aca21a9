/**
 * Status polls and waits read the execution's head only (ExecutionsPort.getHead): never the
 * whole record, whose inputs and outputs may be hundreds of kilobytes. Results still read it.
 */
import { result, status } from '../../../functions/services/caller.service';
import { anExecution, testDeps } from '../../support/fakes';
import { memoryStores } from '../../support/memory-stores';

const auth = { deploymentId: 'dep', revision: 1, deleted: false };

async function seeded() {
  const d = testDeps(memoryStores());
  const e = anExecution({ deployment_id: 'dep', inputs: { note: 'x'.repeat(200_000) } });
  await d.executions.create(e);
  const get = jest.spyOn(d.executions, 'get');
  const getHead = jest.spyOn(d.executions, 'getHead');
  return { d, e, get, getHead };
}

describe('reads of a status poll', () => {
  it('reads the head alone, eventually consistent, without a wait', async () => {
    // Prepare
    const { d, e, get, getHead } = await seeded();
    // Act
    const out = await status(d, auth, e.execution_id, 'https://x');
    // Assess
    expect(out.body.status).toBe('pending');
    expect(getHead.mock.calls).toEqual([[e.execution_id, expect.any(Date)]]);
    expect(get).not.toHaveBeenCalled();
  });

  it('re-reads the head, strongly consistent, when woken during a wait', async () => {
    // Prepare
    const { d, e, get, getHead } = await seeded();
    // Act: the execution finishes while the poll waits.
    const polled = status(d, auth, e.execution_id, 'https://x', { seconds: 60, untilMs: Date.now() + 60_000 });
    await new Promise((r) => setTimeout(r, 20));
    await d.executions.transition(e.execution_id, 'running', { started_at: new Date().toISOString() });
    await d.executions.transition(e.execution_id, 'completed', { outputs: {}, completed_at: new Date().toISOString() });
    d.completions.notify(e.execution_id);
    const out = await polled;
    // Assess
    expect(out.body.status).toBe('completed');
    expect(getHead.mock.calls.at(-1)).toEqual([e.execution_id, expect.any(Date), true]);
    expect(get).not.toHaveBeenCalled();
  });

  it('leaves the result route reading the whole record', async () => {
    // Prepare
    const { d, e, get } = await seeded();
    // Act / Assess
    await expect(result(d, auth, e.execution_id)).rejects.toMatchObject({ status: 409 });
    expect(get).toHaveBeenCalled();
  });
});

describe('reads of a waiting result', () => {
  it('re-reads the head while the execution is open, and the whole record once it is terminal', async () => {
    // Prepare
    const { d, e, get, getHead } = await seeded();
    // Act: woken twice, by a move to running and then by the completion.
    const waited = result(d, auth, e.execution_id, { seconds: 60, untilMs: Date.now() + 60_000 });
    await new Promise((r) => setTimeout(r, 20));
    await d.executions.transition(e.execution_id, 'running', { started_at: new Date().toISOString() });
    d.completions.notify(e.execution_id);
    await new Promise((r) => setTimeout(r, 20));
    await d.executions.transition(e.execution_id, 'completed', { outputs: { out: 1 }, completed_at: new Date().toISOString() });
    d.completions.notify(e.execution_id);
    const out = await waited;
    // Assess: one whole read to start, one at the end; the head in between.
    expect(out.body.status).toBe('completed');
    expect(get.mock.calls.map((c) => c[2] ?? false)).toEqual([false, true]);
    expect(getHead.mock.calls.map((c) => c[2])).toEqual([true, true]);
  });
});
