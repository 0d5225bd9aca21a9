/**
 * Fault injection for the reliability suites: store, workflow, queue and HTTP faults through
 * `startRuntime({ wrapDeps })`, a callback receiver that can misbehave, the kill -9 and
 * cancel-race scenarios, and the figures table each suite prints.
 */
import asl from '../../lib/state-machine.asl.json';
import { LocalWorkflow } from '../../lib/local/workflow';
import type { Deps, DepsSource } from '../../functions/adapters/deps';
import type { QueueName, WorkflowPort } from '../../functions/core/ports';
import type { PipelineDefinition } from '../../functions/core/types';
import { createHandler as taskStart } from '../../functions/task-start/handler';
import { createHandler as taskRun } from '../../functions/task-run/handler';
import { createHandler as taskFail } from '../../functions/task-fail/handler';
import { spawnRuntime, type RuntimeProcess } from './process';
import { request, sleep, waitUntil, type Reply } from './runtime';
import { reply, startTestServer } from './http-server';

import { isTerminalStatus, TERMINAL } from '../../functions/core/transitions';
export { isTerminalStatus, TERMINAL };

/** What a DynamoDB endpoint that went away looks like to the SDK's callers. */
export function unavailableError(): Error {
  return Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4567'), { code: 'ECONNREFUSED', errno: -111, syscall: 'connect' });
}

/** A plain failure of a step, as a bug or a lost connection mid-call would raise it. */
export function stepError(where: string): Error {
  return new Error(`injected fault in ${where}`);
}

type Method = (...args: unknown[]) => unknown;

export type StoreName = 'pipelines' | 'executions' | 'deployments';

export interface FaultRule {
  label: string;
  store: StoreName;
  /** A method name, or '*' for every method of the store. */
  method: string;
  /** Which calls qualify (default: all). */
  when?: (args: unknown[]) => boolean;
  /** How many qualifying calls fail (default: all of them). */
  times?: number;
  error?: () => Error;
  /** Fail after the call took effect: the write lands, the caller sees an error (a lost reply). */
  after?: boolean;
}

/**
 * Faults in the three stores: per-call rules, and an outage switch that fails every call of
 * every store the way an unreachable DynamoDB does.
 */
export class StoreFaults {
  private readonly rules: (FaultRule & { left: number })[] = [];
  /** Calls failed so far, by rule label ('outage' for the switch). */
  readonly injected = new Map<string, number>();
  down = false;

  add(rule: FaultRule): this {
    this.rules.push({ ...rule, left: rule.times ?? Infinity });
    return this;
  }

  clear(): void {
    this.rules.length = 0;
  }

  total(): number {
    return [...this.injected.values()].reduce((a, b) => a + b, 0);
  }

  count(label: string): number {
    return this.injected.get(label) ?? 0;
  }

  wrap(d: Deps): Deps {
    const wrapStore = <T extends object>(name: StoreName, store: T): T =>
      new Proxy(store, {
        get: (obj, prop, receiver) => {
          const value: unknown = Reflect.get(obj, prop, receiver);
          if (typeof value !== 'function') return value;
          const method = String(prop);
          return async (...args: unknown[]) => {
            if (this.down) throw this.hit('outage', unavailableError);
            const rule = this.rules.find((r) => r.store === name && (r.method === '*' || r.method === method) && r.left > 0 && (r.when?.(args) ?? true));
            if (!rule) return (value as Method).apply(obj, args);
            rule.left -= 1;
            const err = this.hit(rule.label, rule.error ?? (() => stepError(`${name}.${method}`)));
            if (rule.after) await (value as Method).apply(obj, args);
            throw err;
          };
        },
      });
    return {
      ...d,
      pipelines: wrapStore('pipelines', d.pipelines),
      executions: wrapStore('executions', d.executions),
      deployments: wrapStore('deployments', d.deployments),
    };
  }

  private hit(label: string, make: () => Error): Error {
    this.injected.set(label, this.count(label) + 1);
    return make();
  }
}

/** `executions.transition(id, to, …)` calls moving to `to`. */
export const movingTo =
  (to: string, id?: string) =>
  (args: unknown[]): boolean =>
    args[1] === to && (id === undefined || args[0] === id);

/** Calls whose first argument is this id. */
export const forId =
  (id: string) =>
  (args: unknown[]): boolean =>
    args[0] === id;

/**
 * The very state-machine document with its Retry waits cut to `intervalMs`, so a test sees
 * every retry and the final Catch in milliseconds. Install it with `wrapDeps` (it then
 * serves the runner and cancel; its tasks reach the dependencies through `deps`, the wrapped
 * ones) and stop it before the runtime.
 */
export function fastRetryWorkflow(deps: DepsSource, intervalMs = 20, onError?: (name: string, err: unknown) => void): LocalWorkflow {
  return new LocalWorkflow({
    definition: asl,
    tasks: {
      MarkRunning: taskStart(deps),
      RunNodes: taskRun(deps),
      MarkFailed: taskFail(deps),
    },
    retryIntervalOverrides: { MarkRunning: intervalMs, RunNodes: intervalMs, MarkFailed: intervalMs },
    ...(onError ? { onError } : {}),
  });
}

/** Workflow starts that fail for chosen executions (the runner's call), counted. */
export function failingStarts(workflow: WorkflowPort, fails: (name: string) => boolean): WorkflowPort & { injected: () => number; starts: Map<string, number> } {
  let injected = 0;
  const starts = new Map<string, number>();
  return {
    injected: () => injected,
    starts,
    async start(name, input) {
      if (fails(name)) {
        injected += 1;
        throw stepError('workflow.start');
      }
      const out = await workflow.start(name, input);
      if (out === 'started') starts.set(name, (starts.get(name) ?? 0) + 1);
      return out;
    },
    stop: (name, cause) => workflow.stop(name, cause),
  };
}

/** Sends every message `copies` times, as an at-least-once queue may deliver it. */
export function duplicatingQueue(d: Deps, copies: number, only: QueueName[] = ['executions', 'callbacks']): Deps & { duplicates: () => number } {
  let duplicates = 0;
  return {
    ...d,
    duplicates: () => duplicates,
    queue: {
      async send(queue, body, opts) {
        const n = only.includes(queue) ? copies : 1;
        duplicates += n - 1;
        for (let i = 0; i < n; i += 1) await d.queue.send(queue, body, opts);
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// A callback receiver

export interface Hook {
  webhookId: string;
  executionId: string;
  status: string;
  answered: number;
  body: string;
}

export interface Receiver {
  url: string;
  /** Every POST received, including those answered with an error. */
  hooks: Hook[];
  /** Share of requests answered 500 (0..1). */
  failRate: number;
  delivered(): Hook[];
  close(): Promise<void>;
}

export async function startReceiver(failRate = 0, random: () => number = Math.random): Promise<Receiver> {
  const hooks: Hook[] = [];
  const server = await startTestServer((req, res) => {
    const status = random() < r.failRate ? 500 : 204;
    let executionId = '';
    try {
      executionId = String((JSON.parse(req.body) as { execution_id?: unknown }).execution_id ?? '');
    } catch {
      executionId = '';
    }
    hooks.push({
      webhookId: String(req.headers['webhook-id'] ?? ''),
      executionId,
      status: String(req.headers['x-pipegate-status'] ?? ''),
      answered: status,
      body: req.body,
    });
    reply(res, status);
  });
  const r: Receiver = {
    url: `${server.origin}/hook`,
    hooks,
    failRate,
    delivered: () => hooks.filter((h) => h.answered < 300),
    close: () => server.close(),
  };
  return r;
}

/** Per execution: the distinct webhook ids it was POSTed under, and how many deliveries succeeded. */
export function hooksByExecution(hooks: Hook[]): Map<string, { ids: Set<string>; delivered: number; statuses: Set<string> }> {
  const out = new Map<string, { ids: Set<string>; delivered: number; statuses: Set<string> }>();
  for (const h of hooks) {
    const entry = out.get(h.executionId) ?? { ids: new Set(), delivered: 0, statuses: new Set() };
    entry.ids.add(h.webhookId);
    entry.statuses.add(h.status);
    if (h.answered < 300) entry.delivered += 1;
    out.set(h.executionId, entry);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Figures

export type Figures = [label: string, value: number | string][];

/** The compact table a suite prints at its end (and docs/reliability.md quotes). */
export function printFigures(title: string, rows: Figures): void {
  const width = Math.max(...rows.map(([label]) => label.length));
  const lines = rows.map(([label, value]) => `  ${label.padEnd(width)}  ${String(value).padStart(8)}`);
  console.log(`${title}\n${'-'.repeat(width + 12)}\n${lines.join('\n')}`);
}

// ---------------------------------------------------------------------------------------------
// kill -9 rounds against a real `npm start` process

export interface KillRoundsOptions {
  dataDir: string;
  rounds: number;
  /** Executions submitted per round (some are cut off by the kill and never accepted). */
  perRound: number;
  /** Longest random wait before the kill, ms. */
  maxKillDelayMs: number;
  /** Share of callback attempts the receiver answers 500, so retries are pending at a kill. */
  hookFailRate: number;
  random?: () => number;
  timeoutMs?: number;
  /** Give up waiting once no execution has turned terminal for this long (default 8000). */
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
  const owner = (m: string, p: string, b?: unknown) => request<Record<string, unknown>>(`${rt.url}${p}`, m, b, { authorization: `Bearer ${rt.ownerToken}` });
  await owner('PUT', `/v1/pipelines/${id}`, def);
  const run = await owner('POST', `/v1/pipelines/${id}/runs`, {});
  await waitUntil(() => owner('GET', `/v1/pipelines/${id}/runs/${String(run.body.run_id)}`), (r) => r.body.status === 'completed', 30_000);
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
        for (let i = 0; i < opts.perRound / 4 && alive; i += 1) {
          const t = targets[Math.floor(random() * targets.length)] ?? targets[0];
          if (!t) return;
          try {
            const r = await request<Record<string, unknown>>(`${url}/v1/deployments/${t.dep}/executions/`, 'POST', { callback: receiver.url }, { 'x-api-key': t.key });
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
    const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
    let lastProgress = Date.now();
    while (final.size < accepted.length && Date.now() < deadline && Date.now() - lastProgress < (opts.stallMs ?? 8000)) {
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
  const call = (method: string, path: string, body?: unknown) => request<Record<string, unknown>>(`${t.url}${path}`, method, body, { 'x-api-key': t.apiKey });
  const submit = async (): Promise<string> => {
    const r = await call('POST', `/v1/deployments/${t.deploymentId}/executions/`, t.callback ? { callback: t.callback } : {});
    if (r.status !== 202) throw new Error(`execute answered ${r.status}: ${r.text}`);
    return String(r.body.execution_id);
  };
  const terminal = (id: string) =>
    waitUntil(() => call('GET', `/v1/deployments/executions/${id}/status/`), (s) => isTerminalStatus(s.body.status), 20_000, 5);

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
    return { id, cancelStatus: c.status, cancelSaid: String(c.body.status), final: String(done.body.status), later: '', outputs: undefined };
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

// ---------------------------------------------------------------------------------------------
// Counting what the store accepted

/** Per execution, the conditional status writes that won, by target status. */
export type TransitionCounts = Map<string, Map<string, number>>;

/** Counts every winning `executions.transition` (the only way a status ever changes). */
export function countingTransitions(d: Deps, counts: TransitionCounts): Deps {
  const store = d.executions;
  const executions = new Proxy(store, {
    get(obj, prop, receiver) {
      const value: unknown = Reflect.get(obj, prop, receiver);
      if (prop !== 'transition' || typeof value !== 'function') return typeof value === 'function' ? (value as Method).bind(obj) : value;
      return async (...args: Parameters<typeof store.transition>) => {
        const out = await store.transition(...args);
        if (out.ok) {
          const [id, to] = args;
          const byStatus = counts.get(id) ?? new Map<string, number>();
          byStatus.set(to, (byStatus.get(to) ?? 0) + 1);
          counts.set(id, byStatus);
        }
        return out;
      };
    },
  });
  return { ...d, executions };
}

/** How many winning writes moved this execution to a terminal status. */
export const terminalWrites = (counts: TransitionCounts, id: string): number =>
  TERMINAL.reduce((n, s) => n + (counts.get(id)?.get(s) ?? 0), 0);

/** A small seeded generator (mulberry32), so a failing random schedule can be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** PIPEGATE_TEST_SEED replays a run; otherwise a fresh seed, printed with the figures. */
export const testSeed = (): number => Number(process.env.PIPEGATE_TEST_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** A pipeline whose one node waits `ms`: long enough to be caught mid-run. */
export const delayDef = (ms: number): PipelineDefinition => ({
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'x' },
    wait: { type: 'delay', inputs: ['name'], ms },
    out: { type: 'output', from: 'wait' },
  },
});

/** What the kill -9 rounds must never produce, and their figures (pushed through `fig`). */
export function judgeKillRounds(r: KillRoundsResult, fig: (label: string, value: number | string) => void) {
  const perExecution = hooksByExecution(r.receiver.hooks);
  const verdict = {
    lost: r.accepted.filter((a) => !/^(pending|running|completed|failed|cancelled)$/.test(r.later.get(a.id) ?? '')),
    stuck: r.accepted.filter((a) => !isTerminalStatus(r.later.get(a.id))),
    changed: r.accepted.filter(
      (a) => r.final.has(a.id) && (r.later.get(a.id) !== r.final.get(a.id) || (r.firstTerminal.has(a.id) && r.firstTerminal.get(a.id) !== r.later.get(a.id))),
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
