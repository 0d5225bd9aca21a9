/**
 * The event stream service over in-memory stores: woken by the writes (no polling loop in
 * process), keep-alive comments on a quiet stream, a stream that closes itself at its time
 * limit, the same events on a runtime that can only re-read (PollingCompletions), pulled (a
 * reader that stops reading stops the loop), and the progress writer's bound on writes.
 */
import { InProcessCompletions, PollingCompletions } from '../../../functions/adapters/completions';
import { openEventStream } from '../../../functions/services/events.service';
import { markRunning, finishExecution } from '../../../functions/services/lifecycle.service';
import { progressRecorder } from '../../../functions/services/progress.service';
import { PROGRESS_POLL_ROOM, unpackProgress } from '../../../functions/core/progress';
import { taskRun, taskStart } from '../../../functions/services/tasks.service';
import { execute } from '../../../functions/services/caller.service';
import { testDeps, type TestDeps } from '../../support/fakes';
import { publishPipeline } from '../../support/published';
import { memoryStores } from '../../support/memory-stores';
import { HANG_MS } from '../../support/hang';

const BASE = 'https://api.example';

async function published(d: TestDeps) {
  return (await publishPipeline(d, 'greet', { base: BASE })).auth;
}

async function submitted(d: TestDeps) {
  const auth = await published(d);
  const r = await execute(d, auth, {
    deploymentId: auth.deploymentId,
    body: '{}',
    contentType: 'application/json',
    idempotencyKey: undefined,
    baseUrl: BASE,
  });
  return { auth, id: r.body.execution_id };
}

/** Pulls the next chunk, or 'idle' if none comes within ms (the pull stays pending for the next call). */
const pendingPulls = new WeakMap<AsyncIterator<string>, Promise<string | 'end'>>();
async function nextOrIdle(it: AsyncIterator<string>, ms: number): Promise<string | 'idle' | 'end'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = new Promise<'idle'>((r) => (timer = setTimeout(() => r('idle'), ms)));
  const next = pendingPulls.get(it) ?? it.next().then((x) => (x.done ? ('end' as const) : x.value));
  pendingPulls.set(it, next);
  try {
    const got = await Promise.race([next, idle]);
    if (got !== 'idle') pendingPulls.delete(it);
    return got;
  } finally {
    clearTimeout(timer);
  }
}

async function drain(it: AsyncIterator<string>): Promise<string> {
  let out = '';
  for (;;) {
    const x = await it.next();
    if (x.done) return out;
    out += x.value;
  }
}

const eventNames = (text: string) => [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);

describe('event stream service', () => {
  it('is woken by the writes: the running status and the terminal write each arrive without a poll', async () => {
    // Prepare: a completions port that counts watches; a keep-alive far beyond the test.
    const completions = new InProcessCompletions();
    const d = testDeps(memoryStores(), { completions });
    const { auth, id } = await submitted(d);
    const it = (await openEventStream(d, auth, id, { lastEventId: undefined, baseUrl: BASE, keepAliveMs: 60_000 }))[Symbol.asyncIterator]();
    expect(await it.next()).toMatchObject({ value: expect.stringMatching(/^retry: \d+\n\n$/) });
    expect(await nextOrIdle(it, HANG_MS)).toMatch(/event: status\ndata: \{"status":"pending"/);
    expect(await nextOrIdle(it, 100)).toBe('idle');
    // Act: the run moves on.
    await markRunning(d, id);
    // Assess
    expect(await nextOrIdle(it, HANG_MS)).toMatch(/"status":"running"/);
    const e = await d.executions.get(id, new Date(), true);
    if (!e) throw new Error('gone');
    await finishExecution(d, e, 'completed', { outputs: { message: 'hi' } });
    const rest = await drain(it);
    expect(eventNames(rest)).toEqual(['status', 'output', 'done']);
    expect(completions.watched).toBe(0);
  });

  it('sends a keep-alive comment on a quiet stream, and closes itself at its time limit without done', async () => {
    const d = testDeps(memoryStores());
    const { auth, id } = await submitted(d);
    const text = await drain(
      (await openEventStream(d, auth, id, { lastEventId: undefined, baseUrl: BASE, keepAliveMs: 40, maxMs: 300 }))[Symbol.asyncIterator](),
    );
    expect(text).toContain(': keep-alive\n\n');
    expect(eventNames(text)).toEqual(['status']);
  });

  it('finds the same events by re-reading where writes cannot wake it (PollingCompletions)', async () => {
    const d = testDeps(memoryStores(), { completions: new PollingCompletions([10]) });
    const { auth, id } = await submitted(d);
    const it = (await openEventStream(d, auth, id, { lastEventId: undefined, baseUrl: BASE, keepAliveMs: 60_000 }))[Symbol.asyncIterator]();
    const reading = drain(it);
    await taskStart(d, id);
    await taskRun(d, id);
    const text = await reading;
    expect(eventNames(text)).toEqual(['status', 'status', 'node', 'node', 'node', 'node', 'node', 'node', 'status', 'output', 'done']);
  });

  it('is pulled: a reader that stops reading stops the loop, whatever is written meanwhile', async () => {
    const d = testDeps(memoryStores());
    const { auth, id } = await submitted(d);
    let reads = 0;
    const get = d.executions.get.bind(d.executions);
    d.executions.get = (...args: Parameters<typeof get>) => {
      reads += 1;
      return get(...args);
    };
    const it = (await openEventStream(d, auth, id, { lastEventId: undefined, baseUrl: BASE, keepAliveMs: 60_000 }))[Symbol.asyncIterator]();
    await it.next();
    await it.next();
    const before = reads;
    // Act: the execution runs to the end while nobody reads.
    await taskStart(d, id);
    await taskRun(d, id);
    await new Promise((r) => setTimeout(r, 50));
    // Assess: at most the one read the loop was already waiting to make.
    expect(reads - before).toBeLessThanOrEqual(1);
    expect(eventNames(await drain(it))).toContain('done');
  });

  it('a run writes node progress spaced by the interval, one write at a time, coalescing what comes meanwhile', async () => {
    const d = testDeps(memoryStores());
    const { id } = await submitted(d);
    await markRunning(d, id);
    const record = d.executions.recordProgress.bind(d.executions);
    const landed: number[] = [];
    d.executions.recordProgress = async (eid, p) => {
      landed.push(JSON.parse(p).n.length as number);
      return record(eid, p);
    };
    const rec = progressRecorder(d, id, null, 40);
    // Act: 10 events at once, nothing written before the interval; 5 more after the first write.
    for (let i = 0; i < 10; i++) rec.add({ node: `n${i}`, type: 'transform', state: 'started', at: 1000 + i });
    expect(landed).toEqual([]);
    await new Promise((r) => setTimeout(r, 60));
    for (let i = 10; i < 15; i++) rec.add({ node: `n${i}`, type: 'transform', state: 'started', at: 1000 + i });
    await new Promise((r) => setTimeout(r, 60));
    // Assess
    expect(landed).toEqual([10, 15]);
    const e = await d.executions.get(id, new Date(), true);
    expect(e?.progress).toBe(rec.packed());
  });

  it("keeps a job's polls and a map's item counts only while there is room, never a node's start or end", async () => {
    // Prepare
    const d = testDeps(memoryStores());
    const { id } = await submitted(d);
    const rec = progressRecorder(d, id, null, 10_000);

    // Act: fill the room with counts, then more counts and a node's end.
    for (let i = 0; i < PROGRESS_POLL_ROOM + 10; i++)
      rec.add({ node: 'm', type: 'map', state: 'items', at: 1000 + i, done: i, total: 500 });
    rec.add({ node: 'j', type: 'http', state: 'polled', at: 5000, polls: 3 });
    rec.add({ node: 'm', type: 'map', state: 'finished', at: 6000, duration_ms: 5000 });
    await rec.settle();

    // Assess
    const kept = unpackProgress(rec.packed());
    expect(kept.filter((p) => p.state === 'items')).toHaveLength(PROGRESS_POLL_ROOM);
    expect(kept.some((p) => p.state === 'polled')).toBe(false);
    expect(kept.at(-1)).toMatchObject({ node: 'm', state: 'finished' });
    expect(kept[3]).toMatchObject({ state: 'items', done: 3, total: 500 });
  });

  it('an execution that ends within the interval makes no progress write; the terminal write carries it all', async () => {
    const d = testDeps(memoryStores());
    const { id } = await submitted(d);
    let writes = 0;
    const record = d.executions.recordProgress.bind(d.executions);
    d.executions.recordProgress = async (eid, p) => {
      writes += 1;
      return record(eid, p);
    };
    await taskStart(d, id);
    await taskRun(d, id);
    expect(writes).toBe(0);
    const e = await d.executions.get(id, new Date(), true);
    expect(e?.status).toBe('completed');
    expect(JSON.parse(e?.progress ?? '{}').n).toHaveLength(6);
  });
});
