/**
 * The long reliability run (`npm run test:long`): many kill -9 rounds, duplicate deliveries
 * and cancel races at scale, random faults in every store call (some after the write landed),
 * the runner and callback delivery, and repeated store outages under traffic. PIPEGATE_SOAK
 * scales it (default 1); PIPEGATE_TEST_SEED replays it. Prints its figures.
 */
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
  stepError,
  terminalWrites,
  type TransitionCounts,
} from '../support/faults';
import { hooksByExecution, startReceiver } from '../support/receiver';
import { printFigures, seededRandom, testSeed, type Figures } from '../support/figures';
import { cancelRace, delayDef, judgeKillRounds, killRounds } from '../support/scenarios';
import { isTerminalStatus } from '../../functions/core/transitions';
import { greeting, sleep, startTestRuntime, waitUntil } from '../support/runtime';

const SCALE = Number(process.env.PIPEGATE_SOAK ?? 1);
const seed = testSeed();
const random = seededRandom(seed);
const figures: Figures = [
  ['seed (PIPEGATE_TEST_SEED)', seed],
  ['scale (PIPEGATE_SOAK)', SCALE],
];
const fig = (label: string, value: number | string) => figures.push([label, value]);
afterAll(() => printFigures('Reliability (long)', figures));

it('kill -9 at random moments, round after round: nothing lost, one terminal status, one callback id', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-soak-kill-'));
  try {
    const r = await killRounds({
      dataDir,
      rounds: 8 * SCALE,
      perRound: 40,
      maxKillDelayMs: 2500,
      hookFailRate: 0.3,
      random,
      timeoutMs: 120_000,
    });
    const { lost, stuck, changed, twoIds, undelivered } = judgeKillRounds(r, fig);
    expect(lost).toEqual([]);
    expect(changed).toEqual([]);
    expect(twoIds).toEqual([]);
    expect(stuck.map((a) => [a.id, r.later.get(a.id)])).toEqual([]);
    expect(undelivered).toEqual([]);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 900_000);

it('duplicate deliveries at scale: one start, one terminal write, one callback id and one POST each', async () => {
  const receiver = await startReceiver();
  const counts: TransitionCounts = new Map();
  const rt = await startTestRuntime({
    env: { ...process.env, PIPEGATE_CALLBACK_SCHEDULE: '0,0,0' },
    wrapDeps: (d) => countingTransitions(duplicatingQueue(d, 4), counts),
  });
  try {
    const p = await rt.publishPipeline('dup', delayDef(20));
    const ids: string[] = [];
    for (let i = 0; i < 200 * SCALE; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: 20 }, () =>
          rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, { callback: receiver.url }),
        ),
      );
      ids.push(...batch.map((r) => r.body.execution_id as string));
    }
    for (const id of ids) await rt.deps.queue.send('executions', { execution_id: id });
    await Promise.all(ids.map((id) => rt.waitForExecution(id, p.apiKey, undefined, 120_000)));
    await waitUntil(
      async () => new Set(receiver.delivered().map((h) => h.executionId)),
      (s) => ids.every((id) => s.has(id)),
      120_000,
    );
    await rt.queues.executions.drain(60_000);
    const perExecution = hooksByExecution(receiver.hooks);
    const badStarts = ids.filter((id) => (counts.get(id)?.get('running') ?? 0) !== 1);
    const badEnds = ids.filter((id) => terminalWrites(counts, id) !== 1);
    const twoIds = ids.filter((id) => (perExecution.get(id)?.ids.size ?? 0) !== 1);
    fig('duplicates: executions (each message sent 4×)', ids.length);
    fig('duplicates: executions started more than once', badStarts.length);
    fig('duplicates: more than one terminal write', badEnds.length);
    fig('duplicates: callbacks under two ids', twoIds.length);
    const extra = ids.reduce((n, id) => n + Math.max(0, (perExecution.get(id)?.delivered ?? 0) - 1), 0);
    fig('duplicates: callbacks delivered twice (same id)', extra);
    expect(badStarts).toEqual([]);
    expect(badEnds).toEqual([]);
    expect(twoIds).toEqual([]);
    // Every attempt is claimed by one of its copies; the receiver accepts each, so one POST each.
    expect(extra).toBe(0);
    expect(receiver.hooks.filter((h) => ids.includes(h.executionId))).toHaveLength(ids.length);
  } finally {
    await rt.cleanup();
    await receiver.close();
  }
}, 600_000);

it('cancel racing completion at scale: completed or cancelled, never both', async () => {
  const receiver = await startReceiver();
  const rt = await startTestRuntime({ env: { ...process.env, PIPEGATE_CALLBACK_SCHEDULE: '0,0,0', PIPEGATE_CANCEL_POLL_MS: '50' } });
  try {
    const p = await rt.publishPipeline('race', delayDef(40));
    const { outcomes, maxWaitMs } = await cancelRace(
      { url: rt.url, deploymentId: p.deploymentId, apiKey: p.apiKey, callback: receiver.url },
      500 * SCALE,
      random,
      20,
    );
    await waitUntil(
      async () => new Set(receiver.delivered().map((h) => h.executionId)),
      (s) => outcomes.every((o) => s.has(o.id)),
      60_000,
    );
    const perExecution = hooksByExecution(receiver.hooks);
    const bad = outcomes.filter((o) => {
      const h = perExecution.get(o.id);
      const consistent =
        (o.cancelStatus === 200 && o.final === 'cancelled' && o.later === 'cancelled' && JSON.stringify(o.outputs) === '{}') ||
        (o.cancelStatus === 409 && o.cancelSaid === 'completed' && o.final === 'completed' && o.later === 'completed');
      return !consistent || !h || h.ids.size !== 1 || h.statuses.size !== 1 || !h.statuses.has(o.final);
    });
    const won = outcomes.filter((o) => o.cancelStatus === 200).length;
    fig('cancel race: executions', outcomes.length);
    fig('cancel race: cancel sent after (ms, up to)', Math.round(maxWaitMs));
    fig('cancel race: cancel won (200)', won);
    fig('cancel race: completion won (409)', outcomes.length - won);
    fig('cancel race: inconsistent outcomes', bad.length);
    expect(bad).toEqual([]);
  } finally {
    await rt.cleanup();
    await receiver.close();
  }
}, 600_000);

it('random faults in every store call, the runner and callback delivery: all end terminal once, none lost', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-soak-chaos-'));
  const receiver = await startReceiver(0.1, random);
  const faults = new StoreFaults();
  const counts: TransitionCounts = new Map();
  let workflow: LocalWorkflows | undefined;
  let startFaults = 0;
  let httpFaults = 0;
  let chaos = false;
  let wholeFailures = 0;
  const wrap = (d: Deps): Deps => {
    const wired: { deps?: Deps } = {};
    workflow = fastRetryWorkflow(
      () => wired.deps as Deps,
      10,
      () => (wholeFailures += 1),
    );
    const starts = failingStarts(workflow, () => {
      const hit = chaos && random() < 0.05;
      if (hit) startFaults += 1;
      return hit;
    });
    wired.deps = countingTransitions(
      faults.wrap({
        ...d,
        workflow: starts,
        http: async (req) => {
          if (chaos && random() < 0.1) {
            httpFaults += 1;
            throw stepError('http');
          }
          return d.http(req);
        },
      }),
      counts,
    );
    return wired.deps;
  };
  const start = () =>
    startTestRuntime({
      dataDir,
      inMemory: false,
      env: { ...process.env, PIPEGATE_CALLBACK_SCHEDULE: '0,0,0,0,0,0', PIPEGATE_CANCEL_POLL_MS: '50' },
      queueOverrides: { executions: { visibilityTimeoutSeconds: 0.2 }, callbacks: { visibilityTimeoutSeconds: 0.2 } },
      wrapDeps: wrap,
    });
  let rt = await start();
  const accepted: { id: string; key: string }[] = [];
  let refused5xx = 0;
  try {
    const p = await rt.publishPipeline('chaos', delayDef(30));
    const q = await rt.publishPipeline('chaos-quick', greeting);
    for (const store of ['pipelines', 'executions', 'deployments'] as const) {
      faults.add({ label: `${store} before`, store, method: '*', when: () => chaos && random() < 0.03 });
      faults.add({ label: `${store} after`, store, method: '*', when: () => chaos && random() < 0.02, after: true });
    }
    chaos = true;
    for (let i = 0; i < 300 * SCALE; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const t = random() < 0.5 ? p : q;
          const r = await rt.caller('POST', `/v1/deployments/${t.deploymentId}/executions/`, t.apiKey, { callback: receiver.url });
          return { r, key: t.apiKey };
        }),
      );
      for (const { r, key } of batch) {
        if (r.status === 202) accepted.push({ id: r.body.execution_id as string, key });
        else if (r.status >= 500) refused5xx += 1;
      }
      if (random() < 0.3) {
        const victim = accepted[Math.floor(random() * accepted.length)];
        if (victim) await rt.caller('POST', `/v1/deployments/executions/${victim.id}/cancel/`, victim.key);
      }
    }
    await sleep(3000);
    chaos = false;
    receiver.failRate = 0;
    // Whatever a whole state-machine failure left open, the restart sweep finishes.
    await workflow?.stopAll(5_000);
    await rt.cleanup();
    rt = await start();
    fig('chaos: left open until the restart sweep', rt.recovered.resumed + rt.recovered.rerun + rt.recovered.interrupted);
    const finals = await Promise.all(
      accepted.map((a) => rt.waitForExecution(a.id, a.key, undefined, 120_000).catch(() => ({ status: 'lost' }))),
    );
    await waitUntil(
      async () => new Set(receiver.delivered().map((h) => h.executionId)),
      (s) => accepted.every((a) => s.has(a.id)),
      120_000,
    ).catch(() => undefined);
    await sleep(1000);
    const later = await Promise.all(accepted.map((a) => rt.caller('GET', `/v1/deployments/executions/${a.id}/status/`, a.key)));
    const perExecution = hooksByExecution(receiver.hooks);
    const lost = finals.filter((f) => !isTerminalStatus(f.status)).length;
    const changed = accepted.filter((_, i) => later[i]?.body.status !== finals[i]?.status).length;
    const doubleEnd = accepted.filter((a) => terminalWrites(counts, a.id) > 1).length;
    const twoIds = accepted.filter((a) => (perExecution.get(a.id)?.ids.size ?? 0) > 1).length;
    const undelivered = accepted.filter((a) => (perExecution.get(a.id)?.delivered ?? 0) === 0);
    const byStatus = new Map<string, number>();
    for (const f of finals) byStatus.set(String(f.status), (byStatus.get(String(f.status)) ?? 0) + 1);
    fig(
      'chaos: faults injected (stores, before the call)',
      ['pipelines', 'executions', 'deployments'].reduce((n, s) => n + faults.count(`${s} before`), 0),
    );
    fig(
      'chaos: faults injected (stores, after the write)',
      ['pipelines', 'executions', 'deployments'].reduce((n, s) => n + faults.count(`${s} after`), 0),
    );
    fig('chaos: faults injected (workflow.start)', startFaults);
    fig('chaos: faults injected (callback http)', httpFaults);
    fig('chaos: state machines that failed whole', wholeFailures);
    fig('chaos: submits answered 5xx', refused5xx);
    fig('chaos: executions accepted', accepted.length);
    fig('chaos: final statuses', [...byStatus.entries()].map(([s, n]) => `${s}:${n}`).join(' '));
    fig('chaos: lost', lost);
    fig('chaos: terminal status changed', changed);
    fig('chaos: more than one terminal write', doubleEnd);
    fig('chaos: callbacks under two ids', twoIds);
    fig('chaos: callbacks owed, not delivered', undelivered.length);
    expect(lost).toBe(0);
    expect(changed).toBe(0);
    expect(doubleEnd).toBe(0);
    expect(twoIds).toBe(0);
  } finally {
    await workflow?.stopAll(2_000);
    await rt.cleanup();
    await receiver.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 900_000);

it('store outages under traffic: 503s with Retry-After, then recovery with nothing lost', async () => {
  const faults = new StoreFaults();
  const rt = await startTestRuntime({
    env: { ...process.env, PIPEGATE_CALLBACK_SCHEDULE: '0,0,0' },
    queueOverrides: { executions: { visibilityTimeoutSeconds: 1 } },
    wrapDeps: (d) => faults.wrap(d),
  });
  try {
    const p = await rt.publishPipeline('outage', delayDef(200));
    const accepted: string[] = [];
    const answers = new Map<string, number>();
    const count = (k: string) => answers.set(k, (answers.get(k) ?? 0) + 1);
    let traffic = true;
    const load = (async () => {
      while (traffic) {
        const r = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {});
        if (r.status === 202) accepted.push(r.body.execution_id as string);
        const wasDown = faults.down;
        const o = await rt.owner('GET', '/v1/pipelines/outage');
        count(`caller ${r.status}${r.headers.get('retry-after') ? ' +Retry-After' : ''}`);
        count(`owner ${o.status}${o.headers.get('retry-after') ? ' +Retry-After' : ''}`);
        if (wasDown && faults.down && o.status !== 503) count('owner not 503 while down');
        await sleep(20);
      }
    })();
    for (let w = 0; w < 5 * SCALE; w += 1) {
      await sleep(1000 + random() * 1500);
      faults.down = true;
      await sleep(500 + random() * 2000);
      faults.down = false;
    }
    await sleep(1000);
    traffic = false;
    await load;
    const finals = await Promise.all(
      accepted.map((id) => rt.waitForExecution(id, p.apiKey, undefined, 120_000).catch(() => ({ status: 'lost' }))),
    );
    const byStatus = new Map<string, number>();
    for (const f of finals) byStatus.set(String(f.status), (byStatus.get(String(f.status)) ?? 0) + 1);
    fig('outages: windows', 5 * SCALE);
    fig('outages: store calls failed', faults.count('outage'));
    fig(
      'outages: answers',
      [...answers.entries()]
        .sort()
        .map(([k, n]) => `${k}:${n}`)
        .join(', '),
    );
    fig('outages: executions accepted', accepted.length);
    fig('outages: final statuses', [...byStatus.entries()].map(([s, n]) => `${s}:${n}`).join(' '));
    fig('outages: lost', finals.filter((f) => !isTerminalStatus(f.status)).length);
    expect(answers.get('owner not 503 while down') ?? 0).toBe(0);
    expect(finals.filter((f) => !isTerminalStatus(f.status))).toEqual([]);
  } finally {
    await rt.cleanup();
  }
}, 600_000);
