/**
 * Consumers of a deployment: each caller its own key, with its own rate limit, quota and
 * expiry. Pure: the windows and periods the counters use, and what an answer says about them.
 *
 * Both limits are counters in DynamoDB, one item per subject (a consumer, or the deployment's
 * own key) and window, moved by one conditional UpdateItem (`ADD n :one` only while `n < limit`):
 * exact under any concurrency, and the same code on AWS, under `npm start` and `start:synth`.
 * - rate: a fixed window of `per_seconds` aligned to the epoch; every caller request spends one.
 * - quota: the UTC day or month; only an accepted execution spends one (reads never do).
 */
import type { KeyHash } from './types';

export interface RateLimit {
  requests: number;
  per_seconds: number;
}
export type QuotaPeriod = 'day' | 'month';
export interface Quota {
  executions: number;
  per: QuotaPeriod;
}
export interface Limits {
  rate_limit: RateLimit | null;
  quota: Quota | null;
}

/** The caller identity the authorizer put on a request (functions/adapters/api.ts reads it from the event). */
export interface CallerAuth {
  deploymentId: string;
  revision: number;
  deleted: boolean;
  /** The consumer whose key was used; absent for the deployment's own key. */
  consumerId?: string;
  /** Absent: none (the same as both null). */
  limits?: Limits;
}

/** Consumers one deployment may have (revoked ones included: their keys must keep saying so). */
export const MAX_CONSUMERS_PER_DEPLOYMENT = 1000;
export const MAX_RATE_REQUESTS = 1_000_000;
export const MAX_RATE_WINDOW_SECONDS = 3600;
export const MAX_QUOTA_EXECUTIONS = 1_000_000_000;
export const MAX_METADATA_ENTRIES = 16;
export const MAX_METADATA_VALUE_LENGTH = 256;
export const MAX_CONSUMER_NAME_LENGTH = 100;
/** A consumer's last use is written at most this often (a write per request would double the cost). */
export const LAST_USE_RESOLUTION_SECONDS = 60;

export interface ConsumerRecord extends Limits {
  consumer_id: string;
  deployment_id: string;
  name: string;
  /** ISO time after which the key is refused (401 `key_expired`); null: never. */
  expires_at: string | null;
  metadata: Record<string, string> | null;
  key_hashes: KeyHash[];
  /** keyHint of the current key. */
  key_prefix: string;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
  /** Set by DELETE: the key is refused at once (401 `consumer_revoked`). */
  revoked_at: string | null;
  revision: number;
}

/** What the owner sees of a consumer: never key material. */
export function consumerView(c: ConsumerRecord, now: Date) {
  return {
    consumer_id: c.consumer_id,
    name: c.name,
    status:
      c.revoked_at !== null
        ? ('revoked' as const)
        : c.expires_at !== null && Date.parse(c.expires_at) <= now.getTime()
          ? ('expired' as const)
          : ('active' as const),
    key_prefix: c.key_prefix,
    rate_limit: c.rate_limit,
    quota: c.quota,
    expires_at: c.expires_at,
    metadata: c.metadata ?? {},
    created_at: c.created_at,
    updated_at: c.updated_at,
    last_used_at: c.last_used_at,
    revoked_at: c.revoked_at,
  };
}

/** A fixed rate window: its start (epoch seconds) and how long until the next one. */
export function rateWindow(limit: RateLimit, nowMs: number): { start: number; end: number; resetSeconds: number } {
  const now = nowMs / 1000;
  const start = Math.floor(now / limit.per_seconds) * limit.per_seconds;
  const end = start + limit.per_seconds;
  return { start, end, resetSeconds: Math.max(1, Math.ceil(end - now)) };
}

/** The UTC day or month a moment falls in: its label (the counter's name), start and end. */
export function quotaPeriod(per: QuotaPeriod, now: Date): { label: string; start: Date; end: Date; resetSeconds: number } {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const start = per === 'day' ? new Date(Date.UTC(y, m, now.getUTCDate())) : new Date(Date.UTC(y, m, 1));
  const end = per === 'day' ? new Date(Date.UTC(y, m, now.getUTCDate() + 1)) : new Date(Date.UTC(y, m + 1, 1));
  const label = per === 'day' ? start.toISOString().slice(0, 10) : start.toISOString().slice(0, 7);
  return { label, start, end, resetSeconds: Math.max(1, Math.ceil((end.getTime() - now.getTime()) / 1000)) };
}

/** Sort keys of a subject's counter items (partition `LIMIT#<deployment>#<subject>`). */
export const rateCounter = (windowStart: number): string => `RATE#${windowStart}`;
export const quotaCounter = (per: QuotaPeriod, label: string): string => `QUOTA#${per}#${label}`;
/** The subject of a request's limits: its consumer, or the deployment's own key. */
export const DEPLOYMENT_SUBJECT = 'deployment';

/**
 * The IETF httpapi draft's headers (draft-ietf-httpapi-ratelimit-headers: `RateLimit-Policy`
 * and `RateLimit`, structured fields with a named policy per limit). Chosen over the older
 * `RateLimit-Limit/-Remaining/-Reset` trio because a request here can be under two limits at
 * once (the rate and the quota), which named policies tell apart and the trio cannot.
 */
export interface LimitState {
  policy: 'rate' | 'quota';
  limit: number;
  windowSeconds: number;
  remaining: number;
  resetSeconds: number;
}

export function rateLimitHeaders(states: readonly LimitState[]): Record<string, string> {
  if (states.length === 0) return {};
  return {
    'ratelimit-policy': states.map((s) => `"${s.policy}";q=${s.limit};w=${s.windowSeconds}`).join(', '),
    ratelimit: states.map((s) => `"${s.policy}";r=${Math.max(0, s.remaining)};t=${s.resetSeconds}`).join(', '),
  };
}

export const quotaWindowSeconds = (per: QuotaPeriod): number => (per === 'day' ? 86_400 : 2_592_000);

export function rateRefusalDetail(limit: RateLimit, resetSeconds: number): string {
  return `rate limit reached: this key may make ${limit.requests} request${limit.requests === 1 ? '' : 's'} per ${limit.per_seconds} second${limit.per_seconds === 1 ? '' : 's'}; retry in ${resetSeconds} s`;
}

export function quotaRefusalDetail(quota: Quota, resetsAt: Date): string {
  return `quota used up: this key may start ${quota.executions} execution${quota.executions === 1 ? '' : 's'} per UTC ${quota.per}; it resets at ${resetsAt.toISOString()}`;
}
