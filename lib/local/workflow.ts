import './polyfills';
import { randomUUID } from 'node:crypto';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import type { WorkflowPort } from '../../functions/core/ports';
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
}

type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

interface Run {
  aborted: boolean;
  abort: () => void;
  /** Settles once the interpreter has finished and no task function of this run is still going. */
  done: Promise<void>;
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

/**
 * The pipegate state machine on one machine: the very ASL document CDK deploys, run by
 * aws-local-stepfunctions, with each Task state mapped to the function its Lambda would run.
 * Execution names are unique among running executions only; AWS also refuses names reused
 * within 90 days, which the store's conditional writes make harmless anyway.
 */
export class LocalWorkflow implements WorkflowPort {
  private readonly machine: StateMachine;
  private readonly tasks: Record<string, WorkflowTask>;
  private readonly onError: ((name: string, err: unknown) => void) | undefined;
  private readonly retryIntervalOverrides: Record<string, number | number[]> | undefined;
  private readonly runs = new Map<string, Run>();

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
  }

  async start(name: string, input: Record<string, unknown>): Promise<'started' | 'already_exists'> {
    if (!NAME_PATTERN.test(name)) {
      throw new Error(`Invalid execution name: ${JSON.stringify(name)}`);
    }
    const serialized = JSON.stringify(input);
    if (Buffer.byteLength(serialized, 'utf8') > MAX_INPUT_BYTES) {
      throw new Error('Execution input is larger than 256 KiB');
    }
    if (this.runs.has(name)) return 'already_exists';

    const inFlight = new Set<Promise<unknown>>();
    const run: Run = { aborted: false, abort: () => undefined, done: Promise.resolve() };
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
      // Step Functions gives each execution an id of its own (Express ones too); MarkRunning reads it.
      context: { Execution: { Id: `arn:aws:states:local:000000000000:execution:pipegate:${name}:${randomUUID()}`, Name: name } },
    });
    run.abort = () => {
      run.aborted = true;
      execution.abort();
    };
    run.done = execution.result
      .then(
        () => undefined,
        (err: unknown) => {
          if (!run.aborted) this.onError?.(name, err);
        },
      )
      .then(async () => {
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
      })
      .finally(() => {
        this.runs.delete(name);
      });
    this.runs.set(name, run);
    return 'started';
  }

  /**
   * Aborts the execution between states; a task function already running finishes on its own,
   * as a Lambda invocation does after StopExecution.
   */
  async stop(name: string, _cause?: string): Promise<void> {
    this.runs.get(name)?.abort();
  }

  /** Executions still going, including stopped ones whose last task call has not returned. */
  running(): string[] {
    return [...this.runs.keys()];
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
