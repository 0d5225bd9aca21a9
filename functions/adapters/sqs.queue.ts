import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { QueueName, QueuePort } from '../core/ports';

/** SQS refuses DelaySeconds outside 0..900 (15 minutes). */
export const SQS_MAX_DELAY_SECONDS = 900;

/**
 * A wished-for delay turned into one SQS accepts: whole seconds (rounded up, so a message is
 * never early), 0..900. A longer wait is cut to 15 minutes; whoever needs more must send the
 * message on again when it arrives.
 */
export function clampDelaySeconds(seconds: number | undefined): number {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds <= 0) return 0;
  return Math.min(SQS_MAX_DELAY_SECONDS, Math.ceil(seconds));
}

/** QueuePort on Amazon SQS: one JSON message per send. */
export class SqsQueuePort implements QueuePort {
  constructor(
    private readonly client: SQSClient,
    private readonly urls: Readonly<Record<QueueName, string>>,
  ) {}

  async send(queue: QueueName, body: Record<string, unknown>, opts?: { delaySeconds?: number }): Promise<void> {
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.urls[queue],
        MessageBody: JSON.stringify(body),
        ...(opts?.delaySeconds === undefined ? {} : { DelaySeconds: clampDelaySeconds(opts.delaySeconds) }),
      }),
    );
  }
}
