/**
 * The usage counter of a finished execution: a store that refuses the write for a moment is
 * waited out (the count is not lost), and one that keeps refusing is an error in the log.
 */
import { finishExecution, markRunning } from '../../../functions/services/lifecycle.service';
import type { LogFields } from '../../../functions/adapters/logger';
import { anExecution, testDeps } from '../../support/fakes';
import { memoryStores } from '../../support/memory-stores';

const throttled = () => Object.assign(new Error('Rate of requests exceeds the allowed throughput'), { name: 'ThrottlingException' });

async function finishedWith(failures: number, consumerId: string | null = null) {
  const stores = memoryStores();
  const errors: [string, LogFields | undefined][] = [];
  const d = testDeps(stores);
  d.log = { ...d.log, error: (m: string, f?: LogFields) => void errors.push([m, f]) };
  const count = stores.executions.countFinished.bind(stores.executions);
  let refused = 0;
  stores.executions.countFinished = async (e) => {
    if (refused < failures) {
      refused += 1;
      throw throttled();
    }
    return count(e);
  };
  const e = anExecution({ deployment_id: 'dep', consumer_id: consumerId });
  await d.executions.create(e);
  await markRunning(d, e.execution_id);
  const running = await d.executions.get(e.execution_id, new Date(), true);
  if (!running) throw new Error('no execution');
  await finishExecution(d, running, 'completed', { outputs: {} });
  const usage = await d.usage.usageSince('dep', new Date(0));
  await d.consumers.tally('dep', 'c-1', 'accepted', new Date());
  return {
    errors,
    total: usage.reduce((n, b) => n + (b.counts.completed ?? 0), 0),
    byCaller: (await d.usage.usageSince('dep', new Date(0))).map((b) => b.callers ?? {}),
  };
}

describe('usage counting', () => {
  it('waits out a throttled counter write instead of dropping the count', async () => {
    const r = await finishedWith(2);
    expect(r.total).toBe(1);
    expect(r.errors).toEqual([]);
  });

  it("splits a consumer's executions and tallies out of the deployment's, as the table's usage items do", async () => {
    const r = await finishedWith(0, 'c-1');
    expect(r.total).toBe(1);
    const callers = r.byCaller.reduce((all, c) => ({ ...all, ...c }), {});
    expect(callers['c-1']?.counts.completed).toBe(1);
    expect(callers['c-1']?.accepted).toBe(1);
    expect(Object.values(callers['c-1']?.bins ?? {}).reduce((a, b) => a + b, 0)).toBe(1);
    const plain = await finishedWith(0);
    expect(plain.byCaller.flatMap((c) => Object.keys(c).filter((k) => k !== 'c-1'))).toEqual([]);
  });

  it('logs an error naming the execution when the store keeps refusing', async () => {
    const r = await finishedWith(100);
    expect(r.total).toBe(0);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]?.[0]).toMatch(/usage not counted/);
  });
});
