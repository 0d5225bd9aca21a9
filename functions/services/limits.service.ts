/**
 * A caller's rate limit and quota, enforced by the handlers (not the authorizer): a refusal
 * must be a 429 with `Retry-After`, and an accepted answer carries the RateLimit headers, and
 * only an integration's answer can say either (an authorizer can only allow, or deny with
 * API Gateway's 401/403). The authorizer is not cached (TTL 0, see service-stack.ts), so either
 * place sees every request; here the check costs one conditional write and no read (the
 * authorizer already passed the limits on).
 */
import { epochSeconds } from '../core/time';
import {
  DEPLOYMENT_SUBJECT,
  quotaCounter,
  quotaPeriod,
  quotaRefusalDetail,
  quotaWindowSeconds,
  rateCounter,
  rateLimitHeaders,
  rateRefusalDetail,
  rateWindow,
  type LimitState,
} from '../core/consumers';
import { AppError } from '../core/errors';
import type { CallerTally } from '../core/ports';
import type { CallerAuth } from '../core/consumers';
import { callerAuth, type RequestGate } from '../adapters/api';
import type { Deps } from '../adapters/deps';
import { errorFields } from '../adapters/logger';

const subjectOf = (auth: CallerAuth): string => auth.consumerId ?? DEPLOYMENT_SUBJECT;
/** Counters outlive their window by this much (their TTL), so a late reader still finds them. */
const COUNTER_GRACE_SECONDS = 3600;

/** Counts for the usage view; bookkeeping, so a failure is logged and never fails the request. */
export async function tally(d: Deps, auth: CallerAuth, what: CallerTally): Promise<void> {
  try {
    await d.consumers.tally(auth.deploymentId, subjectOf(auth), what, d.clock.now());
  } catch (e) {
    d.log.warn('caller usage not counted', { deployment_id: auth.deploymentId, what, ...errorFields(e) });
  }
}

/** Spends one request of the caller's rate limit, or refuses with 429; the state for the headers. */
export async function spendRate(d: Deps, auth: CallerAuth): Promise<LimitState | null> {
  const limit = auth.limits?.rate_limit;
  if (!limit) return null;
  const now = d.clock.now();
  const w = rateWindow(limit, now.getTime());
  const n = await d.consumers.take(auth.deploymentId, subjectOf(auth), rateCounter(w.start), limit.requests, w.end + COUNTER_GRACE_SECONDS);
  const state: LimitState = {
    policy: 'rate',
    limit: limit.requests,
    windowSeconds: limit.per_seconds,
    remaining: limit.requests - (n ?? limit.requests),
    resetSeconds: w.resetSeconds,
  };
  if (n === null) {
    await tally(d, auth, 'refused_rate');
    throw new AppError(
      'TooManyRequests',
      rateRefusalDetail(limit, w.resetSeconds),
      { limit: 'rate', retry_after: w.resetSeconds },
      {
        headers: { 'retry-after': String(w.resetSeconds), ...rateLimitHeaders([state]) },
      },
    );
  }
  return state;
}

/** What spending a quota left: the state for the headers, and how to undo it. */
export interface QuotaSpent {
  state: LimitState;
  giveBack(): Promise<void>;
}

/**
 * Spends one execution of the caller's quota (UTC day or month), or refuses with 429 saying
 * when it resets. Called once an execution is about to be accepted, so reads never spend it.
 */
export async function spendQuota(d: Deps, auth: CallerAuth): Promise<QuotaSpent | null> {
  const quota = auth.limits?.quota;
  if (!quota) return null;
  const now = d.clock.now();
  const p = quotaPeriod(quota.per, now);
  const counter = quotaCounter(quota.per, p.label);
  const subject = subjectOf(auth);
  const n = await d.consumers.take(auth.deploymentId, subject, counter, quota.executions, epochSeconds(p.end) + COUNTER_GRACE_SECONDS);
  const state: LimitState = {
    policy: 'quota',
    limit: quota.executions,
    windowSeconds: quotaWindowSeconds(quota.per),
    remaining: quota.executions - (n ?? quota.executions),
    resetSeconds: p.resetSeconds,
  };
  if (n === null) {
    await tally(d, auth, 'refused_quota');
    throw new AppError(
      'TooManyRequests',
      quotaRefusalDetail(quota, p.end),
      { limit: 'quota', resets_at: p.end.toISOString(), retry_after: p.resetSeconds },
      {
        headers: { 'retry-after': String(p.resetSeconds), ...rateLimitHeaders([state]) },
      },
    );
  }
  return {
    state,
    giveBack: async () => {
      try {
        await d.consumers.giveBack(auth.deploymentId, subject, counter);
      } catch (e) {
        // The quota then counts one execution too many: conservative, never over.
        d.log.warn('quota not given back', { deployment_id: auth.deploymentId, ...errorFields(e) });
      }
    },
  };
}

/** The RateLimit headers of an answer under these limits, merged with any the answer has. */
export function withLimitHeaders(headers: Record<string, string> | undefined, states: readonly LimitState[]): Record<string, string> {
  const own = rateLimitHeaders(states);
  const out = { ...(headers ?? {}) };
  for (const [k, v] of Object.entries(own)) out[k] = out[k] === undefined ? v : `${v}, ${out[k]}`;
  return out;
}

/**
 * Every caller route's gate (its handler passes `{ gate: callerLimits }`): each request with a
 * caller's key spends one of the key's rate limit before anything else (a refusal is the 429),
 * and an accepted answer carries the RateLimit headers. test/e2e/routes.test.ts holds every
 * `apiKey` route of the table to it.
 */
export const callerLimits: RequestGate = async (d, event) => {
  const rate = await spendRate(d, callerAuth(event));
  return rate ? (headers) => withLimitHeaders(headers, [rate]) : null;
};
