/**
 * The owner's view of a live API (and of runs): list a deployment's executions, see one in
 * full (trace, deliveries), cancel, send a callback again, and usage over the last hour and day.
 */
import { AppError } from '../core/errors';
import { PIPELINE_ID_PATTERN } from '../core/ids';
import { isTerminal, STATUSES, type ExecutionStatus } from '../core/transitions';
import { InvalidCursorError } from '../core/ports';
import type { DeploymentRecord, Execution } from '../core/types';
import { summarize, summarizeCallers, type CallerWindow } from '../core/usage';
import { DEPLOYMENT_SUBJECT } from '../core/consumers';
import { deliveryView, executionSummaryBody, ownerExecutionBody } from '../core/views';
import { ownerWaitingField } from './resume.service';
import type { Deps } from '../adapters/deps';
import { cancelExecution } from './lifecycle.service';
import { outputLinks } from './output-links';

/** The pipeline's live deployment (strongly consistent), else 404 Pipeline or Deployment Not Found. */
export async function liveDeploymentOf(d: Deps, pipelineId: string): Promise<DeploymentRecord> {
  if (!PIPELINE_ID_PATTERN.test(pipelineId)) throw new AppError('PipelineNotFound');
  const m = await d.pipelines.getMeta(pipelineId, true);
  if (!m) throw new AppError('PipelineNotFound');
  const dep = m.deployment_id ? await d.deployments.get(m.deployment_id, true) : null;
  if (!dep || dep.status !== 'live') throw new AppError('DeploymentNotFound');
  return dep;
}

/** An execution (API execution or run) of this pipeline, else 404. */
async function executionOf(d: Deps, pipelineId: string, executionId: string, consistent = false): Promise<Execution> {
  const e = await d.executions.get(executionId, d.clock.now(), consistent);
  if (!e || e.pipeline_id !== pipelineId) throw new AppError('ExecutionNotFound');
  return e;
}

export interface ListQuery {
  status?: string;
  since?: string;
  limit?: string;
  cursor?: string;
}

/** GET …/deployment/executions: the live deployment's executions, newest first. */
export async function listExecutions(d: Deps, pipelineId: string, q: ListQuery) {
  const problems: { path: string; reason: string }[] = [];
  const limit = q.limit === undefined ? 20 : Number(q.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    problems.push({ path: 'limit', reason: 'must be a whole number from 1 to 100' });
  const status = q.status === undefined || q.status === '' ? undefined : (q.status as ExecutionStatus);
  if (status !== undefined && !(STATUSES as readonly string[]).includes(status))
    problems.push({ path: 'status', reason: `must be one of ${STATUSES.join(', ')}` });
  let since: string | undefined;
  if (q.since !== undefined && q.since !== '') {
    since = sinceOf(q.since);
    if (since === undefined) problems.push({ path: 'since', reason: 'must be an ISO 8601 time, e.g. 2026-11-22T15:00:00Z' });
  }
  if (problems.length) throw new AppError('InvalidRequest', problems);
  const dep = await liveDeploymentOf(d, pipelineId);
  let page: Awaited<ReturnType<Deps['executionLists']['listByDeployment']>>;
  try {
    page = await d.executionLists.listByDeployment(dep.deployment_id, {
      limit,
      ...(since ? { since } : {}),
      ...(status ? { status } : {}),
      ...(q.cursor ? { cursor: q.cursor } : {}),
      now: d.clock.now(),
    });
  } catch (e) {
    if (e instanceof InvalidCursorError)
      throw new AppError('InvalidRequest', [{ path: 'cursor', reason: 'is not a cursor this list returned' }]);
    throw e;
  }
  return {
    pipeline_id: pipelineId,
    deployment_id: dep.deployment_id,
    executions: page.executions.map(executionSummaryBody),
    next_cursor: page.next,
  };
}

/** An execution as its owner sees it: its deployment's hidden inputs marked. */
async function ownerView(d: Deps, e: Execution, baseUrl?: string) {
  const dep = e.deployment_id ? await d.deployments.get(e.deployment_id) : null;
  const hidden = new Set((dep?.inputs ?? []).filter((i) => !i.visible).map((i) => i.id));
  // The owner sees every ASSET output, hidden ones included, each with a fresh link.
  const links = baseUrl === undefined ? {} : await outputLinks(d, e, baseUrl, null);
  return { ...ownerExecutionBody(e, hidden, links), ...(await ownerWaitingField(d, e, baseUrl)) };
}

/** GET …/executions/{execution_id}: everything about one execution, for its owner. */
export async function getExecution(d: Deps, pipelineId: string, executionId: string, baseUrl?: string) {
  return ownerView(d, await executionOf(d, pipelineId, executionId), baseUrl);
}

/** POST …/executions/{execution_id}/cancel: a run or an API execution, pending or running. */
export async function cancel(d: Deps, pipelineId: string, executionId: string) {
  const e = await executionOf(d, pipelineId, executionId, true);
  if (isTerminal(e.status)) throw new AppError('ExecutionAlreadyFinished', undefined, { status: e.status });
  const out = await cancelExecution(d, e);
  if (!out.ok) throw new AppError('ExecutionAlreadyFinished', undefined, { status: out.status });
  // The record as the cancel wrote it: a read after it could still see it running.
  return ownerView(d, out.execution);
}

/**
 * POST …/executions/{execution_id}/callback/redeliver: sends a settled callback again, as one
 * new attempt with the same webhook-id (receivers deduplicate on it). A repeat while that
 * attempt is owed starts nothing new and answers the same. On the retry schedule it means
 * "the next attempt now": that attempt is brought forward once (a repeat finds it already due)
 * and goes through the dispatcher's usual claim, so the message still waiting for the old time
 * finds the attempt taken and is dropped; the schedule carries on from it if it fails.
 */
export async function redeliver(d: Deps, pipelineId: string, executionId: string) {
  const e = await executionOf(d, pipelineId, executionId, true);
  const delivery = e.callback_delivery;
  if (!e.callback) throw new AppError('Conflict', 'this execution was submitted without a callback');
  if (!isTerminal(e.status) || !delivery)
    throw new AppError('Conflict', 'the execution has not finished; its callback is sent when it does');
  if (delivery.outcome === 'pending') {
    const now = d.clock.now();
    const due = delivery.next_attempt_at === null ? 0 : Date.parse(delivery.next_attempt_at);
    // Already owed now (a redelivery, an attempt brought forward or simply due): nothing new.
    if (delivery.redelivery || due <= now.getTime()) return { status: 202, body: deliveryView(delivery) };
    const forward = await d.deliveries.attemptNow(e.execution_id, delivery, now.toISOString());
    if (!forward) throw new AppError('Conflict', 'the delivery changed while asking; look again and retry');
    await d.queue.send('callbacks', { execution_id: e.execution_id });
    return { status: 202, body: deliveryView(forward.callback_delivery) };
  }
  const updated = await d.deliveries.redeliver(e.execution_id, delivery, d.clock.now().toISOString());
  if (!updated) throw new AppError('Conflict', 'the delivery changed while asking; look again and retry');
  await d.queue.send('callbacks', { execution_id: e.execution_id });
  return { status: 202, body: deliveryView(updated.callback_delivery) };
}

/** GET …/deployment/usage: finished executions by status and duration percentiles, last hour and day. */
export async function usage(d: Deps, pipelineId: string) {
  const dep = await liveDeploymentOf(d, pipelineId);
  const now = d.clock.now();
  const dayAgo = new Date(now.getTime() - 24 * 3600 * 1000);
  const hourAgo = new Date(now.getTime() - 3600 * 1000);
  const [buckets, consumers] = await Promise.all([d.usage.usageSince(dep.deployment_id, dayAgo), d.consumers.list(dep.deployment_id)]);
  const hour = summarizeCallers(buckets, hourAgo);
  const day = summarizeCallers(buckets, dayAgo);
  const names = new Map(consumers.map((c) => [c.consumer_id, c.name]));
  // Every consumer, and the deployment's own key once it has counts (it has when it carries limits).
  const ids = [...new Set([...consumers.map((c) => c.consumer_id), ...Object.keys(day)])];
  const none = (): CallerWindow => ({
    accepted: 0,
    refused_rate: 0,
    refused_quota: 0,
    total: 0,
    by_status: { completed: 0, failed: 0, cancelled: 0 },
    p50_ms: null,
    p95_ms: null,
  });
  return {
    pipeline_id: pipelineId,
    deployment_id: dep.deployment_id,
    last_hour: summarize(buckets, hourAgo, now),
    last_day: summarize(buckets, dayAgo, now),
    by_consumer: ids.map((id) => ({
      consumer_id: id === DEPLOYMENT_SUBJECT ? null : id,
      name: id === DEPLOYMENT_SUBJECT ? null : (names.get(id) ?? null),
      last_hour: hour[id] ?? none(),
      last_day: day[id] ?? none(),
    })),
  };
}

/**
 * `since` as an ISO string, undefined when it names no time. Every RFC 3339 `date-time` the
 * documents promise (core/http-shapes.ts `Since`) is taken, a leap second (:60) as the second
 * before it; so is any other time JavaScript reads, a date alone included, as before.
 */
export function sinceOf(text: string): string | undefined {
  const t = Date.parse(text.replace(/([Tt ]\d{2}:\d{2}):60/, '$1:59'));
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
}
