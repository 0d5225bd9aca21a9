/**
 * `Prefer: wait` is bounded: beyond the bound of callers waiting at once, a request is answered
 * at once with the usual answer (its Retry-After, no Preference-Applied), never with an error,
 * and a slot taken is always given back.
 */
import type { WaitSlot, WaitSlotsPort } from '../../../functions/core/ports';
import { execute, result, status } from '../../../functions/services/caller.service';
import { anExecution, testDeps, type TestDeps } from '../../support/fakes';
import { publishPipeline } from '../../support/published';
import { memoryStores } from '../../support/memory-stores';

const BASE = 'https://api.example';
const auth = { deploymentId: 'dep', revision: 1, deleted: false };

/** A bound of `n` slots, counting what is held and given back. */
class CountingSlots implements WaitSlotsPort {
  held = 0;
  refused = 0;
  constructor(private readonly bound: number) {}
  async acquire(): Promise<WaitSlot | null> {
    if (this.held >= this.bound) {
      this.refused += 1;
      return null;
    }
    this.held += 1;
    return { release: async () => void (this.held -= 1) };
  }
}

async function pending(d: TestDeps) {
  const e = anExecution({ deployment_id: 'dep' });
  await d.executions.create(e);
  return e;
}

const wait = (ms: number) => ({ seconds: 1, untilMs: Date.now() + ms });

describe('bounded waiting', () => {
  it('waits while under the bound, and gives the slot back', async () => {
    // Prepare
    const slots = new CountingSlots(1);
    const d = testDeps(memoryStores(), { waitSlots: slots });
    const e = await pending(d);
    // Act
    const r = await status(d, auth, e.execution_id, BASE, wait(50));
    // Assess
    expect(r.headers['preference-applied']).toBe('wait=1');
    expect(slots.held).toBe(0);
  });

  it('answers at once beyond the bound: the usual answer with Retry-After, no Preference-Applied', async () => {
    // Prepare: the one slot is held by another caller.
    const slots = new CountingSlots(1);
    const d = testDeps(memoryStores(), { waitSlots: slots });
    const e = await pending(d);
    const other = await slots.acquire();
    // Act: a wait of a minute would hold the test for a minute if it were honoured.
    const r = await status(d, auth, e.execution_id, BASE, wait(60_000));
    const res = await result(d, auth, e.execution_id, wait(60_000)).catch((err: unknown) => err);
    // Assess
    expect(r.headers['retry-after']).toBeDefined();
    expect(r.headers['preference-applied']).toBeUndefined();
    expect(res).toMatchObject({ code: 'ExecutionNotCompleted', headers: { 'retry-after': expect.any(String) } });
    expect((res as { headers: Record<string, string> }).headers['preference-applied']).toBeUndefined();
    expect(slots.refused).toBe(2);
    await other?.release();
  });

  it('answers a waiting submit beyond the bound 202 with Retry-After, at once', async () => {
    // Prepare: no slot at all; a published pipeline to execute.
    const d = testDeps(memoryStores(), { waitSlots: new CountingSlots(0) });
    const caller = (await publishPipeline(d, 'greet', { base: BASE })).auth;
    // Act
    const r = await execute(d, caller, {
      deploymentId: caller.deploymentId,
      body: JSON.stringify({ workflow_input: { name: { value: 'Ada', value_type: 'RAW' } } }),
      contentType: 'application/json',
      idempotencyKey: undefined,
      baseUrl: BASE,
      wait: wait(60_000),
    });
    // Assess
    expect(r.status).toBe(202);
    expect(r.headers).toMatchObject({ 'retry-after': expect.any(String) });
    expect(r.headers).not.toHaveProperty('preference-applied');
  });

  it('answers at once, not with an error, when the bound cannot be checked', async () => {
    // Prepare
    const broken: WaitSlotsPort = { acquire: () => Promise.reject(new Error('ProvisionedThroughputExceededException')) };
    const d = testDeps(memoryStores(), { waitSlots: broken });
    const e = await pending(d);
    // Act
    const r = await status(d, auth, e.execution_id, BASE, wait(60_000));
    // Assess
    expect(r.headers['retry-after']).toBeDefined();
    expect(r.headers['preference-applied']).toBeUndefined();
  });
});
