import * as v from 'valibot';
import { lambdaDeps, type DepsSource } from '../adapters/deps';
import { ExecutionMessage, taskRun, type StepAnswer } from '../services/tasks.service';

/** RunNodes' input: the message's ids, and the last step's answer (`$.run`: how many steps this workflow has made). */
const RunNodesInput = v.object({
  ...ExecutionMessage.entries,
  run: v.optional(v.object({ steps: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))) })),
});

/** State RunNodes: one step of the pipeline; answers what the state machine does next. */
export const createHandler =
  (deps: DepsSource) =>
  async (event: unknown): Promise<StepAnswer> => {
    const { execution_id, gen, run } = v.parse(RunNodesInput, event);
    return taskRun(deps(), execution_id, gen, run?.steps ?? 0);
  };

export const handler = createHandler(lambdaDeps);
