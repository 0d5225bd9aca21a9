/**
 * Node progress as the engine reports it while a run goes on (started, finished, failed), kept
 * on the execution record so a caller's event stream (functions/core/events.ts) can show nodes
 * as they move. Stored as one compact JSON string, like the trace (trace-codec.ts):
 * `{"t":<first event, epoch ms>,"n":[[node, type, state, offset ms, extra?], …]}` (extra: a
 * finished or failed node's duration, a poll's count, a wait's end as an offset), about
 * 30 bytes an event. The list only ever grows (a re-run after a crash appends to it), so every
 * earlier read of it is a prefix of every later one: event ids can be positions.
 */
import { NODE_CODES, NODE_TYPE_OF_CODE } from './nodes';
import type { NodeType } from './types';

/**
 * started · waiting (it waits for the state machine: a long delay, a job between polls, an
 * event) · polled (a job was polled again and is not done) · finished · failed · skipped (its
 * `if` was false, or a node it reads was skipped: it never starts) · items (a map's items
 * ended so far, of how many).
 */
export type NodeState = 'started' | 'waiting' | 'polled' | 'finished' | 'failed' | 'skipped' | 'items';

export interface NodeProgress {
  node: string;
  type: NodeType;
  state: NodeState;
  /** Epoch milliseconds. */
  at: number;
  /** Finished and failed nodes: how long the node took. */
  duration_ms?: number;
  /** Polled nodes: how many polls so far. */
  polls?: number;
  /** A node that began to wait: when its wait runs out (epoch ms; a wait node's resume URL expires then). */
  until?: number;
  /** `items`: a map's items ended so far (done, or failed under `on_item_error: "skip"`), of `total`. */
  done?: number;
  total?: number;
}

/**
 * Most progress entries an execution records: two per node of the largest pipeline (64 nodes)
 * and its re-runs, with room to spare. Past it the run records no more progress (a caller's
 * stream still gets every status, the outputs and `done`), which bounds the writes a run makes
 * and the record's size (≈ 8 KB at most).
 */
export const PROGRESS_MAX_ENTRIES = 256;
/**
 * Polls are shown while the list holds fewer entries than this, so that a job polled for hours
 * leaves room for every node's start and end.
 */
export const PROGRESS_POLL_ROOM = PROGRESS_MAX_ENTRIES - 2 * 64;

const TYPES: Readonly<Record<string, NodeType>> = NODE_TYPE_OF_CODE;
const STATES: Record<string, NodeState> = {
  s: 'started',
  w: 'waiting',
  p: 'polled',
  f: 'finished',
  x: 'failed',
  k: 'skipped',
  i: 'items',
};
const code = <T extends string>(table: Record<string, T>, value: T): string => Object.keys(table).find((k) => table[k] === value) ?? '?';

/** Entries shown only while there is room (PROGRESS_POLL_ROOM): a job's polls, a map's item counts. */
export const isRoomOnly = (p: Pick<NodeProgress, 'state'>): boolean => p.state === 'polled' || p.state === 'items';

export function packProgress(entries: readonly NodeProgress[]): string {
  const t0 = entries.length > 0 ? Math.min(...entries.map((p) => p.at)) : 0;
  const n = entries.map((p) => {
    const row: (string | number)[] = [p.node, NODE_CODES[p.type], code(STATES, p.state), p.at - t0];
    if (p.duration_ms !== undefined) row.push(p.duration_ms);
    else if (p.polls !== undefined) row.push(p.polls);
    else if (p.until !== undefined) row.push(p.until - t0);
    else if (p.done !== undefined && p.total !== undefined) row.push(p.done, p.total);
    return row;
  });
  return JSON.stringify({ t: t0, n });
}

/** The stored form back; [] for anything that is not one (never throws). */
export function unpackProgress(stored: unknown): NodeProgress[] {
  if (typeof stored !== 'string') return [];
  let parsed: { t?: unknown; n?: unknown };
  try {
    parsed = JSON.parse(stored) as { t?: unknown; n?: unknown };
  } catch {
    return [];
  }
  if (typeof parsed?.t !== 'number' || !Array.isArray(parsed.n)) return [];
  const t0 = parsed.t;
  const out: NodeProgress[] = [];
  for (const row of parsed.n as unknown[]) {
    if (!Array.isArray(row)) return out;
    const [node, type, state, offset, duration, total] = row as unknown[];
    const t = typeof type === 'string' ? TYPES[type] : undefined;
    const s = typeof state === 'string' ? STATES[state] : undefined;
    if (typeof node !== 'string' || !t || !s || typeof offset !== 'number') return out;
    const extra =
      typeof duration !== 'number'
        ? {}
        : s === 'polled'
          ? { polls: duration }
          : s === 'waiting'
            ? { until: t0 + duration }
            : s === 'items'
              ? { done: duration, total: typeof total === 'number' ? total : duration }
              : { duration_ms: duration };
    out.push({ node, type: t, state: s, at: t0 + offset, ...extra });
  }
  return out;
}
