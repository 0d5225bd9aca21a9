/**
 * MCP's "done when", as a newcomer meets it: the greeting and thumbnail examples pushed, run and
 * published with the CLI (a real process, as the README says), then the official SDK's client
 * pointed at what the publish printed (the greeting's `--snippet mcp` configuration, with the
 * key from the environment as a client expands it; the thumbnail's `MCP URL` line and key),
 * lists the tool, calls it, sees progress node by node and gets the thumbnail as a link that
 * serves the picture. The thumbnail's image service is examples/servers/thumbnail.mjs, started
 * as the README starts it. Then a long job, examples/render-job.json (its http node polls the
 * job service of examples/servers/image-jobs.mjs, the execution waiting in the state machine
 * between polls), called as a task: created at once, working while the job renders, its result
 * the picture's link. The same against start:synth in test/e2e/synth/mcp-newcomer.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { runCli, type CliRun } from '../support/cli';
import { pngSize, startImageJobs, type ImageJobs } from '../support/image-jobs';
import { png } from '../support/media';
import { startE2eRuntime, waitUntil, type E2eRuntime } from '../support/runtime';

const EXAMPLES = join(__dirname, '..', '..', 'examples');

let rt: E2eRuntime;
let server: ChildProcess;
let serverLog = '';
let work: string;
let jobs: ImageJobs;
const clients: Client[] = [];

const pg = (args: string[]): Promise<CliRun> =>
  runCli(args, { cwd: work, env: { PIPEGATE_URL: rt.url, PIPEGATE_OWNER_TOKEN: rt.ownerToken, NO_COLOR: '1' } });

/** A CLI step that must succeed: its output, or the failure with what it said. */
async function ok(args: string[]): Promise<string> {
  const r = await pg(args);
  if (r.code !== 0) throw new Error(`pipegate ${args.join(' ')} exited ${String(r.code)}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** A field of the publish's printed table (`MCP URL   http://…`). */
function printed(out: string, label: string): string {
  const value = new RegExp(`^ *${label} +(\\S+)$`, 'm').exec(out)?.[1];
  if (value === undefined) throw new Error(`the publish printed no ${label}:\n${out}`);
  return value;
}

/** An MCP client as configured with `url` and `headers`: the official SDK's, over Streamable HTTP. */
async function connect(url: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'newcomer-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

beforeAll(async () => {
  server = spawn(process.execPath, [join(EXAMPLES, 'servers', 'thumbnail.mjs')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout?.on('data', (c: Buffer) => (serverLog += c.toString()));
  server.stderr?.on('data', (c: Buffer) => (serverLog += c.toString()));
  const serverUrl = await waitUntil(
    async () => /listening on (http:\/\/\S+)/.exec(serverLog)?.[1] ?? '',
    (url) => url !== '',
  );
  jobs = await startImageJobs();
  rt = await startE2eRuntime();
  work = mkdtempSync(join(tmpdir(), 'pipegate-mcp-newcomer-'));
  copyFileSync(join(EXAMPLES, 'greeting.json'), join(work, 'greeting.json'));
  // The example as it is, but for the image service's port (the example names 4012).
  const thumbnail = readFileSync(join(EXAMPLES, 'thumbnail.json'), 'utf8');
  expect(thumbnail).toContain('http://127.0.0.1:4012/thumbnail?size=64');
  writeFileSync(join(work, 'thumbnail.json'), thumbnail.replace('http://127.0.0.1:4012', serverUrl));
  // The same for the long job's service (the example names 4013).
  const renderJob = readFileSync(join(EXAMPLES, 'render-job.json'), 'utf8');
  expect(renderJob).toContain('http://127.0.0.1:4013/v1/jobs');
  writeFileSync(join(work, 'render-job.json'), renderJob.replace('http://127.0.0.1:4013', jobs.url));
});

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await rt?.cleanup();
  await jobs?.close();
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

it('greeting: the configuration `publish --snippet mcp` printed, in an MCP client: the tool listed, called, its progress seen', async () => {
  await ok(['push', 'greeting.json']);
  await ok(['run', 'greeting', '--input', 'name=Ada']);
  const out = await ok(['publish', 'greeting', '--snippet', 'mcp']);

  // What the newcomer copies: the key's export line and the configuration under "Try it".
  const key = /^ *export PIPEGATE_API_KEY=(\S+)$/m.exec(out)?.[1] ?? '';
  expect(key).toMatch(/^pgk_/);
  const block = out.slice(out.indexOf('export PIPEGATE_API_KEY='));
  const json = block
    .split('\n')
    .slice(1)
    .filter((l) => !l.startsWith('//'))
    .join('\n');
  const config = JSON.parse(json) as { mcpServers: Record<string, { type: string; url: string; headers: Record<string, string> }> };
  const entry = config.mcpServers.greeting;
  expect(entry?.type).toBe('http');
  expect(entry?.url).toBe(printed(out, 'MCP URL'));
  // A client expands ${PIPEGATE_API_KEY} from its environment.
  const headers = Object.fromEntries(Object.entries(entry?.headers ?? {}).map(([k, v]) => [k, v.replace('${PIPEGATE_API_KEY}', key)]));

  const client = await connect(entry?.url ?? '', headers);
  expect(client.getServerVersion()?.name).toBe('greeting');
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name)).toEqual(['greeting']);
  expect(tools[0]?.description).toContain('Greets someone');
  expect(Object.keys(tools[0]?.inputSchema.properties ?? {})).toEqual(['name']);

  const progress: { progress: number; total?: number; message?: string }[] = [];
  const r = (await client.callTool({ name: 'greeting', arguments: { name: 'Ada' } }, undefined, {
    onprogress: (p) => progress.push(p),
  })) as CallToolResult;
  expect(r.isError).toBeFalsy();
  expect(r.structuredContent).toEqual({ message: 'Hello, Ada!' });
  // name, greeting, message: one step each as it finishes, named.
  expect(progress.map((p) => [p.progress, p.total])).toEqual([
    [1, 3],
    [2, 3],
    [3, 3],
  ]);
  expect(progress.map((p) => p.message)).toContain('transform node greeting finished (2 of 3 steps)');
});

it('thumbnail: the MCP URL and key the publish printed, in an MCP client: a photo in, progress, the thumbnail back as a link', async () => {
  await ok(['push', 'thumbnail.json']);
  await ok(['run', 'thumbnail']);
  const out = await ok(['publish', 'thumbnail']);
  const url = printed(out, 'MCP URL');
  const key = printed(out, 'API key');

  const client = await connect(url, { Authorization: `Bearer ${key}` });
  const [tool] = (await client.listTools()).tools;
  expect(tool?.name).toBe('thumbnail');
  expect(tool?.inputSchema.properties?.photo).toMatchObject({ type: 'string', title: 'Photo' });
  // It POSTs to the image service: not read-only, and it reaches out.
  expect(tool?.annotations).toMatchObject({ readOnlyHint: false, openWorldHint: true });

  const photo = png(200, 120, (x, y) => [x, y * 2, 120, 255]);
  const progress: number[] = [];
  const r = (await client.callTool(
    { name: 'thumbnail', arguments: { photo: `data:image/png;base64,${photo.toString('base64')}` } },
    undefined,
    { onprogress: (p) => progress.push(p.progress) },
  )) as CallToolResult;
  expect(r.isError).toBeFalsy();
  // photo, resize, thumbnail, measure, thumbnail_bytes.
  expect(progress).toEqual([1, 2, 3, 4, 5]);
  const link = r.content.find((b) => b.type === 'resource_link') as
    { uri: string; name: string; mimeType: string; size: number } | undefined;
  expect(link).toMatchObject({ name: 'thumbnail', mimeType: 'image/png' });
  const served = Buffer.from(await (await fetch(link?.uri ?? '')).arrayBuffer());
  // A PNG of 64 × 38 (200 × 120 fitted into 64 × 64), as many bytes as the link said.
  expect({ width: served.readUInt32BE(16), height: served.readUInt32BE(20), bytes: served.length }).toEqual({
    width: 64,
    height: 38,
    bytes: link?.size,
  });
  expect((r.structuredContent as { thumbnail_bytes: number }).thumbnail_bytes).toBe(served.length);
  expect(serverLog).toContain('200×120 → 200 64×38');
});

it('render-job: a long job called as a task, created at once, working while the job service renders, its result the picture as a link', async () => {
  await ok(['push', 'render-job.json']);
  await ok(['run', 'render-job', '--input', 'seconds=0']);
  const out = await ok(['publish', 'render-job']);
  const client = await connect(printed(out, 'MCP URL'), { Authorization: `Bearer ${printed(out, 'API key')}` });
  const [tool] = (await client.listTools()).tools;
  expect(tool?.name).toBe('render_job');
  expect(tool?.execution).toEqual({ taskSupport: 'optional' });

  const messages: { type: string; task?: { taskId: string; status: string }; result?: CallToolResult }[] = [];
  for await (const m of client.experimental.tasks.callToolStream(
    { name: 'render_job', arguments: { prompt: 'an owl at night', seconds: 8, size: 64 } },
    undefined,
    { task: { ttl: 3_600_000 } },
  ))
    messages.push(m as (typeof messages)[number]);

  const created = messages[0];
  expect(created?.type).toBe('taskCreated');
  expect(created?.task?.status).toBe('working');
  const taskId = created?.task?.taskId ?? '';
  // The client polled tasks/get while the job rendered: working, then completed.
  const statuses = messages.filter((m) => m.type === 'taskStatus').map((m) => m.task?.status);
  expect(statuses).toContain('working');
  expect(statuses.at(-1)).toBe('completed');
  const last = messages.at(-1);
  expect(last?.type).toBe('result');
  const link = last?.result?.content.find((b) => b.type === 'resource_link') as { uri: string; name: string; mimeType: string } | undefined;
  expect(link).toMatchObject({ name: 'picture', mimeType: 'image/png' });
  expect(pngSize(Buffer.from(await (await fetch(link?.uri ?? '')).arrayBuffer()))).toEqual({ width: 64, height: 64 });
  // The job was submitted once, under the task's execution, and polled.
  expect((await jobs.stats()).submits[`${taskId}.render`]).toBe(1);
  expect((await jobs.stats()).polls).not.toEqual({});
});
