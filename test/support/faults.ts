/**
 * Fault injection for the reliability suites: store, workflow and queue faults through
 * `startRuntime({ wrapDeps })`, and counting the status writes the store accepted.
 */
import asl from '../../lib/state-machine.asl.json';
import { LocalWorkflow, LocalWorkflows, type MachineType } from '../../lib/local/workflow';
import type { Deps, DepsSource } from '../../functions/adapters/deps';
import type { QueueName, WorkflowPort } from '../../functions/core/ports';
import { createHandler as taskStart } from '../../functions/task-start/handler';
import { createHandler as taskRun } from '../../functions/task-run/handler';
import { createHandler as taskFail } from '../../functions/task-fail/handler';
import { TERMINAL } from '../../functions/core/transitions';

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
            const rule = this.rules.find(
              (r) => r.store === name && (r.method === '*' || r.method === method) && r.left > 0 && (r.when?.(args) ?? true),
            );
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
      // Every store of the execution items is the `executions` store here, as one table item is.
      executions: wrapStore('executions', d.executions),
      deliveries: wrapStore('executions', d.deliveries),
      sweep: wrapStore('executions', d.sweep),
      executionLists: wrapStore('executions', d.executionLists),
      usage: wrapStore('executions', d.usage),
      idempotency: wrapStore('executions', d.idempotency),
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
export function fastRetryWorkflow(deps: DepsSource, intervalMs = 20, onError?: (name: string, err: unknown) => void): LocalWorkflows {
  const machine = (type: MachineType) =>
    new LocalWorkflow({
      definition: asl,
      type,
      tasks: {
        MarkRunning: taskStart(deps),
        RunNodes: taskRun(deps),
        MarkFailed: taskFail(deps),
      },
      retryIntervalOverrides: { MarkRunning: intervalMs, RunNodes: intervalMs, MarkFailed: intervalMs },
      ...(onError ? { onError } : {}),
    });
  return new LocalWorkflows({ express: machine('EXPRESS'), standard: machine('STANDARD') });
}

/** Workflow starts that fail for chosen executions (the runner's call), counted. */
export function failingStarts(
  workflow: WorkflowPort,
  fails: (name: string) => boolean,
): WorkflowPort & { injected: () => number; starts: Map<string, number> } {
  let injected = 0;
  const starts = new Map<string, number>();
  return {
    injected: () => injected,
    starts,
    async start(type, name, input) {
      if (fails(name)) {
        injected += 1;
        throw stepError('workflow.start');
      }
      const out = await workflow.start(type, name, input);
      if (out === 'started') starts.set(name, (starts.get(name) ?? 0) + 1);
      return out;
    },
    stop: (type, name, cause) => workflow.stop(type, name, cause),
  };
}

/** Sends every message `copies` times, as an at-least-once queue may deliver it. */
export function duplicatingQueue(
  d: Deps,
  copies: number,
  only: QueueName[] = ['executions', 'callbacks'],
): Deps & { duplicates: () => number } {
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
