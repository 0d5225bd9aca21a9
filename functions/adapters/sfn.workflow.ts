import { StartExecutionCommand, StopExecutionCommand, type SFNClient } from '@aws-sdk/client-sfn';
import type { WorkflowPort } from '../core/ports';

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
 * Errors that mean "there is no such running execution to stop". An execution that already
 * finished answers ExecutionDoesNotExist or nothing at all; an Express state machine has no
 * StopExecution and its executions carry `express:` ARNs, so the derived `execution:` ARN is
 * unknown or refused. Either way nothing needs stopping: cancellation is enforced by the
 * conditional writes on the execution record in DynamoDB, which make every later task a
 * no-op, not by the state machine.
 */
const NOTHING_TO_STOP = new Set(['ExecutionDoesNotExist', 'InvalidArn', 'ValidationException']);

/** WorkflowPort on AWS Step Functions: one execution per pipegate execution, named by its id. */
export class SfnWorkflowPort implements WorkflowPort {
  private readonly executionArnPrefix: string;

  constructor(
    private readonly client: SFNClient,
    private readonly stateMachineArn: string,
  ) {
    this.executionArnPrefix = executionArnPrefix(stateMachineArn);
  }

  async start(name: string, input: Record<string, unknown>): Promise<'started' | 'already_exists'> {
    try {
      await this.client.send(new StartExecutionCommand({ stateMachineArn: this.stateMachineArn, name, input: JSON.stringify(input) }));
      return 'started';
    } catch (err) {
      // Standard workflows answer a repeat of a running name with the same input as a success,
      // and any other reuse within 90 days with ExecutionAlreadyExists.
      if (errorName(err) === 'ExecutionAlreadyExists') return 'already_exists';
      throw err;
    }
  }

  async stop(name: string, cause: string): Promise<void> {
    try {
      await this.client.send(
        new StopExecutionCommand({
          executionArn: `${this.executionArnPrefix}${name}`,
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
