/** The bodies users see, built from records in one place so every route answers alike. */
import { assetOutputOf, outputFiles, type AssetListOutputValue, type AssetOutputValue, type OutputLink } from './output-assets';
import type { ExecutionSummaryRecord, PresignedDownload } from './ports';
import type { CallbackDelivery, Execution, ExecutionSource, PipelineListing, PipelineMeta, RawValue } from './types';
import type { ClaimField } from './claim-check';
import type { WaitingNode } from './engine';

/** Fresh links to ASSET outputs by output id (functions/services/output-links.ts); an output without one is not shown. */
export type OutputLinks = Readonly<Record<string, OutputLink>>;

export type OutputValue = { value: RawValue; value_type: 'RAW' } | AssetOutputValue | AssetListOutputValue;

export interface ExecutionUrls {
  status_url: string;
  result_url: string;
}

export const executionUrls = (baseUrl: string, executionId: string): ExecutionUrls => ({
  status_url: `${baseUrl}/v1/deployments/executions/${executionId}/status/`,
  result_url: `${baseUrl}/v1/deployments/executions/${executionId}/result/`,
});

export const executeUrl = (baseUrl: string, deploymentId: string): string => `${baseUrl}/v1/deployments/${deploymentId}/executions/`;
/** The deployment as an MCP server (functions/core/mcp-tool.ts). */
export const mcpUrl = (baseUrl: string, deploymentId: string): string => `${baseUrl}/v1/deployments/${deploymentId}/mcp`;

/**
 * The wait nodes a running execution waits on, as its last step left them (its `waiting`
 * record): what its `waiting` list shows. Delays and polled jobs wait too, but have no URL.
 */
export function waitsOf(e: Pick<Execution, 'status' | 'waiting'>): WaitingNode[] {
  if (e.status !== 'running' || typeof e.waiting !== 'string') return [];
  try {
    const list = JSON.parse(e.waiting) as unknown;
    return Array.isArray(list) ? (list as WaitingNode[]).filter((w) => w?.type === 'wait' && typeof w.node === 'string') : [];
  } catch {
    return [];
  }
}

/** The caller's wait nodes of them: those the deployment publishes visible. */
export const callerWaitsOf = (e: Pick<Execution, 'status' | 'waiting' | 'visible_waits'>): WaitingNode[] =>
  waitsOf(e).filter((w) => (e.visible_waits ?? []).includes(w.node));

/**
 * Whether a reader's `Prefer: wait` ends now: the execution waits on a wait node they may resume
 * that no job of the pipeline will (a person's approval, not a webhook), so the next move is theirs.
 */
export const waitsOnReader = (waits: readonly WaitingNode[]): boolean => waits.some((w) => w.webhook !== true);

/** Milliseconds from start to finish; an execution cancelled before it started took 0. */
export function completionDuration(e: Pick<Execution, 'started_at' | 'completed_at'>): number | null {
  if (!e.completed_at) return null;
  const end = Date.parse(e.completed_at);
  const start = e.started_at ? Date.parse(e.started_at) : end;
  return Math.max(0, end - start);
}

export function acceptedBody(baseUrl: string, e: Pick<Execution, 'execution_id' | 'deployment_id'>) {
  return {
    status: 'queued' as const,
    ...executionUrls(baseUrl, e.execution_id),
    deployment_id: e.deployment_id,
    execution_id: e.execution_id,
  };
}

export function statusBody(
  baseUrl: string,
  e: Pick<
    Execution,
    'status' | 'execution_id' | 'deployment_id' | 'created_at' | 'started_at' | 'completed_at' | 'error_message' | 'caller_error_message'
  >,
) {
  return {
    status: e.status,
    execution_id: e.execution_id,
    deployment_id: e.deployment_id,
    result_url: executionUrls(baseUrl, e.execution_id).result_url,
    created_at: e.created_at,
    started_at: e.started_at,
    completed_at: e.completed_at,
    completion_duration: completionDuration(e),
    error_message: callerErrorMessage(e),
  };
}

/**
 * A failure as callers read it (the owner's views keep error_message whole). Records from
 * before the two views keep only the node of a node's failure; other messages (time-outs,
 * interruptions, cancels) are the service's own and name nothing of the pipeline's.
 */
export function callerErrorMessage(e: Pick<Execution, 'error_message' | 'caller_error_message'>): string | null {
  if (e.error_message === null) return null;
  if (typeof e.caller_error_message === 'string') return e.caller_error_message;
  const node = /^Node '([^']+)' failed/.exec(e.error_message);
  return node ? `Node '${node[1]}' failed` : e.error_message;
}

/**
 * Visible outputs only, and only once completed: RAW values as they are, ASSET outputs as a
 * link (`links`, minted for the visible ones only) with their media type, size and expiry.
 */
export function responseData(e: Execution, links: OutputLinks = {}): Record<string, OutputValue> {
  if (e.status !== 'completed' || !e.outputs) return {};
  const outputs = e.outputs;
  const assets = e.output_assets ?? {};
  const ids = e.visible_outputs ?? [...Object.keys(outputs), ...Object.keys(assets)];
  const data: Record<string, OutputValue> = {};
  const define = (id: string, value: OutputValue) =>
    Object.defineProperty(data, id, { value, enumerable: true, writable: true, configurable: true });
  for (const id of ids) {
    const value = Object.hasOwn(outputs, id) ? outputs[id] : undefined;
    const ref = Object.hasOwn(assets, id) ? assets[id] : undefined;
    const link = Object.hasOwn(links, id) ? links[id] : undefined;
    const asset = ref !== undefined && link !== undefined ? assetOutputOf(ref, link) : null;
    if (value !== undefined) define(id, { value, value_type: 'RAW' });
    else if (asset !== null) define(id, asset);
  }
  return data;
}

/** Every ASSET output with its link(s) (the owner's views), or null unless completed. */
export function ownerOutputAssets(e: Execution, links: OutputLinks = {}): Record<string, AssetOutputValue | AssetListOutputValue> | null {
  if (e.status !== 'completed') return null;
  const out: Record<string, AssetOutputValue | AssetListOutputValue> = {};
  for (const [id, ref] of Object.entries(e.output_assets ?? {})) {
    const link = Object.hasOwn(links, id) ? links[id] : undefined;
    const asset = link === undefined ? null : assetOutputOf(ref, link);
    if (asset !== null) Object.defineProperty(out, id, { value: asset, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

export interface OutputArtifact {
  output: string;
  url: string;
  media_type: string;
  bytes: number;
  /** A file of a list output: its place in the list, from 0. */
  index?: number;
}

/**
 * A web-form execution's files: one entry per visible ASSET output with its link (one per file
 * of a list output, in order), once completed. Every other execution has none (`[]`), as the
 * contract says of API executions.
 */
export function outputArtifacts(e: Execution, links: OutputLinks = {}): OutputArtifact[] {
  if (e.source !== 'form' || e.status !== 'completed') return [];
  const assets = e.output_assets ?? {};
  const ids = e.visible_outputs ?? Object.keys(assets);
  const out: OutputArtifact[] = [];
  for (const id of ids) {
    const ref = Object.hasOwn(assets, id) ? assets[id] : undefined;
    const link = Object.hasOwn(links, id) ? links[id] : undefined;
    if (ref === undefined || link === undefined) continue;
    for (const file of outputFiles(ref)) {
      const l =
        file.index === undefined ? (Array.isArray(link) ? undefined : (link as PresignedDownload)) : (link as OutputLink[])[file.index];
      if (l === undefined || l === null || Array.isArray(l)) continue;
      const one = l as PresignedDownload;
      out.push({
        output: id,
        url: one.url,
        media_type: file.ref.media_type,
        bytes: file.ref.bytes,
        ...(file.index === undefined ? {} : { index: file.index }),
      });
    }
  }
  return out;
}

/** Where an execution of a deployment came from; null for runs. */
export const sourceOf = (e: Pick<Execution, 'kind' | 'source'>): ExecutionSource | null => (e.kind === 'run' ? null : (e.source ?? 'api'));

export function resultBody(e: Execution, links: OutputLinks = {}) {
  return {
    status: e.status,
    execution_id: e.execution_id,
    deployment_id: e.deployment_id,
    completion_duration: completionDuration(e),
    output_artifacts: outputArtifacts(e, links),
    error_message: callerErrorMessage(e),
    response_data: responseData(e, links),
  };
}

export function runBody(e: Execution, links: OutputLinks = {}) {
  return {
    run_id: e.execution_id,
    pipeline_id: e.pipeline_id,
    version: e.version,
    status: e.status,
    inputs: e.inputs,
    outputs: e.status === 'completed' ? (e.outputs ?? {}) : null,
    output_assets: ownerOutputAssets(e, links),
    error_message: e.error_message,
    values_expired: shownValueFields(e.expired_values),
    created_at: e.created_at,
    started_at: e.started_at,
    completed_at: e.completed_at,
    completion_duration: completionDuration(e),
    // The owner's alone: callers' views do not say which state machine runs their execution.
    workflow: e.workflow ?? null,
  };
}

/** A run as a page of the run list shows it: values kept in storage are named, not read. */
export function runListBody(e: Execution, links: OutputLinks = {}) {
  return { ...runBody(e, links), values_not_listed: shownValueFields(e.unread_values) };
}

/** Value fields as the owner's views name them (the callers' copy of an error message is not one). */
function shownValueFields(fields: readonly ClaimField[] | undefined): StoredValueField[] {
  return [...new Set((fields ?? []).filter((f): f is StoredValueField => f !== 'caller_error_message'))];
}

export type StoredValueField = Exclude<ClaimField, 'caller_error_message'>;

/** A delivery as the owner sees it: the attempt log always present (older records have none). */
export function deliveryView(c: CallbackDelivery | null) {
  if (c === null) return null;
  const { redelivery, log, ...rest } = c;
  return { ...rest, redelivery: redelivery === true, log: log ?? [] };
}

/**
 * The owner's view of any execution: everything, including which inputs callers cannot see
 * (`hidden_inputs`), what each node did (`trace`), the node that failed, and every callback
 * attempt.
 */
export function ownerExecutionBody(e: Execution, hiddenInputs: ReadonlySet<string> = new Set(), links: OutputLinks = {}) {
  const trace = e.trace ?? null;
  const failed = trace?.find((t) => t.outcome === 'failed') ?? null;
  return {
    ...runBody(e, links),
    execution_id: e.execution_id,
    kind: e.kind,
    source: sourceOf(e),
    deployment_id: e.deployment_id,
    consumer_id: e.consumer_id ?? null,
    hidden_inputs: Object.keys(e.inputs).filter((id) => hiddenInputs.has(id)),
    visible_outputs: e.visible_outputs,
    callback: e.callback === null ? null : redactUrl(e.callback),
    callback_delivery: deliveryView(e.callback_delivery),
    failed_node: failed === null ? null : { node: failed.node, type: failed.type, error: failed.error, http_status: failed.http_status },
    trace,
    trace_truncated: e.trace_truncated === true,
    reruns: e.reruns ?? 0,
  };
}

/** One row of the owner's list of a deployment's executions. */
export function executionSummaryBody(e: ExecutionSummaryRecord) {
  const c = e.callback_delivery;
  return {
    execution_id: e.execution_id,
    source: sourceOf(e) ?? 'api',
    consumer_id: e.consumer_id ?? null,
    status: e.status,
    created_at: e.created_at,
    started_at: e.started_at,
    completed_at: e.completed_at,
    completion_duration: completionDuration(e),
    error_message: e.error_message,
    callback: c === null ? null : { outcome: c.outcome, attempts: c.attempts, last_status: c.last_status, last_error: c.last_error },
  };
}

/** A callback URL without its query string, which may carry the receiver's own token. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}${u.search ? '?…' : ''}`;
  } catch {
    return '…';
  }
}

/** The owner's list entry of a pipeline, from its summary item. */
export const listingOf = (m: PipelineMeta): PipelineListing => ({
  pipeline_id: m.pipeline_id,
  version: m.version,
  description: m.description,
  deployment_id: m.deployment_id,
  created_at: m.created_at,
  updated_at: m.updated_at,
});
