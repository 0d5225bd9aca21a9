/**
 * A finished execution's callback delivery (DeliveriesPort), kept on its record: which
 * dispatcher sends the next attempt, each attempt recorded, and an owner's redelivery. Every
 * write is conditional on the delivery as it was read (attempt count, outcome), so duplicate
 * messages and concurrent dispatchers count each attempt once.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DeliveriesPort } from '../core/ports';
import type { CallbackDelivery, Execution } from '../core/types';
import { conditionalWrite, keys } from './dynamo';
import { sweepKey, type ExecutionItems } from './execution-items';

export class DeliveriesStore implements DeliveriesPort {
  constructor(private readonly items: ExecutionItems) {}

  /**
   * The claim is an attribute of its own (`callback_claim`), outside the delivery record, so
   * recording an attempt never copies it and no view ever shows it.
   */
  async claimDelivery(id: string, attempts: number, by: string, untilMs: number, nowMs: number): Promise<boolean> {
    const out = await conditionalWrite(
      this.items.db.send(
        new UpdateCommand({
          TableName: this.items.table,
          Key: keys.execution(id),
          UpdateExpression: 'SET callback_claim = :claim',
          ConditionExpression:
            'callback_delivery.attempts = :n AND callback_delivery.outcome = :pending AND ' +
            '(attribute_not_exists(callback_claim) OR callback_claim.attempt <> :n OR callback_claim.until_ms < :now OR callback_claim.#by = :by)',
          ExpressionAttributeNames: { '#by': 'by' },
          ExpressionAttributeValues: {
            ':claim': { attempt: attempts, by, until_ms: untilMs },
            ':n': attempts,
            ':pending': 'pending',
            ':now': nowMs,
            ':by': by,
          },
        }),
      ),
    );
    return out !== null;
  }

  /**
   * Records a delivery attempt. Conditional on the attempt count read before, so two
   * dispatchers working on the same execution cannot both count (or both settle) one attempt.
   */
  async recordDelivery(id: string, previousAttempts: number, delivery: CallbackDelivery): Promise<boolean> {
    const settled = delivery.outcome !== 'pending';
    const out = await conditionalWrite(
      this.items.db.send(
        new UpdateCommand({
          TableName: this.items.table,
          Key: keys.execution(id),
          UpdateExpression: `SET callback_delivery = :d${settled && !this.items.markerFollowUp ? ' REMOVE sweep, sweep_at, requeued_at' : ''}`,
          ConditionExpression: 'callback_delivery.attempts = :prev AND callback_delivery.outcome = :pending',
          ExpressionAttributeValues: { ':d': delivery, ':prev': previousAttempts, ':pending': 'pending' },
        }),
      ),
    );
    if (out === null) return false;
    if (settled && this.items.markerFollowUp) await this.items.clearSweepQuietly(id);
    return true;
  }

  /**
   * Starts an owner's redelivery of a settled callback: outcome back to pending, flagged as a
   * single redelivery, the same webhook id. Conditional on the settled delivery read before, so
   * two requests cannot both start one; returns the updated record, or null when it was not settled.
   */
  async redeliver(id: string, previous: CallbackDelivery, at: string): Promise<Execution | null> {
    const out = await conditionalWrite(
      this.items.db.send(
        new UpdateCommand({
          TableName: this.items.table,
          Key: keys.execution(id),
          UpdateExpression:
            'SET callback_delivery.outcome = :pending, callback_delivery.redelivery = :yes, callback_delivery.next_attempt_at = :none, sweep = :cb, sweep_at = :at',
          ConditionExpression: 'callback_delivery.attempts = :prev AND callback_delivery.outcome = :was',
          ExpressionAttributeValues: {
            ':pending': 'pending',
            ':yes': true,
            ':none': null,
            ':cb': sweepKey('callback', id),
            ':at': at,
            ':prev': previous.attempts,
            ':was': previous.outcome,
          },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    if (out === null) return null;
    return this.items.resolve(out.Attributes ?? {});
  }

  async attemptNow(id: string, previous: CallbackDelivery, at: string): Promise<Execution | null> {
    const out = await conditionalWrite(
      this.items.db.send(
        new UpdateCommand({
          TableName: this.items.table,
          Key: keys.execution(id),
          UpdateExpression: 'SET callback_delivery.next_attempt_at = :at, sweep = :cb, sweep_at = :at',
          ConditionExpression:
            'callback_delivery.attempts = :prev AND callback_delivery.outcome = :pending AND callback_delivery.next_attempt_at = :was',
          ExpressionAttributeValues: {
            ':at': at,
            ':cb': 'callback',
            ':prev': previous.attempts,
            ':pending': 'pending',
            ':was': previous.next_attempt_at,
          },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    if (out === null) return null;
    return this.items.resolve(out.Attributes ?? {});
  }
}
