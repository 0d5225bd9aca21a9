/**
 * Which workflow runs an execution, by name, and stopping the ones that may still run it. Kept
 * apart from the runner so the functions that stop workflows (the cancels) carry nothing more.
 */
import type { Deps } from '../adapters/deps';
import { errorFields } from '../adapters/logger';
import type { Execution, WorkflowType } from '../core/types';

/** Absent from a record or message written before there were two machines: Standard runs anything. */
export const workflowOf = (x: { workflow?: WorkflowType | null }): WorkflowType => x.workflow ?? 'standard';

/**
 * The workflow's name: the execution id, or for a sweeper's re-queue the id and that re-queue's
 * time. A Standard state machine answers a closed execution's name with ExecutionAlreadyExists
 * for 90 days, so a pending execution whose first workflow ended without moving it on would
 * otherwise never start again. A duplicate of the same message keeps the same name, so Standard
 * still starts it once; MarkRunning's conditional write lets only one workflow proceed anyway.
 */
export const workflowName = (executionId: string, requeued?: number, gen = 0): string =>
  `${executionId}${gen > 0 ? `-g${gen}` : ''}${requeued === undefined ? '' : `-r${requeued}`}`;

/**
 * The names of the Standard workflows that may be running an execution: the one that moved it
 * to running (its `run_by`, the state machine's execution ARN, whose last part is the name) and
 * the one its generation starts by name (a woken execution's). Express executions cannot be
 * stopped; none is named for them.
 */
export function runningWorkflowNames(e: Pick<Execution, 'execution_id' | 'gen' | 'run_by' | 'workflow'>): string[] {
  if (workflowOf(e) !== 'standard') return [];
  const names = new Set<string>([workflowName(e.execution_id, undefined, e.gen ?? 0)]);
  const byArn = /^arn:[^:]+:states:[^:]*:[^:]*:execution:[^:]+:([^:]+)$/.exec(e.run_by ?? '');
  if (byArn?.[1]) names.add(byArn[1]);
  return [...names];
}

/**
 * Stops the Standard workflows that may be running an execution that has ended or moved on (a
 * cancel, a wake), so they bill no further transition. Best effort: the record's conditional
 * writes already make whatever they would still do a no-op (their next step stands down), and
 * on Express that is all there is.
 */
export async function stopWorkflows(
  d: Deps,
  e: Pick<Execution, 'execution_id' | 'gen' | 'run_by' | 'workflow'>,
  cause: string,
): Promise<void> {
  for (const name of runningWorkflowNames(e)) {
    await d.workflow
      .stop('standard', name, cause)
      .catch((err: unknown) =>
        d.log.warn('could not stop a workflow', { execution_id: e.execution_id, workflow: name, ...errorFields(err) }),
      );
  }
}
