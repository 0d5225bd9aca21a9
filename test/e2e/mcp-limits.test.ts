/**
 * The MCP server's limits (docs/contract.md §4b) at their edges, with the official SDK's client:
 * a file argument given as a URL is fetched up to 3 MiB (URL_ASSET_MAX_BYTES: exactly that many
 * bytes are taken, one more is refused naming the argument and the limit) within 10 s
 * (URL_ASSET_TIMEOUT_MS: a URL that never answers is refused naming the argument and the time),
 * its bytes the file whatever type the URL declares, or none; and a call without a task waits
 * at most 45 s (MCP_CALL_MAX_WAIT_SECONDS) even where callers' waits may be longer
 * (PIPEGATE_MAX_WAIT_SECONDS, 60 by default, as here), then answers with the execution.
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MCP_CALL_MAX_WAIT_SECONDS, URL_ASSET_MAX_BYTES, URL_ASSET_TIMEOUT_MS } from '../../functions/core/mcp-tool';
import { startTestServer, type TestServer } from '../support/http-server';
import { mcpClient } from '../support/mcp';
import { png } from '../support/media';
import { startTestRuntime, type Published, type TestRuntime } from '../support/runtime';

let rt: TestRuntime;
let upstream: TestServer;
let p: Published;
let client: Client;
const held: ServerResponse[] = [];
const photo = png(8, 8, (x, y) => [x * 30, y * 30, 90, 255]);
/** Bytes no sniffer recognises: taken as application/octet-stream by an input that accepts any type. */
const blob = (n: number) => Buffer.alloc(n, 7);
/** Two naps of this: longer than a call's wait (45 s) together, shorter than callers' (60 s by default), each within an http node's 30 s. */
const NAP_MS = ((MCP_CALL_MAX_WAIT_SECONDS + 8) * 1000) / 2;
let slow: Published;

beforeAll(async () => {
  upstream = await startTestServer((req, res) => {
    if (req.path === '/at-limit') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(blob(URL_ASSET_MAX_BYTES));
    } else if (req.path === '/past-limit') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(blob(URL_ASSET_MAX_BYTES + 1));
    } else if (req.path === '/never') {
      // Headers and body never come: the fetch's deadline is what ends it.
      held.push(res);
    } else if (req.path === '/untyped.png') {
      // No Content-Type at all, as some file servers answer.
      res.writeHead(200);
      res.end(photo);
    } else if (req.path === '/nap') {
      // Sleeps as long as asked (`{"ms": …}`): quick for the publishing run, long for the call.
      const ms = Number((JSON.parse(req.body || '{}') as { ms?: number }).ms ?? 0);
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ slept: ms }));
      }, ms);
    } else if (req.path === '/as-text.png') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(photo);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  rt = await startTestRuntime();
  p = await rt.publishPipeline('mcp-file-limits', {
    nodes: {
      file: { type: 'input', value_type: 'asset', value: `data:image/png;base64,${png(1, 1).toString('base64')}` },
      about: { type: 'transform', inputs: ['file'], expression: "file.media_type & ' ' & $string(file.bytes) & ' ' & file.sha256" },
      info: { type: 'output', from: 'about' },
    },
  });
  client = await mcpClient(rt.url, p.deploymentId, p.apiKey);
  slow = await rt.publishPipeline('mcp-long-nap', {
    nodes: {
      ms: { type: 'input', value_type: 'integer', value: 0 },
      first: { type: 'http', method: 'POST', url: `${upstream.origin}/nap`, inputs: ['ms'], body: '{"ms": ms}', timeout_ms: 30_000 },
      second: {
        type: 'http',
        method: 'POST',
        url: `${upstream.origin}/nap`,
        inputs: ['ms', 'first'],
        body: '{"ms": ms}',
        timeout_ms: 30_000,
      },
      slept: { type: 'transform', inputs: ['second'], expression: 'second.slept' },
      out: { type: 'output', from: 'slept' },
    },
  });
});

afterAll(async () => {
  for (const res of held) res.destroy();
  await client?.close().catch(() => undefined);
  await rt?.cleanup();
  await upstream?.close();
});

const call = (file: string) => client.callTool({ name: 'mcp_file_limits', arguments: { file } }) as Promise<CallToolResult>;

async function refusal(p: Promise<unknown>): Promise<McpError> {
  try {
    await p;
  } catch (e) {
    return e as McpError;
  }
  throw new Error('expected a refusal');
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

it(`takes a file of exactly ${URL_ASSET_MAX_BYTES} bytes from its URL, and refuses one byte more naming the argument and the limit`, async () => {
  const at = await call(`${upstream.origin}/at-limit`);
  expect(at.isError).toBeFalsy();
  expect(at.structuredContent).toEqual({ info: `application/octet-stream ${URL_ASSET_MAX_BYTES} ${sha256(blob(URL_ASSET_MAX_BYTES))}` });

  const past = await refusal(call(`${upstream.origin}/past-limit`));
  expect(past).toBeInstanceOf(McpError);
  expect([past.code, past.data]).toEqual([-32602, { argument: 'file' }]);
  expect(past.message).toContain(`argument 'file' could not be fetched`);
  expect(past.message).toContain(`larger than ${URL_ASSET_MAX_BYTES} bytes`);
});

it(`gives up on a URL that has not answered within ${URL_ASSET_TIMEOUT_MS / 1000} s, naming the argument and the time`, async () => {
  const listed = async () =>
    ((await rt.owner('GET', '/v1/pipelines/mcp-file-limits/deployment/executions')).body.executions as unknown[]).length;
  const before = await listed();
  const slow = await refusal(call(`${upstream.origin}/never`));
  expect([slow.code, slow.data]).toEqual([-32602, { argument: 'file' }]);
  expect(slow.message).toContain(`argument 'file' could not be fetched: timed out after ${URL_ASSET_TIMEOUT_MS} ms`);
  // Refused before anything ran.
  expect(await listed()).toBe(before);
});

it.each([
  ['no Content-Type', '/untyped.png'],
  ['Content-Type: text/plain', '/as-text.png'],
])('takes the bytes as they are from a URL that declares %s: the file is sniffed, never decoded as text', async (_what, path) => {
  const r = await call(`${upstream.origin}${path}`);
  expect(r.isError).toBeFalsy();
  expect(r.structuredContent).toEqual({ info: `image/png ${photo.length} ${sha256(photo)}` });
});

it(`waits at most ${MCP_CALL_MAX_WAIT_SECONDS} s for a call without a task, though callers may wait 60 s: then the execution and where to follow it`, async () => {
  const c = await mcpClient(rt.url, slow.deploymentId, slow.apiKey);
  try {
    // The SDK's own request time-out (60 s) would end the call first; the service answers before it.
    const r = (await c.callTool({ name: 'mcp_long_nap', arguments: { ms: NAP_MS } }, undefined, { timeout: 120_000 })) as CallToolResult;
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toEqual({});
    const meta = r._meta?.['pipegate/execution'] as { execution_id: string; status: string };
    expect(meta.status).toBe('running');
    const said = (r.content as { type: string; text?: string }[]).map((b) => b.text ?? '').join('');
    expect(said).toContain(`is still running after ${MCP_CALL_MAX_WAIT_SECONDS} s`);
    // It goes on without the call, and finishes.
    expect((await rt.waitForExecution(meta.execution_id, slow.apiKey)).status).toBe('completed');
  } finally {
    await c.close();
  }
});
