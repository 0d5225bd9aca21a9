/**
 * Usage of a live deployment, kept cheap: every finished API execution adds one to a counter
 * item of its five-minute bucket (its status, and its duration's histogram bin), so "the last
 * hour" and "the last day" are one Query over at most 288 small items, never a scan of history.
 * Percentiles come from the histogram: each is reported as the upper bound of the bin it falls
 * in, which is exact enough to see a p95 move from 250 ms to 2.5 s.
 */
import type { ExecutionStatus } from './transitions';
import type { Execution, ExecutionSource } from './types';
import { completionDuration } from './views';

export const USAGE_BUCKET_MS = 5 * 60 * 1000;
/** Items each bucket's counters are spread over (write sharding; read back by one Query). */
export const USAGE_SHARDS = 8;
/** Upper bounds (ms) of the duration bins; the last bin holds everything above the last bound. */
export const DURATION_BOUNDS_MS = [10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 120_000, 300_000] as const;
export const USAGE_STATUSES = ['completed', 'failed', 'cancelled'] as const;
export type UsageStatus = (typeof USAGE_STATUSES)[number];
/** Where finished executions came from, each counted apart (`s_<source>`): the REST API, the web form, MCP tool calls. */
export const USAGE_SOURCES = ['api', 'form', 'mcp'] as const satisfies readonly ExecutionSource[];

/** The bucket a moment falls in, as the ISO time of its start. */
export function bucketOf(at: Date): string {
  return new Date(Math.floor(at.getTime() / USAGE_BUCKET_MS) * USAGE_BUCKET_MS).toISOString();
}

/** The histogram bin of a duration. */
export function binOf(durationMs: number): number {
  const i = DURATION_BOUNDS_MS.findIndex((b) => durationMs <= b);
  return i === -1 ? DURATION_BOUNDS_MS.length : i;
}

/** What a caller (a consumer, or the deployment's own key with limits) did in a bucket. */
export interface CallerCounts {
  counts: Partial<Record<UsageStatus, number>>;
  bins: Record<number, number>;
  accepted: number;
  refused_rate: number;
  refused_quota: number;
}

/** One bucket's counters, as the store holds them. */
export interface UsageBucket {
  bucket: string;
  counts: Partial<Record<UsageStatus, number>>;
  /** Bin index → how many durations fell in it. */
  bins: Record<number, number>;
  /** By subject: a consumer id, or `deployment` (functions/core/consumers.ts DEPLOYMENT_SUBJECT). */
  callers?: Record<string, CallerCounts>;
  /** Finished executions by where they came from; absent in buckets written before it was counted. */
  sources?: Partial<Record<ExecutionSource, number>>;
}

export const emptyCallerCounts = (): CallerCounts => ({ counts: {}, bins: {}, accepted: 0, refused_rate: 0, refused_quota: 0 });

/**
 * Reads one usage attribute into a bucket: `n_<status>` and `h_<bin>` for the deployment,
 * `c#<subject>#<the same or accepted, refused_rate, refused_quota>` for one caller. The one
 * reader of the names the stores write.
 */
export function addUsageAttribute(b: UsageBucket, name: string, n: number): void {
  const caller = /^c#([^#]+)#(\w+)$/.exec(name);
  const field = caller ? (caller[2] ?? '') : name;
  let target: { counts: Partial<Record<UsageStatus, number>>; bins: Record<number, number> } = b;
  if (caller) {
    b.callers ??= {};
    const c = (b.callers[caller[1] ?? ''] ??= emptyCallerCounts());
    target = c;
    if (field === 'accepted' || field === 'refused_rate' || field === 'refused_quota') {
      c[field] += n;
      return;
    }
  }
  const source = caller ? undefined : /^s_(\w+)$/.exec(field)?.[1];
  if (source !== undefined && (USAGE_SOURCES as readonly string[]).includes(source)) {
    b.sources ??= {};
    b.sources[source as ExecutionSource] = (b.sources[source as ExecutionSource] ?? 0) + n;
    return;
  }
  const status = /^n_(\w+)$/.exec(field)?.[1];
  if (status && (USAGE_STATUSES as readonly string[]).includes(status))
    target.counts[status as UsageStatus] = (target.counts[status as UsageStatus] ?? 0) + n;
  const bin = /^h_(\d+)$/.exec(field)?.[1];
  if (bin !== undefined) target.bins[Number(bin)] = (target.bins[Number(bin)] ?? 0) + n;
}

/**
 * The attributes one finished execution adds one to (the names addUsageAttribute reads): its
 * status and duration bin, and the same under its consumer when it has one. Every store writes
 * these, so the DynamoDB item and the test store split usage the same way.
 */
export function usageAttributes(inc: { status: UsageStatus; bin: number; consumerId: string | null; source?: ExecutionSource }): string[] {
  const own = [`n_${inc.status}`, `h_${inc.bin}`];
  const bySource = inc.source === undefined ? [] : [`s_${inc.source}`];
  return inc.consumerId === null
    ? [...own, ...bySource]
    : [...own, ...bySource, ...own.map((name) => callerAttribute(inc.consumerId as string, name))];
}

/** A caller's own counter in a usage bucket: `c#<subject>#<what>`. */
export const callerAttribute = (subject: string, what: string): string => `c#${subject}#${what}`;

export interface UsageWindow {
  from: string;
  to: string;
  total: number;
  by_status: Record<UsageStatus, number>;
  /** Finished executions by where they came from (buckets from before sources were counted add to none). */
  by_source: Record<ExecutionSource, number>;
  /** Upper bounds (ms) of the bins holding the 50th and 95th percentile; null without executions; anything past the last bound reads as that bound. */
  p50_ms: number | null;
  p95_ms: number | null;
}

export function isUsageStatus(s: ExecutionStatus): s is UsageStatus {
  return (USAGE_STATUSES as readonly string[]).includes(s);
}

/**
 * What one finished execution adds to usage: one to its status and one to its duration's bin,
 * in the bucket of its completion. Null when it does not count (runs, and executions not
 * finished). Every store counts through this, so the rule is written once.
 */
export function usageIncrement(e: Execution): {
  deploymentId: string;
  bucket: string;
  status: UsageStatus;
  bin: number;
  at: Date;
  consumerId: string | null;
  source: ExecutionSource;
} | null {
  if (e.kind !== 'api' || !e.deployment_id || !e.completed_at || !isUsageStatus(e.status)) return null;
  const at = new Date(e.completed_at);
  return {
    deploymentId: e.deployment_id,
    bucket: bucketOf(at),
    status: e.status,
    bin: binOf(completionDuration(e) ?? 0),
    at,
    consumerId: e.consumer_id ?? null,
    source: e.source ?? 'api',
  };
}

function percentile(bins: readonly number[], total: number, p: number): number | null {
  if (total === 0) return null;
  const rank = Math.ceil(total * p);
  let seen = 0;
  for (let i = 0; i < bins.length; i++) {
    seen += bins[i] ?? 0;
    if (seen >= rank) return DURATION_BOUNDS_MS[Math.min(i, DURATION_BOUNDS_MS.length - 1)] ?? null;
  }
  return DURATION_BOUNDS_MS[DURATION_BOUNDS_MS.length - 1] ?? null;
}

/** Sums the buckets that start at or after `from` into one window. */
export function summarize(buckets: readonly UsageBucket[], from: Date, to: Date): UsageWindow {
  const start = bucketOf(from);
  const within = buckets.filter((b) => b.bucket >= start);
  const by_source = Object.fromEntries(USAGE_SOURCES.map((s) => [s, 0])) as Record<ExecutionSource, number>;
  for (const b of within) for (const s of USAGE_SOURCES) by_source[s] += b.sources?.[s] ?? 0;
  const { total, by_status, p50_ms, p95_ms } = finished(within);
  return { from: start, to: to.toISOString(), total, by_status, by_source, p50_ms, p95_ms };
}

function finished(parts: readonly { counts: Partial<Record<UsageStatus, number>>; bins: Record<number, number> }[]) {
  const by_status: Record<UsageStatus, number> = { completed: 0, failed: 0, cancelled: 0 };
  const bins = new Array<number>(DURATION_BOUNDS_MS.length + 1).fill(0);
  for (const b of parts) {
    for (const s of USAGE_STATUSES) by_status[s] += b.counts[s] ?? 0;
    for (const [i, n] of Object.entries(b.bins)) bins[Number(i)] = (bins[Number(i)] ?? 0) + n;
  }
  const total = USAGE_STATUSES.reduce((sum, s) => sum + by_status[s], 0);
  const timed = bins.reduce((a, b) => a + b, 0);
  return { total, by_status, p50_ms: percentile(bins, timed, 0.5), p95_ms: percentile(bins, timed, 0.95) };
}

export interface CallerWindow {
  accepted: number;
  refused_rate: number;
  refused_quota: number;
  /** Finished executions, as in UsageWindow. */
  total: number;
  by_status: Record<UsageStatus, number>;
  p50_ms: number | null;
  p95_ms: number | null;
}

/** Per caller (consumer id, or `deployment`), the same window: accepted, refused, finished. */
export function summarizeCallers(buckets: readonly UsageBucket[], from: Date): Record<string, CallerWindow> {
  const start = bucketOf(from);
  const parts = new Map<string, CallerCounts[]>();
  for (const b of buckets) {
    if (b.bucket < start) continue;
    for (const [id, c] of Object.entries(b.callers ?? {})) parts.set(id, [...(parts.get(id) ?? []), c]);
  }
  const out: Record<string, CallerWindow> = {};
  for (const [id, cs] of [...parts].sort(([x], [y]) => x.localeCompare(y))) {
    const sum = (k: 'accepted' | 'refused_rate' | 'refused_quota') => cs.reduce((n, c) => n + c[k], 0);
    out[id] = { accepted: sum('accepted'), refused_rate: sum('refused_rate'), refused_quota: sum('refused_quota'), ...finished(cs) };
  }
  return out;
}
