import { lambdaDeps } from '../adapters/deps';
import { sqsBatchHandler } from '../adapters/sqs-batch';
import { CallbackMessage, dispatchCallback } from '../services/dispatch.service';

/**
 * Callbacks queue → one delivery attempt each. Retries are scheduled by re-queueing with a
 * delay (our own backoff schedule); a message fails back to the queue only when the
 * bookkeeping itself failed, and the queue's dead-letter queue catches poison messages. The
 * message id names the claim on an attempt: a message that comes back may take its own again.
 */
export const createHandler = sqsBatchHandler('callbacks', CallbackMessage, (d, msg, record) =>
  dispatchCallback(d, msg, Math.random, record.messageId),
);

export const handler = createHandler(lambdaDeps);
