// Not from ../core/callback: that module carries the signing library, which the execute
// function has no use for.
import { webhookIdFor } from '../core/webhook-id';
import type { CallbackDelivery } from '../core/types';

/** The delivery record written with the terminal status, before any attempt. */
export const newDelivery = (executionId: string): CallbackDelivery => ({
  webhook_id: webhookIdFor(executionId),
  attempts: 0,
  outcome: 'pending',
  last_status: null,
  last_error: null,
  last_attempt_at: null,
  next_attempt_at: null,
});
