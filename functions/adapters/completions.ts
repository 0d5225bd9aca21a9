/**
 * Two ways to wake a caller that waits for an execution to finish (functions/core/ports.ts).
 *
 * - In process (the local runtime, where every function shares one process): the terminal
 *   write itself wakes the waiters, so a waiting request costs nothing until it is answered.
 * - Across processes (AWS Lambda, and any runtime whose functions run in separate workers):
 *   no process sees another's writes, so the waiter re-reads the record on a backoff
 *   schedule. Each wake costs one strongly consistent GetItem (one read unit for an item under
 *   4 KB); docs/aws.md gives the cost per wait.
 */
import type { CompletionsPort, CompletionWatch } from '../core/ports';

interface Waiter {
  signalled: boolean;
  wake: (() => void) | undefined;
}

export class InProcessCompletions implements CompletionsPort {
  private readonly waiters = new Map<string, Set<Waiter>>();

  /** Executions with at least one waiter (tests and the bench read this). */
  get watched(): number {
    return this.waiters.size;
  }

  watch(executionId: string): CompletionWatch {
    const w: Waiter = { signalled: false, wake: undefined };
    let set = this.waiters.get(executionId);
    if (!set) this.waiters.set(executionId, (set = new Set()));
    set.add(w);
    return {
      next: (ms) => {
        if (w.signalled) {
          w.signalled = false;
          return Promise.resolve(true);
        }
        return new Promise<boolean>((resolve) => {
          const timer = setTimeout(
            () => {
              w.wake = undefined;
              resolve(false);
            },
            Math.max(0, ms),
          );
          w.wake = () => {
            clearTimeout(timer);
            w.wake = undefined;
            resolve(true);
          };
        });
      },
      close: () => {
        w.wake?.();
        const s = this.waiters.get(executionId);
        if (!s) return;
        s.delete(w);
        if (s.size === 0) this.waiters.delete(executionId);
      },
    };
  }

  notify(executionId: string): void {
    for (const w of this.waiters.get(executionId) ?? []) {
      if (w.wake) w.wake();
      else w.signalled = true;
    }
  }
}

/**
 * Re-read delays for a waiter that cannot be woken by the write: quick at first (most
 * executions finish in tens of milliseconds), then once a second.
 */
export const POLL_BACKOFF_MS: readonly number[] = [50, 100, 200, 400, 800, 1000];

export class PollingCompletions implements CompletionsPort {
  constructor(private readonly delaysMs: readonly number[] = POLL_BACKOFF_MS) {}

  watch(): CompletionWatch {
    let i = 0;
    let pending: { timer: ReturnType<typeof setTimeout>; resolve: (v: boolean) => void } | undefined;
    return {
      next: (ms) =>
        new Promise<boolean>((resolve) => {
          const delay = this.delaysMs[Math.min(i++, this.delaysMs.length - 1)] ?? 1000;
          // At the deadline too: one last read gives the freshest answer.
          const timer = setTimeout(
            () => {
              pending = undefined;
              resolve(true);
            },
            Math.max(0, Math.min(delay, ms)),
          );
          pending = { timer, resolve };
        }),
      close: () => {
        if (!pending) return;
        clearTimeout(pending.timer);
        pending.resolve(false);
        pending = undefined;
      },
    };
  }

  notify(): void {
    // Nothing to do: waiters in other processes find the write on their next read.
  }
}
