import * as v from 'valibot';
import { lambdaDeps, type DepsSource } from '../adapters/deps';
import { ExecutionMessage, taskRun, type StepAnswer } from '../services/tasks.service';

/** State RunNodes: one step of the pipeline; answers what the state machine does next. */
export const createHandler =
  (deps: DepsSource) =>
  async (event: unknown): Promise<StepAnswer> => {
    const { execution_id, gen } = v.parse(ExecutionMessage, event);
    return taskRun(deps(), execution_id, gen);
  };

export const handler = createHandler(lambdaDeps);
