/**
 * `pipegate mcp <deployment>`: a local stdio MCP server for clients that only start servers as
 * processes, relaying every message to the deployment's MCP URL (Streamable HTTP) with the key.
 * Nothing is interpreted here: the deployment's server answers everything. stdout carries the
 * protocol alone; what the bridge itself has to say goes to stderr.
 */
import type { Readable, Writable } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { mcpUrl } from '../../../functions/core/views';
import { callerKey, type Ctx } from '../context';
import { UsageError } from '../errors';

export interface McpBridgeOptions {
  key?: string;
  /** The process's own by default. */
  stdin?: Readable;
  stdout?: Writable;
}

/** How long a response waits behind a notification it follows (see remote.onmessage). */
const RESPONSE_AFTER_NOTIFICATION_MS = 25;

const isRequest = (m: JSONRPCMessage): m is JSONRPCMessage & { id: string | number; method: string } => 'method' in m && 'id' in m;

/** Runs until the client closes stdin; 0 then. */
export async function mcpBridge(ctx: Ctx, deploymentId: string, opts: McpBridgeOptions): Promise<number> {
  const key = callerKey(ctx, opts.key);
  if (key === undefined)
    throw new UsageError('no API key', "pass --key <api key> or set PIPEGATE_API_KEY (the deployment's key, or a consumer's)");
  const url = new URL(mcpUrl(ctx.client.baseUrl, deploymentId));
  // Loaded when this command runs, so the SDK is no weight on every other command's start. A
  // require, not import(): the prebuilt bundle runs in a vm.Script (for V8's code cache), where
  // import() has no loader.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { StreamableHTTPClientTransport } =
    require('@modelcontextprotocol/sdk/client/streamableHttp.js') as typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const { StdioServerTransport } =
    require('@modelcontextprotocol/sdk/server/stdio.js') as typeof import('@modelcontextprotocol/sdk/server/stdio.js');
  const { ErrorCode } = require('@modelcontextprotocol/sdk/types.js') as typeof import('@modelcontextprotocol/sdk/types.js');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const remote = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    ...(ctx.io.fetch ? { fetch: ctx.io.fetch } : {}),
  });
  const local = new StdioServerTransport(opts.stdin ?? process.stdin, opts.stdout ?? process.stdout);
  const say = (line: string) => ctx.io.stderr.write(`pipegate mcp: ${line}\n`);
  /** Initialize's id, to learn the protocol version the server chose from its answer (sent on every later request). */
  let initializeId: string | number | undefined;

  // A response written right behind its progress notifications can reach the client in the same
  // read; the SDK's client handles a notification a microtask later than a response, so it would
  // drop them as late. A response waits until a little after the last notification.
  let lastNotificationAt = 0;
  const write = (m: JSONRPCMessage) => void local.send(m).catch((e: unknown) => say(`could not write to the client: ${String(e)}`));
  remote.onmessage = (m) => {
    if (initializeId !== undefined && 'id' in m && m.id === initializeId && 'result' in m) {
      const version = (m.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === 'string') remote.setProtocolVersion(version);
    }
    if (!('id' in m)) {
      lastNotificationAt = Date.now();
      write(m);
      return;
    }
    const wait = lastNotificationAt + RESPONSE_AFTER_NOTIFICATION_MS - Date.now();
    if (wait > 0) setTimeout(() => write(m), wait);
    else write(m);
  };
  remote.onerror = (e) => say(e.message);
  local.onmessage = (m) => {
    if (isRequest(m) && m.method === 'initialize') initializeId = m.id;
    remote.send(m).catch((e: unknown) => {
      // The service refused the request itself (a wrong key, a rate limit, a deleted deployment):
      // the client gets an answer to it rather than a wait.
      const status = (e as { code?: unknown }).code;
      const message = `${typeof status === 'number' && status > 0 ? `HTTP ${status}: ` : ''}${e instanceof Error ? e.message : String(e)}`;
      say(message);
      if (isRequest(m))
        void local.send({ jsonrpc: '2.0', id: m.id, error: { code: ErrorCode.ConnectionClosed, message: `pipegate: ${message}` } });
    });
  };
  const closed = new Promise<void>((resolve) => {
    local.onclose = () => resolve();
  });
  await remote.start();
  await local.start();
  say(`relaying to ${url.href}`);
  // The client closing stdin ends the session.
  await new Promise<void>((resolve) => {
    const input = opts.stdin ?? process.stdin;
    input.once('end', resolve);
    input.once('close', resolve);
    void closed.then(resolve);
  });
  await remote.close().catch(() => undefined);
  await local.close().catch(() => undefined);
  return 0;
}
