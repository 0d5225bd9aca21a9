/**
 * Planted secrets and the MCP server: a hidden input's value and description, the deployment's
 * key, a consumer's key and an owner secret (sent upstream by the pipeline, and repeated back by
 * the upstream in a value and in a refusal) appear in no tools/list or tools/call answer, no
 * task answer, no refusal of a wrong key or argument, and no log line. Every answer is captured
 * as the SDK client received it (the raw SSE and JSON), and the search is shown able to find.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { createLogger } from '../../functions/adapters/logger';
import type { PipelineDefinition } from '../../functions/core/types';
import { reply, startTestServer, type TestServer } from '../support/http-server';
import { mcpUrlOf } from '../support/mcp';
import { startTestRuntime, type TestRuntime } from '../support/runtime';

const stamp = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
const HIDDEN_VALUE = `planted-hidden-value-${stamp}`;
const HIDDEN_DESCRIPTION = `planted-hidden-description-${stamp}`;
const OWNER_SECRET = `planted-owner-secret-${stamp}`;

const lines: string[] = [];
let rt: TestRuntime;
let upstream: TestServer;
/** Whether the upstream now refuses, repeating the token it was sent in its refusal. */
let refuse = false;
/** Every body the server answered the MCP clients, as received. */
const answers: string[] = [];

beforeAll(async () => {
  // Repeats what it was sent: the bearer token in a value, or in a refusal's body.
  upstream = await startTestServer((req, res) => {
    const auth = String(req.headers.authorization ?? '');
    if (refuse && req.path === '/refuse') reply(res, 401, { error: `token ${auth} is not valid` });
    else reply(res, 200, { you_sent: auth, path: req.path });
  });
  rt = await startTestRuntime({ log: createLogger('pipegate-test', (line) => lines.push(line)) });
});

afterAll(async () => {
  await rt?.cleanup();
  await upstream?.close();
});

/** An SDK client whose every answer body is also kept (read from a copy, so the client reads as usual). */
async function recordingClient(deploymentId: string, headers: Record<string, string>): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(mcpUrlOf(rt.url, deploymentId), {
    requestInit: { headers },
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      void res
        .clone()
        .text()
        .then((t) => answers.push(`${res.status} ${JSON.stringify([...res.headers.entries()])} ${t}`));
      return res;
    },
  });
  const client = new Client({ name: 'planted', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

it('keeps hidden inputs, keys and owner secrets out of every MCP answer and log line', async () => {
  expect((await rt.owner('PUT', '/v1/secrets/MCP_PLANTED', { value: OWNER_SECRET })).status).toBe(200);
  const def: PipelineDefinition = {
    description: 'Calls an upstream with a token',
    nodes: {
      who: { type: 'input', value_type: 'string', value: 'x', description: 'Who asks.' },
      pin: { type: 'input', value_type: 'string', value: HIDDEN_VALUE, description: HIDDEN_DESCRIPTION },
      path: { type: 'input', value_type: 'string', value: 'ok' },
      call: {
        type: 'http',
        method: 'POST',
        url: `${upstream.origin}/echo`,
        headers: { authorization: 'Bearer {{secrets.MCP_PLANTED}}' },
        inputs: ['pin', 'who'],
        body: '{"pin": pin, "who": who}',
      },
      echoed: { type: 'transform', inputs: ['call'], expression: 'call.you_sent' },
      out: { type: 'output', from: 'echoed' },
      pinned: { type: 'output', from: 'pin' },
    },
  };
  const p = await rt.publishPipeline('mcp-planted', def, { inputs: { pin: { visible: false } }, outputs: { pinned: { visible: false } } });
  const refusing = await rt.publishPipeline('mcp-planted-refused', {
    nodes: {
      who: { type: 'input', value_type: 'string', value: 'x' },
      call: { type: 'http', url: `${upstream.origin}/refuse`, headers: { authorization: 'Bearer {{secrets.MCP_PLANTED}}' } },
      out: { type: 'output', from: 'who' },
    },
  });
  refuse = true;
  const consumer = (await rt.owner('POST', '/v1/pipelines/mcp-planted/deployment/consumers', { name: 'agent' })).body.api_key as string;

  // The deployment's key, as MCP clients send it.
  const c = await recordingClient(p.deploymentId, { authorization: `Bearer ${p.apiKey}` });
  await c.listTools();
  const ok = await c.callTool({ name: 'mcp_planted', arguments: { who: 'Ada' } }, undefined, { onprogress: () => undefined });
  expect(JSON.stringify(ok)).toContain('[redacted]');
  await c.callTool({ name: 'mcp_planted', arguments: { pin: 'guess' } }).catch(() => undefined);
  await c.callTool({ name: 'mcp_planted', arguments: { who: 5 } }).catch(() => undefined);
  const task = await c.request(
    { method: 'tools/call', params: { name: 'mcp_planted', arguments: {}, task: { ttl: 60_000 } } },
    CreateTaskResultSchema,
  );
  await c.experimental.tasks.getTaskResult(task.task.taskId, CallToolResultSchema);
  await c.experimental.tasks.getTask(task.task.taskId);
  // A consumer's key.
  const byConsumer = await recordingClient(p.deploymentId, { authorization: `Bearer ${consumer}` });
  await byConsumer.callTool({ name: 'mcp_planted', arguments: {} });
  // A failed run whose upstream repeats the token in its refusal.
  const refusedClient = await recordingClient(refusing.deploymentId, { authorization: `Bearer ${refusing.apiKey}` });
  const failed = await refusedClient.callTool({ name: 'mcp_planted_refused', arguments: {} });
  expect(failed.isError).toBe(true);
  // Wrong and other deployments' keys: refusals are a classic way for a key to reach a log.
  for (const headers of [
    { authorization: `Bearer ${p.apiKey}x` },
    { authorization: `Bearer ${refusing.apiKey}` },
    { authorization: `Bearer ${consumer.slice(0, -1)}${consumer.endsWith('A') ? 'B' : 'A'}` },
  ]) {
    await recordingClient(p.deploymentId, headers).catch(() => undefined);
  }
  for (const client of [c, byConsumer, refusedClient]) await client.close();
  await new Promise((r) => setTimeout(r, 200));

  // Assess
  const said = answers.join('\n');
  const log = lines.join('\n');
  expect(answers.length).toBeGreaterThan(10);
  expect(lines.length).toBeGreaterThan(10);
  const found: string[] = [];
  const needles: [string, string][] = [
    ['hidden input value', HIDDEN_VALUE],
    ['hidden input description', HIDDEN_DESCRIPTION],
    ['owner secret', OWNER_SECRET],
    ['deployment key', p.apiKey],
    ['deployment key (random part)', p.apiKey.slice(36, 60)],
    ["other deployment's key", refusing.apiKey],
    ['consumer key', consumer],
    ['consumer key (random part)', consumer.slice(68, 100)],
  ];
  for (const [what, needle] of needles) {
    if (said.includes(needle)) found.push(`${what} in an MCP answer`);
    if (log.includes(needle)) found.push(`${what} in the log`);
  }
  expect(found).toEqual([]);
  // The search can find: the visible argument went in and the greeting came back.
  expect(said).toContain('mcp_planted');
  expect(said).toContain('"who"');
});
