/**
 * A deployment as a Model Context Protocol tool (docs/contract.md, "MCP"): its one tool's
 * definition from the contract and the published version's graph, the tool's arguments as an
 * execute request, and an execution's status and result as MCP answers (a tool result, a task,
 * progress). Pure: the service (functions/services/mcp.service.ts) reads the records and the
 * SDK speaks the protocol.
 *
 * The arguments are the visible inputs as plain values (a string, a number, a URL), not the
 * value objects of the REST API; what the execute parser refuses is refused here too, with the
 * same words, naming the argument.
 */
import { callerContract } from './contract';
import { acceptsText, UPLOAD_VALUE_PREFIX, UPLOADS_ROUTE } from './assets';
import { AppError } from './errors';
import { isTerminal, type ExecutionStatus } from './transitions';
import type { ContractInput, Deployment, Execution, PipelineDefinition, RawValue } from './types';
import { isAbsoluteHttpUrl, isPlainObject, requestValueType, VALUE_SCHEMAS } from './values';
import { jsonSchemaOf, type JsonSchema } from './openapi-shared';
import type { ExecutionUrls, OutputValue } from './views';
import type { AssetListOutputValue, AssetOutputValue } from './output-assets';
import type { NodeProgress } from './progress';

/** The dialect every schema here is written in (MCP's default since 2025-11-25, said outright). */
export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** What the spec allows a tool name to be. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The tool's name: the pipeline id with `-` as `_`. Pipeline ids (`[a-z0-9-]`, at most 63)
 * always fit the spec's pattern; underscores because several agent frameworks turn tool names
 * into identifiers (Semantic Kernel's function names are `[A-Za-z0-9_]`). No pipeline id holds
 * `_`, so two pipelines never share a tool name.
 */
export const toolName = (pipelineId: string): string => pipelineId.replace(/-/g, '_');

/**
 * How long a tools/call without a task waits for the execution: the wait bound callers' `Prefer:
 * wait` has (PIPEGATE_MAX_WAIT_SECONDS), and never more than this, so the answer comes before
 * an MCP client gives up on its request (the official SDKs' default time-out is 60 s).
 */
export const MCP_CALL_MAX_WAIT_SECONDS = 45;

/** How often a task's client is told to poll (tasks/get), in ms. */
export const TASK_POLL_INTERVAL_MS = 1000;

/**
 * An asset argument given as a URL is fetched by the service when the call arrives, as a file
 * sent inline would be: at most this many bytes (the decoded size of the execute route's inline
 * limit) and within URL_ASSET_TIMEOUT_MS. Larger files go through an upload.
 */
export const URL_ASSET_MAX_BYTES = 3 * 1024 * 1024;
export const URL_ASSET_TIMEOUT_MS = 10_000;

/** The result's `_meta` key carrying the execution behind a tool call. */
export const EXECUTION_META_KEY = 'pipegate/execution';

export type ToolAnnotations = { readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint: boolean; openWorldHint: boolean };

export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema & { type: 'object' };
  outputSchema: JsonSchema & { type: 'object' };
  annotations: ToolAnnotations & { title: string };
  execution: { taskSupport: 'optional' };
}

/** What the published version's graph says of the tool's effects. */
export function toolAnnotations(def: Pick<PipelineDefinition, 'nodes'>): ToolAnnotations {
  const http = Object.values(def.nodes).filter((n) => n.type === 'http');
  // GET is the engine's default method; anything else may change something upstream.
  const writes = http.some((n) => n.type === 'http' && (n.method ?? 'GET') !== 'GET');
  return {
    readOnlyHint: !writes,
    // The graph cannot tell whether a write destroys anything; the spec's default (true) is the safe guess.
    ...(writes ? { destructiveHint: true } : {}),
    idempotentHint: false,
    openWorldHint: http.length > 0,
  };
}

/** An input's words for an agent: its type, its description from the definition, what it accepts. */
function inputDescription(i: Pick<ContractInput, 'value_type' | 'media_types' | 'max_bytes'>, described: string | undefined): string {
  const own = described ? `${described.trim()} ` : '';
  if (i.value_type === 'asset')
    return (
      `${own}A file (${acceptsText(i)}): an http(s) URL the service fetches when the call arrives (at most ${URL_ASSET_MAX_BYTES} bytes), ` +
      `a base64 data URI (data:<media type>;base64,…), or an upload's value (${UPLOAD_VALUE_PREFIX}<upload id>, from ${UPLOADS_ROUTE} with the same key). ` +
      'The media type is sniffed from the bytes. Left out: the published file.'
    );
  if (i.value_type === 'reference') return `${own}An absolute http(s) URL, passed to the pipeline as it is. Left out: the published one.`;
  return `${own}Left out: the published value.`.trim();
}

/**
 * Each visible input with the schema its `value` has in the deployment's OpenAPI document
 * (values.ts VALUE_SCHEMAS), its published value as the default (not for files: a data URI is
 * no default to show an agent). Hidden inputs are not there: they cannot be set, and their
 * published values stay unseen.
 */
function inputSchema(dep: Pick<Deployment, 'deployment_id' | 'inputs' | 'outputs'>, def: Pick<PipelineDefinition, 'nodes'>) {
  const properties: Record<string, JsonSchema> = {};
  for (const i of callerContract(dep).inputs) {
    const node = Object.hasOwn(def.nodes, i.id) ? def.nodes[i.id] : undefined;
    const base = i.value_type === 'asset' ? { type: 'string' } : jsonSchemaOf(VALUE_SCHEMAS[i.value_type]);
    const { description: _, ...schema } = base;
    // The label the owner gave the input (the web form shows it too) is its schema's title.
    const label = node?.type === 'input' ? node.label : undefined;
    properties[i.id] = {
      ...(label ? { title: label } : {}),
      ...schema,
      description: inputDescription(i, node?.description),
      ...(i.value_type === 'asset' ? {} : { default: i.value }),
    };
  }
  return { $schema: JSON_SCHEMA_DIALECT, type: 'object' as const, properties, additionalProperties: false };
}

/** An ASSET output in structuredContent: the link to its bytes, as the REST result gives it. */
const ASSET_OUTPUT = {
  type: 'object',
  properties: {
    url: { type: 'string', format: 'uri', description: 'A capability link serving the exact bytes; it expires (expires_at).' },
    media_type: { type: 'string', description: 'Sniffed from the bytes.' },
    bytes: { type: 'integer', minimum: 0 },
    expires_at: { type: 'string', format: 'date-time' },
  },
  required: ['url', 'media_type', 'bytes', 'expires_at'],
  additionalProperties: false,
};
const RAW_OUTPUT = { type: ['string', 'number', 'boolean'] };
/** A list of files (a map's): each file as ASSET_OUTPUT, in order; null where an item failed. */
const ASSET_LIST_OUTPUT = { type: 'array', items: { anyOf: [ASSET_OUTPUT, { type: 'null' }] } };

/**
 * The visible outputs by id, each a value or a file link as the contract recorded it. No
 * `required`: a call that is still running when its wait ends answers `{}` (see callResult).
 */
function outputSchema(dep: Pick<Deployment, 'deployment_id' | 'inputs' | 'outputs'>) {
  const properties: Record<string, JsonSchema> = {};
  for (const o of callerContract(dep).outputs) {
    const shape =
      o.value_type === 'ASSET'
        ? o.list === true
          ? ASSET_LIST_OUTPUT
          : ASSET_OUTPUT
        : o.value_type === 'RAW'
          ? RAW_OUTPUT
          : { anyOf: [RAW_OUTPUT, ASSET_OUTPUT, ASSET_LIST_OUTPUT] };
    properties[o.id] = o.optional === true ? { ...shape, description: 'Absent when the branch it comes from did not run.' } : shape;
  }
  return { $schema: JSON_SCHEMA_DIALECT, type: 'object' as const, properties, additionalProperties: false };
}

export type ToolSource = Pick<Deployment, 'deployment_id' | 'pipeline_id' | 'version' | 'inputs' | 'outputs'>;

/** The deployment's one tool (tools/list). */
export function toolDefinition(dep: ToolSource, def: Pick<PipelineDefinition, 'nodes' | 'description'>): ToolDefinition {
  const own = def.description?.trim();
  const description =
    `${own ? `${own}\n\n` : ''}Runs version ${dep.version} of the pipegate pipeline ${dep.pipeline_id}. ` +
    'Arguments left out take their published values. A long run can be called as a task (tasks/get, tasks/result, tasks/cancel).';
  const title = dep.pipeline_id;
  return {
    name: toolName(dep.pipeline_id),
    title,
    description,
    inputSchema: inputSchema(dep, def),
    outputSchema: outputSchema(dep),
    annotations: { title, ...toolAnnotations(def) },
    execution: { taskSupport: 'optional' },
  };
}

/** A tools/call the deployment refuses before running, as the JSON-RPC invalid-params error says it. */
export interface InvalidArgument {
  message: string;
  /** The argument at fault, when one is. */
  argument: string | null;
}

/** What a call's arguments become: the execute request's `workflow_input`, and the files to fetch first. */
export interface CallRequest {
  workflowInput: Record<string, { value: RawValue; value_type: 'RAW' | 'REFERENCE' | 'ASSET' }>;
  /** Asset arguments given as URLs, by input id: fetched by the service, then sent as the file. */
  assetUrls: Record<string, string>;
}

const define = <T>(o: Record<string, T>, k: string, value: T) =>
  Object.defineProperty(o, k, { value, enumerable: true, writable: true, configurable: true });

/**
 * The arguments of a tools/call as an execute request. Only the arguments' shape is checked
 * here (an object of known names); each value is checked by the execute parser as any
 * caller's, and what it refuses comes back through invalidArgumentOf. null stands for an
 * argument left out (some agents send every optional argument, null when unset).
 */
export function callRequestOf(dep: Pick<Deployment, 'deployment_id' | 'inputs' | 'outputs'>, args: unknown): CallRequest | InvalidArgument {
  const visible = new Map(callerContract(dep).inputs.map((i) => [i.id, i]));
  const workflowInput: CallRequest['workflowInput'] = {};
  const assetUrls: Record<string, string> = {};
  if (args === undefined || args === null) return { workflowInput, assetUrls };
  if (!isPlainObject(args)) return { message: 'arguments must be an object of input ids to values', argument: null };
  for (const [id, value] of Object.entries(args)) {
    const input = visible.get(id);
    // Hidden and unknown names answer alike, as the execute parser has it.
    if (input === undefined) {
      const known = [...visible.keys()];
      return {
        message: `unknown argument '${id}'; ${known.length ? `the arguments are: ${known.join(', ')}` : 'this tool takes no arguments'}`,
        argument: id,
      };
    }
    if (value === null) continue;
    if (input.value_type === 'asset' && typeof value === 'string' && isAbsoluteHttpUrl(value)) {
      define(assetUrls, id, value);
      continue;
    }
    // Anything else goes on as it is: the parser says what is wrong with it, in its words.
    define(workflowInput, id, { value: value as RawValue, value_type: requestValueType(input.value_type) });
  }
  return { workflowInput, assetUrls };
}

export const isInvalidArgument = (x: CallRequest | InvalidArgument): x is InvalidArgument => 'message' in x;

/**
 * What the execute path refused, as an invalid-params error naming the argument: the parser's
 * and the asset checks' reasons say "input 'x' …"; here the input is an argument. Null for
 * anything that is not about the arguments (it is answered otherwise).
 */
export function invalidArgumentOf(e: unknown): InvalidArgument | null {
  if (!(e instanceof AppError)) return null;
  if (e.code !== 'InvalidInput' && e.code !== 'InvalidInputStructure' && e.code !== 'PayloadTooLarge') return null;
  const detail = typeof e.detail === 'string' ? e.detail : e.message;
  const named = /^(?:unknown )?input '([^']+)'/.exec(detail);
  const message = detail
    .replace(/^(unknown )?input '/, (_, unknown: string | undefined) => `${unknown ?? ''}argument '`)
    .replace(/^workflow_input\./, 'argument ');
  return { message, argument: named?.[1] ?? null };
}

/** A plain value of an output, as structuredContent holds it. */
type StructuredFile = { url: string; media_type: string; bytes: number; expires_at: string };
/** An output in structuredContent: a value, a file, or a list of files (null where an item failed). */
export type StructuredOutput = RawValue | StructuredFile | (StructuredFile | null)[];

export interface ContentBlock {
  type: 'text' | 'resource_link';
  [k: string]: unknown;
}

export interface ToolCallResult {
  content: ContentBlock[];
  structuredContent?: Record<string, StructuredOutput>;
  isError?: boolean;
  _meta: Record<string, unknown>;
}

/** The execution behind a call, for the client: its id, status and REST URLs (readable with the same key). */
export const executionMeta = (e: { execution_id: string; status: ExecutionStatus }, urls: ExecutionUrls) => ({
  [EXECUTION_META_KEY]: { execution_id: e.execution_id, status: e.status, ...urls },
});

/** One file as a resource_link. */
const fileLink = (name: string, title: string, uri: string, mimeType: string, size: number, expiresAt: string): ContentBlock => ({
  type: 'resource_link',
  uri,
  name,
  title,
  description: `The file of ${title.toLowerCase()} (${size} bytes); the link expires at ${expiresAt}.`,
  mimeType,
  size,
});

/** The REST result body's parts a tool result is made of (views.ts resultBody). */
export interface ResultView {
  status: ExecutionStatus;
  execution_id: string;
  error_message: string | null;
  response_data: Record<string, OutputValue>;
}

/**
 * A finished execution as a tool result: completed, the visible outputs as structuredContent
 * (files as their links), the same as JSON text, and each file as a resource_link; failed or
 * cancelled, isError with the reason callers are shown (never the owner's: no URL, body,
 * header or secret of the pipeline).
 */
export function callResult(r: ResultView, urls: ExecutionUrls): ToolCallResult {
  const _meta = executionMeta(r, urls);
  if (r.status === 'completed') {
    const structured: Record<string, StructuredOutput> = {};
    const links: ContentBlock[] = [];
    for (const [id, out] of Object.entries(r.response_data)) {
      if (out.value_type === 'RAW') define(structured, id, out.value);
      else if (!Array.isArray(out.value)) {
        const one = out as AssetOutputValue;
        define(structured, id, { url: one.value, media_type: one.media_type, bytes: one.bytes, expires_at: one.expires_at });
        links.push(fileLink(id, `Output ${id}`, one.value, one.media_type, one.bytes, one.expires_at));
      } else {
        // A list of files (a map's): each file in its place, null where an item failed.
        const list = out as AssetListOutputValue;
        const files = list.value.map((url, i) => {
          const [mediaType, bytes] = [list.media_type[i], list.bytes[i]];
          if (url === null || mediaType === null || mediaType === undefined || bytes === null || bytes === undefined) return null;
          links.push(fileLink(`${id}-${i + 1}`, `Output ${id}, file ${i + 1}`, url, mediaType, bytes, list.expires_at ?? ''));
          return { url, media_type: mediaType, bytes, expires_at: list.expires_at ?? '' };
        });
        define(structured, id, files);
      }
    }
    return { content: [{ type: 'text', text: JSON.stringify(structured) }, ...links], structuredContent: structured, _meta };
  }
  if (!isTerminal(r.status)) return stillRunning(r, urls);
  const why =
    r.status === 'cancelled'
      ? `Execution ${r.execution_id} was cancelled${r.error_message ? `: ${r.error_message}` : '.'}`
      : `Execution ${r.execution_id} failed: ${r.error_message ?? 'no reason was recorded'}`;
  return { content: [{ type: 'text', text: why }], isError: true, _meta };
}

/**
 * A call whose execution had not finished when its wait ran out: not an error (the run goes on),
 * so no outputs yet (`{}` fits the output schema) and where to find them.
 */
/** A wait node the caller may resume, with where (views: the execution's `waiting` list). */
export interface WaitingEvent {
  node_id: string;
  resume_url: string;
  expires_at: string;
}

/** Where the events an execution waits for go, in words an agent can act on. */
export function waitingText(waiting: readonly WaitingEvent[]): string {
  return waiting
    .map(
      (w) => `it waits for an event at wait node ${w.node_id}: POST a JSON object to ${w.resume_url} (no key; once; until ${w.expires_at})`,
    )
    .join('; ');
}

/** The key under which a tool result's and a task's `_meta` list what the execution waits for. */
export const WAITING_META_KEY = 'pipegate/waiting';

export function stillRunning(
  e: { execution_id: string; status: ExecutionStatus },
  urls: ExecutionUrls,
  waitedSeconds?: number,
  waiting: readonly WaitingEvent[] = [],
): ToolCallResult {
  const after = waitedSeconds === undefined ? '' : ` after ${waitedSeconds} s`;
  const text =
    `Execution ${e.execution_id} is still ${e.status}${after}; it goes on without this call. ` +
    (waiting.length > 0 ? `Its next step is yours: ${waitingText(waiting)}. ` : '') +
    `Its status: GET ${urls.status_url}; its outputs once it has finished: GET ${urls.result_url} (send the same key). ` +
    'Calling this tool as a task (tasks/get, tasks/result) follows a long run to its end.';
  return {
    content: [{ type: 'text', text }],
    structuredContent: {},
    _meta: { ...executionMeta(e, urls), ...(waiting.length > 0 ? { [WAITING_META_KEY]: [...waiting] } : {}) },
  };
}

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** An execution's status as a task's. */
export function taskStatusOf(s: ExecutionStatus): TaskStatus {
  if (s === 'completed' || s === 'failed' || s === 'cancelled') return s;
  return 'working';
}

export interface Task {
  taskId: string;
  status: TaskStatus;
  ttl: number | null;
  createdAt: string;
  lastUpdatedAt: string;
  pollInterval?: number;
  statusMessage?: string;
}

/**
 * An execution as a task: its id is the task's, its record's retention the task's time to live
 * (what a client asks for is not what decides it), and the caller's error as the status message.
 * While it waits for an event the caller may send (a visible wait node), the message says where:
 * the task stays `working` (the server asks nothing through tasks/result: `input_required`
 * would send a client there for elicitations this stateless server does not make).
 */
export function taskOf(
  e: Pick<Execution, 'execution_id' | 'status' | 'created_at' | 'started_at' | 'completed_at'>,
  ttlMs: number,
  callerError: string | null,
  waiting: readonly WaitingEvent[] = [],
): Task {
  const status = taskStatusOf(e.status);
  const message =
    status === 'working'
      ? `execution ${e.status}${waiting.length > 0 ? `; ${waitingText(waiting)}` : ''}`
      : status === 'completed'
        ? 'execution completed'
        : `execution ${e.status}${callerError ? `: ${callerError}` : ''}`;
  return {
    taskId: e.execution_id,
    status,
    ttl: ttlMs,
    createdAt: e.created_at,
    lastUpdatedAt: e.completed_at ?? e.started_at ?? e.created_at,
    ...(status === 'working' ? { pollInterval: TASK_POLL_INTERVAL_MS } : {}),
    statusMessage: message,
  };
}

/** One notifications/progress: how many of the nodes a caller sees have finished. */
export interface ProgressStep {
  progress: number;
  total: number;
  message: string;
}

/**
 * Progress from the nodes' events as the caller's event stream shows them (core/events.ts):
 * one step per node that has finished, failed or been skipped, in order, counted among the nodes the caller
 * sees (`shown`: hidden inputs and outputs are neither counted nor named); with node detail off,
 * counts only, never a node's id. `after` steps were sent already.
 */
export function progressSteps(
  progress: readonly NodeProgress[],
  shown: ReadonlySet<string>,
  nodeDetail: boolean,
  after: number,
): ProgressStep[] {
  const total = shown.size;
  const ended = new Set<string>();
  const steps: ProgressStep[] = [];
  for (const p of progress) {
    // A node's end: finished, failed or skipped (its waits, polls and item counts are not steps).
    if ((p.state !== 'finished' && p.state !== 'failed' && p.state !== 'skipped') || !shown.has(p.node) || ended.has(p.node)) continue;
    ended.add(p.node);
    const n = ended.size;
    const counts = `${n} of ${total} steps`;
    steps.push({
      progress: n,
      total,
      message: nodeDetail ? `${p.type} node ${p.node} ${p.state} (${counts})` : `${counts} done`,
    });
  }
  return steps.slice(after);
}

/** The nodes of a version a caller's progress counts: every node but hidden inputs and outputs. */
export function shownNodes(def: Pick<PipelineDefinition, 'nodes'>, dep: Pick<Deployment, 'inputs' | 'outputs'>): Set<string> {
  const visibleInputs = new Set(dep.inputs.filter((i) => i.visible).map((i) => i.id));
  const visibleOutputs = new Set(dep.outputs.filter((o) => o.visible).map((o) => o.id));
  return new Set(
    Object.entries(def.nodes)
      .filter(([id, n]) => (n.type === 'input' ? visibleInputs.has(id) : n.type === 'output' ? visibleOutputs.has(id) : true))
      .map(([id]) => id),
  );
}

/** initialize's words for an agent: what the one tool is and how long runs go. */
export function serverInstructions(dep: ToolSource): string {
  return (
    `This server is one pipegate deployment: the pipeline ${dep.pipeline_id}, version ${dep.version}, as one tool, ${toolName(dep.pipeline_id)}. ` +
    `A call runs the pipeline once and waits for it up to ${MCP_CALL_MAX_WAIT_SECONDS} s; a longer run answers with its execution id and status URL. ` +
    'A run that waits for an event from you (a wait node: an approval, an answer) says so at once, with the URL to POST a JSON object to; the task status message says the same. ' +
    'Call the tool as a task to follow a long run (tasks/get, tasks/result, tasks/cancel). File outputs are resource links that expire.'
  );
}
