/** The caller API's use cases: execute, status, result, cancel, contract (contract §4). */
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { callerContract } from '../core/contract';
import { AppError, keyRefused } from '../core/errors';
import { IdempotencyKey } from '../core/http-shapes';
import { parseExecutionRequest } from '../core/execution-request';
import { isTerminal } from '../core/transitions';
import type { Deployment, Execution } from '../core/types';
import type { ExecutionHead, WaitSlot } from '../core/ports';
import { errorFields } from '../adapters/logger';
import { POLL_HINT_SECONDS, preferenceApplied } from '../core/prefer';
import { acceptedBody, callerWaitsOf, executionUrls, resultBody, statusBody, waitsOnReader } from '../core/views';
import { callerWaitingList, waitingField } from './resume.service';
import { callerOutputIds, outputLinks } from './output-links';
import type { CallerAuth } from '../core/consumers';
import type { Deps } from '../adapters/deps';
import { epochSeconds } from '../core/time';
import { enqueueNew, executionMessage } from './enqueue';
import { workflowOfVersion } from './workflow-choice';
import { checkAssets, storeAssets } from './asset-inputs.service';
import { cancelExecution } from './lifecycle.service';
import { spendQuota, tally, withLimitHeaders } from './limits.service';

const IDEMPOTENCY_TTL_SECONDS = 24 * 3600;

/**
 * Published contracts by (deployment, revision). The authorizer reads the deployment on every
 * request and passes its revision on, so a cached contract is never stale: any publish,
 * rotation or delete bumps the revision. This keeps the execute path at three AWS calls.
 */
const contracts = new Map<string, Deployment>();
const CONTRACT_CACHE_MAX = 256;

export async function liveDeployment(d: Deps, auth: CallerAuth): Promise<Deployment> {
  const key = `${auth.deploymentId}:${auth.revision}`;
  const hit = contracts.get(key);
  if (hit) return hit;
  const rec = await d.deployments.get(auth.deploymentId, true);
  if (!rec || rec.status !== 'live') throw new AppError('DeploymentNotFound');
  // The contract only: key hashes and sealed secrets stay out of the cache.
  const { key_hashes: _keys, signing_secrets: _secrets, deleted_at: _deleted, ...dep } = rec;
  if (contracts.size >= CONTRACT_CACHE_MAX) contracts.clear();
  contracts.set(`${rec.deployment_id}:${rec.revision}`, dep);
  return dep;
}

/**
 * The authorizer already refuses a key on another deployment's route (401 other_deployment);
 * this holds the same line should an answer reach a handler some other way.
 */
export function assertDeployment(auth: CallerAuth, deploymentId: string): void {
  if (deploymentId !== auth.deploymentId) throw keyRefused('other_deployment');
  if (auth.deleted) throw new AppError('DeploymentNotFound');
}

/** The execution, if it exists and belongs to the caller's live deployment; else 404. */
export async function ownedExecution(d: Deps, auth: CallerAuth, executionId: string): Promise<Execution> {
  if (auth.deleted) throw new AppError('ExecutionNotFound');
  const e = await d.executions.get(executionId, d.clock.now());
  if (!e || e.kind !== 'api' || e.deployment_id !== auth.deploymentId) throw new AppError('ExecutionNotFound');
  return e;
}

/** Its head only (what a status poll shows), if it belongs to the caller's live deployment; else 404. */
async function ownedHead(d: Deps, auth: CallerAuth, executionId: string): Promise<ExecutionHead> {
  if (auth.deleted) throw new AppError('ExecutionNotFound');
  const e = await d.executions.getHead(executionId, d.clock.now());
  if (!e || e.kind !== 'api' || e.deployment_id !== auth.deploymentId) throw new AppError('ExecutionNotFound');
  return e;
}

/** A caller's `Prefer: wait`: how long was granted (0: no wait) and until when (epoch ms). */
export interface Wait {
  seconds: number;
  untilMs: number;
}

export const NO_WAIT: Wait = { seconds: 0, untilMs: 0 };

/**
 * The execution once it is terminal, or as it is when the wait runs out, or once `settled` says
 * the reader has something to do (a caller: the execution waits on a wait node the caller may
 * resume). Woken by the terminal write where the runtime can (d.completions); re-reads with
 * strong consistency after each wake, since an eventually consistent read may not show the
 * write that woke it yet.
 */
export async function awaitTerminal<T extends Pick<Execution, 'status'> = Execution>(
  d: Deps,
  executionId: string,
  first: () => Promise<T>,
  wait: Wait,
  reread: (current: T) => Promise<T | null> = (current) =>
    rereadWhole(d, executionId, current as unknown as Execution) as Promise<T | null>,
  settled: (e: T) => boolean = () => false,
): Promise<{ e: T; waited: number }> {
  if (wait.seconds <= 0) return { e: await first(), waited: 0 };
  const slot = await takeWaitSlot(d);
  // Beyond the bound the preference is not honoured: the usual answer, with its Retry-After.
  if (slot === null) return { e: await first(), waited: 0 };
  // Watch before the first read, so a completion between that read and the wait still wakes us.
  const watch = d.completions.watch(executionId);
  try {
    let e = await first();
    while (!isTerminal(e.status) && !settled(e)) {
      const left = wait.untilMs - Date.now();
      if (left <= 0 || !(await watch.next(left))) break;
      e = (await reread(e)) ?? e;
    }
    return { e, waited: wait.seconds };
  } finally {
    watch.close();
    if (slot !== 'unbounded') {
      await slot.release().catch((err: unknown) => d.log.warn('wait slot not given back; it lapses with its window', errorFields(err)));
    }
  }
}

/**
 * A waiter's re-read of a whole execution: its head until it is terminal (a read unit, where
 * the whole record may be 33 with 128 KiB of values: on AWS a waiter re-reads up to once a
 * second), then the whole record once. Both strongly consistent: the write that woke the
 * waiter, or that its timer is looking for, must show.
 */
async function rereadWhole(d: Deps, executionId: string, current: Execution): Promise<Execution | null> {
  const head = await d.executions.getHead(executionId, d.clock.now(), true);
  if (!head) return null;
  if (!isTerminal(head.status)) return { ...current, ...head };
  return d.executions.get(executionId, d.clock.now(), true);
}

/**
 * A slot to wait in, 'unbounded' where waiting is not bounded, or null when the bound is
 * reached. Waiting is optional (RFC 7240), so a store that cannot answer means no wait, never
 * an error for the request.
 */
async function takeWaitSlot(d: Deps): Promise<WaitSlot | 'unbounded' | null> {
  if (!d.waitSlots) return 'unbounded';
  try {
    const slot = await d.waitSlots.acquire(d.clock.now());
    if (!slot) d.log.info('wait bound reached: answering at once');
    return slot;
  } catch (err) {
    d.log.warn('wait slot unavailable: answering at once', errorFields(err));
    return null;
  }
}

/** A caller's wait ends early when the execution waits on a wait node the caller may resume: the next move is theirs. */
const waitsOnCaller = (e: Pick<Execution, 'status' | 'waiting' | 'visible_waits'>): boolean => waitsOnReader(callerWaitsOf(e));

const pollHint = (e: Pick<Execution, 'status'>): Record<string, string> =>
  isTerminal(e.status) ? {} : { 'retry-after': String(POLL_HINT_SECONDS) };

export interface ExecuteRequest {
  deploymentId: string;
  body: string | null;
  contentType: string | undefined;
  idempotencyKey: string | undefined;
  baseUrl: string;
  wait?: Wait;
  /** Submitted through the deployment's web form: the hash of the link it came through. */
  formLink?: string;
  /** Submitted by an MCP client's tools/call (functions/services/mcp.service.ts). */
  mcp?: {
    /** Files its asset arguments named by URL, fetched already: they take the place of those inputs' values. */
    files: Record<string, Uint8Array>;
  };
}

/**
 * POST executions: 202 once accepted. With a wait, an execution that finishes within it is
 * answered 200 with its result (and its URLs); one that does not gets the usual 202.
 */
export async function execute(d: Deps, auth: CallerAuth, req: ExecuteRequest) {
  const wait = req.wait ?? NO_WAIT;
  const accepted = await submit(d, auth, req);
  if (wait.seconds <= 0) return accepted;
  const { e, waited } = await awaitTerminal(
    d,
    accepted.body.execution_id,
    () => ownedExecution(d, auth, accepted.body.execution_id),
    wait,
    undefined,
    waitsOnCaller,
  );
  // A wait that was not granted (the bound) says when to look, as status answers do.
  const headers = { ...accepted.headers, ...(waited > 0 ? preferenceApplied(waited) : { 'retry-after': String(POLL_HINT_SECONDS) }) };
  if (!isTerminal(e.status))
    return { ...accepted, body: { ...accepted.body, ...waitingField(await callerWaitingList(d, e, req.baseUrl)) }, headers };
  const links = await outputLinks(d, e, req.baseUrl, callerOutputIds(e));
  return { status: 200, body: { ...resultBody(e, links), ...executionUrls(req.baseUrl, e.execution_id) }, headers };
}

export async function submit(d: Deps, auth: CallerAuth, req: ExecuteRequest) {
  assertDeployment(auth, req.deploymentId);
  if (req.idempotencyKey !== undefined && !v.is(IdempotencyKey, req.idempotencyKey)) {
    throw new AppError('InvalidInputStructure', 'Idempotency-Key must be 1 to 255 printable characters');
  }
  const dep = await liveDeployment(d, auth);
  const parsed = parseExecutionRequest(
    { body: req.body, contentType: req.contentType },
    { inputs: dep.inputs, outputs: dep.outputs },
    { maxBodyBytes: d.config.maxBodyBytes, maxInputs: d.config.maxInputs, allowPrivateUrls: d.config.allowPrivateUrls },
  );
  // An open link must not make the service call out to an address of the visitor's choosing.
  if (req.formLink !== undefined && parsed.callback !== null)
    throw new AppError('InvalidInputStructure', 'a web-form execution takes no callback');
  const now = d.clock.now();
  // Every asset is checked (sniffed, sized, its upload looked up) before anything is written.
  const forms = { ...parsed.assets };
  for (const [id, bytes] of Object.entries(req.mcp?.files ?? {})) forms[id] = { kind: 'inline', bytes };
  const assets = await checkAssets(d, { kind: 'deployment', deployment_id: dep.deployment_id }, dep.inputs, forms, now);
  let executionId = d.ids.uuid();

  if (req.idempotencyKey !== undefined) {
    const keyHash = createHash('sha256').update(req.idempotencyKey).digest('hex');
    const claim = await d.idempotency.claimIdempotency(
      dep.deployment_id,
      keyHash,
      { execution_id: executionId, request_hash: parsed.requestHash, created_at: now.toISOString() },
      epochSeconds(now) + IDEMPOTENCY_TTL_SECONDS,
      now,
    );
    if (!claim.claimed) {
      if (claim.existing.request_hash !== parsed.requestHash) {
        // Hashes only: the first body is not kept, and echoing it could show one caller another's data.
        throw new AppError(
          'IdempotencyKeyReused',
          `this Idempotency-Key was used at ${claim.existing.created_at} with a different request body (SHA-256 of the canonical body: first ${claim.existing.request_hash.slice(0, 12)}…, this one ${parsed.requestHash.slice(0, 12)}…); send a new key for a different request`,
        );
      }
      executionId = claim.existing.execution_id;
      const existing = await d.executions.get(executionId, now, true);
      if (existing) {
        // The first request may have died before queueing; a second message is harmless.
        if (existing.status === 'pending') await d.queue.send('executions', executionMessage(existing));
        return accepted(req.baseUrl, existing);
      }
      // The first request claimed the key but has not written (or never wrote) the execution.
    }
  }

  // The quota is spent only here, where the execution is about to be accepted (replays of an
  // Idempotency-Key above spend nothing), and given back if it is not accepted after all.
  const quota = await spendQuota(d, auth);
  try {
    const source =
      req.formLink !== undefined ? { source: 'form' as const, form_link: req.formLink } : req.mcp ? { source: 'mcp' as const } : {};
    const execution = await createExecution(d, auth, dep, executionId, parsed, assets, req.baseUrl, now, source);
    if (auth.consumerId !== undefined || auth.limits?.rate_limit || quota) await tally(d, auth, 'accepted');
    const answer = accepted(req.baseUrl, execution);
    return quota ? { ...answer, headers: withLimitHeaders(answer.headers, [quota.state]) } : answer;
  } catch (e) {
    await quota?.giveBack();
    throw e;
  }
}

async function createExecution(
  d: Deps,
  auth: CallerAuth,
  dep: Deployment,
  executionId: string,
  parsed: ReturnType<typeof parseExecutionRequest>,
  assets: Awaited<ReturnType<typeof checkAssets>>,
  baseUrl: string,
  now: Date,
  source: Pick<Execution, 'source' | 'form_link'>,
): Promise<Execution> {
  const where = { kind: 'api' as const, deployment_id: dep.deployment_id, pipeline_id: dep.pipeline_id, execution_id: executionId };
  const refs = assets.length > 0 ? await storeAssets(d, where, assets, now) : null;
  const execution: Execution = {
    execution_id: executionId,
    kind: 'api',
    pipeline_id: dep.pipeline_id,
    version: dep.version,
    deployment_id: dep.deployment_id,
    ...(auth.consumerId === undefined ? {} : { consumer_id: auth.consumerId }),
    status: 'pending',
    inputs: parsed.inputs,
    ...(refs === null ? {} : { assets: refs }),
    outputs: null,
    base_url: baseUrl,
    visible_outputs: dep.outputs.filter((o) => o.visible).map((o) => o.id),
    ...visibleWaits(dep),
    ...source,
    callback: parsed.callback,
    callback_delivery: null,
    error_message: null,
    created_at: now.toISOString(),
    started_at: null,
    completed_at: null,
    expires_at: epochSeconds(now) + d.config.resultRetentionDays * 24 * 3600,
    // The deployment's version's machine (a deployment published before it was recorded: its version's).
    workflow: dep.workflow ?? (await workflowOfVersion(d, dep.pipeline_id, dep.version)),
  };
  await d.executions.create(execution);
  await enqueueNew(d, execution);
  return execution;
}

/** The wait nodes whose resume URL callers may learn, kept on the execution (absent when the deployment has none). */
function visibleWaits(dep: Deployment): Pick<Execution, 'visible_waits'> {
  const ids = (dep.waits ?? []).filter((w) => w.visible).map((w) => w.id);
  return ids.length > 0 ? { visible_waits: ids } : {};
}

function accepted(baseUrl: string, e: Execution) {
  const body = acceptedBody(baseUrl, e);
  return { status: 202, body, headers: { location: body.status_url } };
}

/** GET status: the record now, or once terminal within the wait; a poll hint while open. */
export async function status(d: Deps, auth: CallerAuth, executionId: string, baseUrl: string, wait: Wait = NO_WAIT) {
  // Heads only: the first read eventually consistent (a poll may lag a write by a moment, and
  // the next poll sees it), the re-reads after a wake strongly (the write that woke it must show).
  const reread = () => d.executions.getHead(executionId, d.clock.now(), true);
  const { e, waited } = await awaitTerminal(d, executionId, () => ownedHead(d, auth, executionId), wait, reread, waitsOnCaller);
  const waiting = waitingField(await callerWaitingList(d, e, baseUrl));
  return { body: { ...statusBody(baseUrl, e), ...waiting }, headers: { ...pollHint(e), ...preferenceApplied(waited) } };
}

/**
 * GET result: 200 once terminal (within the wait, if one was asked for), else 409 with a poll
 * hint. Each read mints fresh links to the visible ASSET outputs, under `baseUrl` (the request's).
 */
export async function result(d: Deps, auth: CallerAuth, executionId: string, wait: Wait = NO_WAIT, baseUrl?: string) {
  const { e, waited } = await awaitTerminal(d, executionId, () => ownedExecution(d, auth, executionId), wait, undefined, waitsOnCaller);
  const headers = { ...pollHint(e), ...preferenceApplied(waited) };
  if (!isTerminal(e.status)) {
    const waiting = waitingField(await callerWaitingList(d, e, baseUrl ?? d.config.publicUrl ?? e.base_url ?? ''));
    throw new AppError('ExecutionNotCompleted', undefined, { status: e.status, ...waiting }, { headers });
  }
  const linkBase = baseUrl ?? d.config.publicUrl ?? e.base_url ?? null;
  const links = linkBase === null ? {} : await outputLinks(d, e, linkBase, callerOutputIds(e));
  return { body: resultBody(e, links), headers };
}

export async function cancel(d: Deps, auth: CallerAuth, executionId: string, baseUrl: string) {
  const e = await ownedExecution(d, auth, executionId);
  if (isTerminal(e.status)) throw new AppError('ExecutionAlreadyFinished', undefined, { status: e.status });
  const out = await cancelExecution(d, e);
  if (!out.ok) throw new AppError('ExecutionAlreadyFinished', undefined, { status: out.status === 'missing' ? e.status : out.status });
  return statusBody(baseUrl, out.execution);
}

export async function contract(d: Deps, auth: CallerAuth, deploymentId: string) {
  assertDeployment(auth, deploymentId);
  return callerContract(await liveDeployment(d, auth));
}
