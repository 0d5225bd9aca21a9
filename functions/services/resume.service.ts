/**
 * Wait nodes' resume URLs (functions/core/nodes/wait.ts): the resume itself (POST
 * /v1/resume/{token}, no key: the URL is the capability), and the `waiting` lists views show
 * (who may learn which URL: callers the visible wait nodes', owners every one).
 */
import { AppError } from '../core/errors';
import { assertJsonMediaType, isBlankJson, parseJson } from '../core/json-body';
import { kindOf } from '../core/nodes';
import { resumeBodyProblems, RESUME_MAX_BYTES, type WaitNode } from '../core/nodes/wait';
import { bodyLimitDetail } from '../core/body-size';
import { isTerminal } from '../core/transitions';
import type { Execution, PipelineDefinition } from '../core/types';
import { waitsOf } from '../core/views';
import type { Deps } from '../adapters/deps';
import { errorFields } from '../adapters/logger';
import { wakeExecution } from './wake';

/** One wait a reader may send an event to: the execution's `waiting` list. */
export interface WaitingEntry {
  node_id: string;
  resume_url: string;
  /** When the wait times out and the URL stops working. */
  expires_at: string;
}

export interface ResumeRequest {
  token: string;
  body: string | null;
  contentType: string | undefined;
}

/** How often a resume looks again for the generation to wake, should other wakes keep winning. */
const WAKE_ATTEMPTS = 5;

/**
 * POST /v1/resume/{token}: the event becomes the wait node's value, once. 404 for a token this
 * service never issued; 415, 413 and 400 for a body that is not a JSON object within the limit
 * (or not the node's `fields`); 409 once an event was kept; 410 once the wait is over (timed
 * out, or the execution ended). A node that is not waiting yet keeps the event and takes it when
 * it begins to wait; a waiting one wakes its execution at once.
 */
export async function resume(d: Deps, req: ResumeRequest): Promise<{ status: 'resumed' | 'kept'; execution_id: string; node_id: string }> {
  const claims = await d.resumeLinks.check(req.token);
  if (claims === null) throw new AppError('ResumeNotFound', 'no wait behind this URL: check that it was copied whole');
  assertJsonMediaType(req.body, req.contentType);
  const size = req.body === null ? 0 : Buffer.byteLength(req.body, 'utf8');
  if (size > RESUME_MAX_BYTES)
    throw new AppError('PayloadTooLarge', bodyLimitDetail(RESUME_MAX_BYTES).replace('request body', 'resume body'));

  const now = d.clock.now();
  const e = await d.executions.get(claims.execution_id, now, true);
  if (!e) throw new AppError('ResumeGone', 'the execution this wait belongs to is no longer kept');
  const node = await waitNodeOf(d, e, claims.node_id);
  if (isTerminal(e.status)) {
    const { evented } = await d.steps.peek(e, claims.node_id);
    if (evented) throw used();
    throw new AppError('ResumeGone', `the execution is ${e.status}: the wait is over`, { status: e.status });
  }

  const value = parsedBody(req.body);
  const problems = resumeBodyProblems(node, value);
  if (problems.length > 0) throw new AppError('InvalidRequest', problems);

  const kept = await d.steps.keepEvent(e, claims.node_id, { value, at: now.getTime() });
  if (!kept.kept) {
    if (kept.why === 'used') throw used();
    if (kept.why === 'skipped') throw new AppError('ResumeGone', 'the wait was skipped: its if was false, or a node it reads was skipped');
    throw new AppError('ResumeGone', 'the wait timed out before this event came');
  }
  if (kept.state !== 'waiting') return { status: 'kept', execution_id: e.execution_id, node_id: claims.node_id };
  await offTheList(d, e, claims.node_id);
  await wakeUntilTaken(d, e.execution_id).catch((err: unknown) =>
    // The event is kept: the node takes it at its next step (at the latest, its time-out's).
    d.log.warn('could not wake the execution at once', { execution_id: e.execution_id, ...errorFields(err) }),
  );
  return { status: 'resumed', execution_id: e.execution_id, node_id: claims.node_id };
}

/**
 * Takes a resumed node off the execution's `waiting` list, so views stop offering a URL that
 * was used (the next step writes the list afresh anyway). A view only: a failure is logged.
 */
async function offTheList(d: Deps, e: Execution, nodeId: string): Promise<void> {
  if (typeof e.waiting !== 'string') return;
  let list: unknown;
  try {
    list = JSON.parse(e.waiting);
  } catch {
    return;
  }
  if (!Array.isArray(list)) return;
  const rest = (list as { node?: unknown }[]).filter((w) => w?.node !== nodeId);
  if (rest.length === list.length) return;
  await d.executions
    .replaceWaiting(e.execution_id, e.waiting, rest.length > 0 ? JSON.stringify(rest) : null)
    .catch((err: unknown) =>
      d.log.warn('could not take a resumed node off the waiting list', { execution_id: e.execution_id, ...errorFields(err) }),
    );
}

const used = (): AppError => new AppError('ResumeAlreadyUsed', 'an event was already posted to this URL: a resume URL works once');

/** The body's JSON value; a blank body is no object (400). */
function parsedBody(body: string | null): unknown {
  if (isBlankJson(body))
    throw new AppError('InvalidRequest', [{ path: '(body)', reason: 'the body must be a JSON object, and none was sent' }]);
  const parsed = parseJson(body as string);
  if (!parsed.ok) throw new AppError('InvalidRequest', [{ path: parsed.path, reason: parsed.reason }]);
  return parsed.value;
}

async function waitNodeOf(d: Deps, e: Execution, nodeId: string): Promise<WaitNode> {
  const version = await d.pipelines.getVersion(e.pipeline_id, e.version);
  const node = version?.definition.nodes[nodeId];
  if (node === undefined || !Object.hasOwn(version?.definition.nodes ?? {}, nodeId) || node.type !== 'wait')
    throw new AppError('ResumeNotFound', 'no wait behind this URL: check that it was copied whole');
  return node;
}

/**
 * Wakes the execution's current generation (functions/services/wake.ts). Another wake may move
 * it between the read and the write (an event for another wait node): that one's workflow may
 * have read the nodes before this event was kept, so the wake is made again on the generation
 * it left, until one lands or the execution no longer runs.
 */
async function wakeUntilTaken(d: Deps, executionId: string): Promise<void> {
  for (let i = 0; i < WAKE_ATTEMPTS; i++) {
    const e = await d.executions.get(executionId, d.clock.now(), true);
    if (!e || e.status !== 'running') return;
    if (await wakeExecution(d, e)) return;
  }
}

/* ------------------------------------------------------------------ the waiting list */

/**
 * The `waiting` list a reader sees: the wait nodes the execution waits on, each with its resume
 * URL under `baseUrl` and when it stops working. `visible` names the nodes the reader may learn
 * the URL of (a caller: the visible wait nodes; null: every one, the owner's views).
 */
export async function waitingList(
  d: Deps,
  e: Pick<Execution, 'execution_id' | 'status' | 'waiting'>,
  baseUrl: string,
  visible: readonly string[] | null,
): Promise<WaitingEntry[]> {
  const nodes = waitsOf(e).filter((w) => visible === null || visible.includes(w.node));
  return Promise.all(
    nodes.map(async (w) => ({
      node_id: w.node,
      resume_url: await d.resumeLinks.url(baseUrl, e.execution_id, w.node),
      expires_at: new Date(w.until ?? Date.now()).toISOString(),
    })),
  );
}

/** The owner's `waiting` field: every wait node the execution waits on, under `baseUrl` (else the execution's own base). */
export async function ownerWaitingField(d: Deps, e: Pick<Execution, 'execution_id' | 'status' | 'waiting' | 'base_url'>, baseUrl?: string) {
  const base = baseUrl ?? d.config.publicUrl ?? e.base_url ?? d.config.apiUrl;
  if (base === undefined || base === null) return {};
  return waitingField(await waitingList(d, e, base, null));
}

/** A caller's `waiting` list: only the wait nodes the deployment publishes visible (recorded on the execution). */
export const callerWaitingList = (d: Deps, e: Pick<Execution, 'execution_id' | 'status' | 'waiting' | 'visible_waits'>, baseUrl: string) =>
  waitingList(d, e, baseUrl, e.visible_waits ?? []);

/** `{ waiting }` when the list has entries, else nothing: the field is there only while the execution waits. */
export const waitingField = (list: readonly WaitingEntry[]): { waiting?: WaitingEntry[] } =>
  list.length > 0 ? { waiting: [...list] } : {};

/** The resume URL of every wait node of a definition (what its http nodes' `$resume_url` gives), under the execution's base URL. */
export async function resumeUrlsOf(
  d: Deps,
  e: Pick<Execution, 'execution_id' | 'base_url'>,
  def: PipelineDefinition,
): Promise<Record<string, string> | undefined> {
  const ids = Object.keys(def.nodes).filter((id) => {
    const node = def.nodes[id];
    return node !== undefined && kindOf(node).role === 'wait';
  });
  const base = d.config.publicUrl ?? e.base_url ?? d.config.apiUrl;
  if (ids.length === 0 || base === undefined || base === null) return undefined;
  const urls: Record<string, string> = {};
  for (const id of ids) Object.defineProperty(urls, id, { value: await d.resumeLinks.url(base, e.execution_id, id), enumerable: true });
  return urls;
}
