/**
 * MCP clients for the suites: the official SDK's Client over its Streamable HTTP transport (a
 * client nobody here wrote), connected to a deployment's MCP URL with its key as MCP clients
 * send it; and the official conformance suite (@modelcontextprotocol/conformance) run against
 * a deployment's endpoint, through a proxy that adds the key, since the suite's own client
 * sends no credentials.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const mcpUrlOf = (runtimeUrl: string, deploymentId: string): URL => new URL(`${runtimeUrl}/v1/deployments/${deploymentId}/mcp`);

/** A connected SDK client; `headers` replace the Bearer key (another form, or none: `{}`). */
export async function mcpClient(
  runtimeUrl: string,
  deploymentId: string,
  key: string | null,
  headers?: Record<string, string>,
): Promise<Client> {
  const client = new Client({ name: 'pipegate-tests', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(mcpUrlOf(runtimeUrl, deploymentId), {
    requestInit: { headers: headers ?? (key === null ? {} : { authorization: `Bearer ${key}` }) },
  });
  await client.connect(transport);
  return client;
}

export interface AuthProxy {
  url: string;
  /** Added to every request from now on (the key, once the deployment exists). */
  headers: Record<string, string>;
  close(): Promise<void>;
}

/**
 * A transparent HTTP proxy to `target()` that adds `headers` to every request (and keeps every
 * other header, Host and Origin included, as the client sent it), streaming both ways. The
 * target is read per request, so a runtime can be started after the proxy (and told the
 * proxy's URL as its public URL).
 */
export async function startAuthProxy(target: () => string, headers: Record<string, string>): Promise<AuthProxy> {
  const added = { ...headers };
  const server: Server = createServer((req, res) => {
    const to = new URL(target());
    const out = httpRequest(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, ...added } },
      (upstream) => {
        res.writeHead(upstream.statusCode ?? 502, upstream.headers);
        upstream.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  return {
    url: `http://localhost:${(server.address() as AddressInfo).port}`,
    headers: added,
    close: async () => {
      server.closeAllConnections();
      await new Promise((ok) => server.close(ok));
    },
  };
}

export interface ConformanceCheck {
  id: string;
  name: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
  details?: unknown;
}

export const CONFORMANCE_CLI = require.resolve('@modelcontextprotocol/conformance/dist/index.js');

/**
 * One server scenario of the official suite against `url`, run as its CLI runs it (a process
 * of its own), with its checks as it saved them.
 */
export async function runConformance(url: string, scenario: string): Promise<ConformanceCheck[]> {
  const dir = mkdtempSync(join(tmpdir(), 'pipegate-conformance-'));
  try {
    const out: string[] = [];
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, [CONFORMANCE_CLI, 'server', '--url', url, '--scenario', scenario, '-o', dir], {
        cwd: dir,
        env: { ...process.env, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout.on('data', (c: Buffer) => out.push(c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => out.push(c.toString('utf8')));
      child.on('error', reject);
      child.on('close', resolve);
    });
    const found = readdirSync(dir, { recursive: true, encoding: 'utf8' }).find((f) => f.endsWith('checks.json'));
    if (found === undefined) throw new Error(`conformance ${scenario} saved no checks (exit ${String(code)}):\n${out.join('')}`);
    return JSON.parse(readFileSync(join(dir, found), 'utf8')) as ConformanceCheck[];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
