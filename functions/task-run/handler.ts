import * as v from 'valibot';
import { lambdaDeps, type DepsSource } from '../adapters/deps';
import { ExecutionMessage, taskRun } from '../services/tasks.service';

/** State RunNodes: evaluates the pipeline and records completed or failed. */
export const createHandler =
  (deps: DepsSource) =>
  async (event: unknown): Promise<{ status: string }> => {
    const { execution_id } = v.parse(ExecutionMessage, event);
    return taskRun(deps(), execution_id);
  };

export const handler = createHandler(lambdaDeps);
