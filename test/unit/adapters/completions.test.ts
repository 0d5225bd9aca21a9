import { InProcessCompletions, PollingCompletions } from '../../../functions/adapters/completions';

describe('InProcessCompletions', () => {
  it('wakes every watcher of an execution, and only those', async () => {
    const c = new InProcessCompletions();
    const a = c.watch('e1');
    const b = c.watch('e1');
    const other = c.watch('e2');
    const woken = Promise.all([a.next(60_000), b.next(60_000)]);
    c.notify('e1');
    await expect(woken).resolves.toEqual([true, true]);
    await expect(other.next(5)).resolves.toBe(false);
    for (const w of [a, b, other]) w.close();
    expect(c.watched).toBe(0);
  });

  it('keeps a completion that arrives before the watcher waits', async () => {
    const c = new InProcessCompletions();
    const w = c.watch('e1');
    c.notify('e1');
    await expect(w.next(60_000)).resolves.toBe(true);
    w.close();
  });

  it('answers false when the time runs out, and close releases a pending wait', async () => {
    const c = new InProcessCompletions();
    const w = c.watch('e1');
    await expect(w.next(1)).resolves.toBe(false);
    const pending = w.next(60_000);
    w.close();
    await expect(pending).resolves.toBe(true);
    expect(c.watched).toBe(0);
  });
});

describe('PollingCompletions', () => {
  it('wakes on its backoff schedule, never later than the time left', async () => {
    const c = new PollingCompletions([1, 2]);
    const w = c.watch();
    await expect(w.next(60_000)).resolves.toBe(true);
    await expect(w.next(60_000)).resolves.toBe(true);
    await expect(w.next(0)).resolves.toBe(true);
    const pending = w.next(60_000);
    w.close();
    await expect(pending).resolves.toBe(false);
  });
});
