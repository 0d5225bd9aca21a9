/**
 * Waking a waiting execution before its state machine would look again (a wait node's event
 * arrived): a message starts a workflow of the execution's next generation at once, on the
 * execution's own state machine, and the execution moves to that generation in one conditional
 * write. The older workflow, asleep in its Wait state, stands down at its next step (taskRun
 * compares generations); it is also stopped where the state machine can stop one (Standard), so
 * it costs nothing more. The message goes first: should the write then fail, two workflows run
 * the execution for a while, which its records' conditional writes make harmless, where the
 * other order could leave none.
 */
import type { Deps } from '../adapters/deps';
import type { Execution } from '../core/types';
import { stopWorkflows } from './workflows';

/**
 * Starts a workflow of the execution's next generation on its own machine: the message, then the
 * generation's conditional write. True when the execution moved to it; false when another wake
 * (or hand-over) moved it first. Also how a Standard workflow hands its execution over after its
 * step budget (functions/services/tasks.service.ts), which ends by itself and stops nothing.
 */
export async function startNextGeneration(d: Deps, e: Pick<Execution, 'execution_id' | 'gen' | 'workflow'>): Promise<boolean> {
  const seen = e.gen ?? 0;
  await d.queue.send('executions', { execution_id: e.execution_id, gen: seen + 1, ...(e.workflow ? { workflow: e.workflow } : {}) });
  return d.executions.bumpGeneration(e.execution_id, seen);
}

/** True when this call woke it; false when it was not running or another wake won. */
export async function wakeExecution(d: Deps, e: Pick<Execution, 'execution_id' | 'gen' | 'run_by' | 'workflow'>): Promise<boolean> {
  if (!(await startNextGeneration(d, e))) return false;
  await stopWorkflows(d, e, 'woken: a newer workflow runs it');
  return true;
}
