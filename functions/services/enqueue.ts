/** Queueing a just-written execution, so that a failed send never leaves it pending for good. */
import { AppError } from '../core/errors';
import type { Deps } from '../adapters/deps';
import { errorFields } from '../adapters/logger';
import type { Execution } from '../core/types';

/** The executions-queue message that starts (or starts again) an execution's first workflow, on its state machine. */
export const executionMessage = (e: Pick<Execution, 'execution_id' | 'workflow'>): Record<string, unknown> => ({
  execution_id: e.execution_id,
  ...(e.workflow ? { workflow: e.workflow } : {}),
});

/**
 * Sends the executions-queue message for a `pending` record just written. When the send fails
 * the write is withdrawn (deleted while still `pending`) and the request answers 503, so no
 * pending execution is left that nobody queues. If the record has moved on meanwhile, the
 * message did arrive (a lost reply) and the execution is accepted after all. If the withdrawal
 * fails too, the record keeps its sweep marker and the sweeper queues it again.
 */
export async function enqueueNew(d: Deps, e: Pick<Execution, 'execution_id' | 'workflow'>): Promise<void> {
  const executionId = e.execution_id;
  try {
    await d.queue.send('executions', executionMessage(e));
    return;
  } catch (err) {
    let withdrawn: boolean;
    try {
      withdrawn = await d.executions.withdrawPending(executionId);
    } catch (again) {
      d.log.error('could not queue an execution nor withdraw it; the sweeper will queue it', {
        execution_id: executionId,
        ...errorFields(again),
      });
      throw err;
    }
    if (!withdrawn) return;
    d.log.warn('execution withdrawn: it could not be queued', { execution_id: executionId, ...errorFields(err) });
    throw new AppError('ServiceUnavailable', 'the execution could not be queued; retry shortly', {}, { cause: err });
  }
}
