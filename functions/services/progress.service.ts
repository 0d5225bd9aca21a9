/**
 * Writes a run's node progress to its record while the engine works, so callers' event streams
 * see nodes move (functions/core/events.ts). Writes are spaced: none before the run has gone
 * on for PROGRESS_WRITE_INTERVAL_MS, then at most one per interval, one at a time, each
 * carrying every event so far (events that come meanwhile go out together). An execution that
 * ends within the interval makes no progress write at all (its terminal write carries the whole
 * list), so the cost is bounded by the run's length and by PROGRESS_MAX_ENTRIES, never by how
 * busy its nodes are. Each write replaces the list with a conditional UpdateItem on `running`,
 * so it never lands after a terminal write. Progress is a view: a write that fails is logged
 * and the run goes on.
 */
import { isRoomOnly, packProgress, PROGRESS_MAX_ENTRIES, PROGRESS_POLL_ROOM, unpackProgress, type NodeProgress } from '../core/progress';
import type { Deps } from '../adapters/deps';
import { errorFields } from '../adapters/logger';

/** The least time between two progress writes of one run, and before its first. */
export const PROGRESS_WRITE_INTERVAL_MS = 250;

export interface ProgressRecorder {
  /** The engine's onNode. */
  add(p: NodeProgress): void;
  /** No more writes; waits for the one in flight, if any (the terminal write carries the rest: `packed`). */
  settle(): Promise<void>;
  /** Everything so far, packed: what the terminal write stores. */
  packed(): string;
  /** Writes made so far (tests and the bench read it). */
  readonly writes: number;
}

export function progressRecorder(
  d: Deps,
  executionId: string,
  stored: string | null | undefined,
  intervalMs = PROGRESS_WRITE_INTERVAL_MS,
): ProgressRecorder {
  // A re-run after a crash appends to what the first attempt wrote: the list only grows.
  const entries = unpackProgress(stored);
  let dirty = false;
  let closed = false;
  let writes = 0;
  let nextAt = Date.now() + intervalMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inflight: Promise<void> | null = null;

  const schedule = (): void => {
    if (timer !== undefined || inflight !== null || closed || !dirty) return;
    timer = setTimeout(flush, Math.max(0, nextAt - Date.now()));
  };
  function flush(): void {
    timer = undefined;
    if (closed || !dirty) return;
    dirty = false;
    nextAt = Date.now() + intervalMs;
    writes += 1;
    inflight = d.executions
      .recordProgress(executionId, packProgress(entries))
      .then(
        (ok) => {
          // Not running any more (a cancel won): nothing further to show.
          if (!ok) closed = true;
          else d.completions.notify(executionId);
        },
        (err: unknown) => d.log.warn('node progress not recorded', { execution_id: executionId, ...errorFields(err) }),
      )
      .finally(() => {
        inflight = null;
        schedule();
      });
  }

  return {
    add(p) {
      if (entries.length >= PROGRESS_MAX_ENTRIES) return;
      // Polls and item counts leave room for every node's start and end.
      if (isRoomOnly(p) && entries.length >= PROGRESS_POLL_ROOM) return;
      entries.push(p);
      dirty = true;
      schedule();
    },
    async settle() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      await inflight;
    },
    packed: () => packProgress(entries),
    get writes() {
      return writes;
    },
  };
}
