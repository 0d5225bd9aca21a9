/** Callback delivery: one attempt, and the bookkeeping that follows. */
import type * as v from 'valibot';
import { openSecret } from '../core/api-key';
import { buildCallbackPayload, nextRetryDelayMs, signWebhook } from '../core/callback';
import { isTerminal } from '../core/transitions';
import type { DeliveryAttempt } from '../core/types';
import type { Deps } from '../adapters/deps';
import { epochSeconds } from '../core/time';
import type { CallbackMessage } from './messages';
import { callerOutputIds, outputLinks } from './output-links';
import { callbackClaimMs } from '../../lib/config';

export { CallbackMessage } from './messages';

/**
 * One attempt to deliver an execution's callback, and the bookkeeping that follows.
 * `messageId` (the queue message's) names the claim on the attempt; without one the claim is
 * this call's alone.
 */
export async function dispatchCallback(
  d: Deps,
  msg: v.InferOutput<typeof CallbackMessage>,
  random: () => number = Math.random,
  messageId: string = d.ids.uuid(),
): Promise<'delivered' | 'retry' | 'dead_lettered' | 'skipped' | 'deferred' | 'claimed_elsewhere'> {
  const now = d.clock.now();
  if (msg.due_at !== undefined && msg.due_at > now.getTime() + 1000) {
    await d.queue.send('callbacks', msg, { delaySeconds: Math.ceil((msg.due_at - now.getTime()) / 1000) });
    return 'deferred';
  }
  const e = await d.executions.get(msg.execution_id, now, true);
  const delivery = e?.callback_delivery;
  if (!e || !e.callback || !delivery || delivery.outcome !== 'pending' || !isTerminal(e.status)) return 'skipped';
  if (delivery.next_attempt_at && Date.parse(delivery.next_attempt_at) > now.getTime() + 1000) {
    // A duplicate message arrived before the retry is due: the message that is due will come.
    return 'skipped';
  }

  const deployment = e.deployment_id ? await d.deployments.get(e.deployment_id) : null;
  const attempts = delivery.attempts + 1;
  const redelivery = delivery.redelivery === true;
  const logged = (status: number | null, error: string | null, durationMs: number) => ({
    log: appendAttempt(delivery.log, { at: now.toISOString(), duration_ms: durationMs, status, error, redelivery }),
  });
  // A redelivery is one attempt; once it is settled the flag goes with it.
  const { redelivery: _flag, ...rest } = delivery;
  const base = { ...rest, attempts, last_attempt_at: now.toISOString() };
  if (!deployment || deployment.status !== 'live') {
    await d.deliveries.recordDelivery(e.execution_id, delivery.attempts, {
      ...base,
      ...logged(null, 'the deployment was deleted', 0),
      outcome: 'dead_lettered',
      last_error: 'the deployment was deleted',
      next_attempt_at: null,
    });
    return 'dead_lettered';
  }
  const { masterKey } = await d.keyMaterial.material();
  const nowSec = epochSeconds(now);
  const secrets = deployment.signing_secrets
    .filter((s) => s.expires_at === null || s.expires_at > nowSec)
    .map((s) => openSecret(s.sealed, masterKey));
  // Links are minted for each attempt: retries outlast a link's lifetime. The configured public
  // URL wins; else the one the execution was submitted at.
  const linkBase = d.config.publicUrl ?? e.base_url ?? null;
  const links = linkBase === null ? {} : await outputLinks(d, e, linkBase, callerOutputIds(e));
  const body = JSON.stringify(buildCallbackPayload(e, links));
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'pipegate-callbacks/1',
    'x-pipegate-status': e.status,
    ...signWebhook(body, secrets, delivery.webhook_id, now),
  };

  // Duplicate messages (two writers that both saw the execution end, a re-queue racing the
  // original, a redelivered batch) must not each send this attempt. One claims it; the others
  // drop their message. That is safe: the holder's own message stays on the queue until the
  // holder has recorded the attempt, so if the holder dies, its message comes back and (same
  // message id) takes the claim again; if that message is dead-lettered, the sweeper queues the
  // owed callback again after its quiet period, which the configuration keeps longer than a
  // claim lasts (lib/config.ts).
  const claimed = await d.deliveries.claimDelivery(
    e.execution_id,
    delivery.attempts,
    messageId,
    now.getTime() + callbackClaimMs(d.config),
    now.getTime(),
  );
  if (!claimed) {
    d.log.info('callback attempt claimed or recorded by another message; this one is dropped', { execution_id: e.execution_id, attempts });
    return 'claimed_elsewhere';
  }

  let status: number | null = null;
  let error: string | null = null;
  const sentAt = d.clock.now().getTime();
  try {
    const res = await d.http({
      method: 'POST',
      url: e.callback,
      headers,
      body,
      timeoutMs: d.config.callbackTimeoutMs,
      maxResponseBytes: 65_536,
    });
    status = res.status;
    if (res.status < 200 || res.status > 299) error = `HTTP ${res.status}`;
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
  }
  const attempt = logged(status, error, Math.max(0, d.clock.now().getTime() - sentAt));

  if (error === null) {
    await d.deliveries.recordDelivery(e.execution_id, delivery.attempts, {
      ...base,
      ...attempt,
      outcome: 'delivered',
      last_status: status,
      last_error: null,
      next_attempt_at: null,
    });
    return 'delivered';
  }
  const delay = redelivery ? null : nextRetryDelayMs(attempts, d.config.callbackScheduleSeconds, random);
  if (delay === null) {
    await d.deliveries.recordDelivery(e.execution_id, delivery.attempts, {
      ...base,
      ...attempt,
      outcome: 'dead_lettered',
      last_status: status,
      last_error: error,
      next_attempt_at: null,
    });
    d.log.warn('callback dead-lettered', { execution_id: e.execution_id, attempts });
    return 'dead_lettered';
  }
  const due = now.getTime() + delay;
  const recorded = await d.deliveries.recordDelivery(e.execution_id, delivery.attempts, {
    ...base,
    ...attempt,
    outcome: 'pending',
    last_status: status,
    last_error: error,
    next_attempt_at: new Date(due).toISOString(),
  });
  // Only the dispatcher that recorded this attempt schedules the next one: no duplicate chains.
  if (recorded) await d.queue.send('callbacks', { execution_id: e.execution_id, due_at: due }, { delaySeconds: Math.ceil(delay / 1000) });
  return 'retry';
}

/** How many attempts the record keeps in its log; `attempts` still counts every one. */
export const DELIVERY_LOG_MAX = 20;

/** The log with one more attempt, the oldest dropped past DELIVERY_LOG_MAX (the item must stay small). */
export function appendAttempt(log: readonly DeliveryAttempt[] | undefined, attempt: DeliveryAttempt): DeliveryAttempt[] {
  return [...(log ?? []), attempt].slice(-DELIVERY_LOG_MAX);
}
