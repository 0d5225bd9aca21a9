/** The messages of the executions and callbacks queues, checked where they are read. */
import * as v from 'valibot';

export const ExecutionMessage = v.object({ execution_id: v.pipe(v.string(), v.uuid()) });
export const CallbackMessage = v.object({
  execution_id: v.pipe(v.string(), v.uuid()),
  /** When the next attempt is due (ms since epoch): SQS delays a message 15 minutes at most. */
  due_at: v.optional(v.number()),
});
