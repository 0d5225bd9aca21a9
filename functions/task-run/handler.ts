import * as v from 'valibot';
import { deps } from '../adapters/deps';
import { ExecutionMessage, taskRun } from '../services/tasks.service';

/** State RunNodes: evaluates the pipeline and records completed or failed. */
export async function handler(event: unknown): Promise<{ status: string }> {
  const { execution_id } = v.parse(ExecutionMessage, event);
  return taskRun(deps(), execution_id);
}
