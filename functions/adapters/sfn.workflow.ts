import { StartExecutionCommand, StopExecutionCommand, type SFNClient } from '@aws-sdk/client-sfn';
import type { WorkflowPort } from '../core/ports';
import type { WorkflowType } from '../core/types';

/**
 * Attempts the runner's client makes at a call before the message goes back to the queue.
 * StartExecution is throttled per account (a token bucket, ThrottlingException); the SDK backs
 * off from throttles with full jitter on a base of 1 s, doubling, so 5 attempts wait up to 15 s
 * in all (7.5 s on average, inside the runner's 30 s time-out) before the message goes back to
 * the queue for its visibility time-out (3 minutes). Either way the message is kept: a
 * throttled start is late, never lost.
 */
export const SFN_MAX_ATTEMPTS = 5;

/** StopExecution's `cause` is at most 32,768 characters. */
const MAX_CAUSE_LENGTH = 32768;

/**
 * Errors that mean "there is no such running execution to stop": one that already finished
 * answers ExecutionDoesNotExist or nothing at all. Either way nothing needs stopping:
 * cancellation is enforced by the conditional writes on the execution record in DynamoDB,
 * which make every later task a no-op, not by the state machine.
 */
const NOTHING_TO_STOP = new Set(['ExecutionDoesNotExist', 'InvalidArn', 'ValidationException']);

/** The two state machines' ARNs (PIPEGATE_EXPRESS_STATE_MACHINE_ARN, PIPEGATE_STANDARD_STATE_MACHINE_ARN). */
export type MachineArns = Readonly<Record<WorkflowType, string>>;

/**
 * WorkflowPort on AWS Step Functions: one execution per pipegate execution, named by its id, on
 * the Express or the Standard state machine. Only Standard executions can be stopped: an
 * Express one has no StopExecution (its next step stands down instead), so nothing is called.
 */
export class SfnWorkflowPort implements WorkflowPort {
  constructor(
    private readonly client: SFNClient,
    private readonly machines: MachineArns,
  ) {}

  private machine(workflow: WorkflowType): string {
    const arn = this.machines[workflow];
    if (!arn) throw new Error(`this function was not given the ${workflow} state machine's ARN`);
    return arn;
  }

  async start(workflow: WorkflowType, name: string, input: Record<string, unknown>): Promise<'started' | 'already_exists'> {
    try {
      await this.client.send(new StartExecutionCommand({ stateMachineArn: this.machine(workflow), name, input: JSON.stringify(input) }));
      return 'started';
    } catch (err) {
      // Standard workflows answer a repeat of a running name with the same input as a success,
      // and any other reuse within 90 days with ExecutionAlreadyExists (Express never does).
      if (errorName(err) === 'ExecutionAlreadyExists') return 'already_exists';
      throw err;
    }
  }

  async stop(workflow: WorkflowType, name: string, cause: string): Promise<void> {
    if (workflow !== 'standard') return;
    try {
      await this.client.send(
        new StopExecutionCommand({
          executionArn: `${executionArnPrefix(this.machine(workflow))}${name}`,
          cause: cause.slice(0, MAX_CAUSE_LENGTH),
        }),
      );
    } catch (err) {
      if (NOTHING_TO_STOP.has(errorName(err))) return;
      throw err;
    }
  }
}

/** `arn:<partition>:states:<region>:<account>:stateMachine:<name>` → `...:execution:<name>:`. */
export function executionArnPrefix(stateMachineArn: string): string {
  const parts = stateMachineArn.split(':');
  const [arn, partition, service, region, account, kind, machine] = parts;
  if (
    parts.length !== 7 ||
    arn !== 'arn' ||
    !partition ||
    service !== 'states' ||
    !region ||
    !account ||
    kind !== 'stateMachine' ||
    !machine
  ) {
    throw new Error(`Not a state machine ARN: ${stateMachineArn}`);
  }
  return `arn:${partition}:states:${region}:${account}:execution:${machine}:`;
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : '';
}
