/** The messages of the executions and callbacks queues, checked where they are read. */
import * as v from 'valibot';
import { WORKFLOW_TYPES } from '../core/workflow-type';

export const ExecutionMessage = v.object({
  execution_id: v.pipe(v.string(), v.uuid()),
  /**
   * Set by the sweeper's re-queue (ms since epoch of that re-queue): the workflow then gets a
   * name of its own, since a Standard state machine refuses a closed execution's name for 90 days.
   */
  requeued: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  /**
   * The execution's generation (absent: 0): a running execution woken before its state machine
   * would look again (a wait node's event) is taken over by a new workflow of the next
   * generation, and the older one stands down at its next step (functions/services/wake.ts).
   */
  gen: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  /**
   * The state machine to start (the execution's, decided when its version was pushed). Absent
   * on messages sent before there were two: Standard, which runs anything.
   */
  workflow: v.optional(v.picklist(WORKFLOW_TYPES)),
});
export type ExecutionMessageBody = v.InferOutput<typeof ExecutionMessage>;
export const CallbackMessage = v.object({
  execution_id: v.pipe(v.string(), v.uuid()),
  /** When the next attempt is due (ms since epoch): SQS delays a message 15 minutes at most. */
  due_at: v.optional(v.number()),
});
