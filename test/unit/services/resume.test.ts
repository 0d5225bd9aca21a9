/**
 * The resume use case (functions/services/resume.service.ts) over in-memory stores, driven
 * through the state machine's tasks: what each answer is (202, 400, 404, 409, 410, 413, 415),
 * that a waiting execution is woken and goes on with the event as the node's value, that an
 * event sent before the node waits is kept for it, and who learns the URL (the owner always,
 * callers only for a visible wait).
 */
import { AppError } from '../../../functions/core/errors';
import { RESUME_MAX_BYTES } from '../../../functions/core/nodes/wait';
import { execute, result, status } from '../../../functions/services/caller.service';
import { cancel as ownerCancel, getExecution } from '../../../functions/services/owner-executions.service';
import { publish } from '../../../functions/services/publish.service';
import { push } from '../../../functions/services/push.service';
import { resume } from '../../../functions/services/resume.service';
import { getRun, startRun } from '../../../functions/services/runs.service';
import { taskRun, taskStart } from '../../../functions/services/tasks.service';
import { testDeps, type TestDeps } from '../../support/fakes';
import { memoryStores } from '../../support/memory-stores';

const BASE = 'https://api.example';

const approval = (over: Record<string, unknown> = {}) => ({
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    approval: {
      type: 'wait',
      inputs: ['name'],
      timeout_ms: 3_600_000,
      fields: { approved: { value_type: 'boolean' }, note: { value_type: 'string' } },
      ...over,
    },
    verdict: {
      type: 'transform',
      inputs: ['approval', 'name'],
      expression: "name & ': ' & (approval.approved ? 'yes' : 'no') & ' ' & approval.note",
    },
    out: { type: 'output', from: 'verdict' },
  },
});

const body = (v: unknown) => ({ body: JSON.stringify(v), contentType: 'application/json' });
const tokenOf = (url: string) => url.slice(url.lastIndexOf('/') + 1);

/** A run of the pipeline, started and stepped until it waits. */
async function waitingRun(d: TestDeps, definition: unknown = approval()) {
  await push(d, 'p', JSON.stringify(definition));
  const run = await startRun(d, 'p', null, BASE);
  expect(await taskStart(d, run.run_id)).toEqual({ proceed: true });
  const step = await taskRun(d, run.run_id);
  const url = await d.resumeLinks.url(BASE, run.run_id, 'approval');
  return { id: run.run_id, step, url, token: tokenOf(url) };
}

const refused = async (p: Promise<unknown>): Promise<AppError> => {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  if (!(e instanceof AppError)) throw new Error(`expected an AppError, got ${String(e)}`);
  return e;
};

describe('resume', () => {
  it('wakes a waiting execution, which goes on with the event as the node value; the URL then answers 409', async () => {
    const d = testDeps(memoryStores());
    const run = await waitingRun(d);
    expect(run.step).toMatchObject({ status: 'running', next: 'wait' });
    // The owner sees the wait with its URL and expiry.
    const view = await getRun(d, 'p', run.id, undefined, BASE);
    expect(view.body.waiting).toEqual([{ node_id: 'approval', resume_url: run.url, expires_at: expect.any(String) }]);

    expect(await resume(d, { token: run.token, ...body({ approved: true, note: 'fine' }) })).toEqual({
      status: 'resumed',
      execution_id: run.id,
      node_id: 'approval',
    });
    // Woken: a workflow of the next generation, the record moved to it, the older one stopped.
    expect(d.queue.on('executions').at(-1)?.body).toEqual({ execution_id: run.id, gen: 1, workflow: 'standard' });
    expect(d.workflow.stopped).toEqual([run.id]);
    // Taken off the waiting list at once.
    expect((await getRun(d, 'p', run.id, undefined, BASE)).body.waiting).toBeUndefined();
    expect(await taskRun(d, run.id, 0)).toEqual({ status: 'superseded', next: 'done' });
    expect(await taskRun(d, run.id, 1)).toMatchObject({ status: 'completed' });
    expect((await getRun(d, 'p', run.id)).body.outputs).toEqual({ out: 'world: yes fine' });

    const again = await refused(resume(d, { token: run.token, ...body({ approved: false, note: '' }) }));
    expect([again.status, again.code]).toEqual([409, 'ResumeAlreadyUsed']);
  });

  it('keeps an event sent before the node begins to wait, and the node takes it at once', async () => {
    const d = testDeps(memoryStores());
    await push(d, 'p', JSON.stringify(approval()));
    const run = await startRun(d, 'p', null, BASE);
    const token = tokenOf(await d.resumeLinks.url(BASE, run.run_id, 'approval'));
    expect(await resume(d, { token, ...body({ approved: false, note: 'early' }) })).toMatchObject({ status: 'kept' });
    // Nothing to wake: the execution had not begun.
    expect(d.queue.on('executions').every((m) => (m.body as { gen?: number }).gen === undefined)).toBe(true);
    await taskStart(d, run.run_id);
    expect(await taskRun(d, run.run_id)).toMatchObject({ status: 'completed' });
    expect((await getRun(d, 'p', run.run_id)).body.outputs).toEqual({ out: 'world: no early' });
  });

  it('answers 404 for a token it never issued, altered, or moved to another node', async () => {
    const d = testDeps(memoryStores());
    const run = await waitingRun(d);
    const [v, e, , tag] = run.token.split('.');
    for (const token of ['nope', `${run.token}x`, `${v}.${e}.name.${tag}`, `${v}.${e}.verdict.${tag}`]) {
      const err = await refused(resume(d, { token, ...body({ approved: true, note: '' }) }));
      expect([err.status, err.code]).toEqual([404, 'ResumeNotFound']);
    }
    // A token this service signed for a node that is no wait node of the execution: 404 too.
    const forged = tokenOf(await d.resumeLinks.url(BASE, run.id, 'verdict'));
    expect((await refused(resume(d, { token: forged, ...body({}) }))).status).toBe(404);
  });

  it('refuses a body that is not JSON (415), too large (413, naming the limit) or not the fields the node takes (400, each problem)', async () => {
    const d = testDeps(memoryStores());
    const run = await waitingRun(d);
    const r = (b: string | null, contentType = 'application/json') => refused(resume(d, { token: run.token, body: b, contentType }));
    expect((await r('approved=yes', 'application/x-www-form-urlencoded')).status).toBe(415);
    const big = await r(JSON.stringify({ approved: true, note: 'x'.repeat(RESUME_MAX_BYTES) }));
    expect([big.status, big.detail]).toEqual([413, `the resume body must be at most ${RESUME_MAX_BYTES} bytes (256 KiB)`]);
    // At the limit exactly it is read (and here refused for its fields only).
    const exact = JSON.stringify({ approved: 'no', note: '' });
    const atLimit = await r(JSON.stringify({ approved: 'no', note: 'x'.repeat(RESUME_MAX_BYTES - exact.length) }));
    expect(atLimit.detail).toEqual([{ path: 'approved', reason: 'must be true or false, got a string' }]);
    expect((await r(null)).detail).toEqual([{ path: '(body)', reason: 'the body must be a JSON object, and none was sent' }]);
    expect((await r('[1]')).detail).toEqual([{ path: '(body)', reason: 'the body must be a JSON object, got an array' }]);
    expect((await r('{"a":1,"a":2}')).detail).toEqual([{ path: '(body)', reason: 'has the key "a" twice' }]);
    expect((await r(JSON.stringify({ approved: 'yes', other: 1 }))).detail).toEqual([
      { path: 'approved', reason: 'must be true or false, got a string' },
      { path: 'note', reason: 'is required' },
      { path: 'other', reason: 'is not a field of this wait' },
    ]);
    // None of these used the URL.
    expect(await resume(d, { token: run.token, ...body({ approved: true, note: '' }) })).toMatchObject({ status: 'resumed' });
  });

  it('answers 410 once the execution was cancelled, with its status', async () => {
    const d = testDeps(memoryStores());
    const run = await waitingRun(d);
    await ownerCancel(d, 'p', run.id);
    const err = await refused(resume(d, { token: run.token, ...body({ approved: true, note: '' }) }));
    expect([err.status, err.code, err.fields]).toEqual([410, 'ResumeGone', { status: 'cancelled' }]);
  });

  it('answers 410 once the wait timed out, while the execution goes on without it', async () => {
    let now = Date.now();
    const d = testDeps(memoryStores(), { clock: { now: () => new Date(now) } });
    const def = approval({ timeout_ms: 1000, on_timeout: { value: { approved: false, note: 'late' } } });
    // A second wait after it keeps the execution running.
    const nodes = { ...def.nodes, then: { type: 'wait', inputs: ['approval'], timeout_ms: 3_600_000 } };
    const run = await waitingRun(d, { nodes });
    now += 1000;
    expect(await taskRun(d, run.id)).toMatchObject({ status: 'running', next: 'wait' });
    const err = await refused(resume(d, { token: run.token, ...body({ approved: true, note: '' }) }));
    expect([err.status, err.code, err.detail]).toEqual([410, 'ResumeGone', 'the wait timed out before this event came']);
  });

  it('answers 410 for a wait its if skipped, while the execution goes on without it', async () => {
    const d = testDeps(memoryStores());
    const def = approval({ if: "name = 'nobody'" });
    // A second wait, reading the input only, keeps the execution running.
    const nodes = { ...def.nodes, then: { type: 'wait', inputs: ['name'], timeout_ms: 3_600_000 } };
    const run = await waitingRun(d, { nodes });
    expect(run.step).toMatchObject({ status: 'running', next: 'wait' });
    const err = await refused(resume(d, { token: run.token, ...body({ approved: true, note: '' }) }));
    expect([err.status, err.code, err.detail]).toEqual([
      410,
      'ResumeGone',
      'the wait was skipped: its if was false, or a node it reads was skipped',
    ]);
  });

  it('shows callers the URL of a visible wait only, and ends a waiting caller early when the next move is theirs', async () => {
    for (const visible of [true, false]) {
      const d = testDeps(memoryStores());
      // Publish needs a successful run: the owner resumes it.
      const run = await waitingRun(d);
      await resume(d, { token: run.token, ...body({ approved: true, note: '' }) });
      await taskRun(d, run.id, 1);
      const pub = await publish(d, 'p', JSON.stringify({ waits: { approval: { visible } } }), BASE);
      expect(pub.body.waits).toEqual([expect.objectContaining({ id: 'approval', visible })]);
      const auth = { deploymentId: pub.body.deployment_id, revision: 1, deleted: false };

      const accepted = await execute(d, auth, {
        deploymentId: auth.deploymentId,
        body: '{}',
        contentType: 'application/json',
        idempotencyKey: undefined,
        baseUrl: BASE,
      });
      const id = accepted.body.execution_id;
      await taskStart(d, id);
      await taskRun(d, id);
      const url = await d.resumeLinks.url(BASE, id, 'approval');
      const shown = visible ? [{ node_id: 'approval', resume_url: url, expires_at: expect.any(String) }] : undefined;
      // A visible wait ends a caller's wait at once (30 s asked); a hidden one is the owner's to resume: the caller waits on.
      const seconds = visible ? 30 : 1;
      const started = Date.now();
      const s = await status(d, auth, id, BASE, { seconds, untilMs: started + seconds * 1000 });
      expect(s.body.waiting).toEqual(shown);
      if (visible) expect(Date.now() - started).toBeLessThan(30_000);
      else expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      const r = await refused(result(d, auth, id, undefined, BASE));
      expect([r.status, r.fields.waiting]).toEqual([409, shown]);
      // The owner sees it either way.
      expect((await getExecution(d, 'p', id, BASE)).waiting).toEqual([
        { node_id: 'approval', resume_url: url, expires_at: expect.any(String) },
      ]);
    }
  });
});
