/**
 * Reliability against the local runtime, quick version (`npm test`; the long soak is
 * test/long/reliability-soak.test.ts): kill -9 with executions in flight, duplicate queue
 * deliveries, an error injected at each step, cancel racing completion, and the store
 * unavailable for a while. Prints its figures at the end.
 *
 * The four paths that used to leave an execution open for good each have a test named
 * "stuck path N" (path 3, the Express budget, is in test/unit/workflow-budget.test.ts); each
 * fails with its fix taken out (docs/reliability.md says how that was checked).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Deps } from '../../functions/adapters/deps';
import type { LocalWorkflows } from '../../lib/local/workflow';
import {
  StoreFaults,
  countingTransitions,
  duplicatingQueue,
  failingStarts,
  fastRetryWorkflow,
  forId,
  movingTo,
  stepError,
  terminalWrites,
  type TransitionCounts,
} from '../support/faults';
import { hooksByExecution, startReceiver, type Receiver } from '../support/receiver';
import { printFigures, seededRandom, testSeed, type Figures } from '../support/figures';
import { cancelRace, delayDef, judgeKillRounds, killRounds } from '../support/scenarios';
import { isTerminalStatus } from '../../functions/core/transitions';
import { greeting, sleep, startTestRuntime, waitUntil, type Published, type TestRuntime } from '../support/runtime';

const seed = testSeed();
const random = seededRandom(seed);
const figures: Figures = [['seed (PIPEGATE_TEST_SEED)', seed]];
const fig = (label: string, value: number | string) => figures.push([label, value]);

afterAll(() => printFigures('Reliability (quick)', figures));

const executions = (p: Published) => `/v1/deployments/${p.deploymentId}/executions/`;

describe('kill -9 at random moments with executions and callbacks in flight', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-kill-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('kill -9 and a restart within 100 ms, 5 rounds, callers submitting throughout: none lost, none left open, each terminal once, each callback under one id', async () => {
    // Restarted at once, as a supervisor does: the killed process may still be dying.
    // Callers submit without pause through every kill; the next process is spawned at once.
    const r = await killRounds({
      dataDir,
      rounds: 5,
      perRound: 0,
      continuous: true,
      maxKillDelayMs: 700,
      hookFailRate: 0.3,
      random,
      immediateRestart: true,
    });
    // The new process is spawned in the same tick as the SIGKILL, never after waiting for the old
    // one's exit (scenarios.ts); how long spawn() itself takes is this test process's own speed on
    // a loaded machine, so it is printed, not asserted. Each round's restart coming up is asserted.
    fig('kill -9: longest SIGKILL → restart spawned (ms)', Math.max(...r.restartDelaysMs));
    expect(r.restartDelaysMs).toHaveLength(r.kills);

    const { lost, stuck, changed, twoIds, undelivered } = judgeKillRounds(r, fig);

    expect(r.accepted.length).toBeGreaterThan(0);
    expect(lost).toEqual([]);
    expect(changed).toEqual([]);
    expect(twoIds).toEqual([]);
    expect(undelivered).toEqual([]);
    // An execution only ever reports the status it ended with.
    for (const a of r.accepted)
      for (const h of r.receiver.hooks.filter((x) => x.executionId === a.id)) expect(h.status).toBe(r.final.get(a.id));
    // A kill inside a status write can leave dynalite's index behind the item; the restart reads
    // the items themselves, so nothing may be left open.
    expect(stuck.map((a) => [a.id, r.later.get(a.id)])).toEqual([]);
  });
});

describe('duplicate queue deliveries', () => {
  let rt: TestRuntime;
  let receiver: Receiver;
  const counts: TransitionCounts = new Map();
  let starts: ReturnType<typeof failingStarts>;
  let dup: ReturnType<typeof duplicatingQueue>;

  beforeAll(async () => {
    // A receiver refusing some deliveries, so retries (each message sent 3×) are duplicated too.
    receiver = await startReceiver(0.3, seededRandom(seed + 1));
    rt = await startTestRuntime({
      env: { ...process.env, PIPEGATE_CALLBACK_SCHEDULE: '0,0,0,0,0,0,0,0' },
      wrapDeps: (d) => {
        starts = failingStarts(d.workflow, () => false);
        dup = duplicatingQueue({ ...d, workflow: starts }, 3);
        return countingTransitions(dup, counts);
      },
    });
  });
  afterAll(async () => {
    await rt?.cleanup();
    await receiver?.close();
  });

  it('still runs one workflow to one terminal status, with one callback id and one POST per attempt per execution', async () => {
    const p = await rt.publishPipeline('dup', delayDef(30));
    const ids = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const r = await rt.caller('POST', executions(p), p.apiKey, { callback: receiver.url });
        expect(r.status).toBe(202);
        return r.body.execution_id as string;
      }),
    );
    // More copies while they run, and again once they are done.
    for (const id of ids) await rt.deps.queue.send('executions', { execution_id: id });
    await Promise.all(ids.map((id) => rt.waitForExecution(id, p.apiKey)));
    for (const id of ids) {
      await rt.deps.queue.send('executions', { execution_id: id });
      await rt.deps.queue.send('callbacks', { execution_id: id });
    }
    // Settled: delivered, or (rarely, at a 30 % refusal rate) out of retries.
    const settled = () => Promise.all(ids.map((id) => rt.deps.executions.get(id, new Date(), true)));
    await waitUntil(settled, (es) => es.every((e) => e?.callback_delivery?.outcome !== 'pending'));
    await rt.queues.executions.drain(10_000);
    await rt.queues.callbacks.drain(10_000);
    const later = await Promise.all(ids.map((id) => rt.caller('GET', `/v1/deployments/executions/${id}/status/`, p.apiKey)));
    const attempts = (await settled()).map((e) => e?.callback_delivery?.attempts ?? 0);

    const perExecution = hooksByExecution(receiver.hooks);
    const running = ids.map((id) => counts.get(id)?.get('running') ?? 0);
    const terminal = ids.map((id) => terminalWrites(counts, id));
    const extraDeliveries = ids.reduce((n, id) => n + Math.max(0, (perExecution.get(id)?.delivered ?? 0) - 1), 0);
    fig('duplicates: executions', ids.length);
    fig('duplicates: extra queue messages sent', dup.duplicates());
    fig(
      'duplicates: workflow starts tried (each copy of a message)',
      [...starts.starts.entries()].filter(([k]) => ids.includes(k)).reduce((n, [, v]) => n + v, 0),
    );
    fig(
      'duplicates: pending→running writes won',
      running.reduce((a, b) => a + b, 0),
    );
    fig(
      'duplicates: terminal writes won',
      terminal.reduce((a, b) => a + b, 0),
    );
    fig('duplicates: callbacks delivered twice (same id)', extraDeliveries);
    fig(
      'duplicates: callback attempts recorded',
      attempts.reduce((a, b) => a + b, 0),
    );
    fig('duplicates: callback POSTs received', receiver.hooks.filter((h) => ids.includes(h.executionId)).length);

    expect(running).toEqual(ids.map(() => 1));
    expect(terminal).toEqual(ids.map(() => 1));
    expect(later.map((r) => r.body.status)).toEqual(ids.map(() => 'completed'));
    for (const id of ids) expect(perExecution.get(id)?.ids.size).toBe(1);
    // Each attempt claimed by one of its copies: the receiver saw one POST per recorded attempt.
    expect(ids.map((id) => receiver.hooks.filter((h) => h.executionId === id).length)).toEqual(attempts);
    expect(extraDeliveries).toBe(0);
  });
});

describe('an error injected at each step', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-faults-'));
  let rt: TestRuntime;
  let receiver: Receiver;
  let workflow: LocalWorkflows;
  let p: Published;
  const faults = new StoreFaults();
  const startFaults = new Map<string, number>();
  const planned: string[] = [];
  let httpFaults = 0;
  let injectedStarts = 0;
  let workflowFailures = 0;
  /** Executions whose queue message fails to send (once each). */
  const sendFaults = new Set<string>();
  const unreachable = () => `${receiver.url}/unreachable`;
  const cases: Record<string, string> = {};

  const wrap = (d: Deps): Deps => {
    const wired: { deps?: Deps } = {};
    workflow = fastRetryWorkflow(
      () => wired.deps as Deps,
      10,
      () => (workflowFailures += 1),
    );
    const starts = failingStarts(workflow, (name) => {
      const left = startFaults.get(name) ?? 0;
      if (left <= 0) return false;
      startFaults.set(name, left - 1);
      return true;
    });
    wired.deps = faults.wrap({
      ...d,
      workflow: starts,
      queue: {
        send: async (queue, body, opts) => {
          const id = String(body.execution_id);
          if (queue === 'executions' && sendFaults.delete(id)) throw stepError('queue.send');
          return d.queue.send(queue, body, opts);
        },
      },
      ids: { uuid: () => planned.shift() ?? randomUUID() },
      http: async (req) => {
        if (req.url.startsWith(unreachable())) {
          httpFaults += 1;
          throw stepError('http');
        }
        return d.http(req);
      },
    });
    return wired.deps;
  };
  const start = () =>
    startTestRuntime({
      dataDir,
      inMemory: false,
      env: { ...process.env, PIPEGATE_CALLBACK_SCHEDULE: '0,0,0', PIPEGATE_CANCEL_POLL_MS: '50' },
      queueOverrides: { executions: { visibilityTimeoutSeconds: 0.1 }, callbacks: { visibilityTimeoutSeconds: 0.1 } },
      wrapDeps: wrap,
    });

  /** Submits one execution under a known id, so a fault can name it before it exists. */
  const submit = async (name: string, callback = receiver.url): Promise<string> => {
    const id = randomUUID();
    planned.push(id);
    const r = await rt.caller('POST', executions(p), p.apiKey, { callback });
    expect(r.status).toBe(202);
    expect(r.body.execution_id).toBe(id);
    cases[name] = id;
    return id;
  };
  const stopAll = async () => {
    await workflow.stopAll(2_000);
    await rt.cleanup();
  };

  beforeAll(async () => {
    receiver = await startReceiver();
    rt = await start();
    p = await rt.publishPipeline('steps', greeting);
  });
  afterAll(async () => {
    await stopAll();
    await receiver.close();
    rmSync(dataDir, { recursive: true, force: true });
    fig('steps: faults injected (stores)', faults.total());
    fig('steps: faults injected (workflow.start)', injectedStarts);
    fig('steps: faults injected (callback http)', httpFaults);
    fig('steps: state machines that failed whole', workflowFailures);
  });

  it('runner: a failing workflow start is retried by the queue and the execution completes', async () => {
    const id = randomUUID();
    startFaults.set(id, 2);
    planned.push(id);
    const r = await rt.caller('POST', executions(p), p.apiKey, {});
    cases.runnerTransient = id;
    const s = await rt.waitForExecution(r.body.execution_id as string, p.apiKey);
    injectedStarts += 2;
    expect(s.status).toBe('completed');
    expect(startFaults.get(id)).toBe(0);
  });

  it('runner: a start that keeps failing is dead-lettered after the receive limit; the restart sweep finishes it', async () => {
    const id = randomUUID();
    startFaults.set(id, Infinity);
    planned.push(id);
    await rt.caller('POST', executions(p), p.apiKey, {});
    cases.runnerDead = id;
    const dead = await waitUntil(
      () => rt.queues.executions.deadLetters(),
      (ds) => ds.some((m) => m.body.includes(id)),
    );
    const letter = dead.find((m) => m.body.includes(id));
    expect(letter?.receiveCount).toBe(5);
    expect((await rt.caller('GET', `/v1/deployments/executions/${id}/status/`, p.apiKey)).body.status).toBe('pending');
    injectedStarts += 5;
    fig('steps: executions messages dead-lettered', dead.length);
  });

  it('MarkRunning: a failing start write is retried by the state machine and the execution completes', async () => {
    const id = randomUUID();
    faults.add({ label: 'start-transient', store: 'executions', method: 'transition', when: movingTo('running', id), times: 2 });
    planned.push(id);
    await rt.caller('POST', executions(p), p.apiKey, {});
    expect((await rt.waitForExecution(id, p.apiKey)).status).toBe('completed');
    expect(faults.count('start-transient')).toBe(2);
  });

  it("stuck path 2: MarkRunning's first write landed but its answer was lost; the retry proceeds and the execution completes", async () => {
    const id = randomUUID();
    faults.add({
      label: 'start-lost-reply',
      store: 'executions',
      method: 'transition',
      when: movingTo('running', id),
      times: 1,
      after: true,
    });
    planned.push(id);
    await rt.caller('POST', executions(p), p.apiKey, {});
    expect((await rt.waitForExecution(id, p.apiKey)).status).toBe('completed');
    expect(faults.count('start-lost-reply')).toBe(1);
  });

  it("stuck path 1: execute's queue send fails (no Idempotency-Key); the execution is withdrawn and answered 503, nothing left pending", async () => {
    const id = randomUUID();
    sendFaults.add(id);
    planned.push(id);
    const r = await rt.caller('POST', executions(p), p.apiKey, {});
    // Nothing is left that nobody will queue (before the fix: a record `pending` for good).
    expect((await rt.deps.executions.get(id, new Date(), true))?.status ?? 'withdrawn').toBe('withdrawn');
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBeTruthy();
    // The same request again is accepted and runs.
    const again = await rt.caller('POST', executions(p), p.apiKey, {});
    expect(again.status).toBe(202);
    expect((await rt.waitForExecution(again.body.execution_id as string, p.apiKey)).status).toBe('completed');
  });

  it('MarkRunning: once its retries are spent, MarkFailed finishes the execution as failed', async () => {
    const id = randomUUID();
    // One call and three retries, as the state machine allows.
    faults.add({ label: 'start-exhausted', store: 'executions', method: 'transition', when: movingTo('running', id), times: 4 });
    planned.push(id);
    await rt.caller('POST', executions(p), p.apiKey, { callback: receiver.url });
    const s = await rt.waitForExecution(id, p.apiKey);
    expect(s).toMatchObject({ status: 'failed', error_message: expect.stringMatching(/^Execution failed/) });
    expect(faults.count('start-exhausted')).toBe(4);
    await waitUntil(
      async () => receiver.delivered().filter((h) => h.executionId === id),
      (hs) => hs.length > 0 && hs[0]?.status === 'failed',
    );
  });

  it('RunNodes: a completion write that keeps failing ends in MarkFailed, failed, callback sent', async () => {
    const id = randomUUID();
    faults.add({ label: 'run-finish', store: 'executions', method: 'transition', when: movingTo('completed', id) });
    planned.push(id);
    await rt.caller('POST', executions(p), p.apiKey, { callback: receiver.url });
    const s = await rt.waitForExecution(id, p.apiKey);
    expect(s).toMatchObject({ status: 'failed', error_message: expect.stringMatching(/^Execution failed/) });
    await waitUntil(
      async () => receiver.delivered().filter((h) => h.executionId === id),
      (hs) => hs.length === 1,
    );
  });

  it('RunNodes: a step whose read of the version fails once is tried again, and the execution completes', async () => {
    const id = randomUUID();
    faults.add({ label: 'run-read', store: 'pipelines', method: 'getVersion', when: (args) => args[0] === 'steps', times: 1 });
    planned.push(id);
    await rt.caller('POST', executions(p), p.apiKey, {});
    expect((await rt.waitForExecution(id, p.apiKey)).status).toBe('completed');
    expect(faults.count('run-read')).toBe(1);
  });

  it('RunNodes: a read of the version that keeps failing ends in MarkFailed, failed', async () => {
    const id = randomUUID();
    // Every attempt fails: the first and the state machine's two tries again.
    faults.add({ label: 'run-read-always', store: 'pipelines', method: 'getVersion', when: (args) => args[0] === 'steps', times: 3 });
    planned.push(id);
    await rt.caller('POST', executions(p), p.apiKey, {});
    expect((await rt.waitForExecution(id, p.apiKey)).status).toBe('failed');
    expect(faults.count('run-read-always')).toBe(3);
  });

  it('MarkFailed: its own failing write is retried until it lands', async () => {
    const id = randomUUID();
    faults.add({ label: 'fail-finish-run', store: 'executions', method: 'transition', when: movingTo('completed', id) });
    faults.add({ label: 'fail-finish', store: 'executions', method: 'transition', when: movingTo('failed', id), times: 3 });
    planned.push(id);
    await rt.caller('POST', executions(p), p.apiKey, {});
    const s = await rt.waitForExecution(id, p.apiKey);
    expect(s.status).toBe('failed');
    expect(faults.count('fail-finish')).toBe(3);
  });

  it('callback dispatch: a receiver that cannot be reached is retried on schedule, then the delivery is dead-lettered', async () => {
    const id = await submit('httpDead', unreachable());
    expect((await rt.waitForExecution(id, p.apiKey)).status).toBe('completed');
    const view = await waitUntil(
      () => rt.owner('GET', `/v1/pipelines/steps/executions/${id}`),
      (v) => (v.body.callback_delivery as { outcome?: string } | null)?.outcome === 'dead_lettered',
    );
    expect(view.body.callback_delivery).toMatchObject({
      attempts: 4,
      outcome: 'dead_lettered',
      last_error: expect.stringMatching(/injected fault/),
    });
    expect(view.body.status).toBe('completed');
  });

  it('callback dispatch: failing bookkeeping returns the message to the queue until it is dead-lettered, under one webhook id', async () => {
    const id = randomUUID();
    faults.add({ label: 'dispatch-record', store: 'executions', method: 'recordDelivery', when: forId(id) });
    planned.push(id);
    await rt.caller('POST', executions(p), p.apiKey, { callback: receiver.url });
    cases.dispatchDead = id;
    await waitUntil(
      () => rt.queues.callbacks.deadLetters(),
      (ds) => ds.some((m) => m.body.includes(id)),
    );
    expect((await rt.caller('GET', `/v1/deployments/executions/${id}/status/`, p.apiKey)).body.status).toBe('completed');
    const hooks = receiver.hooks.filter((h) => h.executionId === id);
    expect(hooks.length).toBe(5);
    expect(new Set(hooks.map((h) => h.webhookId)).size).toBe(1);
    fig('steps: callbacks messages dead-lettered', (await rt.queues.callbacks.deadLetters()).length);
  });

  it('leaves nothing in a non-terminal state: a restart sweeps what the dead-letter queues hold', async () => {
    faults.clear();
    startFaults.clear();
    await stopAll();
    rt = await start();
    expect(rt.recovered.resumed).toBeGreaterThanOrEqual(1);

    const pendingId = cases.runnerDead as string;
    expect((await rt.waitForExecution(pendingId, p.apiKey)).status).toBe('completed');
    const owed = cases.dispatchDead as string;
    const view = await waitUntil(
      () => rt.owner('GET', `/v1/pipelines/steps/executions/${owed}`),
      (v) => (v.body.callback_delivery as { outcome?: string } | null)?.outcome === 'delivered',
    );
    expect(view.body.status).toBe('completed');
    const open = await rt.deps.sweep.listSweep('open', 1000);
    expect(open.map((e) => e.execution_id)).toEqual([]);
    fig('steps: left non-terminal after the restart', open.length);
  });
});

describe('stuck path 4: a dead-lettered executions message, with the process still up', () => {
  let rt: TestRuntime;
  let p: Published;
  /** Executions whose workflow start fails, until taken out. */
  const failing = new Set<string>();
  const planned: string[] = [];
  /** Executions-queue messages sent, by execution id. */
  const sends = new Map<string, number>();
  /** How far the functions' clock runs ahead of the wall clock: the quiet period passes at once. */
  let clockAheadMs = 0;

  beforeAll(async () => {
    rt = await startTestRuntime({
      // A sweeper pass every second; its quiet period stays the default, passed on the clock below.
      env: { ...process.env, PIPEGATE_SWEEP_INTERVAL_SECONDS: '1' },
      queueOverrides: { executions: { visibilityTimeoutSeconds: 0.1 } },
      wrapDeps: (d) => ({
        ...d,
        ids: { uuid: () => planned.shift() ?? randomUUID() },
        clock: { now: () => new Date(Date.now() + clockAheadMs) },
        workflow: failingStarts(d.workflow, (name) => failing.has(name)),
        queue: {
          send: async (queue, body, opts) => {
            if (queue === 'executions') sends.set(String(body.execution_id), (sends.get(String(body.execution_id)) ?? 0) + 1);
            return d.queue.send(queue, body, opts);
          },
        },
      }),
    });
    p = await rt.publishPipeline('dead-letter', greeting);
  });
  afterAll(async () => {
    await rt?.cleanup();
  });

  it("the sweeper's next pass queues the pending execution again and it completes, without a restart", async () => {
    const id = randomUUID();
    failing.add(id);
    planned.push(id);
    const r = await rt.caller('POST', executions(p), p.apiKey, {});
    expect(r.status).toBe(202);
    await waitUntil(
      () => rt.queues.executions.deadLetters(),
      (ds) => ds.some((m) => m.body.includes(id)),
    );
    expect((await rt.deps.executions.get(id, new Date(), true))?.status).toBe('pending');
    // The runner works again; only a repair can bring the execution back to it.
    failing.delete(id);
    clockAheadMs = (rt.deps.config.sweepPendingAfterSeconds + 1) * 1000;
    const deadAt = Date.now();
    const done = await rt.waitForExecution(id, p.apiKey);
    expect(done.status).toBe('completed');
    // Execute's own message, then exactly one from a sweeper pass.
    expect(sends.get(id)).toBe(2);
    expect(rt.recovered.resumed).toBe(0);
    fig('stuck path 4: dead letter → completed by a sweeper pass (ms)', Date.now() - deadAt);
  });
});

describe('cancel racing completion over HTTP', () => {
  let rt: TestRuntime;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    rt = await startTestRuntime({ env: { ...process.env, PIPEGATE_CALLBACK_SCHEDULE: '0,0,0', PIPEGATE_CANCEL_POLL_MS: '50' } });
  });
  afterAll(async () => {
    await rt?.cleanup();
    await receiver?.close();
  });

  it('ends each execution either completed or cancelled, and a cancelled one never shows completed or outputs', async () => {
    const p = await rt.publishPipeline('race', delayDef(40));
    const { outcomes, maxWaitMs } = await cancelRace(
      { url: rt.url, deploymentId: p.deploymentId, apiKey: p.apiKey, callback: receiver.url },
      40,
      random,
    );
    await waitUntil(
      async () => new Set(receiver.delivered().map((h) => h.executionId)),
      (s) => outcomes.every((o) => s.has(o.id)),
    );
    const perExecution = hooksByExecution(receiver.hooks);

    const won = outcomes.filter((o) => o.cancelStatus === 200).length;
    const badCancel = outcomes.filter(
      (o) => o.cancelStatus === 200 && (o.final !== 'cancelled' || o.later !== 'cancelled' || JSON.stringify(o.outputs) !== '{}'),
    );
    const badLost = outcomes.filter(
      (o) => o.cancelStatus === 409 && (o.cancelSaid !== 'completed' || o.final !== 'completed' || o.later !== 'completed'),
    );
    const other = outcomes.filter((o) => o.cancelStatus !== 200 && o.cancelStatus !== 409);
    const hookMismatch = outcomes.filter((o) => {
      const h = perExecution.get(o.id);
      return !h || h.ids.size !== 1 || h.statuses.size !== 1 || !h.statuses.has(o.final);
    });
    fig('cancel race: executions', outcomes.length);
    fig('cancel race: cancel sent after (ms, up to)', Math.round(maxWaitMs));
    fig('cancel race: cancel won (200)', won);
    fig('cancel race: completion won (409)', outcomes.length - won - other.length);
    fig('cancel race: inconsistent outcomes', badCancel.length + badLost.length + other.length + hookMismatch.length);

    expect(other).toEqual([]);
    expect(badCancel).toEqual([]);
    expect(badLost).toEqual([]);
    expect(hookMismatch).toEqual([]);
  });
});

describe('the store unavailable for a while', () => {
  let rt: TestRuntime;
  const faults = new StoreFaults();

  beforeAll(async () => {
    rt = await startTestRuntime({
      env: { ...process.env, PIPEGATE_CALLBACK_SCHEDULE: '0,0,0' },
      queueOverrides: { executions: { visibilityTimeoutSeconds: 1 } },
      wrapDeps: (d) => faults.wrap(d),
    });
  });
  afterAll(async () => {
    await rt?.cleanup();
  });

  it('answers 503 with Retry-After while it is down, then recovers and loses no accepted execution', async () => {
    const p = await rt.publishPipeline('outage', delayDef(300));
    const accepted = await Promise.all(
      Array.from({ length: 12 }, async () => (await rt.caller('POST', executions(p), p.apiKey, {})).body.execution_id as string),
    );
    await sleep(150);

    faults.down = true;
    const seen: { route: string; status: number; retryAfter: string | null; error: unknown }[] = [];
    const until = Date.now() + 1500;
    while (Date.now() < until) {
      const replies = await Promise.all([
        rt.owner('GET', '/v1/pipelines').then((r) => ['owner list', r] as const),
        rt.owner('GET', '/v1/pipelines/outage').then((r) => ['owner get', r] as const),
        rt.owner('POST', '/v1/pipelines/outage/runs', {}).then((r) => ['owner run', r] as const),
        rt.caller('POST', executions(p), p.apiKey, {}).then((r) => ['caller execute', r] as const),
        rt.caller('GET', `/v1/deployments/executions/${accepted[0]}/status/`, p.apiKey).then((r) => ['caller status', r] as const),
      ]);
      for (const [route, r] of replies)
        seen.push({ route, status: r.status, retryAfter: r.headers.get('retry-after'), error: r.body.error });
      await sleep(100);
    }
    faults.down = false;

    const finals = await Promise.all(accepted.map((id) => rt.waitForExecution(id, p.apiKey)));
    const fresh = await rt.caller('POST', executions(p), p.apiKey, {});
    expect(fresh.status).toBe(202);
    expect((await rt.waitForExecution(fresh.body.execution_id as string, p.apiKey)).status).toBe('completed');

    const owner = seen.filter((s) => s.route.startsWith('owner'));
    const caller = seen.filter((s) => s.route.startsWith('caller'));
    const clear503 = (s: (typeof seen)[number]) => s.status === 503 && s.retryAfter !== null && s.error === 'Service Unavailable';
    fig('outage: requests while down', seen.length);
    fig('outage: store calls failed', faults.count('outage'));
    fig('outage: 503 + Retry-After', seen.filter(clear503).length);
    fig('outage: other answers', seen.filter((s) => !clear503(s) && s.status !== 500).length);
    fig('outage: executions accepted before', accepted.length);
    fig('outage: of them completed', finals.filter((f) => f.status === 'completed').length);
    fig('outage: of them failed by the outage', finals.filter((f) => f.status === 'failed').length);
    fig('outage: lost', finals.filter((f) => !isTerminalStatus(f.status)).length);

    expect(owner.length).toBeGreaterThan(0);
    for (const s of owner) expect(clear503(s)).toBe(true);
    // The authorizer runs before any handler; its failure is AUTHORIZER_CONFIGURATION_ERROR, answered 503 too.
    for (const s of caller) expect(clear503(s)).toBe(true);
    for (const f of finals) expect(isTerminalStatus(f.status)).toBe(true);
    // Work that finished during the outage is recorded once the store is back, not failed.
    expect(finals.filter((f) => f.status === 'failed')).toEqual([]);
  });
});
