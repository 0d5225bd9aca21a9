import * as v from 'valibot';
import { deps } from '../adapters/deps';
import { ExecutionMessage, taskStart } from '../services/tasks.service';

/** State MarkRunning: pending → running once; `proceed: false` ends a duplicate or cancelled run. */
export async function handler(event: unknown): Promise<{ proceed: boolean }> {
  const { execution_id } = v.parse(ExecutionMessage, event);
  return taskStart(deps(), execution_id);
}
