/**
 * A node trace as stored: one compact JSON string rather than a list of maps. DynamoDB bills
 * writes per KB of the whole item and counts every attribute name of every map, so the trace
 * as maps would push a small execution's final write past 1 KB (2 WRU instead of 1). Stored
 * as `{"t":<first start, epoch ms>,"n":[[node, type, outcome, start offset, duration, error,
 * http status, preview], …]}` with trailing nulls left out, a few nodes add ≈ 40 bytes each.
 */
import { NODE_CODES, NODE_TYPE_OF_CODE } from './nodes';
import type { NodeTrace, NodeType } from './types';

const TYPES: Readonly<Record<string, NodeType>> = NODE_TYPE_OF_CODE;
const OUTCOMES: Record<string, NodeTrace['outcome']> = { c: 'completed', f: 'failed', s: 'stopped', n: 'not_run', k: 'skipped' };
const code = <T extends string>(table: Record<string, T>, value: T): string => Object.keys(table).find((k) => table[k] === value) ?? '?';

type Row = [
  string,
  string,
  string,
  (number | null)?,
  (number | null)?,
  (string | null)?,
  (number | null)?,
  (string | null)?,
  ([number, string][] | null)?,
];

export function packTrace(trace: readonly NodeTrace[]): string {
  const starts = trace.map((t) => (t.started_at === null ? Number.NaN : Date.parse(t.started_at))).filter((ms) => !Number.isNaN(ms));
  const t0 = starts.length > 0 ? Math.min(...starts) : 0;
  const n = trace.map((t) => {
    const row: (string | number | null | [number, string][])[] = [
      t.node,
      NODE_CODES[t.type],
      code(OUTCOMES, t.outcome),
      t.started_at === null ? null : Date.parse(t.started_at) - t0,
      t.duration_ms,
      t.error,
      t.http_status,
      t.preview,
      t.item_errors === undefined ? null : t.item_errors.map((e): [number, string] => [e.index, e.error]),
    ];
    while (row.length > 3 && row[row.length - 1] === null) row.pop();
    return row;
  });
  return JSON.stringify({ t: t0, n });
}

/** The stored form back as NodeTrace[]; null for anything that is not one (never throws). */
export function unpackTrace(stored: unknown): NodeTrace[] | null {
  if (Array.isArray(stored)) return stored as NodeTrace[];
  if (typeof stored !== 'string') return null;
  let parsed: { t?: unknown; n?: unknown };
  try {
    parsed = JSON.parse(stored) as { t?: unknown; n?: unknown };
  } catch {
    return null;
  }
  if (typeof parsed.t !== 'number' || !Array.isArray(parsed.n)) return null;
  const t0 = parsed.t;
  const iso = (ms: number | null | undefined): string | null => (typeof ms === 'number' ? new Date(t0 + ms).toISOString() : null);
  return (parsed.n as Row[]).map(([node, type, outcome, start, duration, error, http, preview, items]) => ({
    node,
    type: TYPES[type] ?? 'transform',
    outcome: OUTCOMES[outcome] ?? 'not_run',
    started_at: iso(start),
    completed_at: typeof start === 'number' && typeof duration === 'number' ? iso(start + duration) : null,
    duration_ms: duration ?? null,
    error: error ?? null,
    http_status: http ?? null,
    preview: preview ?? null,
    ...(Array.isArray(items) ? { item_errors: items.map(([index, text]) => ({ index, error: text })) } : {}),
  }));
}
