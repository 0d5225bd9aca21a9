import './polyfills';
import { randomUUID } from 'node:crypto';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import type { WorkflowPort } from '../../functions/core/ports';
import type { WorkflowType } from '../../functions/core/types';
import { isPlainObject } from '../../functions/core/values';

/** A Task state's work: receives the state's resolved Parameters, as the Lambda does on AWS. */
export type WorkflowTask = (input: unknown) => Promise<unknown>;

export interface LocalWorkflowOptions {
  /** The ASL document, as deployed (its `${...}` Resource placeholders stay unresolved). */
  definition: object;
  /** Task state name → function, for every Task state of the document. */
  tasks: Record<string, WorkflowTask>;
  /** An execution ended failed or timed out (not when it was stopped). */
  onError?: (name: string, err: unknown) => void;
  /**
   * Milliseconds to wait between retries, per state, instead of IntervalSeconds × BackoffRate.
   * For tests that exercise a Retry without waiting for it.
   */
  retryIntervalOverrides?: Record<string, number | number[]>;
  /**
   * The state machine's type, with the semantics that matter here. STANDARD (the default): a
   * start is idempotent by name (the same name and input while the execution runs is the same
   * start; any other reuse of a name within 90 days is refused), and StopExecution stops it.
   * EXPRESS: every start is a new execution, the same name or not (at-least-once: duplicates
   * are the store's to make harmless), nothing stops one, and each ends at five minutes
   * wherever it is, as timed out.
   */
  type?: MachineType;
  /** The state machine's ARN: executions' ids (`$$.Execution.Id`) are built from it, as Step Functions builds them. */
  arn?: string;
  /** An Express execution's limit (5 minutes); tests shorten it. */
  expressLimitMs?: number;
}

export type MachineType = 'EXPRESS' | 'STANDARD';

/** Step Functions Express: an execution ends at five minutes. */
export const EXPRESS_EXECUTION_LIMIT_MS = 300_000;
/** Step Functions Standard remembers an execution's name this long after it closed. */
export const STANDARD_NAME_MEMORY_MS = 90 * 24 * 3600 * 1000;

type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

interface Run {
  name: string;
  aborted: boolean;
  /** An Express execution that reached its five minutes. */
  timedOut: boolean;
  abort: () => void;
  /** Settles once the interpreter has finished and no task function of this run is still going. */
  done: Promise<void>;
  /** Its task functions under way: a step running (none while it waits in a Wait state). */
  inFlight: Set<Promise<unknown>>;
}

/** Step Functions' own limits, so a start that AWS would refuse is refused here too. */
const MAX_INPUT_BYTES = 256 * 1024;
// Execution names: 1-80 characters, none of: white space, < > { } [ ] ? * " # % \ ^ | ~ ` $ & , ; : /
// and no control characters.
// eslint-disable-next-line no-control-regex
const NAME_PATTERN = /^[^\s<>{}[\]?*"#%\\^|~`$&,;:/\u0000-\u001f\u007f-\u009f]{1,80}$/;

/** Private Parameters key that carries a TimeoutSecondsPath value to the interpreter. */
const TIMEOUT_KEY = '__pipegate_timeout_seconds';

class WorkflowStoppedError extends Error {
  // Neither retried nor caught: the interpreter stops at the end of the current state anyway.
  readonly isRetryable = false;
  readonly isCatchable = false;
  constructor() {
    super('The execution was stopped');
    this.name = 'States.Aborted';
  }
}

/**
 * A task function failed the way a Lambda function fails on AWS: the state's error is the
 * error type and its cause the JSON payload the Lambda service reports
 * (`{"errorType","errorMessage","trace"}`), so a Catch hands MarkFailed the same `error` object
 * it gets in the cloud.
 */
class LambdaFunctionError extends Error {
  constructor(err: unknown) {
    const errorType = err instanceof Error ? err.name : 'Error';
    const errorMessage = err instanceof Error ? err.message : String(err);
    const trace = err instanceof Error && typeof err.stack === 'string' ? err.stack.split('\n') : [];
    super(JSON.stringify({ errorType, errorMessage, trace }));
    this.name = errorType;
  }
}

class ExecutionTimedOutError extends Error {
  constructor(limitMs: number) {
    super(`The Express execution reached its ${limitMs / 1000} s limit and timed out`);
    this.name = 'States.Timeout';
  }
}

/**
 * One pipegate state machine on one machine: the very ASL document CDK deploys, run by
 * aws-local-stepfunctions, with each Task state mapped to the function its Lambda would run, and
 * its type's rules on names, stops and time (see `type`). The names a Standard machine has seen
 * are kept in memory: a restart forgets them, where AWS keeps them 90 days.
 */
export class LocalWorkflow {
  readonly type: MachineType;
  readonly arn: string;
  private readonly machine: StateMachine;
  private readonly tasks: Record<string, WorkflowTask>;
  private readonly onError: ((name: string, err: unknown) => void) | undefined;
  private readonly retryIntervalOverrides: Record<string, number | number[]> | undefined;
  private readonly expressLimitMs: number;
  /** By name (Standard) or by name and run (Express, whose names repeat). */
  private readonly runs = new Map<string, Run>();
  /** Standard: every name started, with its input and when, oldest first. */
  private readonly names = new Map<string, { input: string; at: number }>();

  constructor(opts: LocalWorkflowOptions) {
    const definition = prepareDefinition(opts.definition);
    const taskStates = taskStateNames(definition);
    const missing = taskStates.filter((s) => !Object.hasOwn(opts.tasks, s));
    const unknown = Object.keys(opts.tasks).filter((t) => !taskStates.includes(t));
    if (missing.length > 0 || unknown.length > 0) {
      throw new Error(
        `Workflow tasks do not match the definition's Task states (missing: ${missing.join(', ') || 'none'}; unknown: ${unknown.join(', ') || 'none'})`,
      );
    }
    // Default validation on purpose: with `checkArn: false` the validator's Resource schema
    // matches a `${...}` placeholder twice (as an ARN and as a substitution) and rejects it,
    // while with ARN checks on the placeholder alternative alone accepts it.
    this.machine = new StateMachine(definition);
    this.tasks = { ...opts.tasks };
    this.onError = opts.onError;
    this.retryIntervalOverrides = opts.retryIntervalOverrides;
    this.type = opts.type ?? 'STANDARD';
    this.arn = opts.arn ?? `arn:aws:states:local:000000000000:stateMachine:pipegate-${this.type.toLowerCase()}`;
    this.expressLimitMs = opts.expressLimitMs ?? EXPRESS_EXECUTION_LIMIT_MS;
  }

  /**
   * Starts an execution. Standard: `already_exists` for a name it has seen (within 90 days)
   * unless that execution is still running with the same input, which is the same start
   * (`started`, as StartExecution answers it). Express: always a new execution.
   */
  async start(name: string, input: Record<string, unknown>): Promise<'started' | 'already_exists'> {
    if (!NAME_PATTERN.test(name)) {
      throw new Error(`Invalid execution name: ${JSON.stringify(name)}`);
    }
    const serialized = JSON.stringify(input);
    if (Buffer.byteLength(serialized, 'utf8') > MAX_INPUT_BYTES) {
      throw new Error('Execution input is larger than 256 KiB');
    }
    const runId = randomUUID();
    if (this.type === 'STANDARD') {
      this.forgetOldNames(Date.now());
      const seen = this.names.get(name);
      if (seen) return seen.input === serialized && this.runs.has(name) ? 'started' : 'already_exists';
      this.names.set(name, { input: serialized, at: Date.now() });
    }
    const key = this.type === 'STANDARD' ? name : `${name}:${runId}`;

    const inFlight = new Set<Promise<unknown>>();
    const run: Run = { name, aborted: false, timedOut: false, abort: () => undefined, done: Promise.resolve(), inFlight };
    const handlers: Record<string, (input: JsonValue) => Promise<JsonValue>> = {};
    for (const [state, task] of Object.entries(this.tasks)) {
      handlers[state] = (taskInput) => {
        const call = this.invoke(run, task, taskInput);
        inFlight.add(call);
        // The interpreter can drop a task's promise (a failing TimeoutSecondsPath is evaluated
        // after the call began), so a rejection must never go unobserved here.
        call.then(
          () => inFlight.delete(call),
          () => inFlight.delete(call),
        );
        return call;
      };
    }

    const execution = this.machine.run(JSON.parse(serialized) as JsonValue, {
      overrides: {
        taskResourceLocalHandlers: handlers,
        ...(this.retryIntervalOverrides ? { retryIntervalOverrides: this.retryIntervalOverrides } : {}),
      },
      noThrowOnAbort: true,
      // Step Functions gives each execution an id of its own; MarkRunning reads it.
      context: { Execution: { Id: this.executionId(name, runId), Name: name } },
    });
    run.abort = () => {
      run.aborted = true;
      execution.abort();
    };
    // Express: five minutes, wherever the execution is (a task already invoked runs on, as a Lambda does).
    const limit =
      this.type === 'EXPRESS'
        ? setTimeout(() => {
            run.timedOut = true;
            run.abort();
          }, this.expressLimitMs)
        : undefined;
    limit?.unref();
    run.done = execution.result
      .then(
        () => {
          if (run.timedOut) this.onError?.(name, new ExecutionTimedOutError(this.expressLimitMs));
        },
        (err: unknown) => {
          if (run.timedOut) this.onError?.(name, new ExecutionTimedOutError(this.expressLimitMs));
          else if (!run.aborted) this.onError?.(name, err);
        },
      )
      .then(async () => {
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
      })
      .finally(() => {
        clearTimeout(limit);
        this.runs.delete(key);
      });
    this.runs.set(key, run);
    return 'started';
  }

  /** `$$.Execution.Id` as Step Functions forms it: `…:execution:<machine>:<name>`, or for Express `…:express:<machine>:<name>:<run>`. */
  executionId(name: string, runId: string): string {
    const [arn, partition, service, region, account, , machine] = this.arn.split(':');
    const prefix = `${arn}:${partition}:${service}:${region}:${account}`;
    return this.type === 'STANDARD' ? `${prefix}:execution:${machine}:${name}` : `${prefix}:express:${machine}:${name}:${runId}`;
  }

  /** Names closed more than 90 days ago may be used again (Map order is start order). */
  private forgetOldNames(now: number): void {
    for (const [name, seen] of this.names) {
      if (now - seen.at < STANDARD_NAME_MEMORY_MS) break;
      if (!this.runs.has(name)) this.names.delete(name);
    }
  }

  /**
   * Standard: aborts the execution between states (or in its Wait); a task function already
   * running finishes on its own, as a Lambda invocation does after StopExecution. Express
   * executions cannot be stopped: nothing happens.
   */
  async stop(name: string, _cause?: string): Promise<void> {
    if (this.type === 'EXPRESS') return;
    this.runs.get(name)?.abort();
  }

  /** Names of the executions still going, including stopped ones whose last task call has not returned. */
  running(): string[] {
    return [...this.runs.values()].map((r) => r.name);
  }

  /** Names of the executions with a task function under way (a step running, not a Wait). */
  busy(): string[] {
    return [...this.runs.values()].filter((r) => r.inFlight.size > 0).map((r) => r.name);
  }

  /** Resolves once no execution runs and no task function is still going. */
  async idle(): Promise<void> {
    while (this.runs.size > 0) {
      await Promise.allSettled([...this.runs.values()].map((r) => r.done));
    }
  }

  /** Resolves once idle, or after `ms` with executions still going. */
  async idleWithin(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
    await Promise.race([this.idle(), limit]).finally(() => clearTimeout(timer));
  }

  /**
   * Aborts every execution and waits for their task calls to return, or at most `graceMs`
   * (after which the calls still going are left to the process's exit).
   */
  async stopAll(graceMs = Infinity): Promise<void> {
    for (const run of this.runs.values()) run.abort();
    if (graceMs === Infinity) return this.idle();
    await this.idleWithin(graceMs);
  }

  private async invoke(run: Run, task: WorkflowTask, input: JsonValue): Promise<JsonValue> {
    // A Retry sleep ends early on abort and the interpreter then calls the task again.
    if (run.aborted) throw new WorkflowStoppedError();
    let payload: unknown = input;
    if (isPlainObject(input) && Object.hasOwn(input, TIMEOUT_KEY)) {
      const { [TIMEOUT_KEY]: _timeout, ...rest } = input;
      payload = rest;
    }
    let result: unknown;
    try {
      result = await task(payload);
    } catch (err) {
      throw new LambdaFunctionError(err);
    }
    // The Lambda service serialises the return value; undefined becomes null.
    return result === undefined ? null : (JSON.parse(JSON.stringify(result)) as JsonValue);
  }
}

/**
 * aws-local-stepfunctions resolves TimeoutSecondsPath against the Task's Parameters output,
 * whereas Step Functions resolves it against the state input. Carry the path's value through
 * Parameters under a private key (stripped before the task function sees it) so the same
 * document times out the same way in both places.
 */
function prepareDefinition(source: object): StateMachineDefinition {
  const copy = JSON.parse(JSON.stringify(source)) as unknown;
  if (!isPlainObject(copy) || !isPlainObject(copy.States) || typeof copy.StartAt !== 'string') {
    throw new Error('The workflow definition needs StartAt and States');
  }
  forEachState(copy, (state) => {
    if (state.Type !== 'Task' || typeof state.TimeoutSecondsPath !== 'string') return;
    if (state.Parameters === undefined) return;
    if (!isPlainObject(state.Parameters)) {
      throw new Error('A Task with TimeoutSecondsPath needs object Parameters here');
    }
    state.Parameters[`${TIMEOUT_KEY}.$`] = state.TimeoutSecondsPath;
    state.TimeoutSecondsPath = `$.${TIMEOUT_KEY}`;
  });
  return copy as unknown as StateMachineDefinition;
}

function taskStateNames(definition: StateMachineDefinition): string[] {
  const names: string[] = [];
  forEachState(definition as unknown as Record<string, unknown>, (state, name) => {
    if (state.Type === 'Task') names.push(name);
  });
  return names;
}

/** Every state of a definition, those inside Parallel branches and Map iterators included. */
export function forEachState(machine: Record<string, unknown>, visit: (state: Record<string, unknown>, name: string) => void): void {
  if (!isPlainObject(machine.States)) return;
  for (const [name, state] of Object.entries(machine.States)) {
    if (!isPlainObject(state)) continue;
    visit(state, name);
    const nested = [...(Array.isArray(state.Branches) ? state.Branches : []), state.Iterator, state.ItemProcessor];
    for (const sub of nested) if (isPlainObject(sub)) forEachState(sub, visit);
  }
}

/**
 * The two state machines of one service (the same document, Express and Standard) as the
 * functions' WorkflowPort: each execution on the machine its message names.
 */
export class LocalWorkflows implements WorkflowPort {
  constructor(readonly machines: Readonly<Record<WorkflowType, LocalWorkflow>>) {}

  start(workflow: WorkflowType, name: string, input: Record<string, unknown>): Promise<'started' | 'already_exists'> {
    return this.machines[workflow].start(name, input);
  }

  stop(workflow: WorkflowType, name: string, cause: string): Promise<void> {
    return this.machines[workflow].stop(name, cause);
  }

  private get both(): LocalWorkflow[] {
    return [this.machines.express, this.machines.standard];
  }

  /** Names of the executions still going on either machine. */
  running(): string[] {
    return this.both.flatMap((m) => m.running());
  }

  busy(): string[] {
    return this.both.flatMap((m) => m.busy());
  }

  async idle(): Promise<void> {
    await Promise.all(this.both.map((m) => m.idle()));
  }

  async idleWithin(ms: number): Promise<void> {
    await Promise.all(this.both.map((m) => m.idleWithin(ms)));
  }

  async stopAll(graceMs = Infinity): Promise<void> {
    await Promise.all(this.both.map((m) => m.stopAll(graceMs)));
  }
}
