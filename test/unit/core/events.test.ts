/**
 * The event stream derived from the record (functions/core/events.ts) and the progress codec
 * (functions/core/progress.ts): pure, no I/O. The property that makes resume safe: every list
 * derived from a later record extends the list derived from an earlier one, so a reader that
 * resumes after Last-Event-ID never sees an event twice and never misses one.
 */
import fc from 'fast-check';
import {
  callerFinal,
  callerShows,
  eventsAfter,
  executionEvents,
  formatEvent,
  parseLastEventId,
  type ExecutionEvent,
  type NodeView,
  type ResultBody,
} from '../../../functions/core/events';
import { packProgress, unpackProgress, type NodeProgress } from '../../../functions/core/progress';
import type { Execution } from '../../../functions/core/types';
import { resultBody } from '../../../functions/core/views';
import { anExecution } from '../../support/fakes';

const T0 = Date.parse('2026-11-24T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const all = () => true;

const progressArb = fc.array(
  fc.record({
    node: fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/),
    type: fc.constantFrom('input' as const, 'transform' as const, 'http' as const, 'delay' as const, 'output' as const),
    state: fc.constantFrom('started' as const, 'finished' as const, 'failed' as const),
    at: fc.integer({ min: T0, max: T0 + 3_600_000 }),
    duration_ms: fc.option(fc.integer({ min: 0, max: 600_000 }), { nil: undefined }),
  }),
  { maxLength: 40 },
);
const clean = (ps: NodeProgress[]) =>
  ps.map((p) => (p.duration_ms === undefined ? { node: p.node, type: p.type, state: p.state, at: p.at } : p));

describe('progress codec', () => {
  it('round-trips any progress list', () => {
    fc.assert(fc.property(progressArb, (ps) => expect(unpackProgress(packProgress(clean(ps)))).toEqual(clean(ps))));
  });

  it('reads anything that is not a stored list as empty, never throwing', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.jsonValue().map((j) => JSON.stringify(j)),
          fc.anything(),
        ),
        (x) => expect(Array.isArray(unpackProgress(x))).toBe(true),
      ),
    );
    expect(unpackProgress(null)).toEqual([]);
    expect(unpackProgress('{"t":1,"n":[["a","t","s",0],["b","?","s",0]]}')).toEqual([
      { node: 'a', type: 'transform', state: 'started', at: 1 },
    ]);
  });
});

/** The record after `k` progress entries; optionally terminal (with its result). */
function recordAt(
  base: Execution,
  ps: NodeProgress[],
  k: number,
  terminal: 'completed' | 'failed' | 'cancelled' | null,
): { e: Execution; result: ResultBody | null } {
  const e: Execution = {
    ...base,
    status: terminal ?? (base.started_at ? 'running' : 'pending'),
    progress: k > 0 ? packProgress(ps.slice(0, k)) : null,
    ...(terminal ? { completed_at: iso(T0 + 4_000_000), outputs: terminal === 'completed' ? { out: 'v', hidden: 'h' } : null } : {}),
  };
  return { e, result: terminal ? resultBody(e) : null };
}

describe('executionEvents', () => {
  const base = anExecution({ created_at: iso(T0 - 10), visible_outputs: ['out'] });

  it('orders statuses, nodes, the terminal status, visible outputs and done, ids 1..n', () => {
    const started = { ...base, started_at: iso(T0) };
    const ps: NodeProgress[] = [
      { node: 'name', type: 'input', state: 'started', at: T0 + 1 },
      { node: 'name', type: 'input', state: 'finished', at: T0 + 2, duration_ms: 1 },
    ];
    const { e, result } = recordAt(started, ps, 2, 'completed');
    const evs = executionEvents(e, all, result && callerFinal(result));
    expect(evs.map((x) => x.event)).toEqual(['status', 'status', 'node', 'node', 'status', 'output', 'done']);
    expect(evs.map((x) => x.id)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(evs[3]?.data).toEqual({ node_id: 'name', type: 'input', state: 'finished', at: iso(T0 + 2), duration_ms: 1 });
    expect(evs[5]?.data).toEqual({ output: 'out', value: 'v', value_type: 'RAW' });
    expect(evs[6]?.data).toEqual(result);
  });

  it('a cancel before the start: pending, cancelled, done', () => {
    const { e, result } = recordAt(base, [], 0, 'cancelled');
    expect(executionEvents(e, all, result && callerFinal(result)).map((x) => (x.event === 'status' ? x.data.status : x.event))).toEqual([
      'pending',
      'cancelled',
      'done',
    ]);
  });

  it('leaves out what callers may not see: hidden input and output nodes', () => {
    const shows = callerShows(['name'], ['out']);
    const ps: NodeProgress[] = ['name', 'secret', 'out', 'hidden_out', 'step'].map((node, i) => ({
      node,
      type: node === 'step' ? 'transform' : node.includes('out') ? 'output' : 'input',
      state: 'finished',
      at: T0 + i,
    }));
    const { e } = recordAt({ ...base, started_at: iso(T0) }, ps, ps.length, null);
    const nodes = executionEvents(e, shows, null).flatMap((x) => (x.event === 'node' && 'node_id' in x.data ? [x.data.node_id] : []));
    expect(nodes).toEqual(['name', 'out', 'step']);
  });

  it('with node detail off: counts only, one per node the first time it ends, never an id, type or time', () => {
    const p = (node: string, state: NodeProgress['state'], at: number): NodeProgress => ({ node, type: 'transform', state, at });
    // A crash re-run ends `a` a second time: counted once.
    const ps = [
      p('a', 'started', T0),
      p('a', 'finished', T0 + 1),
      p('b', 'started', T0 + 2),
      p('a', 'started', T0 + 3),
      p('a', 'finished', T0 + 4),
      p('b', 'failed', T0 + 5),
    ];
    const { e } = recordAt({ ...base, started_at: iso(T0) }, ps, ps.length, null);
    const nodes = executionEvents(e, { countsOf: 3 }, null).filter((x) => x.event === 'node');
    expect(nodes.map((x) => x.data)).toEqual([
      { done: 1, total: 3 },
      { done: 2, total: 3 },
    ]);
  });

  it('any later record extends the events of an earlier one, so a resuming reader never repeats or misses an event', () => {
    fc.assert(
      fc.property(
        progressArb,
        fc.constantFrom('completed' as const, 'failed' as const, 'cancelled' as const),
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.constantFrom<NodeView>(all, { countsOf: 5 }),
        (ps, end, cuts, view) => {
          const started = { ...base, started_at: iso(T0) };
          // The record's history: pending, running with 0..n entries, terminal.
          const history = [
            recordAt(base, [], 0, null),
            ...ps.map((_p, k) => recordAt(started, ps, k + 1, null)),
            recordAt(started, ps, ps.length, end),
          ];
          const lists = history.map(({ e, result }) => executionEvents(e, view, result && callerFinal(result)));
          for (let i = 1; i < lists.length; i++) expect(lists[i]?.slice(0, lists[i - 1]?.length)).toEqual(lists[i - 1]);
          // A reader that connects at random points of the history, each time after the last id it saw.
          const seen: ExecutionEvent[] = [];
          const points = [...new Set(cuts.map((c) => c % history.length)), history.length - 1].sort((a, b) => a - b);
          for (const p of points) seen.push(...eventsAfter(lists[p] ?? [], seen.at(-1)?.id ?? 0));
          expect(seen).toEqual(lists.at(-1));
          expect(seen.at(-1)?.event).toBe('done');
        },
      ),
    );
  });
});

describe('wire format', () => {
  it('Last-Event-ID: a position, anything else the start', () => {
    expect(parseLastEventId('7')).toBe(7);
    expect(parseLastEventId(' 12 ')).toBe(12);
    fc.assert(fc.property(fc.string(), (s) => expect(Number.isInteger(parseLastEventId(s)) && parseLastEventId(s) >= 0).toBe(true)));
    for (const bad of [undefined, '', '-1', '1.5', 'abc', '1e3', '9999999999']) expect(parseLastEventId(bad)).toBe(0);
  });

  it('keeps each event on its lines whatever its strings hold', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        const text = formatEvent({ id: 3, event: 'output', data: { output: 'o', value: s, value_type: 'RAW' } });
        const lines = text.split('\n');
        expect(lines.slice(0, 2)).toEqual(['id: 3', 'event: output']);
        expect(lines).toHaveLength(5);
        expect(JSON.parse(lines[2]?.slice('data: '.length) ?? '')).toMatchObject({ value: s });
      }),
    );
  });
});

describe('waiting events', () => {
  const URL_A = 'https://api.example/v1/resume/w1.a';
  const waits: NodeProgress[] = [
    { node: 'submit', type: 'http', state: 'finished', at: T0, duration_ms: 5 },
    { node: 'approval', type: 'wait', state: 'started', at: T0 + 10 },
    { node: 'approval', type: 'wait', state: 'waiting', at: T0 + 11, until: T0 + 60_011 },
    { node: 'hidden', type: 'wait', state: 'waiting', at: T0 + 12, until: T0 + 60_012 },
    { node: 'later', type: 'delay', state: 'waiting', at: T0 + 13, until: T0 + 90_000 },
    { node: 'approval', type: 'wait', state: 'finished', at: T0 + 20, duration_ms: 9 },
  ];

  it('keeps when a wait runs out in the packed progress', () => {
    expect(unpackProgress(packProgress(waits))).toEqual(waits);
  });

  it('follow a wait node the reader may resume as it begins to wait, with its URL and expiry, and only those', () => {
    const e = anExecution({ status: 'running', started_at: iso(T0), progress: packProgress(waits) });
    const events = executionEvents(e, all, null, { approval: URL_A });
    const waitingEvents = events.filter((ev) => ev.event === 'waiting');
    expect(waitingEvents).toEqual([
      {
        id: expect.any(Number),
        event: 'waiting',
        data: { waiting: [{ node_id: 'approval', resume_url: URL_A, expires_at: iso(T0 + 60_011) }] },
      },
    ]);
    // Right after the node's own `waiting` event.
    const at = events.findIndex((ev) => ev.event === 'waiting');
    expect(events[at - 1]).toMatchObject({ event: 'node', data: { node_id: 'approval', state: 'waiting' } });
    // Without a URL for it (a hidden wait, a reader who may not resume it): none.
    expect(executionEvents(e, all, null).some((ev) => ev.event === 'waiting')).toBe(false);
    // With node detail off, the waiting event still comes (the owner published the wait visible).
    expect(executionEvents(e, { countsOf: 5 }, null, { approval: URL_A }).filter((ev) => ev.event === 'waiting')).toHaveLength(1);
  });

  it('stay a prefix of every later list', () => {
    const base = anExecution({ status: 'running', started_at: iso(T0) });
    for (let k = 0; k < waits.length; k++) {
      const early = executionEvents({ ...base, progress: packProgress(waits.slice(0, k)) }, all, null, { approval: URL_A });
      const late = executionEvents({ ...base, progress: packProgress(waits) }, all, null, { approval: URL_A });
      expect(late.slice(0, early.length)).toEqual(early);
    }
  });
});
