import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRuntime, type Runtime, type RuntimeOptions } from '../../lib/local/runtime';
import { startSynthRuntime } from '../../lib/synth/runtime';
import type { Assembly } from '../../lib/synth/assembly';
import type { PipelineDefinition } from '../../functions/core/types';
import type { Deps } from '../../functions/adapters/deps';
import type { LocalWorkflows } from '../../lib/local/workflow';
import { isTerminalStatus } from '../../functions/core/transitions';
import { testAssembly } from './synth';
import { HANG_MS } from './hang';

export interface Reply<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/**
 * Which runtime the end-to-end suites that matter to callers and owners run against: `local`
 * (`npm start`, the TypeScript sources) or `synth` (`npm run start:synth`, the synthesized
 * assembly's bundles with IAM enforced). test/e2e/synth/ runs them again in synth mode.
 */
export type E2eMode = 'local' | 'synth';
let mode: E2eMode = process.env.PIPEGATE_E2E_MODE === 'synth' ? 'synth' : 'local';
export const useE2eMode = (m: E2eMode): void => {
  mode = m;
};
export const e2eMode = (): E2eMode => mode;

/** What both runtimes offer a suite that only speaks HTTP. */
export interface RuntimeBase {
  url: string;
  ownerToken: string;
  dataDir: string;
  /** The two state machines (Express and Standard), as both runtimes run them. */
  workflow: Pick<LocalWorkflows, 'running' | 'machines'>;
  /** The stores and queues as the functions see them, from the test's process. */
  deps: Deps;
  stop(opts?: { drainMs?: number }): Promise<unknown>;
}

export interface Helpers {
  owner<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<Reply<T>>;
  caller<T = Record<string, unknown>>(
    method: string,
    path: string,
    key: string | null,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Reply<T>>;
  /** push → run (until completed) → publish: a live deployment and its credentials. */
  publishPipeline(id: string, def: PipelineDefinition, visibility?: unknown): Promise<Published>;
  runToEnd(id: string, inputs?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** A caller's execution of `deployment` with `workflow_input`, waited for: its result body. */
  executeToEnd(deployment: Published, workflow_input: Record<string, unknown>, timeoutMs?: number): Promise<Record<string, unknown>>;
  waitForExecution(id: string, key: string, done?: (status: string) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  cleanup(): Promise<void>;
}

export type TestRuntime = Runtime & Helpers;
export type E2eRuntime = RuntimeBase & Helpers;

export interface Published {
  deploymentId: string;
  apiKey: string;
  signingSecret: string;
  body: Record<string, unknown>;
}

/** What an uploads route answers (201): where and how to PUT the bytes, and the value to send. */
export interface UploadAnswer {
  upload_url: string;
  method: string;
  headers: Record<string, string>;
  expires_at: string;
  asset: { value: string; value_type: string };
}

/** What a client does with an upload's answer: PUT the bytes with the headers it gave. */
export const putUpload = (up: Pick<UploadAnswer, 'upload_url' | 'headers'>, bytes: Uint8Array): Promise<Response> =>
  fetch(up.upload_url, { method: 'PUT', headers: up.headers, body: bytes });

/** The same PUT one byte short, its Content-Length to match: the signed size must refuse it. */
export function putOneByteShort(up: Pick<UploadAnswer, 'upload_url' | 'headers'>, bytes: Uint8Array): Promise<Response> {
  const lower = Object.fromEntries(Object.entries(up.headers).map(([k, v]) => [k.toLowerCase(), v]));
  return fetch(up.upload_url, {
    method: 'PUT',
    headers: { ...lower, 'content-length': String(bytes.length - 1) },
    body: bytes.subarray(1),
  });
}

export async function request<T>(url: string, method: string, body: unknown, headers: Record<string, string>): Promise<Reply<T>> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    if (typeof body === 'string') init.body = body;
    else {
      init.body = JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
    }
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let parsed: unknown = {};
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = { raw: text };
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` every `stepMs` until `ok`; only a hang reaches `timeoutMs` (test/support/hang.ts). */
export async function waitUntil<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = HANG_MS, stepMs = 25): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(v)}`);
    await sleep(stepMs);
  }
}

export async function startTestRuntime(opts: RuntimeOptions = {}): Promise<TestRuntime> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'pipegate-e2e-'));
  const rt = await startRuntime({ port: 0, inMemory: true, log: false, ...opts, dataDir });
  return withHelpers(rt, opts.dataDir ? undefined : dataDir);
}

/**
 * The runtime of the current mode (see useE2eMode), for suites that only speak HTTP. `env`
 * tunes the functions (PIPEGATE_* settings) in both modes.
 */
export async function startE2eRuntime(
  opts: { env?: Record<string, string | undefined>; publicUrlIsOwn?: boolean; assembly?: Assembly; log?: (line: string) => void } = {},
): Promise<E2eRuntime> {
  if (mode === 'local') return startTestRuntime({ env: opts.env });
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-e2e-synth-'));
  const port = opts.publicUrlIsOwn ? await freePort() : 0;
  const base = opts.assembly ?? (await testAssembly());
  const assembly = opts.publicUrlIsOwn ? withPublicUrl(base, `http://127.0.0.1:${port}`) : base;
  const rt = await startSynthRuntime({ port, host: '127.0.0.1', inMemory: true, log: opts.log ?? false, env: opts.env, dataDir, assembly });
  return withHelpers(rt, dataDir);
}

/** A port free a moment ago (the runtime listens on it right after). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The assembly as `-c publicUrl=<url>` would synthesize it, without a second synth: every
 * function gets PIPEGATE_PUBLIC_URL. The upload-cors resource's origins need no edit: the
 * API's own stands for this runtime's, which is the public URL's here.
 */
function withPublicUrl(assembly: Assembly, url: string): Assembly {
  const copy = structuredClone(assembly);
  for (const stack of copy.stacks) {
    for (const r of Object.values(stack.template.Resources)) {
      const props = (r.Properties ??= {});
      const env = props.Environment as { Variables?: Record<string, unknown> } | undefined;
      if (r.Type === 'AWS::Lambda::Function' && env?.Variables?.PIPEGATE_TABLE !== undefined) env.Variables.PIPEGATE_PUBLIC_URL = url;
    }
  }
  return copy;
}

export function withHelpers<R extends RuntimeBase>(rt: R, ownedDir: string | undefined): R & Helpers {
  const t: R & Helpers = {
    ...rt,
    owner: (method, path, body) => request(`${rt.url}${path}`, method, body, { authorization: `Bearer ${rt.ownerToken}` }),
    caller: (method, path, key, body, headers = {}) =>
      request(`${rt.url}${path}`, method, body, { ...(key ? { 'x-api-key': key } : {}), ...headers }),
    async runToEnd(id, inputs) {
      const started = await t.owner('POST', `/v1/pipelines/${id}/runs`, inputs ? { inputs } : {});
      if (started.status !== 202) throw new Error(`run refused: ${started.text}`);
      const runId = started.body.run_id as string;
      const run = await waitUntil(
        () => t.owner('GET', `/v1/pipelines/${id}/runs/${runId}`),
        (r) => isTerminalStatus(r.body.status),
      );
      return run.body;
    },
    async executeToEnd(deployment, workflow_input, timeoutMs) {
      const r = await t.caller('POST', `/v1/deployments/${deployment.deploymentId}/executions/`, deployment.apiKey, { workflow_input });
      if (r.status !== 202) throw new Error(`execution refused: ${r.status} ${r.text}`);
      const id = r.body.execution_id as string;
      await t.waitForExecution(id, deployment.apiKey, undefined, timeoutMs);
      return (await t.caller('GET', `/v1/deployments/executions/${id}/result/`, deployment.apiKey)).body;
    },
    async publishPipeline(id, def, visibility) {
      const pushed = await t.owner('PUT', `/v1/pipelines/${id}`, def);
      if (pushed.status >= 300) throw new Error(`push refused: ${pushed.text}`);
      const run = await t.runToEnd(id);
      if (run.status !== 'completed') throw new Error(`run did not complete: ${JSON.stringify(run)}`);
      const pub = await t.owner('PUT', `/v1/pipelines/${id}/deployment`, visibility ?? {});
      if (pub.status !== 201) throw new Error(`publish refused: ${pub.text}`);
      return {
        deploymentId: pub.body.deployment_id as string,
        apiKey: pub.body.api_key as string,
        signingSecret: pub.body.signing_secret as string,
        body: pub.body,
      };
    },
    async waitForExecution(id, key, done = (s) => isTerminalStatus(s), timeoutMs = HANG_MS) {
      // Polls less often the longer it waits (to 500 ms): many waiters at once must not load the
      // runtime they wait for. A status it waits for does not go away, so none is missed.
      const end = Date.now() + timeoutMs;
      for (let step = 25; ; step = Math.min(500, step * 2)) {
        const r = await t.caller('GET', `/v1/deployments/executions/${id}/status/`, key);
        if (done(r.body.status as string)) return r.body;
        if (Date.now() > end) throw new Error(`execution ${id} not done within ${timeoutMs} ms; last status: ${r.text}`);
        await sleep(step);
      }
    },
    async cleanup() {
      await rt.stop({ drainMs: 0 });
      if (ownedDir) rmSync(ownedDir, { recursive: true, force: true });
    },
  };
  return t;
}

export const greeting: PipelineDefinition = {
  description: 'Greets someone',
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    greeting: { type: 'transform', inputs: ['name'], expression: "'Hello, ' & name & '!'" },
    message: { type: 'output', from: 'greeting' },
  },
};
