/**
 * A caller's event stream of one execution (GET …/executions/{id}/events/), derived from the
 * record alone: its statuses, the node progress the run writes (progress.ts), and once it is
 * terminal the visible outputs and the result. Every part of the record it reads only grows
 * (statuses move forward, progress is appended to, outputs and the result come with the
 * terminal write), so the list derived from an earlier read is a prefix of the list derived
 * from any later one, and an event's id is its position: resuming after `Last-Event-ID: n` is
 * "skip the first n", across reconnects, function instances and restarts alike.
 */
import { kindOfType } from './nodes';
import { unpackProgress, type NodeProgress, type NodeState } from './progress';
import { isTerminal, type ExecutionStatus } from './transitions';
import type { Execution, NodeType } from './types';
import type { OutputValue, resultBody } from './views';

export const EVENT_NAMES = ['status', 'node', 'waiting', 'output', 'done'] as const;
export type EventName = (typeof EVENT_NAMES)[number];

export interface StatusEventData {
  status: ExecutionStatus;
  at: string;
}
export interface NodeEventData {
  node_id: string;
  type: NodeType;
  state: NodeState;
  at: string;
  duration_ms?: number;
  /** `items` (a map): its items ended so far, of how many ("3 of 8 variants done"). */
  items_done?: number;
  items_total?: number;
}
/** A `node` event of a deployment published with node detail off: how many of how many are done. */
export interface NodeCountData {
  done: number;
  total: number;
}
/**
 * A `waiting` event: a wait node the reader may resume began to wait. `waiting` lists every such
 * node waiting at that moment (in the order they began), each with its resume URL.
 */
export interface WaitingEventData {
  waiting: { node_id: string; resume_url: string; expires_at: string }[];
}
export type OutputEventData = { output: string } & OutputValue;
export type ResultBody = ReturnType<typeof resultBody>;
/**
 * What a terminal execution adds: its outputs (those the reader may see, as in
 * `response_data`) and `done`'s data, the body of the reader's own view of it (a caller's GET
 * result, an owner's GET run).
 */
export interface FinalView {
  outputs: Record<string, OutputValue>;
  body: unknown;
}
export const callerFinal = (result: ResultBody): FinalView => ({ outputs: result.response_data, body: result });

export type ExecutionEvent =
  | { id: number; event: 'status'; data: StatusEventData }
  | { id: number; event: 'node'; data: NodeEventData | NodeCountData }
  | { id: number; event: 'waiting'; data: WaitingEventData }
  | { id: number; event: 'output'; data: OutputEventData }
  | { id: number; event: 'done'; data: unknown };

/** How long a client waits before reconnecting after the stream drops (the `retry:` field). */
export const EVENTS_RETRY_MS = 2000;

/**
 * What a reader sees of the nodes: a filter (for a caller, hidden inputs and outputs never
 * appear), or only counts of finished nodes out of `total` (a deployment published with
 * `events.node_detail: false`: no ids, types or times, so the pipeline's shape stays private).
 */
export type NodeView = ((p: NodeProgress) => boolean) | { countsOf: number };

/**
 * Every event of the execution as it stands, as `nodes` lets the reader see them; `final` is
 * given once the execution is terminal: its outputs become `output` events, then its body is
 * `done`'s data. `resumeUrls` holds the resume URL of each wait node the reader may resume: when
 * one begins to wait, a `waiting` event lists those waiting then.
 */
export function executionEvents(
  e: Execution,
  nodes: NodeView,
  final: FinalView | null,
  resumeUrls: Readonly<Record<string, string>> = {},
): ExecutionEvent[] {
  type Unnumbered = ExecutionEvent extends infer T ? (T extends ExecutionEvent ? Omit<T, 'id'> : never) : never;
  const out: Unnumbered[] = [{ event: 'status', data: { status: 'pending', at: e.created_at } }];
  if (e.started_at) out.push({ event: 'status', data: { status: 'running', at: e.started_at } });
  const finished = new Set<string>();
  // Wait nodes the reader may resume that are waiting, as of the entry read: node → until.
  const open = new Map<string, number>();
  const resumable = (node: string): string | undefined => (Object.hasOwn(resumeUrls, node) ? resumeUrls[node] : undefined);
  const waitingNow = (): Unnumbered => ({
    event: 'waiting',
    data: {
      waiting: [...open].flatMap(([node_id, until]) => {
        const resume_url = resumable(node_id);
        return resume_url === undefined ? [] : [{ node_id, resume_url, expires_at: new Date(until).toISOString() }];
      }),
    },
  });
  for (const p of unpackProgress(e.progress)) {
    const began = p.state === 'waiting' && kindOfType(p.type).role === 'wait' && resumable(p.node) !== undefined;
    if (began) open.set(p.node, p.until ?? p.at);
    else if (p.state === 'finished' || p.state === 'failed') open.delete(p.node);
    if (typeof nodes !== 'function') {
      // One event per node the first time it ends (a re-run after a crash ends some again):
      // progress only grows, so every list is still a prefix of the next. A skipped node ends too.
      if (began) out.push(waitingNow());
      if ((p.state !== 'finished' && p.state !== 'failed' && p.state !== 'skipped') || finished.has(p.node)) continue;
      finished.add(p.node);
      out.push({ event: 'node', data: { done: finished.size, total: Math.max(nodes.countsOf, finished.size) } });
      continue;
    }
    if (nodes(p)) {
      out.push({
        event: 'node',
        data: {
          node_id: p.node,
          type: p.type,
          state: p.state,
          at: new Date(p.at).toISOString(),
          ...(p.duration_ms === undefined ? {} : { duration_ms: p.duration_ms }),
          ...(p.state === 'items' ? { items_done: p.done ?? 0, items_total: p.total ?? 0 } : {}),
        },
      });
    }
    if (began) out.push(waitingNow());
  }
  if (isTerminal(e.status) && final !== null) {
    out.push({ event: 'status', data: { status: e.status, at: e.completed_at ?? e.started_at ?? e.created_at } });
    for (const [output, value] of Object.entries(final.outputs)) out.push({ event: 'output', data: { output, ...value } });
    out.push({ event: 'done', data: final.body });
  }
  return out.map((ev, i) => ({ ...ev, id: i + 1 }) as ExecutionEvent);
}

/** The events after `lastEventId` (none given, or not one of ours: from the start). */
export function eventsAfter(events: readonly ExecutionEvent[], lastEventId: number): ExecutionEvent[] {
  return events.filter((ev) => ev.id > lastEventId);
}

/** `Last-Event-ID` as a position; anything else (absent, malformed, negative) means the start. */
export function parseLastEventId(header: string | undefined): number {
  if (header === undefined || !/^\s*\d{1,9}\s*$/.test(header)) return 0;
  return Number(header.trim());
}

/** One event on the wire. JSON.stringify escapes line breaks, so `data` is always one line. */
export function formatEvent(ev: ExecutionEvent): string {
  return `id: ${ev.id}\nevent: ${ev.event}\ndata: ${JSON.stringify(ev.data)}\n\n`;
}

export const KEEP_ALIVE_COMMENT = ': keep-alive\n\n';
export const retryField = (ms = EVENTS_RETRY_MS): string => `retry: ${ms}\n\n`;

/**
 * Which nodes a caller sees: every transform, http and delay node; an input node only if its
 * input is visible; an output node only if its output is visible. (Input and output nodes are
 * named by their input and output ids.)
 */
export function callerShows(visibleInputs: readonly string[], visibleOutputs: readonly string[]): (p: NodeProgress) => boolean {
  return (p) => {
    const role = kindOfType(p.type).role;
    return role === 'input' ? visibleInputs.includes(p.node) : role === 'output' ? visibleOutputs.includes(p.node) : true;
  };
}
