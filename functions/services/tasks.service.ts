/** The state machine's tasks: MarkRunning, RunNodes and MarkFailed, each a step of the one lifecycle. */
import * as v from 'valibot';
import {
  capTrace,
  runStepTraced,
  timeoutMessage,
  TRACE_MAX_BYTES,
  type AssetView,
  type EngineObjects,
  type Journal,
  type NodeRecord,
} from '../core/engine';
import { kindOf } from '../core/nodes';
import { runNodesTimeoutSeconds, STANDARD_STEPS_PER_WORKFLOW, STEP_BUDGET_MS } from '../../lib/workflow-budget';
import { errorFields } from '../adapters/logger';
import { executionObjectKey } from '../core/object-keys';
import { answerMediaType } from '../core/output-assets';
import type { ObjectRef, PresignedDownload } from '../core/ports';
import { nodeLinkTtlSeconds, servedAsAttachment } from '../core/asset-links';
import { sniffMediaType } from '../core/sniff';
import type { Execution, PipelineDefinition } from '../core/types';
import { webhookWaits } from '../core/pipeline';
import { referencedSecretNames } from '../core/nodes/secrets';
import { isTerminal } from '../core/transitions';
import type { Deps } from '../adapters/deps';
import { writeStream } from './object-writer';
import { executionTimeoutMs } from './execution-timeout';
import { workflowOf } from './workflows';
import { progressRecorder } from './progress.service';
import { resumeUrlsOf } from './resume.service';
import { startNextGeneration } from './wake';
import { afterTerminal, failExecution, finishExecution, markRunning, whileStoreUnavailable, type Finished } from './lifecycle.service';

export { ExecutionMessage } from './messages';
export { executionTimeoutMs } from './execution-timeout';

/**
 * MarkRunning: pending → running, once. A duplicate start, or a cancelled execution, does not
 * proceed. `workflowId` names the state-machine execution: when a retry of this very task finds
 * the execution already running by it (the first attempt's write landed, its reply was lost),
 * it proceeds, or the record would say `running` with nothing running it.
 */
export const taskStart = (d: Deps, executionId: string, workflowId?: string, gen = 0): Promise<{ proceed: boolean }> =>
  markRunning(d, executionId, workflowId, gen);

const outcome = (f: Finished, to: string): { status: string } => ({ status: f.ok ? to : f.status });

/**
 * What a step tells the state machine: `done` (the execution ended, or is no longer this
 * workflow's to run), `wait` `seconds` (a Wait state, then the next step: nothing runs
 * meanwhile), or `step` (the step's time ran out with work left: the next step at once).
 */
export interface StepAnswer {
  status: string;
  next: 'done' | 'wait' | 'step';
  seconds?: number;
  /** The next step's state time-out (lib/workflow-budget.ts runNodesTimeoutSeconds). */
  step_timeout?: number;
  /** Steps this workflow has made so far (the next RunNodes reads it back from `$.run`). */
  steps?: number;
}

/**
 * A Standard workflow that has made STANDARD_STEPS_PER_WORKFLOW steps ends and hands its
 * execution to one of the next generation (as a wake does: functions/services/wake.ts), which
 * goes on from the recorded nodes with a history of its own. Step Functions keeps 25,000 events
 * an execution; without this a job polled for a day or a large map would fail there.
 */
async function handOver(d: Deps, e: Execution): Promise<StepAnswer> {
  return { status: (await startNextGeneration(d, e)) ? 'handed_over' : 'superseded', next: 'done' };
}

/**
 * The longest a Wait lasts before the next step looks again. Step Functions allows a year; a
 * shorter one keeps a long wait's history small and lets a changed deadline (none today) or a
 * lost wake-up be noticed within the day.
 */
export const MAX_WAIT_SECONDS = 86_400;

/**
 * RunNodes: one step of the execution (functions/core/engine.ts runStep). Nodes finished by
 * earlier steps are read from their records, not run again; every node that can run now runs;
 * a node that must wait is recorded waiting, and the state machine waits until the next one is
 * due. The execution's end is recorded with a conditional write. While it runs it watches for a
 * cancel (a poll of the record), so cancelled work stops promptly on AWS too, where stopping
 * the state machine does not stop a running Lambda.
 */
export async function taskRun(d: Deps, executionId: string, gen = 0, steps = 0): Promise<StepAnswer> {
  const e = await whileStoreUnavailable(() => d.executions.get(executionId, d.clock.now(), true));
  if (!e) return { status: 'missing', next: 'done' };
  if (e.status !== 'running') {
    if (isTerminal(e.status)) await afterTerminal(d, e);
    return { status: e.status, next: 'done' };
  }
  // A newer workflow took the execution over (it was woken): this one stands down.
  if ((e.gen ?? 0) > gen) return { status: 'superseded', next: 'done' };
  const version = await whileStoreUnavailable(() => d.pipelines.getVersion(e.pipeline_id, e.version));
  if (!version) {
    const f = await finishExecution(d, e, 'failed', { error_message: `Pipeline version ${e.version} is no longer available` });
    return { ...outcome(f, 'failed'), next: 'done' };
  }
  const def = version.definition;
  // The execution's own machine (absent on older records: Standard, where such records run).
  const workflow = workflowOf(e);

  // Only a pipeline that names secrets reads them (and the key material that opens them).
  const names = referencedSecretNames(def);
  const secrets = names.length > 0 ? await whileStoreUnavailable(() => d.ownerSecrets.values(names)) : undefined;

  const timeoutMs = executionTimeoutMs(d, def, workflow);
  // Links handed to nodes last the execution's own time-out (a job may take hours), not the default.
  const assets = e.assets ? await assetViews(d, e, e.assets, timeoutMs) : undefined;
  // Only a pipeline with wait nodes has resume URLs (and reads the key material they are derived with).
  const resumeUrls = await resumeUrlsOf(d, e, def);
  // Only a pipeline whose nodes record anything has records to read.
  const records = hasRecordedKinds(def) ? await whileStoreUnavailable(() => d.steps.load(e)) : new Map<string, NodeRecord>();
  const journal: Journal = { nodes: records, save: (id, rec, prev, sawEvent) => d.steps.save(e, id, rec, prev, sawEvent ?? false) };
  const abort = new AbortController();
  const stopWatching = watchForCancel(d, executionId, abort);
  const progress = progressRecorder(d, executionId, e.progress);
  const { result, trace: fullTrace } = await runStepTraced(def, e.inputs, {
    http: d.http,
    ...(assets === undefined || !e.assets ? {} : { assets, assetRefs: e.assets }),
    objects: engineObjects(d, e, timeoutMs),
    ...(secrets === undefined ? {} : { secrets }),
    timeoutMs,
    startedAt: Date.parse(e.started_at ?? e.created_at),
    executionId,
    ...(resumeUrls === undefined ? {} : { resumeUrls }),
    ownApiUrls: ownApiUrls(d.config),
    signal: abort.signal,
    now: () => d.clock.now().getTime(),
    onNode: (p) => progress.add(p),
    journal,
    budgetMs: STEP_BUDGET_MS,
    relink: async (asset) => {
      const link = await nodeLink(d, e, asset.ref, timeoutMs);
      return { ...asset.view, url: link.url, expires_at: link.expires_at };
    },
  }).finally(async () => {
    stopWatching();
    // The last progress write lands before the terminal one, which then carries the whole list.
    await progress.settle();
  });
  if (result.status === 'waiting' || result.status === 'continue') {
    const hooks = result.status === 'waiting' ? webhookWaits(def) : new Set<string>();
    const waiting =
      result.status === 'waiting' ? JSON.stringify(result.waiting.map((w) => (hooks.has(w.node) ? { ...w, webhook: true } : w))) : null;
    // Event streams show the wait at once (they wake on a notification, else on their next poll).
    await d.executions
      .recordProgress(executionId, progress.packed(), waiting)
      .then((ok) => ok && d.completions.notify(executionId))
      .catch((err: unknown) => d.log.warn('node progress not recorded', { execution_id: executionId, ...errorFields(err) }));
    const made = steps + 1;
    // A Standard workflow's history is bounded: after so many steps, one of the next generation goes on.
    if (workflow === 'standard' && made >= STANDARD_STEPS_PER_WORKFLOW) return handOver(d, e);
    const now = d.clock.now().getTime();
    const deadline = Date.parse(e.started_at ?? e.created_at) + timeoutMs;
    if (result.status === 'continue')
      return { status: 'running', next: 'step', step_timeout: runNodesTimeoutSeconds(deadline - now), steps: made };
    // Wake for the first node due, or at the deadline to record the time-out; whole seconds.
    const wake = Math.min(result.wake ?? deadline, deadline);
    const seconds = Math.min(MAX_WAIT_SECONDS, Math.max(1, Math.ceil((wake - now) / 1000)));
    return {
      status: 'running',
      next: 'wait',
      seconds,
      step_timeout: runNodesTimeoutSeconds(deadline - now - seconds * 1000),
      steps: made,
    };
  }
  const { trace, truncated } = capTrace(fullTrace, TRACE_MAX_BYTES);
  const traced = { trace, trace_truncated: truncated, progress: progress.packed() };
  if (result.status === 'cancelled') {
    // The cancel already wrote the terminal status; the trace still shows where the work stopped.
    await d.executions
      .recordTrace(executionId, { trace, trace_truncated: truncated })
      .catch((err: unknown) =>
        d.log.warn('could not record the trace of a cancelled execution', { execution_id: executionId, error_message: String(err) }),
      );
    return { status: 'cancelled', next: 'done' };
  }
  if (result.status === 'completed') {
    const assetOutputs = result.output_assets === undefined ? {} : { output_assets: result.output_assets };
    const f = await finishExecution(d, e, 'completed', { outputs: result.outputs, ...assetOutputs, ...traced });
    return { ...outcome(f, 'completed'), next: 'done' };
  }
  const f = await finishExecution(d, e, 'failed', {
    error_message: result.error_message,
    caller_error_message: result.caller_message,
    ...traced,
  });
  return { ...outcome(f, 'failed'), next: 'done' };
}

/** Whether any node of the definition is recorded as it finishes (a call, a wait): else a step records nothing. */
const hasRecordedKinds = (def: PipelineDefinition): boolean => Object.values(def.nodes).some((n) => kindOf(n).durability === 'recorded');

/** The loop guard's URLs: the API's own (PIPEGATE_API_URL) and a custom domain's (PIPEGATE_PUBLIC_URL). */
export const ownApiUrls = (c: Pick<Deps['config'], 'apiUrl' | 'publicUrl'>): (string | undefined)[] => [c.apiUrl, c.publicUrl];

/**
 * The URL a node is handed for a file (an asset input, an http node's binary answer): a
 * capability link to this service's own asset route, GET /v1/assets/{token}, working for the
 * execution's time-out (its definition's `timeout_ms`, else the configured one) plus a margin
 * (core/asset-links.ts nodeLinkTtlSeconds). Not a presigned S3
 * URL: on AWS those are signed with task-run's temporary role credentials and die with them
 * (within hours, at a moment nobody chose) whatever their own expiry says, and a node may hand
 * the URL to an outside service. The link points at the configured public URL, else the base
 * the execution was submitted at, else the API's own; a record with none of them (written
 * before runs recorded their base) falls back to a presigned URL.
 *
 * Nodes never fetch these links themselves (the loop guard refuses this service's host, and an
 * http node's URL is fixed at push): `body_asset` reads the bucket directly.
 */
export async function nodeLink(
  d: Deps,
  e: Pick<Execution, 'base_url'>,
  ref: ObjectRef,
  timeoutMs = d.config.executionTimeoutMs,
): Promise<PresignedDownload> {
  const ttl = nodeLinkTtlSeconds(timeoutMs);
  const base = d.config.publicUrl ?? e.base_url ?? d.config.apiUrl;
  if (base === undefined || base === null)
    return d.objects.presignDownload(ref.key, ref.media_type, ttl, servedAsAttachment(ref.media_type));
  return d.assetLinks.link(ref, base, d.clock.now(), ttl);
}

/**
 * Storage for the assets a run makes and sends: an http node's binary answer goes from the
 * response to the bucket as it arrives, sniffed, counted and hashed on the way
 * (services/object-writer.ts), under the execution's own prefix (so it expires and is removed
 * with it); a body asset is streamed from storage to the request, never from the record and
 * never held whole.
 */
function engineObjects(d: Deps, e: Execution, timeoutMs: number): EngineObjects {
  return {
    async store(name, body, declaredType, maxBytes) {
      const key = executionObjectKey(e, name);
      const written = await writeStream(d.objects, key, body, {
        maxBytes,
        what: 'binary response',
        mediaType: async (head) => answerMediaType(await sniffMediaType(head), declaredType),
      });
      const ref: ObjectRef = { key, media_type: written.media_type, bytes: written.bytes, sha256: written.sha256 };
      const link = await nodeLink(d, e, ref, timeoutMs);
      return {
        ref,
        view: { url: link.url, media_type: ref.media_type, bytes: ref.bytes, sha256: ref.sha256, expires_at: link.expires_at },
      };
    },
    async open(ref) {
      const opened = d.objects.open ? await d.objects.open(ref.key) : await wholeObject(d, ref.key);
      if (opened === null) throw new Error('the stored file of this asset is gone');
      if (opened.bytes !== ref.bytes) throw new Error(`the stored file of this asset is ${opened.bytes} bytes, not ${ref.bytes}`);
      return { bytes: opened.bytes, stream: opened.body };
    },
  };
}

/** An object read whole, for a store without `open`. */
async function wholeObject(d: Deps, key: string): Promise<{ bytes: number; body: AsyncIterable<Uint8Array> } | null> {
  const bytes = await d.objects.read(key);
  if (bytes === null) return null;
  return {
    bytes: bytes.length,
    body: (async function* () {
      yield bytes;
    })(),
  };
}

/** Asset inputs as nodes see them: a time-limited URL and what the file is, never its bytes. */
async function assetViews(d: Deps, e: Execution, refs: Record<string, ObjectRef>, timeoutMs: number): Promise<Record<string, AssetView>> {
  const views: Record<string, AssetView> = {};
  for (const [id, ref] of Object.entries(refs)) {
    const link = await nodeLink(d, e, ref, timeoutMs);
    const view: AssetView = {
      url: link.url,
      media_type: ref.media_type,
      bytes: ref.bytes,
      sha256: ref.sha256,
      expires_at: link.expires_at,
    };
    Object.defineProperty(views, id, { value: view, enumerable: true, writable: true, configurable: true });
  }
  return views;
}

/** Polls the record while the engine works and aborts it once the execution is no longer running. */
function watchForCancel(d: Deps, executionId: string, abort: AbortController): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const tick = async () => {
    const now = await d.executions.get(executionId, d.clock.now(), true).catch(() => null);
    if (stopped) return;
    if (now && now.status !== 'running') abort.abort();
    else timer = setTimeout(tick, d.config.cancelPollMs);
  };
  timer = setTimeout(tick, d.config.cancelPollMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

export const TaskError = v.object({
  Error: v.optional(v.string()),
  Cause: v.optional(v.string()),
});

/** A readable message from a state-machine error, without internals. */
export function failureMessage(err: v.InferOutput<typeof TaskError> | undefined, timeoutMs: number): string {
  if (err?.Error === 'States.Timeout') {
    return timeoutMessage(timeoutMs);
  }
  return `Execution failed: ${err?.Error ?? 'unknown error'}`;
}

/** The execution's own time-out (its version's `timeout_ms` on its machine), else the configured one. */
async function timeoutOf(d: Deps, e: Execution): Promise<number> {
  const version = await d.pipelines.getVersion(e.pipeline_id, e.version).catch(() => null);
  return version ? executionTimeoutMs(d, version.definition, workflowOf(e)) : d.config.executionTimeoutMs;
}

/** MarkFailed: whatever state the execution was left in by a failing step, it ends failed, once. */
export async function taskFail(
  d: Deps,
  executionId: string,
  err: v.InferOutput<typeof TaskError> | undefined,
): Promise<{ status: string }> {
  const e = await d.executions.get(executionId, d.clock.now(), true);
  if (!e) return { status: 'missing' };
  // A step's state time-out is the execution's deadline: the message names the execution's own time-out.
  const timeoutMs = err?.Error === 'States.Timeout' ? await timeoutOf(d, e) : d.config.executionTimeoutMs;
  return outcome(await failExecution(d, e, failureMessage(err, timeoutMs)), 'failed');
}
