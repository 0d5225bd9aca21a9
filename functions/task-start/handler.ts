import * as v from 'valibot';
import { lambdaDeps, type DepsSource } from '../adapters/deps';
import { ExecutionMessage, taskStart } from '../services/tasks.service';

/** State MarkRunning: pending → running once; `proceed: false` ends a duplicate or cancelled run. */
const StartEvent = v.object({ ...ExecutionMessage.entries, workflow_id: v.optional(v.pipe(v.string(), v.maxLength(2048))) });

export const createHandler =
  (deps: DepsSource) =>
  async (event: unknown): Promise<{ proceed: boolean }> => {
    const { execution_id, workflow_id, gen } = v.parse(StartEvent, event);
    return taskStart(deps(), execution_id, workflow_id, gen);
  };

export const handler = createHandler(lambdaDeps);
