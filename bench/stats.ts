/**
 * Small, pure statistics for the benchmark table. Percentiles use the nearest-rank method
 * (no interpolation), so p99 of 100 samples is the 99th smallest, a value that was observed.
 */

export interface Summary {
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of an ascending array; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be within 0..100, got ${p}`);
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] as number;
}

export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

export function summarize(values: readonly number[]): Summary {
  const sorted = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const sum = sorted.reduce((s, x) => s + x, 0);
  return {
    n: sorted.length,
    min: sorted.length ? (sorted[0] as number) : Number.NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length ? (sorted[sorted.length - 1] as number) : Number.NaN,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
  };
}

/** value ÷ floor; NaN when the floor is zero, negative or not a number (no ratio is honest then). */
export function ratio(value: number, floor: number): number {
  if (!Number.isFinite(value) || !Number.isFinite(floor) || floor <= 0) return Number.NaN;
  return value / floor;
}

/** A rate in events per second from a count and a span in milliseconds. */
export function perSecond(count: number, spanMs: number): number {
  return spanMs > 0 ? (count * 1000) / spanMs : Number.NaN;
}

/** Fixed decimals, or "n/a" for NaN, so a missing figure never prints as a number. */
export function fmt(x: number, decimals = 1): string {
  return Number.isFinite(x) ? x.toFixed(decimals) : 'n/a';
}

/** "×3.2" for a ratio, "n/a" when there is none. */
export function fmtRatio(x: number): string {
  return Number.isFinite(x) ? `×${x.toFixed(x >= 10 ? 0 : 1)}` : 'n/a';
}

export type Verdict = 'pass' | 'MISS' | 'n/a';

/** A target check: at most `limit` (kind 'max') or at least `limit` (kind 'min'). */
export function verdict(value: number, kind: 'max' | 'min', limit: number): Verdict {
  if (!Number.isFinite(value)) return 'n/a';
  return (kind === 'max' ? value <= limit : value >= limit) ? 'pass' : 'MISS';
}
