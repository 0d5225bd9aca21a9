/**
 * Whole scenarios against a real `npm start` process or a started runtime: kill -9 rounds, and
 * cancel racing completion over real HTTP.
 */
import type { PipelineDefinition } from '../../functions/core/types';
import { spawnRuntime, type RuntimeProcess } from './process';
import { request, sleep, waitUntil, type Reply } from './runtime';
import { isTerminalStatus } from '../../functions/core/transitions';
import { hooksByExecution, startReceiver, type Receiver } from './receiver';
import { HANG_MS } from './hang';

// ---------------------------------------------------------------------------------------------
// kill -9 rounds against a real `npm start` process

export interface KillRoundsOptions {
  dataDir: string;
  rounds: number;
  /** Executions submitted per round (some are cut off by the kill and never accepted). */
  perRound: number;
  /**
   * Callers keep submitting until the kill, however many that makes (perRound is then ignored),
   * as callers of a live service do.
   */
  continuous?: boolean;
  /** Longest random wait before the kill, ms. */
  maxKillDelayMs: number;
  /** Share of callback attempts the receiver answers 500, so retries are pending at a kill. */
  hookFailRate: number;
  random?: () => number;
  timeoutMs?: number;
  /** Give up waiting once no execution has turned terminal for this long (default 30 s: a loaded machine stalls for seconds). */
  stallMs?: number;
  /**
   * Start the next process at once, while the killed one may still be dying, as a supervisor
   * does (default: after it has exited).
   */
  immediateRestart?: boolean;
}

export interface KillRoundsResult {
  accepted: { id: string; key: string }[];
  cutOff: number;
  kills: number;
  /** First terminal status seen for each execution, at any moment of any round. */
  firstTerminal: Map<string, string>;
  final: Map<string, string>;
  later: Map<string, string>;
  receiver: Receiver;
  interrupted: number;
  recoveredLines: string[];
  /** Milliseconds from each SIGKILL to the next process being spawned. */
  restartDelaysMs: number[];
}

const quickDef: PipelineDefinition = {
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    greeting: { type: 'transform', inputs: ['name'], expression: "'Hello, ' & name & '!'" },
    message: { type: 'output', from: 'greeting' },
  },
};

async function publishOn(rt: RuntimeProcess, id: string, def: PipelineDefinition): Promise<{ dep: string; key: string }> {
  const owner = (m: string, p: string, b?: unknown) =>
    request<Record<string, unknown>>(`${rt.url}${p}`, m, b, { authorization: `Bearer ${rt.ownerToken}` });
  await owner('PUT', `/v1/pipelines/${id}`, def);
  const run = await owner('POST', `/v1/pipelines/${id}/runs`, {});
  await waitUntil(
    () => owner('GET', `/v1/pipelines/${id}/runs/${String(run.body.run_id)}`),
    (r) => r.body.status === 'completed',
  );
  const pub = await owner('PUT', `/v1/pipelines/${id}/deployment`, {});
  if (pub.status !== 201) throw new Error(`publish refused: ${pub.text}`);
  return { dep: String(pub.body.deployment_id), key: String(pub.body.api_key) };
}

/**
 * Rounds of: submit executions (with callbacks) to a spawned runtime, kill -9 it at a random
 * moment, start it again on the same data dir. Then waits until every accepted execution is
 * terminal and samples every status again a little later.
 */
export async function killRounds(opts: KillRoundsOptions): Promise<KillRoundsResult> {
  const random = opts.random ?? Math.random;
  const env = { PIPEGATE_CALLBACK_SCHEDULE: Array(20).fill('1').join(','), PIPEGATE_CANCEL_POLL_MS: '100' };
  const receiver = await startReceiver(opts.hookFailRate, random);
  let rt = await spawnRuntime(opts.dataDir, env);
  const recoveredLines: string[] = [];
  const targets = [await publishOn(rt, 'slow', delayDef(600)), await publishOn(rt, 'quick', quickDef)];
  const accepted: { id: string; key: string }[] = [];
  const firstTerminal = new Map<string, string>();
  let cutOff = 0;
  let kills = 0;
  const restartDelaysMs: number[] = [];

  const statusOf = (url: string, id: string, key: string): Promise<Reply> =>
    request(`${url}/v1/deployments/executions/${id}/status/`, 'GET', undefined, { 'x-api-key': key });
  const observe = (id: string, status: unknown) => {
    if (isTerminalStatus(status) && !firstTerminal.has(id)) firstTerminal.set(id, String(status));
  };

  try {
    for (let round = 0; round < opts.rounds; round += 1) {
      const url = rt.url;
      let alive = true;
      const submitter = async () => {
        for (let i = 0; (opts.continuous || i < opts.perRound / 4) && alive; i += 1) {
          const t = targets[Math.floor(random() * targets.length)] ?? targets[0];
          if (!t) return;
          try {
            const r = await request<Record<string, unknown>>(
              `${url}/v1/deployments/${t.dep}/executions/`,
              'POST',
              { callback: receiver.url },
              { 'x-api-key': t.key },
            );
            if (r.status === 202) accepted.push({ id: String(r.body.execution_id), key: t.key });
            else throw new Error(`execute answered ${r.status}: ${r.text}`);
          } catch (e) {
            if (alive) throw e;
            cutOff += 1;
          }
          await sleep(random() * 40);
        }
      };
      // Pollers watch statuses while the process lives, to catch a terminal status that changes later.
      const poller = async () => {
        while (alive) {
          for (const a of accepted.slice(-40)) {
            if (!alive) break;
            try {
              const r = await statusOf(url, a.id, a.key);
              if (r.status === 200) observe(a.id, r.body.status);
            } catch {
              break;
            }
          }
          await sleep(20);
        }
      };
      const work = Promise.all([submitter(), submitter(), submitter(), submitter(), poller()]);
      await sleep(100 + random() * opts.maxKillDelayMs);
      alive = false;
      if (opts.immediateRestart) {
        const killed = rt.child;
        const exited = new Promise((r) => killed.once('exit', r));
        killed.kill('SIGKILL');
        const at = Date.now();
        const next = spawnRuntime(opts.dataDir, env);
        restartDelaysMs.push(Date.now() - at);
        kills += 1;
        await Promise.all([work, exited]);
        rt = await next;
      } else {
        await rt.kill9();
        kills += 1;
        await work;
        rt = await spawnRuntime(opts.dataDir, env);
      }
      const line = /recovered\s+.*/.exec(rt.output())?.[0];
      if (line) recoveredLines.push(line);
    }

    receiver.failRate = 0;
    // Waits until every accepted execution is terminal, or until nothing has moved for
    // `stallMs` (an execution here takes well under a second; a stalled one is stuck).
    const final = new Map<string, string>();
    const deadline = Date.now() + (opts.timeoutMs ?? HANG_MS);
    let lastProgress = Date.now();
    while (final.size < accepted.length && Date.now() < deadline && Date.now() - lastProgress < (opts.stallMs ?? 30_000)) {
      for (const a of accepted) {
        if (final.has(a.id)) continue;
        const r = await statusOf(rt.url, a.id, a.key);
        if (r.status === 200) observe(a.id, r.body.status);
        if (r.status === 200 && isTerminalStatus(r.body.status)) {
          final.set(a.id, String(r.body.status));
          lastProgress = Date.now();
        }
      }
      await sleep(100);
    }
    const owed = new Set(accepted.filter((a) => final.has(a.id)).map((a) => a.id));
    await waitUntil(
      async () => new Set(receiver.delivered().map((h) => h.executionId)),
      (seen) => [...owed].every((id) => seen.has(id)),
      Math.max(1000, deadline - Date.now()),
      100,
    ).catch(() => undefined);
    await sleep(1000);
    const later = new Map<string, string>();
    let interrupted = 0;
    for (const a of accepted) {
      const r = await statusOf(rt.url, a.id, a.key);
      later.set(a.id, r.status === 200 ? String(r.body.status) : `http ${r.status}`);
      if (typeof r.body.error_message === 'string' && r.body.error_message.includes('interrupted')) interrupted += 1;
    }
    return { accepted, cutOff, kills, firstTerminal, final, later, receiver, interrupted, recoveredLines, restartDelaysMs };
  } finally {
    await rt.stop();
    await receiver.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Cancel racing completion over real HTTP

export interface CancelRaceOutcome {
  id: string;
  cancelStatus: number;
  /** The status the cancel answer reported (cancelled on 200, the finished one on 409). */
  cancelSaid: string;
  final: string;
  later: string;
  outputs: unknown;
}

export interface CancelRaceTarget {
  url: string;
  deploymentId: string;
  apiKey: string;
  callback?: string;
}

/**
 * `n` executions of a short pipeline, each cancelled after a random wait of up to twice the
 * median time an execution takes here (measured first): some before they start, some while they
 * run, some after they finished.
 */
export async function cancelRace(
  t: CancelRaceTarget,
  n: number,
  random: () => number = Math.random,
  concurrency = 10,
): Promise<{ outcomes: CancelRaceOutcome[]; maxWaitMs: number }> {
  const call = (method: string, path: string, body?: unknown) =>
    request<Record<string, unknown>>(`${t.url}${path}`, method, body, { 'x-api-key': t.apiKey });
  const submit = async (): Promise<string> => {
    const r = await call('POST', `/v1/deployments/${t.deploymentId}/executions/`, t.callback ? { callback: t.callback } : {});
    if (r.status !== 202) throw new Error(`execute answered ${r.status}: ${r.text}`);
    return String(r.body.execution_id);
  };
  const terminal = (id: string) =>
    waitUntil(
      () => call('GET', `/v1/deployments/executions/${id}/status/`),
      (s) => isTerminalStatus(s.body.status),
      HANG_MS,
      5,
    );

  // Measured at the same concurrency as the race itself, since that is what sets the pace.
  const took = await Promise.all(
    Array.from({ length: concurrency }, async () => {
      const began = Date.now();
      await terminal(await submit());
      return Date.now() - began;
    }),
  );
  const maxWaitMs = 2 * (took.sort((a, b) => a - b)[Math.floor(took.length / 2)] ?? 100);

  const one = async (): Promise<CancelRaceOutcome> => {
    const id = await submit();
    await sleep(random() * maxWaitMs);
    const c = await call('POST', `/v1/deployments/executions/${id}/cancel/`);
    const done = await terminal(id);
    return {
      id,
      cancelStatus: c.status,
      cancelSaid: String(c.body.status),
      final: String(done.body.status),
      later: '',
      outputs: undefined,
    };
  };
  const outcomes: CancelRaceOutcome[] = [];
  for (let i = 0; i < n; i += concurrency) {
    outcomes.push(...(await Promise.all(Array.from({ length: Math.min(concurrency, n - i) }, one))));
  }
  // Long enough for any run the cancel lost track of to finish and try to record itself.
  await sleep(600);
  for (const o of outcomes) {
    const res = await call('GET', `/v1/deployments/executions/${o.id}/result/`);
    o.later = String(res.body.status);
    o.outputs = res.body.response_data;
  }
  return { outcomes, maxWaitMs };
}

/** A pipeline whose one node waits `ms`: long enough to be caught mid-run. */
export const delayDef = (ms: number): PipelineDefinition => ({
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'x' },
    wait: { type: 'delay', inputs: ['name'], ms },
    out: { type: 'output', from: 'wait' },
  },
});

/** One http call to `url` (a test server that may hold its answer) whose `word` is the output. */
export const gatedDef = (url: string): PipelineDefinition => ({
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'x' },
    call: { type: 'http', url, inputs: ['name'], timeout_ms: 30_000 },
    word: { type: 'transform', inputs: ['call'], expression: 'call.word' },
    out: { type: 'output', from: 'word' },
  },
});

/** What the kill -9 rounds must never produce, and their figures (pushed through `fig`). */
export function judgeKillRounds(r: KillRoundsResult, fig: (label: string, value: number | string) => void) {
  const perExecution = hooksByExecution(r.receiver.hooks);
  const verdict = {
    lost: r.accepted.filter((a) => !/^(pending|running|completed|failed|cancelled)$/.test(r.later.get(a.id) ?? '')),
    stuck: r.accepted.filter((a) => !isTerminalStatus(r.later.get(a.id))),
    changed: r.accepted.filter(
      (a) =>
        r.final.has(a.id) &&
        (r.later.get(a.id) !== r.final.get(a.id) || (r.firstTerminal.has(a.id) && r.firstTerminal.get(a.id) !== r.later.get(a.id))),
    ),
    twoIds: r.accepted.filter((a) => (perExecution.get(a.id)?.ids.size ?? 0) > 1),
    undelivered: r.accepted.filter((a) => r.final.has(a.id) && (perExecution.get(a.id)?.delivered ?? 0) === 0),
    duplicates: r.accepted.reduce((n, a) => n + Math.max(0, (perExecution.get(a.id)?.delivered ?? 0) - 1), 0),
  };
  fig('kill -9: rounds (kills)', r.kills);
  fig('kill -9: executions accepted', r.accepted.length);
  fig('kill -9: submits cut off by a kill', r.cutOff);
  fig('kill -9: finished as interrupted', r.interrupted);
  fig('kill -9: lost (not found)', verdict.lost.length);
  fig('kill -9: stuck non-terminal after restart', verdict.stuck.length);
  fig('kill -9: terminal status changed', verdict.changed.length);
  fig('kill -9: callbacks under two ids', verdict.twoIds.length);
  fig('kill -9: callbacks owed, not delivered', verdict.undelivered.length);
  fig('kill -9: callbacks delivered twice (same id)', verdict.duplicates);
  return verdict;
}
