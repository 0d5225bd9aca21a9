/** The bodies users see, built from records in one place so every route answers alike. */
import type { Execution, RawValue } from './types';

export interface ExecutionUrls {
  status_url: string;
  result_url: string;
}

export const executionUrls = (baseUrl: string, executionId: string): ExecutionUrls => ({
  status_url: `${baseUrl}/v1/deployments/executions/${executionId}/status/`,
  result_url: `${baseUrl}/v1/deployments/executions/${executionId}/result/`,
});

export const executeUrl = (baseUrl: string, deploymentId: string): string =>
  `${baseUrl}/v1/deployments/${deploymentId}/executions/`;

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

export function statusBody(baseUrl: string, e: Execution) {
  return {
    status: e.status,
    execution_id: e.execution_id,
    deployment_id: e.deployment_id,
    result_url: executionUrls(baseUrl, e.execution_id).result_url,
    created_at: e.created_at,
    started_at: e.started_at,
    completed_at: e.completed_at,
    completion_duration: completionDuration(e),
    error_message: e.error_message,
  };
}

/** Visible outputs only, and only once completed. */
export function responseData(e: Execution): Record<string, { value: RawValue; value_type: 'RAW' }> {
  if (e.status !== 'completed' || !e.outputs) return {};
  const ids = e.visible_outputs ?? Object.keys(e.outputs);
  const data: Record<string, { value: RawValue; value_type: 'RAW' }> = {};
  for (const id of ids) {
    const value = e.outputs[id];
    if (value !== undefined) data[id] = { value, value_type: 'RAW' };
  }
  return data;
}

export function resultBody(e: Execution) {
  return {
    status: e.status,
    execution_id: e.execution_id,
    deployment_id: e.deployment_id,
    completion_duration: completionDuration(e),
    output_artifacts: [] as never[],
    error_message: e.error_message,
    response_data: responseData(e),
  };
}

export function runBody(e: Execution) {
  return {
    run_id: e.execution_id,
    pipeline_id: e.pipeline_id,
    version: e.version,
    status: e.status,
    inputs: e.inputs,
    outputs: e.status === 'completed' ? (e.outputs ?? {}) : null,
    error_message: e.error_message,
    created_at: e.created_at,
    started_at: e.started_at,
    completed_at: e.completed_at,
    completion_duration: completionDuration(e),
  };
}

/** The owner's view of any execution: everything, including how its callback went. */
export function ownerExecutionBody(e: Execution) {
  return {
    ...runBody(e),
    execution_id: e.execution_id,
    kind: e.kind,
    deployment_id: e.deployment_id,
    visible_outputs: e.visible_outputs,
    callback: e.callback === null ? null : redactUrl(e.callback),
    callback_delivery: e.callback_delivery,
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
