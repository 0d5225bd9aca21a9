/**
 * Callback deliveries (contract §6): the payload a caller receives, its Standard Webhooks
 * signature, and when a failed delivery is tried again.
 */
import { Webhook } from 'standardwebhooks';
import { isTerminal } from './transitions';
import type { OutputLink } from './output-assets';
import type { PresignedDownload } from './ports';
import type { Execution } from './types';

/**
 * The body POSTed to a caller's callback URL. A completed execution sends each visible output
 * as an array holding its value as text, an ASSET output's being the URL of its fresh link
 * (`links`, minted for this attempt), a list of files' being their links in order (null where
 * an item failed under `on_item_error: "skip"`). An output whose branch did not run is absent.
 * Failed and cancelled ones send only their id.
 */
export function buildCallbackPayload(
  e: Pick<Execution, 'execution_id' | 'status' | 'outputs' | 'visible_outputs' | 'output_assets'>,
  links: Readonly<Record<string, OutputLink>> = {},
): Record<string, unknown> {
  if (!isTerminal(e.status)) throw new Error(`execution ${e.execution_id} is ${e.status}; callbacks are for finished executions`);
  if (e.status !== 'completed' || e.outputs === null) return { execution_id: e.execution_id };
  const outputs = e.outputs;
  const assets = e.output_assets ?? {};
  const ids = e.visible_outputs ?? [...Object.keys(outputs), ...Object.keys(assets)];
  const entries = ids.flatMap((id): [string, (string | null)[]][] => {
    if (Object.hasOwn(outputs, id)) return [[id, [String(outputs[id])]]];
    const link = Object.hasOwn(assets, id) && Object.hasOwn(links, id) ? links[id] : undefined;
    if (link === undefined) return [];
    if (Array.isArray(link)) return [[id, (link as readonly (PresignedDownload | null)[]).map((l) => l?.url ?? null)]];
    return [[id, [(link as PresignedDownload).url]]];
  });
  // fromEntries defines own properties, so an output named `__proto__` stays an ordinary key.
  return { ...Object.fromEntries(entries), execution_id: e.execution_id };
}

export { webhookIdFor } from './webhook-id';

/**
 * Standard Webhooks headers for a body. With several secrets (during a rotation) the signature
 * header carries one `v1,` signature per secret, so a receiver holding either one verifies it.
 */
export function signWebhook(body: string, secrets: string[], webhookId: string, at: Date): Record<string, string> {
  if (secrets.length === 0) throw new Error('a callback needs at least one signing secret');
  const signatures = secrets.map((secret) => new Webhook(secret).sign(webhookId, at, body));
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}

/**
 * The wait before the next delivery attempt after `failedAttempts` failures, or null when the
 * schedule is used up and the delivery goes to the dead-letter record. Jitter only lengthens a
 * wait (by less than a quarter), so the schedule's total is a floor on how long retries last.
 */
export function nextRetryDelayMs(failedAttempts: number, scheduleSeconds: number[], random: () => number): number | null {
  if (!Number.isInteger(failedAttempts) || failedAttempts < 1) {
    throw new RangeError(`failedAttempts must be a positive integer, got ${failedAttempts}`);
  }
  const seconds = scheduleSeconds[failedAttempts - 1];
  if (seconds === undefined) return null;
  const base = Math.ceil(seconds * 1000);
  const r = random();
  const unit = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1 - Number.EPSILON) : 0;
  return base + Math.floor(base * 0.25 * unit);
}

/** The least total time a delivery keeps being retried under this schedule, in seconds. */
export function scheduleTotalSeconds(schedule: number[]): number {
  return schedule.reduce((sum, s) => sum + s, 0);
}
