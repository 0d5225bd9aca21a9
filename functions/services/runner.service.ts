/** The runner: one executions-queue message → one state-machine execution, on the machine the message names. */
import { EXPRESS_MAX_EXECUTION_TIMEOUT_MS, runNodesTimeoutSeconds } from '../../lib/workflow-budget';
import type { Deps } from '../adapters/deps';
import type { WorkflowType } from '../core/types';
import type { ExecutionMessageBody } from './messages';
import { workflowName, workflowOf } from './workflows';

export { ExecutionMessage } from './messages';
export { workflowName, workflowOf } from './workflows';

/**
 * Seconds the state machine allows the first step: a step's longest, within the default execution
 * time-out (on Express, within what an Express execution allows).
 */
export const workflowTimeoutSeconds = (d: Deps, workflow: WorkflowType = 'standard'): number =>
  runNodesTimeoutSeconds(
    workflow === 'express' ? Math.min(d.config.executionTimeoutMs, EXPRESS_MAX_EXECUTION_TIMEOUT_MS) : d.config.executionTimeoutMs,
  );

/**
 * One executions-queue message → one state-machine execution. No read first: a duplicate
 * message, or one for an execution cancelled meanwhile, starts a workflow whose MarkRunning
 * finds nothing pending and ends it (see taskStart).
 */
export async function startWorkflow(d: Deps, msg: ExecutionMessageBody): Promise<'started' | 'already_exists'> {
  const workflow = workflowOf(msg);
  const gen = msg.gen ?? 0;
  return d.workflow.start(workflow, workflowName(msg.execution_id, msg.requeued, gen), {
    execution_id: msg.execution_id,
    gen,
    run: { next: 'step', step_timeout: workflowTimeoutSeconds(d, workflow) },
  });
}
