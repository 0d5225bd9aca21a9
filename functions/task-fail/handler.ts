import * as v from 'valibot';
import { lambdaDeps, type DepsSource } from '../adapters/deps';
import { ExecutionMessage, TaskError, taskFail } from '../services/tasks.service';

const FailEvent = v.object({ ...ExecutionMessage.entries, error: v.optional(TaskError) });

/** State MarkFailed: reached through a Catch; ends the execution failed unless it already ended. */
export const createHandler =
  (deps: DepsSource) =>
  async (event: unknown): Promise<{ status: string }> => {
    const { execution_id, error } = v.parse(FailEvent, event);
    return taskFail(deps(), execution_id, error);
  };

export const handler = createHandler(lambdaDeps);
