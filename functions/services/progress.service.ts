/**
 * Writes a run's node progress to its record while the engine works, so callers' event streams
 * see nodes move (functions/core/events.ts). One write at a time: events that come while a
 * write is in flight go out together in the next one, so a run makes at most one write per
 * event (PROGRESS_MAX_ENTRIES bounds those) and usually fewer. Each write replaces the whole
 * list with a conditional UpdateItem on `running`, so it never lands after a terminal write.
 * Progress is a view: a write that fails is logged and the run goes on.
 */
import { packProgress, PROGRESS_MAX_ENTRIES, unpackProgress, type NodeProgress } from '../core/progress';
import type { Deps } from '../adapters/deps';
import { errorFields } from '../adapters/logger';

export interface ProgressRecorder {
  /** The engine's onNode. */
  add(p: NodeProgress): void;
  /** Waits for the write in flight, if any (the terminal write carries the rest: `packed`). */
  settle(): Promise<void>;
  /** Everything so far, packed: what the terminal write stores. */
  packed(): string;
  /** Writes made so far (tests and the bench read it). */
  readonly writes: number;
}

export function progressRecorder(d: Deps, executionId: string, stored: string | null | undefined): ProgressRecorder {
  // A re-run after a crash appends to what the first attempt wrote: the list only grows.
  const entries = unpackProgress(stored);
  let dirty = false;
  let stopped = false;
  let writes = 0;
  let loop: Promise<void> | null = null;

  const run = async (): Promise<void> => {
    while (dirty && !stopped) {
      dirty = false;
      writes += 1;
      try {
        const ok = await d.executions.recordProgress(executionId, packProgress(entries));
        if (!ok) stopped = true;
        else d.completions.notify(executionId);
      } catch (err) {
        d.log.warn('node progress not recorded', { execution_id: executionId, ...errorFields(err) });
      }
    }
    loop = null;
  };

  return {
    add(p) {
      if (entries.length >= PROGRESS_MAX_ENTRIES) return;
      entries.push(p);
      dirty = true;
      loop ??= run();
    },
    settle: () => loop ?? Promise.resolve(),
    packed: () => packProgress(entries),
    get writes() {
      return writes;
    },
  };
}
