/**
 * The usage counter of a finished execution: a store that refuses the write for a moment is
 * waited out (the count is not lost), and one that keeps refusing is an error in the log.
 */
import { finishExecution, markRunning } from '../../../functions/services/lifecycle.service';
import type { LogFields } from '../../../functions/adapters/logger';
import { anExecution, testDeps } from '../../support/fakes';
import { memoryStores } from '../../support/memory-stores';

const throttled = () => Object.assign(new Error('Rate of requests exceeds the allowed throughput'), { name: 'ThrottlingException' });

async function finishedWith(failures: number) {
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
  const e = anExecution({ deployment_id: 'dep' });
  await d.executions.create(e);
  await markRunning(d, e.execution_id);
  const running = await d.executions.get(e.execution_id, new Date(), true);
  if (!running) throw new Error('no execution');
  await finishExecution(d, running, 'completed', { outputs: {} });
  const usage = await d.executions.usageSince('dep', new Date(0));
  return { errors, total: usage.reduce((n, b) => n + (b.counts.completed ?? 0), 0) };
}

describe('usage counting', () => {
  it('waits out a throttled counter write instead of dropping the count', async () => {
    const r = await finishedWith(2);
    expect(r.total).toBe(1);
    expect(r.errors).toEqual([]);
  });

  it('logs an error naming the execution when the store keeps refusing', async () => {
    const r = await finishedWith(100);
    expect(r.total).toBe(0);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]?.[0]).toMatch(/usage not counted/);
  }, 20_000);
});
