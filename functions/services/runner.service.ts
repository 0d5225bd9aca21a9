/** The runner: one executions-queue message → one state-machine execution. */
import { runNodesTimeoutSeconds } from '../../lib/workflow-budget';
import type { Deps } from '../adapters/deps';

export { ExecutionMessage } from './messages';

/** Seconds the state machine allows the run task: the engine's own limit plus room to record it. */
export const workflowTimeoutSeconds = (d: Deps): number => runNodesTimeoutSeconds(d.config.executionTimeoutMs);

/**
 * One executions-queue message → one state-machine execution named by the execution id. No
 * read first: a duplicate message, or one for an execution cancelled meanwhile, starts a
 * workflow whose MarkRunning finds nothing pending and ends it (see taskStart).
 */
export async function startWorkflow(d: Deps, executionId: string): Promise<'started' | 'already_exists'> {
  return d.workflow.start(executionId, { execution_id: executionId, timeout_seconds: workflowTimeoutSeconds(d) });
}
