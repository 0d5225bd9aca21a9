/**
 * A deployment as an MCP server, spoken to by the official TypeScript SDK's Client over its
 * Streamable HTTP transport (a real client nobody here wrote), against the local runtime (and
 * again against start:synth in test/e2e/synth/mcp.test.ts): initialize, the tool list, a call
 * with progress, a failing run, refused arguments, a task (followed to its end, and cancelled),
 * a run longer than the wait, asset outputs as resource links and asset arguments by URL, a
 * consumer key at its quota and its rate limit, wrong keys, GET, delete and republish; and the
 * same client through `pipegate mcp`, the CLI's stdio bridge.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { PipelineDefinition } from '../../functions/core/types';
import { PIPEGATE_BIN } from '../support/cli';
import { startTestServer, type TestServer } from '../support/http-server';
import { mcpClient, mcpUrlOf } from '../support/mcp';
import { dataUri, png } from '../support/media';
import { greeting, request, startE2eRuntime, waitUntil, type E2eRuntime, type Published } from '../support/runtime';

/** A call waits this long for its execution here (PIPEGATE_MAX_WAIT_SECONDS), so that a longer run is quick to show. */
const WAIT_SECONDS = 6;

let rt: E2eRuntime;
let upstream: TestServer;
/** What the failing pipeline's upstream answers now: 200 while it is published, then 500. */
let upstreamStatus = 200;
const photo = png(6, 6, (x, y) => [x * 40, y * 40, 200, 255]);
const clients: Client[] = [];

beforeAll(async () => {
  upstream = await startTestServer((req, res) => {
    if (req.path.startsWith('/flaky')) {
      res.writeHead(upstreamStatus, { 'content-type': 'application/json' });
      res.end(JSON.stringify(upstreamStatus === 200 ? { word: 'ok' } : { error: 'upstream refused' }));
    } else if (req.path === '/photo.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(photo);
    } else if (req.path === '/gone.png') {
      res.writeHead(404);
      res.end();
    } else if (req.path === '/echo') {
      res.writeHead(200, { 'content-type': String(req.headers['content-type'] ?? 'application/octet-stream') });
      res.end(req.raw);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  rt = await startE2eRuntime({ env: { ...process.env, PIPEGATE_MAX_WAIT_SECONDS: String(WAIT_SECONDS), PIPEGATE_CANCEL_POLL_MS: '50' } });
});

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await rt?.cleanup();
  await upstream?.close();
});

async function connect(p: Published, key = p.apiKey, headers?: Record<string, string>): Promise<Client> {
  const c = await mcpClient(rt.url, p.deploymentId, key, headers);
  clients.push(c);
  return c;
}

const text = (r: CallToolResult | { content?: unknown }): string =>
  ((r.content ?? []) as { type: string; text?: string }[])
    .filter((b) => b.type === 'text')
    .map((b) => b.text)
    .join('\n');

/** The error a promise rejects with (fails the test when it resolves). */
async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

const described: PipelineDefinition = {
  description: 'Greets someone, politely',
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world', description: 'Who to greet.' },
    times: { type: 'input', value_type: 'integer', value: 1 },
    secret_salt: { type: 'input', value_type: 'string', value: 'hidden-published-value', description: 'Never shown to callers.' },
    greeting: { type: 'transform', inputs: ['name', 'times', 'secret_salt'], expression: "'Hello, ' & name & '!'" },
    message: { type: 'output', from: 'greeting' },
    salted: { type: 'output', from: 'secret_salt' },
  },
};

describe('initialize and tools/list', () => {
  let p: Published;
  beforeAll(async () => {
    p = await rt.publishPipeline('mcp-greeting', described, {
      inputs: { secret_salt: { visible: false } },
      outputs: { salted: { visible: false } },
    });
  });

  it('names the server after the deployment and declares the tool and tasks, nothing else', async () => {
    const c = await connect(p);
    expect(c.getServerVersion()).toMatchObject({ name: 'mcp-greeting', version: '1' });
    expect(c.getServerCapabilities()).toEqual({ tools: { listChanged: false }, tasks: { cancel: {}, requests: { tools: { call: {} } } } });
    expect(c.getInstructions()).toContain('mcp_greeting');
    expect(await c.ping()).toEqual({});
  });

  it('lists one tool: the visible inputs as plain values with their published defaults, the visible outputs, hints from the graph', async () => {
    const c = await connect(p);
    const { tools } = await c.listTools();
    expect(tools).toHaveLength(1);
    const [tool] = tools;
    expect(tool?.name).toBe('mcp_greeting');
    expect(tool?.description).toContain('Greets someone, politely');
    expect(tool?.inputSchema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      properties: {
        name: { type: 'string', default: 'world', description: expect.stringContaining('Who to greet.') },
        times: { type: 'integer', default: 1 },
      },
    });
    expect(Object.keys(tool?.inputSchema.properties ?? {}).sort()).toEqual(['name', 'times']);
    expect(tool?.inputSchema.required).toBeUndefined();
    expect(Object.keys((tool?.outputSchema?.properties as object | undefined) ?? {})).toEqual(['message']);
    expect(tool?.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    expect(tool?.execution).toEqual({ taskSupport: 'optional' });
    // Hidden inputs and outputs leave nothing behind: not their names, values or descriptions.
    const listed = JSON.stringify(tools);
    for (const hidden of ['secret_salt', 'hidden-published-value', 'Never shown to callers', 'salted'])
      expect(listed).not.toContain(hidden);
  });

  it('calls the tool with plain values and answers its visible outputs, structured and as text; the execution is an mcp one', async () => {
    const c = await connect(p);
    const r = (await c.callTool({ name: 'mcp_greeting', arguments: { name: 'Ada', times: 2 } })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toEqual({ message: 'Hello, Ada!' });
    expect(JSON.parse(text(r))).toEqual({ message: 'Hello, Ada!' });
    const meta = r._meta?.['pipegate/execution'] as { execution_id: string; status: string; status_url: string; result_url: string };
    expect(meta.status).toBe('completed');
    // The same execution through the REST API, with the same key; the owner sees where it came from.
    const result = await rt.caller('GET', `/v1/deployments/executions/${meta.execution_id}/result/`, p.apiKey);
    expect(result.body.response_data).toEqual({ message: { value: 'Hello, Ada!', value_type: 'RAW' } });
    const listed = await rt.owner('GET', '/v1/pipelines/mcp-greeting/deployment/executions');
    const mine = (listed.body.executions as { execution_id: string; source: string }[]).find((e) => e.execution_id === meta.execution_id);
    expect(mine?.source).toBe('mcp');
    const usage = await waitUntil(
      () => rt.owner('GET', '/v1/pipelines/mcp-greeting/deployment/usage'),
      (u) => ((u.body.last_hour as { by_source: { mcp: number } }).by_source.mcp ?? 0) >= 1,
    );
    expect((usage.body.last_hour as { by_source: Record<string, number> }).by_source).toMatchObject({ api: 0, form: 0 });
  });

  it('sends notifications/progress from the nodes as they finish, counting only what a caller may see', async () => {
    const c = await connect(p);
    const seen: { progress: number; total?: number; message?: string }[] = [];
    const r = (await c.callTool({ name: 'mcp_greeting', arguments: {} }, undefined, { onprogress: (x) => seen.push(x) })) as CallToolResult;
    expect(r.structuredContent).toEqual({ message: 'Hello, world!' });
    // name, times, greeting, message: the hidden input and output are neither counted nor named.
    expect(seen.map((s) => s.progress)).toEqual([1, 2, 3, 4]);
    expect(seen.every((s) => s.total === 4)).toBe(true);
    expect(seen.map((s) => s.message).join(' ')).toContain('transform node greeting finished');
    expect(JSON.stringify(seen)).not.toMatch(/secret_salt|salted/);
  });

  it('refuses arguments the contract refuses with the invalid-params error, naming the argument', async () => {
    const c = await connect(p);
    const wrongType = (await rejection(c.callTool({ name: 'mcp_greeting', arguments: { times: 'twice' } }))) as McpError;
    expect(wrongType).toBeInstanceOf(McpError);
    expect(wrongType.code).toBe(-32602);
    expect(wrongType.message).toContain("argument 'times' must be a whole number");
    expect(wrongType.data).toEqual({ argument: 'times' });
    // A hidden input is as unknown as a made-up one: nothing says it exists.
    for (const name of ['secret_salt', 'nope']) {
      const unknown = (await rejection(c.callTool({ name: 'mcp_greeting', arguments: { [name]: 'x' } }))) as McpError;
      expect([unknown.code, unknown.message, unknown.data]).toEqual([
        -32602,
        `MCP error -32602: Invalid arguments: unknown argument '${name}'; the arguments are: name, times`,
        { argument: name },
      ]);
    }
    const otherTool = (await rejection(c.callTool({ name: 'mcp-greeting', arguments: {} }))) as McpError;
    expect([otherTool.code, otherTool.message]).toEqual([
      -32602,
      'MCP error -32602: Unknown tool: mcp-greeting; this server has one tool, mcp_greeting',
    ]);
    // No execution was started by any of them.
    const listed = await rt.owner('GET', '/v1/pipelines/mcp-greeting/deployment/executions');
    expect((listed.body.executions as unknown[]).length).toBe(2);
  });
});

describe('a failing run', () => {
  let flaky: Published;
  beforeAll(async () => {
    upstreamStatus = 200;
    flaky = await rt.publishPipeline('mcp-flaky', {
      nodes: {
        call: { type: 'http', method: 'POST', url: `${upstream.origin}/flaky/planted-path`, body: '{"hello": "there"}' },
        word: { type: 'transform', inputs: ['call'], expression: 'call.word' },
        out: { type: 'output', from: 'word' },
      },
    });
    upstreamStatus = 500;
  });

  it('derives the hints from the graph: a POST upstream is neither read-only nor closed-world', async () => {
    const c = await connect(flaky);
    const [tool] = (await c.listTools()).tools;
    expect(tool?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: true });
  });

  it("answers a failed execution with isError and the caller's reason, never the upstream's URL or answer", async () => {
    const c = await connect(flaky);
    const r = (await c.callTool({ name: 'mcp_flaky', arguments: {} })) as CallToolResult;
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toBeUndefined();
    expect(text(r)).toMatch(/^Execution [0-9a-f-]{36} failed: Node 'call' failed/);
    const said = JSON.stringify(r);
    for (const hidden of ['planted-path', 'upstream refused', upstream.origin]) expect(said).not.toContain(hidden);
  });
});

describe('runs longer than the wait, and tasks', () => {
  let slow: Published;
  let sleeper: TestServer;
  beforeAll(async () => {
    // Sleeps as long as the call asks (`{"ms": …}`), so the publishing run is quick and a call slow.
    sleeper = await startTestServer((req, res) => {
      const ms = Number((JSON.parse(req.body || '{}') as { ms?: number }).ms ?? 0);
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ slept: ms }));
      }, ms);
    });
    slow = await rt.publishPipeline('mcp-slow', {
      nodes: {
        ms: { type: 'input', value_type: 'integer', value: 0 },
        nap: { type: 'http', method: 'POST', url: `${sleeper.origin}/nap`, inputs: ['ms'], body: '{"ms": ms}', timeout_ms: 30_000 },
        slept: { type: 'transform', inputs: ['nap'], expression: 'nap.slept' },
        out: { type: 'output', from: 'slept' },
      },
    });
  });
  afterAll(async () => {
    await sleeper?.close();
  });

  it('answers a call still running when its wait ends with the execution and where to follow it, not an error', async () => {
    const c = await connect(slow);
    const ms = (WAIT_SECONDS + 3) * 1000;
    const r = (await c.callTool({ name: 'mcp_slow', arguments: { ms } })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toEqual({});
    const meta = r._meta?.['pipegate/execution'] as { execution_id: string; status: string; status_url: string; result_url: string };
    expect(meta.status).toBe('running');
    expect(text(r)).toContain(meta.status_url);
    const done = await rt.waitForExecution(meta.execution_id, slow.apiKey);
    expect(done.status).toBe('completed');
    expect((await rt.caller('GET', `/v1/deployments/executions/${meta.execution_id}/result/`, slow.apiKey)).body.response_data).toEqual({
      out: { value: ms, value_type: 'RAW' },
    });
  });

  it('runs a call as a task: created at once, followed with tasks/get, its result from tasks/result', async () => {
    const c = await connect(slow);
    await c.listTools();
    const ms = 1500;
    const messages: {
      type: string;
      task?: { taskId: string; status: string; ttl: number | null; pollInterval?: number };
      result?: unknown;
    }[] = [];
    for await (const m of c.experimental.tasks.callToolStream({ name: 'mcp_slow', arguments: { ms } }, undefined, {
      task: { ttl: 60_000 },
    }))
      messages.push(m as (typeof messages)[number]);
    const created = messages[0];
    expect(created?.type).toBe('taskCreated');
    expect(created?.task?.status).toBe('working');
    expect(created?.task?.ttl).toBeGreaterThan(60_000);
    const taskId = created?.task?.taskId ?? '';
    expect(messages.filter((m) => m.type === 'taskStatus').at(-1)?.task?.status).toBe('completed');
    const last = messages.at(-1) as { type: string; result: CallToolResult };
    expect(last.type).toBe('result');
    expect(last.result.structuredContent).toEqual({ out: ms });
    expect(last.result._meta?.['io.modelcontextprotocol/related-task']).toEqual({ taskId });
    // The task is the execution: the same id through the REST API.
    expect((await rt.caller('GET', `/v1/deployments/executions/${taskId}/status/`, slow.apiKey)).body.status).toBe('completed');
    expect(await c.experimental.tasks.getTask(taskId)).toMatchObject({ taskId, status: 'completed' });
  });

  it('cancels a task: tasks/cancel is the execution cancelled; tasks/result then says so; unknown tasks are invalid params', async () => {
    const c = await connect(slow);
    const created = (await c.request(
      { method: 'tools/call', params: { name: 'mcp_slow', arguments: { ms: 20_000 }, task: { ttl: 60_000 } } },
      (await import('@modelcontextprotocol/sdk/types.js')).CreateTaskResultSchema,
    )) as { task: { taskId: string; status: string } };
    const taskId = created.task.taskId;
    expect(created.task.status).toBe('working');
    const cancelled = await c.experimental.tasks.cancelTask(taskId);
    expect(cancelled).toMatchObject({ taskId, status: 'cancelled' });
    expect((await rt.caller('GET', `/v1/deployments/executions/${taskId}/status/`, slow.apiKey)).body.status).toBe('cancelled');
    const result = await c.experimental.tasks.getTaskResult(
      taskId,
      (await import('@modelcontextprotocol/sdk/types.js')).CallToolResultSchema,
    );
    expect(result.isError).toBe(true);
    expect(text(result)).toContain('was cancelled');
    const again = (await rejection(c.experimental.tasks.cancelTask(taskId))) as McpError;
    expect([again.code, again.message]).toEqual([-32602, 'MCP error -32602: Cannot cancel task in terminal status: cancelled']);
    const unknown = (await rejection(c.experimental.tasks.getTask('5a1c6f0e-0000-4000-8000-000000000000'))) as McpError;
    expect([unknown.code, unknown.message]).toEqual([-32602, 'MCP error -32602: Task not found: 5a1c6f0e-0000-4000-8000-000000000000']);
  });
});

describe('a run that waits for an event from the caller', () => {
  let approve: Published;
  const resumeUrlIn = (t: string): string => /(http:\/\/\S+\/v1\/resume\/[A-Za-z0-9_.-]+)/.exec(t)?.[1] ?? '';
  beforeAll(async () => {
    const def = {
      nodes: {
        name: { type: 'input', value_type: 'string', value: 'world' },
        approval: { type: 'wait', inputs: ['name'], timeout_ms: 120_000, fields: { ok: { value_type: 'boolean' } } },
        said: { type: 'transform', inputs: ['approval', 'name'], expression: "name & (approval.ok ? ': approved' : ': refused')" },
        out: { type: 'output', from: 'said' },
      },
    } as unknown as PipelineDefinition;
    expect((await rt.owner('PUT', '/v1/pipelines/mcp-approve', def)).status).toBe(201);
    const run = await rt.owner('POST', '/v1/pipelines/mcp-approve/runs', {});
    const path = `/v1/pipelines/mcp-approve/runs/${String(run.body.run_id)}`;
    const view = await waitUntil(
      () => rt.owner('GET', path),
      (r) => Array.isArray(r.body.waiting),
    );
    await request((view.body.waiting as { resume_url: string }[])[0]?.resume_url ?? '', 'POST', { ok: true }, {});
    await waitUntil(
      () => rt.owner('GET', path),
      (r) => r.body.status === 'completed',
    );
    const pub = await rt.owner('PUT', '/v1/pipelines/mcp-approve/deployment', {});
    approve = { deploymentId: pub.body.deployment_id as string, apiKey: pub.body.api_key as string, signingSecret: '', body: pub.body };
  });

  it('answers a call at once with the resume URL (text and _meta) instead of waiting it out; the POST lets the run finish', async () => {
    const c = await connect(approve);
    const asked = Date.now();
    const r = (await c.callTool({ name: 'mcp_approve', arguments: { name: 'Ada' } })) as CallToolResult;
    const tookMs = Date.now() - asked;
    const meta = r._meta?.['pipegate/execution'] as { execution_id: string; status: string };
    const waiting = r._meta?.['pipegate/waiting'] as { node_id: string; resume_url: string }[];
    expect(r.isError).toBeFalsy();
    expect(tookMs).toBeLessThan(WAIT_SECONDS * 1000);
    expect(waiting.map((w) => w.node_id)).toEqual(['approval']);
    expect(text(r)).toContain(`POST a JSON object to ${waiting[0]?.resume_url ?? ''}`);
    expect((await request(waiting[0]?.resume_url ?? '', 'POST', { ok: false }, {})).status).toBe(202);
    await rt.waitForExecution(meta.execution_id, approve.apiKey);
    expect((await rt.caller('GET', `/v1/deployments/executions/${meta.execution_id}/result/`, approve.apiKey)).body.response_data).toEqual({
      out: { value: 'Ada: refused', value_type: 'RAW' },
    });
  });

  it("says in a task's status message where to send the event, and tasks/result answers once it was sent", async () => {
    const c = await connect(approve);
    const { CreateTaskResultSchema, CallToolResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const created = (await c.request(
      { method: 'tools/call', params: { name: 'mcp_approve', arguments: {}, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    )) as { task: { taskId: string } };
    const taskId = created.task.taskId;
    const waiting = await waitUntil(
      () => c.experimental.tasks.getTask(taskId),
      (t) => resumeUrlIn(t.statusMessage ?? '') !== '',
    );
    expect(waiting).toMatchObject({
      status: 'working',
      statusMessage: expect.stringContaining('it waits for an event at wait node approval'),
    });
    expect((await request(resumeUrlIn(waiting.statusMessage ?? ''), 'POST', { ok: true }, {})).status).toBe(202);
    const result = await c.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.structuredContent).toEqual({ out: 'world: approved' });
  });
});

describe('files', () => {
  let p: Published;
  beforeAll(async () => {
    p = await rt.publishPipeline('mcp-thumbnail', {
      description: 'Echoes a PNG back through an image service',
      nodes: {
        photo: { type: 'input', value_type: 'asset', value: dataUri('image/png', png()), media_types: ['image/png'], max_bytes: 100_000 },
        resize: { type: 'http', method: 'POST', url: `${upstream.origin}/echo`, inputs: ['photo'], body_asset: 'photo' },
        thumbnail: { type: 'output', from: 'resize' },
      },
    });
  });

  it('answers an asset output as a resource_link with its signed URL and media type (and in structuredContent)', async () => {
    const c = await connect(p);
    const [tool] = (await c.listTools()).tools;
    expect(tool?.inputSchema.properties?.photo).toMatchObject({ type: 'string', description: expect.stringContaining('image/png') });
    expect((tool?.inputSchema.properties?.photo as { default?: unknown }).default).toBeUndefined();
    expect(tool?.outputSchema?.properties?.thumbnail).toMatchObject({
      type: 'object',
      required: ['url', 'media_type', 'bytes', 'expires_at'],
    });
    const r = (await c.callTool({ name: 'mcp_thumbnail', arguments: { photo: dataUri('image/png', photo) } })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    const link = r.content.find((b) => b.type === 'resource_link') as { uri: string; name: string; mimeType: string; size: number };
    expect(link).toMatchObject({ name: 'thumbnail', mimeType: 'image/png', size: photo.length });
    expect((r.structuredContent as { thumbnail: { url: string } }).thumbnail.url).toBe(link.uri);
    const got = await fetch(link.uri);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await got.arrayBuffer()).equals(photo)).toBe(true);
  });

  it('takes a file argument as a URL it fetches, and refuses one it cannot fetch or the input does not accept, naming it', async () => {
    const c = await connect(p);
    const r = (await c.callTool({ name: 'mcp_thumbnail', arguments: { photo: `${upstream.origin}/photo.png` } })) as CallToolResult;
    const link = r.content.find((b) => b.type === 'resource_link') as { uri: string };
    expect(Buffer.from(await (await fetch(link.uri)).arrayBuffer()).equals(photo)).toBe(true);
    const gone = (await rejection(c.callTool({ name: 'mcp_thumbnail', arguments: { photo: `${upstream.origin}/gone.png` } }))) as McpError;
    expect([gone.code, gone.data]).toEqual([-32602, { argument: 'photo' }]);
    expect(gone.message).toContain("argument 'photo' could not be fetched: its URL answered HTTP 404");
    const notPng = (await rejection(
      c.callTool({ name: 'mcp_thumbnail', arguments: { photo: `data:text/plain;base64,${Buffer.from('hello').toString('base64')}` } }),
    )) as McpError;
    expect([notPng.code, notPng.data]).toEqual([-32602, { argument: 'photo' }]);
    expect(notPng.message).toContain("argument 'photo' is application/octet-stream (sniffed from its bytes) but accepts image/png");
  });
});

describe('keys and limits', () => {
  let p: Published;
  beforeAll(async () => {
    p = await rt.publishPipeline('mcp-keys', greeting);
  });

  it('takes the key as Authorization: Bearer (what MCP clients send) and in the two usual forms', async () => {
    const forms: Record<string, string>[] = [
      { authorization: `Bearer ${p.apiKey}` },
      { 'x-api-key': p.apiKey },
      { authorization: `Api-Key ${p.apiKey}` },
    ];
    for (const headers of forms) {
      const c = await connect(p, p.apiKey, headers);
      expect((await c.listTools()).tools.map((t) => t.name)).toEqual(['mcp_keys']);
    }
    // Bearer is the MCP route's alone: elsewhere it stays a wrong scheme.
    const elsewhere = await rt.caller('GET', `/v1/deployments/${p.deploymentId}/`, null, undefined, {
      authorization: `Bearer ${p.apiKey}`,
    });
    expect([elsewhere.status, elsewhere.body.reason]).toEqual([401, 'wrong_scheme']);
  });

  it('answers 401 with WWW-Authenticate to a missing or wrong key, as every caller route does', async () => {
    const wrong = `${p.apiKey.slice(0, -1)}${p.apiKey.endsWith('A') ? 'B' : 'A'}`;
    for (const key of [null, wrong]) {
      const e = (await rejection(mcpClient(rt.url, p.deploymentId, key))) as StreamableHTTPError;
      expect(e).toBeInstanceOf(StreamableHTTPError);
      expect(e.code).toBe(401);
    }
    const raw = await request<{ reason?: string }>(
      mcpUrlOf(rt.url, p.deploymentId).href,
      'POST',
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      {
        accept: 'application/json, text/event-stream',
        authorization: 'Bearer pgk_not-a-key',
      },
    );
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toBe('Api-Key');
    expect(raw.body.reason).toBe('malformed');
  });

  it('spends a consumer quota per call, exactly as an execute: past it the call says so and when it resets', async () => {
    const made = await rt.owner('POST', '/v1/pipelines/mcp-keys/deployment/consumers', {
      name: 'agent',
      quota: { executions: 1, per: 'day' },
    });
    expect(made.status).toBe(201);
    const key = made.body.api_key as string;
    const c = await connect(p, key);
    expect(((await c.callTool({ name: 'mcp_keys', arguments: { name: 'one' } })) as CallToolResult).structuredContent).toEqual({
      message: 'Hello, one!',
    });
    const over = (await c.callTool({ name: 'mcp_keys', arguments: { name: 'two' } })) as CallToolResult;
    expect(over.isError).toBe(true);
    expect(text(over)).toContain('Too Many Requests');
    expect(over._meta?.['pipegate/limit']).toMatchObject({
      limit: 'quota',
      retry_after: expect.any(Number),
      resets_at: expect.any(String),
    });
    // The REST API meets the same spent quota.
    expect((await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, key, {})).status).toBe(429);
    const usage = await rt.owner('GET', '/v1/pipelines/mcp-keys/deployment/usage');
    const mine = (usage.body.by_consumer as { consumer_id: string; last_hour: { accepted: number; refused_quota: number } }[]).find(
      (x) => x.consumer_id === made.body.consumer_id,
    );
    expect(mine?.last_hour).toMatchObject({ accepted: 1, refused_quota: 2 });
  });

  it("spends a consumer's rate limit per request: past it the server answers 429 with Retry-After", async () => {
    const made = await rt.owner('POST', '/v1/pipelines/mcp-keys/deployment/consumers', {
      name: 'chatty agent',
      rate_limit: { requests: 4, per_seconds: 3600 },
    });
    const key = made.body.api_key as string;
    // initialize, notifications/initialized and the GET the client opens (405) are three requests.
    const c = await connect(p, key);
    expect(((await c.callTool({ name: 'mcp_keys', arguments: {} })) as CallToolResult).structuredContent).toEqual({
      message: 'Hello, world!',
    });
    const e = (await rejection(c.callTool({ name: 'mcp_keys', arguments: {} }))) as StreamableHTTPError;
    expect(e).toBeInstanceOf(StreamableHTTPError);
    expect(e.code).toBe(429);
    expect(e.message).toContain('rate');
    const raw = await request(
      mcpUrlOf(rt.url, p.deploymentId).href,
      'POST',
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      {
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${key}`,
      },
    );
    expect(raw.status).toBe(429);
    expect(Number(raw.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('answers GET with 405 (no server-initiated stream) and a foreign Origin with 403', async () => {
    const url = mcpUrlOf(rt.url, p.deploymentId).href;
    const get = await request(url, 'GET', undefined, { authorization: `Bearer ${p.apiKey}`, accept: 'text/event-stream' });
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST']);
    const foreign = await request(
      url,
      'POST',
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      {
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${p.apiKey}`,
        origin: 'https://evil.example',
      },
    );
    expect(foreign.status).toBe(403);
    const own = await request(
      url,
      'POST',
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      {
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${p.apiKey}`,
        origin: new URL(rt.url).origin,
      },
    );
    expect(own.status).toBe(200);
  });
});

describe('republish and delete', () => {
  it('changes the tool with a republish and ends it at once with a delete (404)', async () => {
    const p = await rt.publishPipeline('mcp-lifecycle', greeting);
    const c = await connect(p);
    expect(Object.keys((await c.listTools()).tools[0]?.inputSchema.properties ?? {})).toEqual(['name']);
    const republished = await rt.owner('PUT', '/v1/pipelines/mcp-lifecycle/deployment', { inputs: { name: { visible: false } } });
    expect(republished.status).toBe(200);
    expect(Object.keys((await c.listTools()).tools[0]?.inputSchema.properties ?? {})).toEqual([]);
    const deleted = await rt.owner('DELETE', `/v1/pipelines/mcp-lifecycle/deployment?confirm=${p.deploymentId}`);
    expect(deleted.status).toBe(204);
    const e = (await rejection(c.listTools())) as StreamableHTTPError;
    expect(e.code).toBe(404);
  });
});

describe('the stdio bridge (pipegate mcp)', () => {
  let napper: TestServer;
  beforeAll(async () => {
    napper = await startTestServer((req, res) => {
      const ms = Number((JSON.parse(req.body || '{}') as { ms?: number }).ms ?? 0);
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ slept: ms }));
      }, ms);
    });
  });
  afterAll(async () => {
    await napper?.close();
  });

  it("serves a client that starts servers as processes: the deployment's tool, its calls and progress, through the CLI", async () => {
    const p = await rt.publishPipeline('mcp-bridged', {
      description: 'Naps, then says how long',
      nodes: {
        ms: { type: 'input', value_type: 'integer', value: 0 },
        nap: { type: 'http', method: 'POST', url: `${napper.origin}/nap`, inputs: ['ms'], body: '{"ms": ms}' },
        slept: { type: 'transform', inputs: ['nap'], expression: 'nap.slept' },
        out: { type: 'output', from: 'slept' },
      },
    });
    const bridged = async (key: string) => {
      const c = new Client({ name: 'stdio-client', version: '1.0.0' });
      const env: Record<string, string> = { PIPEGATE_URL: rt.url, PIPEGATE_API_KEY: key, NO_COLOR: '1' };
      for (const k of ['PATH', 'HOME', 'TMPDIR']) if (process.env[k] !== undefined) env[k] = process.env[k] as string;
      await c.connect(
        new StdioClientTransport({ command: process.execPath, args: [PIPEGATE_BIN, 'mcp', p.deploymentId], env, stderr: 'pipe' }),
      );
      clients.push(c);
      return c;
    };
    const c = await bridged(p.apiKey);
    expect(c.getServerVersion()?.name).toBe('mcp-bridged');
    expect((await c.listTools()).tools.map((t) => t.name)).toEqual(['mcp_bridged']);
    const seen: number[] = [];
    const r = (await c.callTool({ name: 'mcp_bridged', arguments: { ms: 1500 } }, undefined, {
      onprogress: (x) => seen.push(x.progress),
    })) as CallToolResult;
    expect(r.structuredContent).toEqual({ out: 1500 });
    // The input node's progress comes a nap before the result, whatever the pipes do.
    expect(seen[0]).toBe(1);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    // The service's refusal of the key reaches the client as an answer, not a hang.
    const refused = await rejection(bridged(`${p.apiKey.slice(0, -1)}${p.apiKey.endsWith('A') ? 'B' : 'A'}`));
    expect(refused.message).toContain('HTTP 401');
    expect(refused.message).toContain('"reason":"malformed"');
  });
});
