/**
 * A wait node's event on dynalite (functions/adapters/steps.store.ts keepEvent, and the resume
 * use case on it): kept once whatever races it, never over a node that is over, never lost to a
 * step recording the wait at the same moment, and a resume URL used once by concurrent posts.
 */
import { randomUUID } from 'node:crypto';
import { AppError } from '../../functions/core/errors';
import type { NodeRecord } from '../../functions/core/engine';
import type { StepOwner } from '../../functions/core/ports';
import { push } from '../../functions/services/push.service';
import { resume } from '../../functions/services/resume.service';
import { startRun } from '../../functions/services/runs.service';
import { taskRun, taskStart } from '../../functions/services/tasks.service';
import { startTestDb, type TestDb } from '../support/dynamo';
import { testDeps } from '../support/fakes';
import { MemoryObjects } from '../support/memory-objects';

let db: TestDb;
const objects = new MemoryObjects();
beforeAll(async () => {
  db = await startTestDb({ objects });
});
afterAll(async () => {
  await db.close();
});

const owner = (): StepOwner => ({ execution_id: randomUUID(), kind: 'run', deployment_id: null, pipeline_id: 'p', expires_at: null });
const waitingRec = (rev: number): NodeRecord => ({ state: 'waiting', rev, started_at: 1, memo: { until: 2 }, until: 2 });

describe('keepEvent', () => {
  it('keeps one of many concurrent events, and says the others came too late', async () => {
    const e = owner();
    await db.steps.save(e, 'approval', waitingRec(1), undefined, false);
    const outcomes = await Promise.all(Array.from({ length: 16 }, (_, i) => db.steps.keepEvent(e, 'approval', { value: { i }, at: i })));
    const kept = outcomes.filter((o) => o.kept);
    expect(kept).toEqual([{ kept: true, state: 'waiting' }]);
    expect(outcomes.filter((o) => !o.kept)).toEqual(Array.from({ length: 15 }, () => ({ kept: false, why: 'used' })));
    const stored = (await db.steps.load(e)).get('approval');
    expect(outcomes.map((o, i) => (o.kept ? i : -1)).filter((i) => i >= 0)).toEqual([(stored?.event?.value as { i: number }).i]);
  });

  it('keeps no event on a node that is over, and says so', async () => {
    const e = owner();
    await db.steps.save(e, 'approval', { state: 'done', rev: 1, started_at: 1, ended_at: 2, value: { timed_out: true } }, undefined, false);
    expect(await db.steps.keepEvent(e, 'approval', { value: {}, at: 3 })).toEqual({ kept: false, why: 'ended' });
    expect(await db.steps.peek(e, 'approval')).toEqual({ state: 'done', evented: false });
  });

  it('keeps no event on a wait its if skipped, and says so', async () => {
    const e = owner();
    await db.steps.save(e, 'approval', { state: 'skipped', rev: 1, started_at: 1, ended_at: 1 }, undefined, false);
    expect(await db.steps.keepEvent(e, 'approval', { value: {}, at: 3 })).toEqual({ kept: false, why: 'skipped' });
    expect(await db.steps.peek(e, 'approval')).toEqual({ state: 'skipped', evented: false });
  });

  it('keeps an event for a node no step has begun, which a step then cannot record as waiting without seeing it', async () => {
    const e = owner();
    expect(await db.steps.keepEvent(e, 'approval', { value: { early: true }, at: 1 })).toEqual({ kept: true, state: undefined });
    expect(await db.steps.save(e, 'approval', waitingRec(1), undefined, false)).toBe(false);
    expect(await db.steps.save(e, 'approval', { state: 'done', rev: 1, started_at: 1, value: { early: true } }, undefined, true)).toBe(
      true,
    );
    expect((await db.steps.load(e)).get('approval')).toMatchObject({ state: 'done', event: { value: { early: true }, at: 1 } });
  });

  it('never loses an event to a step recording the wait at the same moment: either the step sees it, or the event finds it waiting', async () => {
    for (let i = 0; i < 20; i++) {
      const e = owner();
      const [saved, kept] = await Promise.all([
        db.steps.save(e, 'approval', waitingRec(1), undefined, false),
        db.steps.keepEvent(e, 'approval', { value: { i }, at: i }),
      ]);
      expect(kept.kept).toBe(true);
      // The event came first: the step's write fails (it goes round again and takes it); or the
      // step came first: the event finds the node waiting, and the resume wakes the execution.
      if (saved) expect(kept).toEqual({ kept: true, state: 'waiting' });
      else expect(kept).toEqual({ kept: true, state: undefined });
    }
  });

  it('keeps an event too large for the item in the bucket, and reads it back', async () => {
    const e = owner();
    const value = { note: 'x'.repeat(100_000) };
    expect(await db.steps.keepEvent(e, 'approval', { value, at: 1 })).toEqual({ kept: true, state: undefined });
    expect((await db.steps.load(e)).get('approval')?.event).toEqual({ value, at: 1 });
    expect([...objects.objects.keys()].some((k) => k.includes('node.approval.event.'))).toBe(true);
  });
});

describe('a resume URL posted to at once by many', () => {
  it('is used by exactly one of them; the others answer 409', async () => {
    const d = testDeps(db, { objects });
    const id = `p-${randomUUID().slice(0, 8)}`;
    await push(
      d,
      id,
      JSON.stringify({
        nodes: {
          approval: { type: 'wait', timeout_ms: 60_000 },
          said: { type: 'transform', inputs: ['approval'], expression: 'approval.n' },
          out: { type: 'output', from: 'said' },
        },
      }),
    );
    const run = await startRun(d, id, null, 'https://api.example');
    await taskStart(d, run.run_id);
    expect(await taskRun(d, run.run_id)).toMatchObject({ next: 'wait' });
    const url = await d.resumeLinks.url('https://api.example', run.run_id, 'approval');
    const token = url.slice(url.lastIndexOf('/') + 1);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, n) =>
        resume(d, { token, body: JSON.stringify({ n }), contentType: 'application/json' }).then(
          (ok) => ({ ok, n }),
          (err: unknown) => ({ err: err instanceof AppError ? err.code : String(err), n }),
        ),
      ),
    );
    const ok = answers.filter((a) => 'ok' in a);
    expect(ok).toHaveLength(1);
    expect(answers.filter((a) => 'err' in a).map((a) => ('err' in a ? a.err : ''))).toEqual(
      Array.from({ length: 7 }, () => 'ResumeAlreadyUsed'),
    );
    // The woken generation goes on with the one kept.
    expect(await taskRun(d, run.run_id, 1)).toMatchObject({ status: 'completed' });
    expect((await d.executions.get(run.run_id, new Date()))?.outputs).toEqual({ out: ok[0]?.n });
  });
});
