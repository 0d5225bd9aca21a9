/** The runner: one executions-queue message → one state-machine execution. */
import { runNodesTimeoutSeconds } from '../../lib/workflow-budget';
import type { Deps } from '../adapters/deps';

export { ExecutionMessage } from './messages';

/** Seconds the state machine allows the first step: a step's longest, within the default execution time-out. */
export const workflowTimeoutSeconds = (d: Deps): number => runNodesTimeoutSeconds(d.config.executionTimeoutMs);

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
 * One executions-queue message → one state-machine execution. No read first: a duplicate
 * message, or one for an execution cancelled meanwhile, starts a workflow whose MarkRunning
 * finds nothing pending and ends it (see taskStart).
 */
export async function startWorkflow(d: Deps, executionId: string, requeued?: number, gen = 0): Promise<'started' | 'already_exists'> {
  return d.workflow.start(workflowName(executionId, requeued, gen), {
    execution_id: executionId,
    gen,
    run: { next: 'step', step_timeout: workflowTimeoutSeconds(d) },
  });
}
