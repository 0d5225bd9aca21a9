/**
 * A caller's live event stream of one execution (contract §4, events): what the record says now,
 * then each change as it is written, until `done`. Woken by the writes where the runtime can
 * (d.completions: in process, every status move and progress write wakes the stream); across
 * processes (AWS) the same watch re-reads the record on its backoff schedule, ending at one
 * strongly consistent GetItem a second (docs/aws.md prices it).
 */
import {
  callerFinal,
  callerShows,
  eventsAfter,
  executionEvents,
  formatEvent,
  KEEP_ALIVE_COMMENT,
  parseLastEventId,
  retryField,
  type FinalView,
  type NodeView,
} from '../core/events';
import { AppError } from '../core/errors';
import { unpackProgress } from '../core/progress';
import { isTerminal } from '../core/transitions';
import type { DeploymentRecord, Execution } from '../core/types';
import { responseData, resultBody, runBody } from '../core/views';
import type { CallerAuth } from '../core/consumers';
import type { Deps } from '../adapters/deps';
import { liveDeployment, ownedExecution } from './caller.service';
import { callerOutputIds, outputLinks } from './output-links';

/** A comment at least this often keeps proxies and API Gateway's idle time-out from closing a quiet stream. */
export const EVENTS_KEEP_ALIVE_MS = 10_000;
/**
 * A stream closes itself after this long, before API Gateway's 15-minute ceiling for a
 * streamed answer cuts it; the client reconnects (the `retry:` hint) with Last-Event-ID and
 * loses nothing.
 */
export const EVENTS_STREAM_MAX_MS = 14 * 60_000;

export interface EventStreamOptions {
  lastEventId: string | undefined;
  baseUrl: string;
  keepAliveMs?: number;
  maxMs?: number;
}

/**
 * Checks the caller may read the execution (404 otherwise, before any byte is sent), then the
 * stream: `retry:`, the events after Last-Event-ID, each new one as it is written, `done` last.
 * The body is pulled: a reader that does not read stops the loop (no events pile up in memory).
 */
export async function openEventStream(
  d: Deps,
  auth: CallerAuth,
  executionId: string,
  opts: EventStreamOptions,
): Promise<AsyncIterable<string>> {
  return streamOf(d, executionId, opts, async () => {
    const first = await ownedExecution(d, auth, executionId);
    // The authorizer let the key through, so the deployment was live a moment ago; one deleted
    // since reads as its executions do, gone.
    const dep = await liveDeployment(d, auth).catch((err: unknown) => {
      throw err instanceof AppError && err.code === 'DeploymentNotFound' ? new AppError('ExecutionNotFound') : err;
    });
    return {
      first,
      shows: await callerNodeView(d, dep, first),
      resumable: callerResumable(first),
      final: async (e) => callerFinal(resultBody(e, await outputLinks(d, e, opts.baseUrl, callerOutputIds(e)))),
    };
  });
}

/** What a caller (or the deployment's web form) sees of an execution's nodes. */
export async function callerNodeView(d: Deps, dep: Pick<DeploymentRecord, 'node_detail' | 'inputs'>, first: Execution): Promise<NodeView> {
  // Node detail off: counts only, of the nodes of the version this execution runs.
  return dep.node_detail === false
    ? { countsOf: Object.keys((await d.pipelines.getVersion(first.pipeline_id, first.version))?.definition.nodes ?? {}).length }
    : callerShows(
        dep.inputs.filter((i) => i.visible).map((i) => i.id),
        first.visible_outputs ?? [],
      );
}

/** An owner's run (404 Run Not Found otherwise): every node and output, `done` holding the run as GET run shows it. */
export async function openRunEventStream(
  d: Deps,
  pipelineId: string,
  runId: string,
  opts: EventStreamOptions,
): Promise<AsyncIterable<string>> {
  return streamOf(d, runId, opts, async () => {
    const first = await d.executions.get(runId, d.clock.now());
    if (!first || first.kind !== 'run' || first.pipeline_id !== pipelineId) throw new AppError('RunNotFound');
    return {
      first,
      shows: () => true,
      resumable: () => true,
      final: async (e) => {
        const links = await outputLinks(d, e, opts.baseUrl, null);
        return { outputs: responseData({ ...e, visible_outputs: null }, links), body: runBody(e, links) };
      },
    };
  });
}

/** What a stream needs, found (and the reader's right to it checked) before any byte is sent. */
export interface StreamSource {
  first: Execution;
  shows: NodeView;
  /** Whether the reader may resume this wait node (learn its URL): a caller the visible ones, the owner every one. */
  resumable: (nodeId: string) => boolean;
  final: (e: Execution) => Promise<FinalView>;
}

/** A caller (or the web form) may resume the wait nodes the deployment publishes visible. */
export const callerResumable =
  (e: Pick<Execution, 'visible_waits'>) =>
  (nodeId: string): boolean =>
    (e.visible_waits ?? []).includes(nodeId);

/**
 * The one stream loop every event route shares (callers, owners' runs, the web form): `open`
 * finds the execution and checks the reader may see it (throwing answers before the stream
 * starts); then `retry:`, the events after Last-Event-ID, each new one as it is written, `done`.
 */
export async function streamOf(
  d: Deps,
  executionId: string,
  opts: EventStreamOptions,
  open: () => Promise<StreamSource>,
): Promise<AsyncIterable<string>> {
  // Watch before the first read, so a write between that read and the first wait still wakes us.
  const watch = d.completions.watch(executionId);
  let source: StreamSource;
  try {
    source = await open();
  } catch (err) {
    watch.close();
    throw err;
  }
  const keepAliveMs = opts.keepAliveMs ?? EVENTS_KEEP_ALIVE_MS;
  const until = Date.now() + (opts.maxMs ?? EVENTS_STREAM_MAX_MS);
  let sent = parseLastEventId(opts.lastEventId);
  // Resume URLs of the wait nodes the reader may resume, derived once each, as they begin to wait.
  const resumeUrls: Record<string, string> = Object.create(null) as Record<string, string>;
  const learnResumeUrls = async (e: Execution): Promise<void> => {
    for (const p of unpackProgress(e.progress)) {
      if (p.state !== 'waiting' || p.type !== 'wait' || Object.hasOwn(resumeUrls, p.node) || !source.resumable(p.node)) continue;
      resumeUrls[p.node] = await d.resumeLinks.url(opts.baseUrl, executionId, p.node);
    }
  };

  async function* stream(): AsyncGenerator<string> {
    let e = source.first;
    let lastWrite = Date.now();
    try {
      yield retryField();
      for (;;) {
        const terminal = isTerminal(e.status);
        await learnResumeUrls(e);
        const events = executionEvents(e, source.shows, terminal ? await source.final(e) : null, resumeUrls);
        for (const ev of eventsAfter(events, sent)) {
          yield formatEvent(ev);
          sent = ev.id;
          lastWrite = Date.now();
        }
        if (terminal) return;
        if (Date.now() - lastWrite >= keepAliveMs) {
          yield KEEP_ALIVE_COMMENT;
          lastWrite = Date.now();
        }
        const left = until - Date.now();
        if (left <= 0) return;
        await watch.next(Math.max(1, Math.min(left, keepAliveMs - (Date.now() - lastWrite))));
        // Strongly consistent: an eventually consistent read may not show the write that woke us yet.
        e = (await d.executions.get(executionId, d.clock.now(), true)) ?? e;
      }
    } finally {
      watch.close();
    }
  }
  return stream();
}
