/**
 * `--follow`: an execution's or a run's progress live, from its event stream (contract §4 and §7): one
 * compact line per node that finishes or fails, on stderr; on a terminal a spinner names what
 * is running meanwhile. A stream that drops is resumed with Last-Event-ID, so no line is lost
 * or printed twice. Ends at `done`, whose status it returns.
 */
import type { EventSourceMessage } from 'eventsource-parser';
import { waitOrInterrupt, type Ctx } from './context';
import { FailureError } from './errors';

/** Reconnects in a row without a new event before giving up (each after the server's `retry:`). */
const MAX_SILENT_RECONNECTS = 5;
const RECONNECT_MS = 2000;

const seconds = (ms: unknown): string => (typeof ms === 'number' ? `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s` : '');

export interface FollowOptions {
  /** `execution <id>` or `run <id>`, for messages. */
  what: string;
  /** Opens the stream after `lastEventId` (client.executionEvents or client.runEvents). */
  open: (lastEventId: string | undefined, signal: AbortSignal) => AsyncIterable<EventSourceMessage>;
  /** The command to read the result later, for messages. */
  later: string;
  timeoutSeconds: number;
  followUp: string;
}

export async function followEvents(ctx: Ctx, o: FollowOptions): Promise<{ status: string }> {
  const { out } = ctx;
  const spinner = out.spinner();
  const running = new Set<string>();
  const show = () => {
    if (spinner.interactive) spinner.update(running.size > 0 ? `running ${[...running].join(', ')}…` : 'waiting…');
  };
  const handle = (m: EventSourceMessage): string | null => {
    let data: Record<string, unknown>;
    try {
      data = JSON.parse(m.data) as Record<string, unknown>;
    } catch {
      return null;
    }
    if (m.event === 'done') return typeof data.status === 'string' ? data.status : 'unknown';
    if (m.event === 'node' && typeof data.done === 'number') {
      // A deployment published with node detail off: counts only.
      spinner.stop();
      out.note(`  ${out.e.green('✓')} ${data.done} of ${String(data.total)} nodes done`);
      show();
    } else if (m.event === 'node') {
      const id = String(data.node_id);
      if (data.state === 'started') running.add(id);
      else if (data.state === 'waiting' || data.state === 'polled') running.add(id);
      else if (data.state === 'items') {
        spinner.stop();
        out.note(
          `  ${out.e.dim('…')} ${id} ${out.e.dim(String(data.type))} ${String(data.items_done)} of ${String(data.items_total)} items done`,
        );
      } else if (data.state === 'skipped') {
        running.delete(id);
        spinner.stop();
        out.note(`  ${out.e.dim('–')} ${id} ${out.e.dim(String(data.type))} skipped`);
      } else {
        running.delete(id);
        spinner.stop();
        const mark = data.state === 'failed' ? out.e.red('✗') : out.e.green('✓');
        out.note(
          `  ${mark} ${id} ${out.e.dim(String(data.type))} ${data.state === 'failed' ? 'failed ' : ''}${seconds(data.duration_ms)}`.trimEnd(),
        );
      }
      show();
    } else if (m.event === 'status' && spinner.interactive) {
      spinner.update(`${o.what.split(' ')[0] ?? ''} ${String(data.status)}…`);
    }
    return null;
  };

  try {
    return await waitOrInterrupt(ctx, o.followUp, async (signal) => {
      const deadline = AbortSignal.any([signal, AbortSignal.timeout(o.timeoutSeconds * 1000)]);
      let last: string | undefined;
      let silent = 0;
      for (;;) {
        let fresh = false;
        for await (const m of o.open(last, deadline)) {
          if (m.id !== undefined) last = m.id;
          fresh = true;
          const status = handle(m);
          if (status !== null) return { status };
        }
        if (signal.aborted) throw new Error('stopped waiting');
        if (deadline.aborted)
          throw new FailureError(
            `${o.what} has not finished after ${o.timeoutSeconds} s; stopped following (it keeps going on the service)`,
          );
        silent = fresh ? 0 : silent + 1;
        if (silent >= MAX_SILENT_RECONNECTS)
          throw new FailureError(`the event stream of ${o.what} keeps closing without news; look later with ${o.later}`);
        await ctx.sleep(RECONNECT_MS, deadline);
      }
    });
  } finally {
    spinner.stop();
  }
}
