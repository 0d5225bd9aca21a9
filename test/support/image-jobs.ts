/**
 * The example image job service (examples/servers/image-jobs.mjs) and callback receiver
 * (callback-receiver.mjs) as the suites about jobs use them: started as a newcomer starts them
 * (`node examples/servers/<file>`, processes of their own, so they outlive a kill -9 of
 * pipegate), on free ports, with what they counted read over HTTP.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PipelineDefinition } from '../../functions/core/types';
import { waitUntil } from './runtime';

const ROOT = join(__dirname, '..', '..');

/** What GET /v1/stats answers. */
export interface JobStats {
  /** Submits seen, by Idempotency-Key. */
  submits: Record<string, number>;
  jobs: number;
  running: number;
  max_running: number;
  /** Jobs submitted and not over yet, and the most at once since the last reset. */
  open: number;
  max_open: number;
  moderations: number;
  /** Polls answered, by job id. */
  polls: Record<string, number>;
  callbacks: { job: string; attempt: number; status?: number; error?: string }[];
}

/** A job as GET /v1/jobs/{id} answers it. */
export interface JobView {
  id: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  prompt: string;
  output?: { image_url: string; media_type: string; width: number; height: number; bytes: number; sha256: string };
  error?: string;
}

export interface ImageJobs {
  /** `http://127.0.0.1:<port>` */
  url: string;
  log(): string;
  stats(): Promise<JobStats>;
  /** The most-at-once counters start again from what is open now. */
  resetStats(): Promise<void>;
  jobs(): Promise<JobView[]>;
  /** The one job submitted with this Idempotency-Key (the service keeps one job per key). */
  jobOf(key: string): Promise<JobView | undefined>;
  close(): Promise<void>;
}

interface ExampleServer {
  url: string;
  log(): string;
  close(): Promise<void>;
}

/** examples/servers/<file> as `node` runs it, on a free port; resolves once it prints its URL. */
async function startExampleServer(file: string, env: Record<string, string>): Promise<ExampleServer> {
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, 'examples', 'servers', file)], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout?.on('data', (c: Buffer) => (log += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (log += c.toString()));
  const url = await waitUntil(
    async () => {
      if (child.exitCode !== null) throw new Error(`examples/servers/${file} exited:\n${log}`);
      return /listening on (http:\/\/\S+)/.exec(log)?.[1] ?? '';
    },
    (u) => u !== '',
    30_000,
  );
  return {
    url,
    log: () => log,
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export async function startImageJobs(env: Record<string, string> = {}): Promise<ImageJobs> {
  const { url, log, close } = await startExampleServer('image-jobs.mjs', env);
  const get = async <T>(path: string): Promise<T> => (await (await fetch(`${url}${path}`)).json()) as T;
  const jobs = async (key?: string) =>
    (await get<{ jobs: JobView[] }>(`/v1/jobs${key === undefined ? '' : `?idempotency_key=${encodeURIComponent(key)}`}`)).jobs;
  return {
    url,
    log,
    stats: () => get<JobStats>('/v1/stats'),
    resetStats: async () => {
      await fetch(`${url}/v1/stats/reset`, { method: 'POST' });
    },
    jobs: () => jobs(),
    jobOf: async (key) => (await jobs(key))[0],
    close,
  };
}

/** A callback as examples/servers/callback-receiver.mjs lists it (GET /received). */
export interface ReceivedCallback {
  path: string;
  webhook_id: string | null;
  status: string | null;
  signature: 'valid' | 'invalid' | 'not checked';
  body: string;
}

export interface CallbackReceiver {
  url: string;
  received(): Promise<ReceivedCallback[]>;
  close(): Promise<void>;
}

/** The example callback receiver, checking signatures with `signingSecret`. */
export async function startCallbackReceiver(signingSecret: string): Promise<CallbackReceiver> {
  const server = await startExampleServer('callback-receiver.mjs', { PIPEGATE_SIGNING_SECRET: signingSecret });
  return {
    url: server.url,
    received: async () => ((await (await fetch(`${server.url}/received`)).json()) as { callbacks: ReceivedCallback[] }).callbacks,
    close: server.close,
  };
}

/** examples/render-job.json as the service receives it (no tests block), its job URL on `url`. */
export function renderJob(url: string, change: (d: RenderDefinition) => void = () => undefined): PipelineDefinition {
  const file = JSON.parse(readFileSync(join(ROOT, 'examples', 'render-job.json'), 'utf8')) as RenderDefinition & { tests?: unknown };
  const def: RenderDefinition = { description: file.description, timeout_ms: file.timeout_ms, nodes: file.nodes };
  def.nodes.render.url = `${url}/v1/jobs`;
  change(def);
  return def as unknown as PipelineDefinition;
}

export interface RenderDefinition {
  description: string;
  timeout_ms?: number;
  nodes: Record<string, Record<string, unknown>> & {
    render: Record<string, unknown> & { url: string; body: string; poll: Record<string, unknown> };
  };
}

/** Width and height from a PNG's header. */
export const pngSize = (b: Buffer) => ({ width: b.readUInt32BE(16), height: b.readUInt32BE(20) });
