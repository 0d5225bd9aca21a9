/**
 * The one queue definition, read by the CDK stateful stack and the local runtime's queues.
 * Plain data: imports nothing from aws-cdk-lib.
 */
import { QUEUE_NAMES, type QueueName } from '../functions/core/ports';

export { QUEUE_NAMES, type QueueName };

export interface QueueDefinition {
  id: QueueName;
  /** Time-out of the consuming function, seconds. */
  consumerTimeoutSeconds: number;
  /** At least six times the consumer's time-out, as AWS advises for Lambda event sources. */
  visibilityTimeoutSeconds: number;
  /** Receives before a message is moved to the dead-letter queue. */
  maxReceiveCount: number;
  batchSize: number;
  /** How long a dead-lettered message is kept, seconds. */
  deadLetterRetentionSeconds: number;
}

const def = (id: QueueName, consumerTimeoutSeconds: number, batchSize: number): QueueDefinition => ({
  id,
  consumerTimeoutSeconds,
  visibilityTimeoutSeconds: consumerTimeoutSeconds * 6,
  maxReceiveCount: 5,
  batchSize,
  deadLetterRetentionSeconds: 14 * 24 * 3600,
});

export const QUEUES: Record<QueueName, QueueDefinition> = {
  executions: def('executions', 30, 10),
  callbacks: def('callbacks', 30, 10),
};
