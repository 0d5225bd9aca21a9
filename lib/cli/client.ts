/**
 * The HTTP client for pipegate's owner and caller APIs. Owner calls carry the owner
 * credential (bearer token or SigV4); caller calls carry a deployment's API key. Every
 * response body is checked before use; the raw body is kept for `--json`.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import * as v from 'valibot';
import { STATUSES } from '../../functions/core/transitions';
import { UploadAnswer } from '../../functions/core/shapes';
import { INPUT_VALUE_TYPES } from '../../functions/core/values';
import { EXIT, FailureError, ServiceError, UnreachableError, UsageError } from './errors';
import type { Connection } from './connection';
import { defaultCredentials, signRequest, type CredentialSource } from './sigv4';

const Status = v.picklist(STATUSES);
const Raw = v.union([v.string(), v.number(), v.boolean()]);
const ValueType = v.picklist(INPUT_VALUE_TYPES);
const Nullable = <T extends v.GenericSchema>(s: T) => v.nullable(s);

const ProblemBody = v.looseObject({ path: v.string(), reason: v.string() });
export const PushBody = v.looseObject({
  pipeline_id: v.string(),
  version: v.number(),
  created: v.boolean(),
  warnings: v.optional(v.array(ProblemBody)),
});
export const SecretBody = v.looseObject({ name: v.string(), updated_at: v.string() });
export const SecretsBody = v.looseObject({ secrets: v.array(SecretBody) });
export const PipelineSummaryBody = v.looseObject({
  pipeline_id: v.string(),
  version: v.number(),
  description: v.optional(Nullable(v.string())),
  deployment_id: v.optional(Nullable(v.string())),
  created_at: v.optional(v.string()),
  updated_at: v.optional(v.string()),
});
export const ListBody = v.looseObject({ pipelines: v.array(PipelineSummaryBody) });
export const PipelineBody = v.looseObject({
  pipeline_id: v.string(),
  version: v.number(),
  definition: v.looseObject({ nodes: v.record(v.string(), v.unknown()) }),
});
/** While an execution waits for an event: each wait node with the URL to POST it to (absent otherwise). */
const WaitingBody = v.optional(v.array(v.looseObject({ node_id: v.string(), resume_url: v.string(), expires_at: v.string() })));
export const RunStartedBody = v.looseObject({
  run_id: v.string(),
  version: v.number(),
  status: Status,
  status_url: v.optional(v.string()),
});
export const RunBody = v.looseObject({
  run_id: v.string(),
  pipeline_id: v.string(),
  version: v.number(),
  status: Status,
  inputs: v.record(v.string(), Raw),
  outputs: Nullable(v.record(v.string(), Raw)),
  error_message: Nullable(v.string()),
  /** Older services do not send it. */
  values_expired: v.optional(v.array(v.string())),
  created_at: v.string(),
  started_at: Nullable(v.string()),
  completed_at: Nullable(v.string()),
  completion_duration: v.optional(Nullable(v.number())),
  waiting: WaitingBody,
});
export const RunsBody = v.looseObject({ runs: v.array(RunBody), next_cursor: Nullable(v.string()) });
const ContractInputBody = v.looseObject({ id: v.string(), value_type: ValueType, value: Raw, visible: v.boolean() });
const ContractOutputBody = v.looseObject({ id: v.string(), visible: v.boolean() });
const DeploymentBody = v.looseObject({
  deployment_id: v.string(),
  version: v.number(),
  published_at: v.string(),
  execute_url: v.string(),
  // Absent from a service that predates the MCP server.
  mcp_url: v.optional(v.string()),
  form_url: v.optional(v.nullable(v.string())),
  form: v.optional(v.nullable(v.looseObject({ enabled: v.boolean(), title: v.nullable(v.string()), description: v.nullable(v.string()) }))),
  // Absent from a service that predates it: node detail was always on there.
  events: v.optional(v.looseObject({ node_detail: v.boolean() })),
  inputs: v.array(ContractInputBody),
  outputs: v.array(ContractOutputBody),
  // Absent from a service that predates wait nodes.
  waits: v.optional(v.array(v.looseObject({ id: v.string(), visible: v.boolean(), timeout_ms: v.number() }))),
});
export const ReadinessBody = v.looseObject({
  pipeline_id: v.string(),
  state: v.picklist(['run_required', 'not_published', 'live', 'needs_publish']),
  publishable: v.boolean(),
  latest_run: Nullable(v.looseObject({ run_id: v.string(), status: Status, version: v.number() })),
  counts: v.optional(v.looseObject({ inputs: v.number(), outputs: v.number() })),
  published_at: v.optional(Nullable(v.string())),
  discovered: Nullable(v.looseObject({ inputs: v.array(ContractInputBody), outputs: v.array(ContractOutputBody) })),
  deployment: Nullable(DeploymentBody),
});
export const PublishBody = v.looseObject({
  ...DeploymentBody.entries,
  api_key: v.optional(v.string()),
  signing_secret: v.optional(v.string()),
});
export const RotateBody = v.looseObject({
  api_key: v.optional(v.string()),
  signing_secret: v.optional(v.string()),
  form_url: v.optional(v.string()),
});
export const CallerContractBody = v.looseObject({
  deployment_id: v.string(),
  inputs: v.array(v.looseObject({ id: v.string(), value_type: ValueType, value: Raw })),
  outputs: v.array(v.looseObject({ id: v.string() })),
});
export const AcceptedBody = v.looseObject({
  status: v.string(),
  status_url: v.string(),
  result_url: v.string(),
  deployment_id: v.string(),
  execution_id: v.string(),
});
export const ExecutionStatusBody = v.looseObject({
  status: Status,
  execution_id: v.string(),
  error_message: Nullable(v.string()),
  completion_duration: Nullable(v.number()),
  waiting: WaitingBody,
});
export const ResultBody = v.looseObject({
  status: Status,
  execution_id: v.string(),
  deployment_id: v.string(),
  completion_duration: Nullable(v.number()),
  error_message: Nullable(v.string()),
  // A list output's value is its files' links (null where an item failed).
  response_data: v.record(v.string(), v.looseObject({ value: v.union([Raw, v.array(v.nullable(v.string()))]), value_type: v.string() })),
});

const Delivery = v.looseObject({
  webhook_id: v.string(),
  attempts: v.number(),
  outcome: v.string(),
  last_status: Nullable(v.number()),
  last_error: Nullable(v.string()),
  last_attempt_at: v.optional(Nullable(v.string())),
  next_attempt_at: v.optional(Nullable(v.string())),
  redelivery: v.optional(v.boolean()),
  log: v.optional(
    v.array(
      v.looseObject({
        at: v.string(),
        duration_ms: v.number(),
        status: Nullable(v.number()),
        error: Nullable(v.string()),
        redelivery: v.optional(v.boolean()),
      }),
    ),
  ),
});
const TraceEntry = v.looseObject({
  node: v.string(),
  type: v.string(),
  outcome: v.string(),
  started_at: Nullable(v.string()),
  completed_at: Nullable(v.string()),
  duration_ms: Nullable(v.number()),
  error: Nullable(v.string()),
  http_status: Nullable(v.number()),
  preview: Nullable(v.string()),
  item_errors: v.optional(v.array(v.looseObject({ index: v.number(), error: v.string() }))),
});
export const OwnerExecutionBody = v.looseObject({
  execution_id: v.string(),
  values_expired: v.optional(v.array(v.string())),
  kind: v.picklist(['run', 'api']),
  pipeline_id: v.string(),
  version: v.number(),
  deployment_id: Nullable(v.string()),
  status: Status,
  inputs: v.record(v.string(), Raw),
  hidden_inputs: v.optional(v.array(v.string())),
  outputs: Nullable(v.record(v.string(), Raw)),
  visible_outputs: Nullable(v.array(v.string())),
  error_message: Nullable(v.string()),
  callback: Nullable(v.string()),
  callback_delivery: Nullable(Delivery),
  failed_node: v.optional(Nullable(v.looseObject({ node: v.string(), error: Nullable(v.string()), http_status: Nullable(v.number()) }))),
  trace: v.optional(Nullable(v.array(TraceEntry))),
  trace_truncated: v.optional(v.boolean()),
  created_at: v.string(),
  started_at: Nullable(v.string()),
  completed_at: Nullable(v.string()),
  completion_duration: v.optional(Nullable(v.number())),
  waiting: WaitingBody,
});
export const ExecutionListBody = v.looseObject({
  pipeline_id: v.string(),
  deployment_id: v.string(),
  executions: v.array(
    v.looseObject({
      execution_id: v.string(),
      status: Status,
      created_at: v.string(),
      started_at: Nullable(v.string()),
      completed_at: Nullable(v.string()),
      completion_duration: Nullable(v.number()),
      error_message: Nullable(v.string()),
      callback: Nullable(
        v.looseObject({ outcome: v.string(), attempts: v.number(), last_status: Nullable(v.number()), last_error: Nullable(v.string()) }),
      ),
      /** Who started it: a caller with a key (`api`) or the web form (`form`). */
      source: v.optional(v.string()),
    }),
  ),
  next_cursor: Nullable(v.string()),
});
const UsageWindow = v.looseObject({
  from: v.string(),
  to: v.string(),
  total: v.number(),
  by_status: v.record(v.string(), v.number()),
  p50_ms: Nullable(v.number()),
  p95_ms: Nullable(v.number()),
});
const CallerUsageWindow = v.looseObject({
  accepted: v.number(),
  refused_rate: v.number(),
  refused_quota: v.number(),
  total: v.number(),
  by_status: v.record(v.string(), v.number()),
  p50_ms: Nullable(v.number()),
  p95_ms: Nullable(v.number()),
});
const ConsumerUsageBody = v.looseObject({
  consumer_id: Nullable(v.string()),
  name: Nullable(v.string()),
  last_hour: CallerUsageWindow,
  last_day: CallerUsageWindow,
});
export const UsageBody = v.looseObject({
  pipeline_id: v.string(),
  deployment_id: v.string(),
  last_hour: UsageWindow,
  last_day: UsageWindow,
  // Absent from services older than consumers.
  by_consumer: v.optional(v.array(ConsumerUsageBody), []),
});
const LimitsBody = {
  rate_limit: Nullable(v.looseObject({ requests: v.number(), per_seconds: v.number() })),
  quota: Nullable(v.looseObject({ executions: v.number(), per: v.string() })),
};
export const ConsumerBody = v.looseObject({
  consumer_id: v.string(),
  name: v.string(),
  status: v.string(),
  key_prefix: v.string(),
  ...LimitsBody,
  expires_at: Nullable(v.string()),
  metadata: v.record(v.string(), v.string()),
  last_used_at: Nullable(v.string()),
});
export const NewConsumerBody = v.looseObject({ ...ConsumerBody.entries, api_key: v.string() });
export const ConsumersBody = v.looseObject({ consumers: v.array(ConsumerBody) });
export const ConsumerKeyBody = v.looseObject({ consumer_id: v.string(), api_key: v.string() });
export type Consumer = v.InferOutput<typeof ConsumerBody>;
/** What create and update send (lib/cli/commands/consumers.ts builds it from the options). */
export interface ConsumerFields {
  name?: string;
  rate_limit?: { requests: number; per_seconds: number } | null;
  quota?: { executions: number; per: 'day' | 'month' } | null;
  expires_at?: string | null;
  metadata?: Record<string, string>;
}

export type OwnerExecution = v.InferOutput<typeof OwnerExecutionBody>;
export type ExecutionList = v.InferOutput<typeof ExecutionListBody>;
export type Usage = v.InferOutput<typeof UsageBody>;
export type Push = v.InferOutput<typeof PushBody>;
export type PipelineList = v.InferOutput<typeof ListBody>;
export type Pipeline = v.InferOutput<typeof PipelineBody>;
export type RunStarted = v.InferOutput<typeof RunStartedBody>;
export type Run = v.InferOutput<typeof RunBody>;
export type Runs = v.InferOutput<typeof RunsBody>;
export type Readiness = v.InferOutput<typeof ReadinessBody>;
export type Published = v.InferOutput<typeof PublishBody>;
export type Rotated = v.InferOutput<typeof RotateBody>;
export type CallerContract = v.InferOutput<typeof CallerContractBody>;
export type Accepted = v.InferOutput<typeof AcceptedBody>;
export type ExecutionStatusView = v.InferOutput<typeof ExecutionStatusBody>;
export type Result = v.InferOutput<typeof ResultBody>;
export type Upload = v.InferOutput<typeof UploadAnswer>;

/** A checked response: `body` is the parsed view, `raw` exactly what the service sent. */
export interface Reply<T> {
  status: number;
  body: T;
  raw: unknown;
}

export interface ClientOptions {
  connection: Connection;
  fetch?: typeof fetch;
  /** Per-request deadline. */
  timeoutMs?: number;
  /** AWS credentials for SigV4 (tests pass fixed ones); defaults to the standard chain. */
  credentials?: CredentialSource;
}

/** The service answered 2xx with a body the CLI does not understand. */
export class UnexpectedResponseError extends Error {
  readonly exitCode = EXIT.failure;
}

const enc = encodeURIComponent;

export class PipegateClient {
  private readonly fetchFn: typeof fetch;
  private readonly timeoutMs: number;
  private credentials: CredentialSource | undefined;

  constructor(private readonly opts: ClientOptions) {
    this.fetchFn = opts.fetch ?? fetch;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.credentials = opts.credentials;
  }

  get baseUrl(): string {
    return this.opts.connection.baseUrl;
  }

  // Owner API (contract §7).
  push(id: string, definition: unknown) {
    return this.owner('PUT', `/v1/pipelines/${enc(id)}`, PushBody, definition);
  }
  listPipelines() {
    return this.owner('GET', '/v1/pipelines', ListBody);
  }
  getPipeline(id: string) {
    return this.owner('GET', `/v1/pipelines/${enc(id)}`, PipelineBody);
  }
  createRunUpload(id: string, file: { media_type: string; bytes: number }) {
    return this.owner('POST', `/v1/pipelines/${enc(id)}/uploads`, UploadAnswer, file);
  }
  startRun(id: string, inputs: Record<string, string | number | boolean>) {
    return this.owner('POST', `/v1/pipelines/${enc(id)}/runs`, RunStartedBody, Object.keys(inputs).length ? { inputs } : {});
  }
  getRun(id: string, runId: string) {
    return this.owner('GET', `/v1/pipelines/${enc(id)}/runs/${enc(runId)}`, RunBody);
  }
  listRuns(id: string, page: { limit?: number; cursor?: string } = {}) {
    const q = new URLSearchParams();
    if (page.limit !== undefined) q.set('limit', String(page.limit));
    if (page.cursor !== undefined) q.set('cursor', page.cursor);
    const qs = q.toString();
    return this.owner('GET', `/v1/pipelines/${enc(id)}/runs${qs ? `?${qs}` : ''}`, RunsBody);
  }
  readiness(id: string) {
    return this.owner('GET', `/v1/pipelines/${enc(id)}/deployment`, ReadinessBody);
  }
  publish(
    id: string,
    visibility: {
      inputs?: Record<string, { visible: boolean }>;
      outputs?: Record<string, { visible: boolean }>;
      form?: { enabled: boolean; title?: string; description?: string };
    },
  ) {
    return this.owner('PUT', `/v1/pipelines/${enc(id)}/deployment`, PublishBody, visibility);
  }
  deleteDeployment(id: string, deploymentId: string) {
    return this.owner('DELETE', `/v1/pipelines/${enc(id)}/deployment?confirm=${enc(deploymentId)}`, v.unknown());
  }
  rotate(id: string, body: { grace_seconds?: number; credential?: 'api_key' | 'signing_secret' | 'form_link' }) {
    return this.owner('POST', `/v1/pipelines/${enc(id)}/deployment/keys`, RotateBody, body);
  }

  listExecutions(id: string, q: { status?: string; limit?: number; since?: string; cursor?: string } = {}) {
    const params = new URLSearchParams();
    for (const [k, val] of Object.entries(q)) if (val !== undefined) params.set(k, String(val));
    const qs = params.toString();
    return this.owner('GET', `/v1/pipelines/${enc(id)}/deployment/executions${qs ? `?${qs}` : ''}`, ExecutionListBody);
  }
  getExecution(id: string, executionId: string) {
    return this.owner('GET', `/v1/pipelines/${enc(id)}/executions/${enc(executionId)}`, OwnerExecutionBody);
  }
  cancelExecution(id: string, executionId: string) {
    return this.owner('POST', `/v1/pipelines/${enc(id)}/executions/${enc(executionId)}/cancel`, OwnerExecutionBody);
  }
  redeliver(id: string, executionId: string) {
    return this.owner('POST', `/v1/pipelines/${enc(id)}/executions/${enc(executionId)}/callback/redeliver`, Delivery);
  }
  createConsumer(id: string, body: ConsumerFields) {
    return this.owner('POST', `/v1/pipelines/${enc(id)}/deployment/consumers`, NewConsumerBody, body);
  }

  listConsumers(id: string) {
    return this.owner('GET', `/v1/pipelines/${enc(id)}/deployment/consumers`, ConsumersBody);
  }

  updateConsumer(id: string, consumerId: string, body: ConsumerFields) {
    return this.owner('PATCH', `/v1/pipelines/${enc(id)}/deployment/consumers/${enc(consumerId)}`, ConsumerBody, body);
  }

  setKeyLimits(id: string, body: Pick<ConsumerFields, 'rate_limit' | 'quota'>) {
    return this.owner(
      'PUT',
      `/v1/pipelines/${enc(id)}/deployment/limits`,
      v.looseObject({ deployment_id: v.string(), ...LimitsBody }),
      body,
    );
  }

  revokeConsumer(id: string, consumerId: string) {
    return this.owner('DELETE', `/v1/pipelines/${enc(id)}/deployment/consumers/${enc(consumerId)}`, v.unknown());
  }

  rotateConsumerKey(id: string, consumerId: string, body: { grace_seconds?: number }) {
    return this.owner('POST', `/v1/pipelines/${enc(id)}/deployment/consumers/${enc(consumerId)}/keys`, ConsumerKeyBody, body);
  }

  usage(id: string) {
    return this.owner('GET', `/v1/pipelines/${enc(id)}/deployment/usage`, UsageBody);
  }

  setSecret(name: string, value: string) {
    return this.owner('PUT', `/v1/secrets/${enc(name)}`, SecretBody, { value });
  }
  listSecrets() {
    return this.owner('GET', '/v1/secrets', SecretsBody);
  }
  deleteSecret(name: string) {
    return this.owner('DELETE', `/v1/secrets/${enc(name)}`, v.unknown());
  }

  // Caller API (contract §4).
  contract(deploymentId: string, key: string) {
    return this.caller('GET', `/v1/deployments/${enc(deploymentId)}/`, key, CallerContractBody);
  }
  execute(deploymentId: string, key: string, body: unknown, idempotencyKey?: string) {
    return this.caller(
      'POST',
      `/v1/deployments/${enc(deploymentId)}/executions/`,
      key,
      AcceptedBody,
      body,
      idempotencyKey ? { 'idempotency-key': idempotencyKey } : {},
    );
  }
  executionStatus(executionId: string, key: string) {
    return this.caller('GET', `/v1/deployments/executions/${enc(executionId)}/status/`, key, ExecutionStatusBody);
  }
  executionResult(executionId: string, key: string) {
    return this.caller('GET', `/v1/deployments/executions/${enc(executionId)}/result/`, key, ResultBody);
  }
  /**
   * The execution's server-sent events (contract §4), one message at a time as they arrive,
   * from after `lastEventId` when given. No overall deadline: the stream lasts as long as the
   * execution (`signal` ends it). An error answer is a ServiceError as for any call; a stream
   * cut short simply ends (the caller reconnects with the last id it saw).
   */
  executionEvents(
    executionId: string,
    key: string,
    lastEventId: string | undefined,
    signal: AbortSignal,
  ): AsyncGenerator<EventSourceMessage> {
    const url = new URL(`${this.baseUrl}/v1/deployments/executions/${enc(executionId)}/events/`);
    return this.events(
      url,
      { accept: 'text/event-stream', 'x-api-key': key, ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) },
      signal,
      'caller',
    );
  }

  /** An owner's run as server-sent events (contract §7), as executionEvents is for callers. */
  async *runEvents(id: string, runId: string, lastEventId: string | undefined, signal: AbortSignal): AsyncGenerator<EventSourceMessage> {
    const url = new URL(`${this.baseUrl}/v1/pipelines/${enc(id)}/runs/${enc(runId)}/events`);
    const headers = await this.ownerHeaders('GET', url, {
      accept: 'text/event-stream',
      ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }),
    });
    yield* this.events(url, headers, signal, 'owner', id);
  }

  private async *events(
    url: URL,
    headers: Record<string, string>,
    signal: AbortSignal,
    audience: 'owner' | 'caller',
    pipeline?: string,
  ): AsyncGenerator<EventSourceMessage> {
    let res: Response;
    try {
      res = await this.fetchFn(url, { headers, signal });
    } catch (e) {
      throw new UnreachableError(this.baseUrl, networkReason(e));
    }
    if (!res.ok || !res.body) {
      const text = await res.text().catch(() => '');
      let raw: unknown;
      try {
        raw = JSON.parse(text) as unknown;
      } catch {
        raw = undefined;
      }
      const errBody =
        typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : { error: `HTTP ${res.status}` };
      throw new ServiceError(res.status, errBody, audience, pipeline);
    }
    const ready: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (m) => ready.push(m) });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        parser.feed(decoder.decode(chunk, { stream: true }));
        while (ready.length > 0) yield ready.shift() as EventSourceMessage;
      }
    } catch (e) {
      if (signal.aborted) return;
      // A stream cut short (a restart, a proxy, the 15-minute limit) ends; the caller resumes.
      if (!(e instanceof TypeError) && (e as { name?: string }).name !== 'AbortError') throw e;
    }
  }
  callerCancel(executionId: string, key: string) {
    return this.caller('POST', `/v1/deployments/executions/${enc(executionId)}/cancel/`, key, ExecutionStatusBody);
  }
  createUpload(deploymentId: string, key: string, file: { media_type: string; bytes: number }) {
    return this.caller('POST', `/v1/deployments/${enc(deploymentId)}/uploads/`, key, UploadAnswer, file);
  }

  /**
   * Sends a body to a URL the service handed out (an upload URL, a capability link): no
   * credential of ours goes with it, and no overall deadline, since large files take long.
   * A transport failure is a FailureError naming that URL's origin (never its path or query).
   */
  async transfer(url: string, init: RequestInit): Promise<Response> {
    try {
      return await this.fetchFn(url, init);
    } catch (e) {
      throw new FailureError(`cannot reach ${new URL(url).origin} (${networkReason(e)})`);
    }
  }

  /** The owner's credentials on a request: the local bearer token, or a SigV4 signature. */
  private async ownerHeaders(method: string, url: URL, base: Record<string, string>, text?: string): Promise<Record<string, string>> {
    const headers: Record<string, string> = { ...base };
    const auth = this.opts.connection.owner;
    switch (auth.kind) {
      case 'bearer':
        headers.authorization = `Bearer ${auth.token}`;
        break;
      case 'sigv4': {
        this.credentials ??= await defaultCredentials();
        Object.assign(
          headers,
          await signRequest(
            { method, url, headers, ...(text !== undefined ? { body: text } : {}) },
            { region: auth.region, credentials: this.credentials },
          ),
        );
        break;
      }
      case 'missing':
        throw new UsageError(
          'no owner token: pipegate needs the token the local runtime printed when it started',
          `pass --token, set PIPEGATE_OWNER_TOKEN, or run where the runtime keeps its data (looked for ${auth.looked.at(-1) ?? 'owner-token'}; set PIPEGATE_DATA_DIR if it lives elsewhere). On AWS, pass --aws to sign with your AWS credentials.`,
        );
      case 'no-region':
        throw new UsageError(`cannot tell which AWS region ${auth.host} is in`, 'pass --region or set AWS_REGION');
    }
    return headers;
  }

  private async owner<S extends v.GenericSchema>(
    method: string,
    path: string,
    schema: S,
    body?: unknown,
  ): Promise<Reply<v.InferOutput<S>>> {
    const url = new URL(this.baseUrl + path);
    const text = body === undefined ? undefined : JSON.stringify(body);
    const headers = await this.ownerHeaders(
      method,
      url,
      { accept: 'application/json', ...(text !== undefined ? { 'content-type': 'application/json' } : {}) },
      text,
    );
    const pipeline = /^\/v1\/pipelines\/([^/?]+)/.exec(path)?.[1];
    return this.send(method, url, headers, text, schema, 'owner', pipeline === undefined ? undefined : decodeURIComponent(pipeline));
  }

  private caller<S extends v.GenericSchema>(
    method: string,
    path: string,
    key: string,
    schema: S,
    body?: unknown,
    extra: Record<string, string> = {},
  ): Promise<Reply<v.InferOutput<S>>> {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { accept: 'application/json', 'x-api-key': key, ...extra };
    if (text !== undefined) headers['content-type'] = 'application/json';
    return this.send(method, new URL(this.baseUrl + path), headers, text, schema, 'caller');
  }

  private async send<S extends v.GenericSchema>(
    method: string,
    url: URL,
    headers: Record<string, string>,
    body: string | undefined,
    schema: S,
    audience: 'owner' | 'caller',
    pipeline?: string,
  ): Promise<Reply<v.InferOutput<S>>> {
    let res: Response;
    let text: string;
    try {
      res = await this.fetchFn(url, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      text = await res.text();
    } catch (e) {
      throw new UnreachableError(this.baseUrl, networkReason(e));
    }
    let raw: unknown = undefined;
    if (text.trim() !== '') {
      try {
        raw = JSON.parse(text) as unknown;
      } catch {
        raw = { error: text.length > 200 ? `${text.slice(0, 200)}…` : text };
      }
    }
    if (!res.ok) {
      const errBody =
        typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : { error: `HTTP ${res.status}` };
      throw new ServiceError(res.status, errBody, audience, pipeline);
    }
    const parsed = v.safeParse(schema, raw);
    if (!parsed.success) {
      const issue = parsed.issues[0];
      throw new UnexpectedResponseError(
        `pipegate at ${this.baseUrl} answered ${method} ${url.pathname} with a body this CLI does not understand (${v.getDotPath(issue) ?? 'body'}: ${issue.message}); are the CLI and the service the same version?`,
      );
    }
    return { status: res.status, body: parsed.output, raw };
  }
}

function networkReason(e: unknown): string {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err.name === 'TimeoutError') return 'timed out';
  return err.cause?.code ?? err.cause?.message ?? err.message ?? String(e);
}
