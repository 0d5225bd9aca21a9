/**
 * A deployment's MCP server (docs/contract.md, "MCP"): one stateless Streamable HTTP exchange
 * per request, spoken by the official SDK's low-level Server, whose handlers are the caller
 * API's use cases. tools/call is an execute (the same submit, limits and usage, source `mcp`)
 * followed by a `Prefer: wait`-like wait that reports the nodes' progress; a task is the
 * execution itself (tasks/get its status, tasks/result its result, tasks/cancel its cancel).
 * Nothing is kept between requests: any instance answers any request.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  CancelTaskRequestSchema,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListToolsRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { INLINE_ASSET_BODY_MAX_BYTES } from '../core/assets';
import { assertBodySize } from '../core/body-size';
import { AppError } from '../core/errors';
import {
  callRequestOf,
  callResult,
  invalidArgumentOf,
  isInvalidArgument,
  MCP_CALL_MAX_WAIT_SECONDS,
  progressSteps,
  serverInstructions,
  shownNodes,
  stillRunning,
  taskOf,
  toolDefinition,
  waitingText,
  type WaitingEvent,
  URL_ASSET_MAX_BYTES,
  URL_ASSET_TIMEOUT_MS,
  type InvalidArgument,
  type ToolDefinition,
} from '../core/mcp-tool';
import { unpackProgress } from '../core/progress';
import { isTerminal } from '../core/transitions';
import type { Deployment, Execution, PipelineDefinition } from '../core/types';
import { isPlainObject } from '../core/values';
import { callerWaitsOf, executionUrls, resultBody, statusBody, waitsOnReader } from '../core/views';
import { callerWaitingList } from './resume.service';
import type { CallerAuth } from '../core/consumers';
import type { Deps } from '../adapters/deps';
import { errorFields } from '../adapters/logger';
import { assertDeployment, awaitTerminal, cancel, liveDeployment, ownedExecution, status, submit } from './caller.service';
import { callerOutputIds, outputLinks } from './output-links';

/** A deployment's tool and what its calls need, by (deployment, revision) like the contracts. */
interface DeploymentTool {
  dep: Deployment;
  tool: ToolDefinition;
  /** The nodes a caller's progress counts (hidden inputs and outputs left out). */
  shown: ReadonlySet<string>;
}
const tools = new Map<string, DeploymentTool>();
const TOOL_CACHE_MAX = 256;

async function deploymentTool(d: Deps, auth: CallerAuth): Promise<DeploymentTool> {
  const key = `${auth.deploymentId}:${auth.revision}`;
  const hit = tools.get(key);
  if (hit) return hit;
  const dep = await liveDeployment(d, auth);
  // The published version: its description and its inputs' descriptions, its graph's effects.
  const version = await d.pipelines.getVersion(dep.pipeline_id, dep.version);
  if (!version) throw new AppError('DeploymentNotFound');
  const def: PipelineDefinition = version.definition;
  const entry = { dep, tool: toolDefinition(dep, def), shown: shownNodes(def, dep) };
  if (tools.size >= TOOL_CACHE_MAX) tools.clear();
  tools.set(key, entry);
  return entry;
}

export interface McpRequest {
  deploymentId: string;
  /** Where links in answers point (the request's, or the configured public URL). */
  baseUrl: string;
  request: Request;
  /** The request's body, already read at the edge (null: none), for the size check. */
  bodyText: string | null;
}

/** The transport's answer, and what to do once it has been sent. */
export interface McpAnswer {
  response: Response;
  done(): Promise<void>;
}

/**
 * One request to the MCP URL. Before the protocol starts: the key's deployment (404 once it is
 * deleted), GET answered 405 (no server-initiated stream: the server keeps no session), an
 * Origin that is not the service's own refused (403, the transport spec's DNS-rebinding rule),
 * and the body limit (the usual one; a tools/call's file arguments may take the execute route's
 * inline room). Then a fresh Server and transport answer it.
 */
export async function serveMcp(d: Deps, auth: CallerAuth, req: McpRequest): Promise<McpAnswer> {
  assertDeployment(auth, req.deploymentId);
  const method = req.request.method.toUpperCase();
  if (method !== 'POST')
    throw new AppError(
      'MethodNotAllowed',
      'this MCP server is stateless and opens no server-initiated stream: POST JSON-RPC messages to this URL',
      {},
      { headers: { allow: 'POST' } },
    );
  const origin = req.request.headers.get('origin');
  if (origin !== null && !allowedOrigin(d, origin, req.baseUrl))
    throw new AppError('Forbidden', `requests from ${JSON.stringify(origin)} are not accepted here: Origin must be this service's own`);
  const text = req.bodyText ?? '';
  const entry = await deploymentTool(d, auth);
  assertBodySize(
    Buffer.byteLength(text, 'utf8'),
    { maxBodyBytes: d.config.maxBodyBytes, inlineAssets: true },
    fileArgumentChars(text, entry.dep),
  );

  const server = buildServer(d, auth, entry, req.baseUrl);
  // Stateless (no session ids): each request has its own Server and transport, as the SDK
  // requires. SSE answers, so a call can send progress before its result.
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    maxRequestBodySize: INLINE_ASSET_BODY_MAX_BYTES,
  });
  await server.connect(transport);
  const response = await transport.handleRequest(req.request);
  return {
    response,
    done: async () => {
      await server.close().catch((err: unknown) => d.log.warn('mcp server not closed cleanly', errorFields(err)));
    },
  };
}

/**
 * The origins a browser page may call from: the service's own, as configured (the public URL,
 * and the API's own address: on AWS its execute-api URL, locally the address the runtime
 * listens on, under any loopback name). Never the request's Host: under DNS rebinding the
 * Host is the attacker's name, and a check against it would pass their page's Origin.
 */
function allowedOrigin(d: Deps, origin: string, baseUrl: string): boolean {
  const configured = [d.config.publicUrl, d.config.apiUrl].filter((u): u is string => u !== undefined);
  const own = configured.length > 0 ? configured : [baseUrl];
  let asked: URL;
  try {
    asked = new URL(origin);
  } catch {
    return false;
  }
  return own.some((u) => {
    const mine = new URL(u);
    if (mine.origin === asked.origin) return true;
    return mine.protocol === asked.protocol && mine.port === asked.port && LOOPBACK.has(mine.hostname) && LOOPBACK.has(asked.hostname);
  });
}
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * How many of the body's characters are file arguments (strings given for asset inputs in a
 * tools/call): the room past the usual limit is theirs alone, as on the execute route. A body
 * that is not JSON has none (the transport answers it with a parse error).
 */
function fileArgumentChars(text: string, dep: Deployment): number {
  if (text.length <= 0) return 0;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 0;
  }
  const assets = new Set(dep.inputs.filter((i) => i.visible && i.value_type === 'asset').map((i) => i.id));
  let n = 0;
  for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
    if (!isPlainObject(m) || m.method !== 'tools/call' || !isPlainObject(m.params) || !isPlainObject(m.params.arguments)) continue;
    for (const [id, value] of Object.entries(m.params.arguments))
      if (assets.has(id) && typeof value === 'string') n += Buffer.byteLength(value, 'utf8');
  }
  return n;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * A JSON-RPC error as a handler throws it: the SDK answers with its `code`, `message` and
 * `data` as they are (its own McpError would send its message prefixed with "MCP error <code>").
 */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

function buildServer(d: Deps, auth: CallerAuth, entry: DeploymentTool, baseUrl: string): Server {
  const { dep, tool } = entry;
  const server = new Server(
    { name: dep.pipeline_id, title: `pipegate: ${dep.pipeline_id} (version ${dep.version})`, version: String(dep.version) },
    {
      // Only what is implemented: the one tool, and tasks for it (no list: the server keeps no sessions to list by).
      capabilities: { tools: { listChanged: false }, tasks: { cancel: {}, requests: { tools: { call: {} } } } },
      instructions: serverInstructions(dep),
    },
  );
  const guarded =
    <A extends unknown[], R>(what: string, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await fn(...args);
      } catch (e) {
        throw protocolError(d, what, e);
      }
    };
  server.setRequestHandler(
    ListToolsRequestSchema,
    guarded('tools/list', async () => ({ tools: [tool] })),
  );
  server.setRequestHandler(
    CallToolRequestSchema,
    guarded('tools/call', async (request, extra: Extra) => {
      const { name, arguments: args, task, _meta } = request.params;
      if (name !== tool.name) throw new RpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}; this server has one tool, ${tool.name}`);
      return callTool(d, auth, entry, baseUrl, { args, asTask: task !== undefined, progressToken: _meta?.progressToken }, extra);
    }),
  );
  server.setRequestHandler(
    GetTaskRequestSchema,
    guarded('tasks/get', async (request) => taskView(d, await taskStatus(d, auth, request.params.taskId, baseUrl))),
  );
  server.setRequestHandler(
    GetTaskPayloadRequestSchema,
    guarded('tasks/result', async (request, extra: Extra) => taskResult(d, auth, request.params.taskId, baseUrl, extra)),
  );
  server.setRequestHandler(
    CancelTaskRequestSchema,
    guarded('tasks/cancel', async (request) => {
      const id = request.params.taskId;
      try {
        return taskView(d, await cancel(d, auth, id, baseUrl));
      } catch (e) {
        if (e instanceof AppError && e.code === 'ExecutionNotFound') throw taskNotFound(id);
        if (e instanceof AppError && e.code === 'ExecutionAlreadyFinished')
          throw new RpcError(ErrorCode.InvalidParams, `Cannot cancel task in terminal status: ${String(e.fields.status)}`);
        throw e;
      }
    }),
  );
  return server;
}

/** What a task's time to live is: the execution's record's retention. */
const taskTtlMs = (d: Deps): number => d.config.resultRetentionDays * 24 * 3600 * 1000;

const taskView = (d: Deps, s: ReturnType<typeof statusBody> & { waiting?: WaitingEvent[] }) =>
  taskOf(s, taskTtlMs(d), s.error_message, s.waiting ?? []);

const taskNotFound = (id: string) => new RpcError(ErrorCode.InvalidParams, `Task not found: ${id}`);

async function taskStatus(d: Deps, auth: CallerAuth, id: string, baseUrl: string) {
  try {
    return (await status(d, auth, id, baseUrl)).body;
  } catch (e) {
    if (e instanceof AppError && e.code === 'ExecutionNotFound') throw taskNotFound(id);
    throw e;
  }
}

/**
 * Anything a handler throws, as the client gets it: the protocol's own errors as they are; a
 * refusal of the catalog's by its words (a store outage: retry); anything else as an internal
 * error with the request's id, its cause logged and never sent (it may name a table or key).
 */
function protocolError(d: Deps, what: string, e: unknown): Error {
  if (e instanceof RpcError || e instanceof McpError) return e;
  const bad = invalidArgumentOf(e);
  if (bad) return invalidParams(bad);
  if (e instanceof AppError && e.status < 500)
    return new RpcError(ErrorCode.InvalidRequest, `${e.message}${typeof e.detail === 'string' ? `: ${e.detail}` : ''}`);
  if (e instanceof AppError) return new RpcError(ErrorCode.InternalError, `${e.message}: retry shortly`);
  d.log.error('mcp request failed', { method: what, ...errorFields(e) });
  return new RpcError(ErrorCode.InternalError, 'Internal Error');
}

const invalidParams = (bad: InvalidArgument) =>
  new RpcError(
    ErrorCode.InvalidParams,
    `Invalid arguments: ${bad.message}`,
    bad.argument === null ? undefined : { argument: bad.argument },
  );

interface CallOptions {
  args: unknown;
  asTask: boolean;
  progressToken: string | number | undefined;
}

/** tools/call: the arguments as an execute request, submitted; a task at once, or a wait for the result. */
async function callTool(d: Deps, auth: CallerAuth, entry: DeploymentTool, baseUrl: string, o: CallOptions, extra: Extra) {
  const call = callRequestOf(entry.dep, o.args);
  if (isInvalidArgument(call)) throw invalidParams(call);
  const files = await fetchFiles(d, call.assetUrls, extra.signal);
  let accepted;
  try {
    accepted = await submit(d, auth, {
      deploymentId: entry.dep.deployment_id,
      body: JSON.stringify({ workflow_input: call.workflowInput }),
      contentType: 'application/json',
      idempotencyKey: undefined,
      baseUrl,
      mcp: { files },
    });
  } catch (e) {
    // The quota, as an execute meets it: a result the agent reads (and when it resets), not a failure of the protocol.
    if (e instanceof AppError && e.code === 'TooManyRequests') return limitResult(e);
    throw e;
  }
  const id = accepted.body.execution_id;
  const urls = executionUrls(baseUrl, id);
  if (o.asTask) return { task: taskView(d, (await status(d, auth, id, baseUrl)).body) };

  let sent = 0;
  const report = async (e: Execution) => {
    if (o.progressToken === undefined) return;
    for (const step of progressSteps(unpackProgress(e.progress), entry.shown, entry.dep.node_detail !== false, sent)) {
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: o.progressToken, ...step } });
      sent += 1;
    }
  };
  const seconds = Math.min(d.config.maxWaitSeconds, MCP_CALL_MAX_WAIT_SECONDS);
  // Progress needs the node events, which only the whole record holds: with a token each wake
  // reads it (as an event stream does); without one, heads until the end (as a waited execute).
  const reread =
    o.progressToken === undefined
      ? undefined
      : async () => {
          const e = await d.executions.get(id, d.clock.now(), true);
          if (e) await report(e);
          return e;
        };
  // A run that waits for the caller's event (a visible wait node) answers at once: the next move is the agent's.
  const { e, waited } = await awaitTerminal(
    d,
    id,
    () => ownedExecution(d, auth, id),
    { seconds, untilMs: Date.now() + seconds * 1000 },
    reread,
    (x) => waitsOnReader(callerWaitsOf(x)),
  );
  await report(e);
  if (!isTerminal(e.status)) return stillRunning(e, urls, waited > 0 ? waited : undefined, await callerWaitingList(d, e, baseUrl));
  return callResult(resultBody(e, await outputLinks(d, e, baseUrl, callerOutputIds(e))), urls);
}

/** A quota (or rate) refusal as a tool result: the reason, and when to try again. */
function limitResult(e: AppError) {
  const detail = typeof e.detail === 'string' ? e.detail : e.message;
  return {
    content: [{ type: 'text' as const, text: `${e.message}: ${detail}` }],
    isError: true,
    _meta: { 'pipegate/limit': e.fields },
  };
}

/**
 * The files asset arguments named by URL, fetched now through the address guard, as the
 * execute route takes inline files: bounded in size and time. A failure names the argument.
 */
async function fetchFiles(d: Deps, urls: Record<string, string>, signal: AbortSignal): Promise<Record<string, Uint8Array>> {
  const files: Record<string, Uint8Array> = {};
  for (const [id, url] of Object.entries(urls)) {
    const refuse = (why: string) => invalidParams({ message: `argument '${id}' ${why}`, argument: id });
    let bytes: Uint8Array;
    try {
      const res = await d.http({
        method: 'GET',
        url,
        headers: { accept: '*/*' },
        timeoutMs: URL_ASSET_TIMEOUT_MS,
        signal,
        maxResponseBytes: URL_ASSET_MAX_BYTES,
        maxBinaryResponseBytes: URL_ASSET_MAX_BYTES,
        // A file is its bytes, whatever type its server declares: decoded as text, a PNG served untyped would no longer be one.
        bytesWhateverType: true,
      });
      if (res.status < 200 || res.status > 299) {
        await res.stream?.[Symbol.asyncIterator]().return?.();
        throw refuse(`could not be fetched: its URL answered HTTP ${res.status}`);
      }
      if (!res.stream) throw refuse('could not be fetched as bytes');
      bytes = await readAll(res.stream);
    } catch (e) {
      if (e instanceof RpcError) throw e;
      // The guard's and the client's messages are meant for users; they never repeat the path or query.
      throw refuse(`could not be fetched: ${e instanceof Error ? e.message : 'the request failed'}`);
    }
    if (bytes.length === 0) throw refuse('is empty at its URL: an asset needs at least one byte');
    Object.defineProperty(files, id, { value: bytes, enumerable: true, writable: true, configurable: true });
  }
  return files;
}

async function readAll(stream: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const part of stream) parts.push(part);
  return new Uint8Array(Buffer.concat(parts));
}

/**
 * How long tasks/result may hold its answer: it blocks until the execution is terminal (the
 * tasks utility's rule), within the streamed route's 15 minutes with a minute to spare.
 */
const TASK_RESULT_MAX_MS = 14 * 60_000;

/** tasks/result: the call's result once the execution is terminal, as tools/call would have answered. */
async function taskResult(d: Deps, auth: CallerAuth, id: string, baseUrl: string, extra: Extra) {
  const until = Date.now() + TASK_RESULT_MAX_MS;
  const first = async () => {
    try {
      return await ownedExecution(d, auth, id);
    } catch (e) {
      if (e instanceof AppError && e.code === 'ExecutionNotFound') throw taskNotFound(id);
      throw e;
    }
  };
  let e = await first();
  while (!isTerminal(e.status) && Date.now() < until && !extra.signal.aborted) {
    const seconds = Math.max(1, Math.floor((until - Date.now()) / 1000));
    ({ e } = await awaitTerminal(d, id, first, { seconds, untilMs: until }));
    // Past the wait bound no slot was given: look again at the poll interval.
    if (!isTerminal(e.status)) await new Promise((r) => setTimeout(r, 1000));
  }
  if (!isTerminal(e.status)) {
    const waiting = await callerWaitingList(d, e, baseUrl);
    throw new RpcError(
      ErrorCode.RequestTimeout,
      `Task ${id} is still ${e.status}${waiting.length > 0 ? `; ${waitingText(waiting)}` : ''}; call tasks/result again (or poll tasks/get)`,
    );
  }
  const result = callResult(resultBody(e, await outputLinks(d, e, baseUrl, callerOutputIds(e))), executionUrls(baseUrl, id));
  return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId: id } } };
}
