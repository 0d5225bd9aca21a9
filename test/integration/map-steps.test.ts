/**
 * A map's items as the state machine's steps run them on a real store (dynalite): one record per
 * item beside the execution (`EXEC#<id> / NODE#<map>.<index>`), a failed item's record under
 * `on_item_error: "skip"`, skipped nodes recorded as such, and a step that dies in the middle (its
 * store failing after some items were recorded) taken up again by the next step: the recorded
 * items are read, their upstream not called again, the rest run, the result is whole.
 */
import type { Deps } from '../../functions/adapters/deps';
import type { HttpPort, HttpRequest, HttpResponse } from '../../functions/core/ports';
import { push } from '../../functions/services/push.service';
import { startRun } from '../../functions/services/runs.service';
import { taskRun, taskStart, type StepAnswer } from '../../functions/services/tasks.service';
import { startTestDb, type TestDb } from '../support/dynamo';
import { testDeps } from '../support/fakes';

let db: TestDb;
let t = Date.parse('2026-11-27T10:00:00Z');
const clock = { now: () => new Date(t) };

beforeAll(async () => {
  db = await startTestDb();
});
afterAll(async () => {
  await db.close();
});

const json = (status: number, body: unknown): HttpResponse => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const bodyOf = (req: HttpRequest): Record<string, unknown> =>
  JSON.parse(typeof req.body === 'string' ? req.body : '{}') as Record<string, unknown>;

/** A job service: each job is done at its second poll; item 3's submit answers 500 when `failThree`. */
function jobs(failThree = false) {
  const calls: HttpRequest[] = [];
  const polls = new Map<string, number>();
  const port: HttpPort = async (req) => {
    calls.push(req);
    if (req.method === 'POST') {
      const style = String(bodyOf(req).style);
      if (failThree && style === 's3') return json(500, { error: 'out of paint' });
      return json(202, { id: style });
    }
    const id = req.url.split('/').pop() ?? '';
    const n = (polls.get(id) ?? 0) + 1;
    polls.set(id, n);
    return json(200, n < 2 ? { status: 'running' } : { status: 'done', output: `${id}.png` });
  };
  const submits = (style: string) => calls.filter((c) => c.method === 'POST' && bodyOf(c).style === style).length;
  return { port, calls, submits };
}

const definition = (onItemError: 'fail' | 'skip') => ({
  nodes: {
    photo: { type: 'input', value_type: 'string', value: 'p.png' },
    styles: { type: 'input', value_type: 'integer', value: 6 },
    ok: { type: 'transform', inputs: ['photo'], if: "photo != 'nsfw.png'", expression: 'true' },
    refusal: { type: 'transform', inputs: ['photo'], if: "photo = 'nsfw.png'", expression: "'refused'" },
    variants: {
      type: 'map',
      inputs: ['photo', 'styles', 'ok'],
      items: "[0..styles-1].('s' & $)",
      concurrency: 2,
      on_item_error: onItemError,
      node: {
        type: 'http',
        method: 'POST',
        url: 'https://render.example/v1/jobs',
        body: "{'image': photo, 'style': item}",
        poll: { url: "'https://render.example/v1/jobs/' & id", every_ms: 1000, done: "status = 'done'", value: 'output' },
      },
    },
    list: { type: 'transform', inputs: ['variants'], expression: "$join(variants.($string($)), ',')" },
    gallery: { type: 'output', from: ['list', 'refusal'] },
  },
});

/** Pushes and starts a run, then drives its steps as the state machine would, moving the clock through each wait. */
async function started(d: Deps, id: string, def: unknown): Promise<string> {
  const pushed = await push(d, id, JSON.stringify(def));
  expect(pushed.status).toBe(201);
  const run = await startRun(d, id, null, 'https://pipegate.example');
  expect((await taskStart(d, run.run_id)).proceed).toBe(true);
  return run.run_id;
}

/** The execution's node records, as a step loads them. */
async function recordsOf(id: string) {
  const e = await db.executions.get(id, clock.now(), true);
  if (!e) throw new Error(`no execution ${id}`);
  return db.steps.load(e);
}

async function steps(d: Deps, id: string, max = 40): Promise<StepAnswer> {
  for (let i = 0; i < max; i++) {
    const a = await taskRun(d, id);
    if (a.next === 'done') return a;
    if (a.next === 'wait') t += (a.seconds ?? 1) * 1000;
  }
  throw new Error('the execution did not end');
}

describe('a map on the store', () => {
  it('records one item per record beside the execution, in order, and completes', async () => {
    // Prepare
    const up = jobs();
    const d = testDeps(db, { http: up.port, clock });
    const id = await started(d, 'map-records', definition('fail'));

    // Act
    const first = await taskRun(d, id);
    const afterFirst = await recordsOf(id);
    const end = await steps(d, id);
    const records = await recordsOf(id);
    const e = await d.executions.get(id, clock.now(), true);

    // Assess
    expect(first).toMatchObject({ next: 'wait', seconds: 1 });
    expect([...afterFirst.keys()].filter((k) => k.startsWith('variants.')).sort()).toEqual(['variants.0', 'variants.1']);
    expect(afterFirst.get('variants.0')).toMatchObject({ state: 'waiting', polls: 1 });
    expect(afterFirst.get('refusal')).toMatchObject({ state: 'skipped' });
    expect(end).toMatchObject({ status: 'completed', next: 'done' });
    expect([...records.keys()].filter((k) => k.startsWith('variants.')).sort()).toEqual([
      'variants.0',
      'variants.1',
      'variants.2',
      'variants.3',
      'variants.4',
      'variants.5',
    ]);
    expect(records.get('variants.4')).toMatchObject({ state: 'done', value: 's4.png' });
    expect(e?.outputs).toEqual({ gallery: 's0.png,s1.png,s2.png,s3.png,s4.png,s5.png' });
    expect(e?.trace?.find((n) => n.node === 'refusal')?.outcome).toBe('skipped');
    for (const s of ['s0', 's1', 's2', 's3', 's4', 's5']) expect(up.submits(s)).toBe(1);
  });

  it("records a failed item's place under skip, with why, and never submits it again", async () => {
    // Prepare
    const up = jobs(true);
    const d = testDeps(db, { http: up.port, clock });
    const id = await started(d, 'map-skip', definition('skip'));

    // Act
    await steps(d, id);
    const records = await recordsOf(id);
    const e = await d.executions.get(id, clock.now(), true);

    // Assess
    expect(records.get('variants.3')).toMatchObject({ state: 'done', value: null, error: expect.stringMatching(/^HTTP 500 from/) });
    expect(records.get('variants')?.item_errors).toEqual([{ index: 3, error: expect.stringMatching(/^HTTP 500/) }]);
    expect(e?.outputs).toEqual({ gallery: 's0.png,s1.png,s2.png,null,s4.png,s5.png' });
    expect(e?.trace?.find((n) => n.node === 'variants')?.item_errors).toEqual([{ index: 3, error: expect.stringMatching(/^HTTP 500/) }]);
    expect(up.submits('s3')).toBe(1);
  });

  it('takes up a step that died in the middle: recorded items are read, not called again, and the rest run', async () => {
    // Prepare: the store fails once two more items than the first step's were recorded done.
    const up = jobs();
    const healthy = testDeps(db, { http: up.port, clock });
    const id = await started(healthy, 'map-crash', definition('fail'));
    let doneWrites = 0;
    const dying: Deps = {
      ...healthy,
      steps: {
        load: (e) => healthy.steps.load(e),
        keepEvent: (e, node, ev) => healthy.steps.keepEvent(e, node, ev),
        peek: (e, node) => healthy.steps.peek(e, node),
        save: async (e, node, rec, prev, sawEvent) => {
          if (rec.state === 'done' && node.startsWith('variants.') && ++doneWrites > 2)
            throw new Error('connection reset (the process died)');
          return healthy.steps.save(e, node, rec, prev, sawEvent);
        },
      },
    };
    await taskRun(healthy, id);

    // Act: the dying step ends with the store's failure (the state machine tries the step again).
    let died: unknown;
    for (let i = 0; i < 10 && died === undefined; i++) {
      t += 1000;
      died = await taskRun(dying, id).then(
        () => undefined,
        (e: unknown) => e,
      );
    }
    const recorded = await recordsOf(id);
    const doneBefore = [...recorded.entries()].filter(([k, r]) => k.startsWith('variants.') && r.state === 'done').map(([k]) => k);
    const callsBefore = up.calls.length;
    const end = await steps(healthy, id);
    const after = up.calls.slice(callsBefore);

    // Assess
    expect(String(died)).toMatch(/connection reset/);
    expect(doneBefore.length).toBeGreaterThanOrEqual(2);
    expect(end).toMatchObject({ status: 'completed' });
    for (const k of doneBefore) {
      const style = `s${k.split('.')[1]}`;
      expect(after.filter((c) => (c.method === 'POST' ? bodyOf(c).style === style : c.url.endsWith(`/${style}`)))).toEqual([]);
    }
    for (const s of ['s0', 's1', 's2', 's3', 's4', 's5']) expect(up.submits(s)).toBe(1);
    expect((await healthy.executions.get(id, clock.now(), true))?.outputs).toEqual({
      gallery: 's0.png,s1.png,s2.png,s3.png,s4.png,s5.png',
    });
  });
});
