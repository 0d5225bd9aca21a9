/**
 * Nothing accepted is lost when the process dies: a kill -9 with executions in flight and
 * callbacks being retried, then a restart on the same data dir.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PipelineDefinition } from '../../functions/core/types';
import { spawnRuntime, type RuntimeProcess } from '../support/process';
import { greeting, request, waitUntil } from '../support/runtime';
import { isTerminalStatus } from '../../functions/core/transitions';
import { reply, startTestServer, type TestServer } from '../support/http-server';
import { HANG_MS } from '../support/hang';

/**
 * Each poll asks for up to ten statuses: at a second apart that is 600 requests a minute, half
 * the per-address limit (1,200), which a faster poll overran on a slow start and then saw
 * nothing but 429s.
 */
const POLL_MS = 1000;

const slow: PipelineDefinition = {
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'slow' },
    wait: { type: 'delay', inputs: ['name'], ms: 3000 },
    out: { type: 'output', from: 'wait' },
  },
};

let dataDir: string;
let receiver: TestServer;
let hookUrl: string;
let failHooks = true;
const hooks: { id: string; execution: string }[] = [];
let runtime: RuntimeProcess | undefined;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'pipegate-restart-'));
  receiver = await startTestServer((req, res) => {
    if (failHooks) return reply(res, 500);
    hooks.push({ id: String(req.headers['webhook-id']), execution: (JSON.parse(req.body) as { execution_id: string }).execution_id });
    reply(res, 204);
  });
  hookUrl = `${receiver.origin}/hook`;
});

afterAll(async () => {
  await runtime?.stop();
  await receiver.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function publish(rt: RuntimeProcess, id: string, def: PipelineDefinition) {
  const owner = (m: string, p: string, b?: unknown) =>
    request<Record<string, unknown>>(`${rt.url}${p}`, m, b, { authorization: `Bearer ${rt.ownerToken}` });
  await owner('PUT', `/v1/pipelines/${id}`, def);
  const run = await owner('POST', `/v1/pipelines/${id}/runs`, {});
  await waitUntil(
    () => owner('GET', `/v1/pipelines/${id}/runs/${run.body.run_id}`),
    (r) => r.body.status === 'completed',
    HANG_MS,
    POLL_MS,
  );
  const pub = await owner('PUT', `/v1/pipelines/${id}/deployment`, {});
  return { dep: pub.body.deployment_id as string, key: pub.body.api_key as string };
}

it('finishes every accepted execution exactly once and delivers every callback after a kill -9', async () => {
  const env = { PIPEGATE_CALLBACK_SCHEDULE: '1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1' };
  runtime = await spawnRuntime(dataDir, env);
  const s = await publish(runtime, 'slow', slow);
  const g = await publish(runtime, 'greeting', greeting);

  const submit = async (p: { dep: string; key: string }) => {
    const r = await request<Record<string, unknown>>(
      `${runtime?.url}/v1/deployments/${p.dep}/executions/`,
      'POST',
      { callback: hookUrl },
      { 'x-api-key': p.key },
    );
    expect(r.status).toBe(202);
    return r.body.execution_id as string;
  };
  // Fast ones finish and then fail their callbacks (retrying); slow ones are mid-run at the kill.
  const fast = await Promise.all(Array.from({ length: 5 }, () => submit(g)));
  const slowIds = await Promise.all(Array.from({ length: 5 }, () => submit(s)));
  await waitUntil(
    () =>
      Promise.all(
        fast.map((id) =>
          request<Record<string, unknown>>(`${runtime?.url}/v1/deployments/executions/${id}/status/`, 'GET', undefined, {
            'x-api-key': g.key,
          }),
        ),
      ),
    (rs) => rs.every((r) => r.body.status === 'completed'),
    HANG_MS,
    POLL_MS,
  );
  await runtime.kill9();

  failHooks = false;
  runtime = await spawnRuntime(dataDir, env);
  expect(runtime.output()).toMatch(/recovered/);

  const statusOf = (id: string, key: string) =>
    request<Record<string, unknown>>(`${runtime?.url}/v1/deployments/executions/${id}/status/`, 'GET', undefined, { 'x-api-key': key });
  const finals = await waitUntil(
    () => Promise.all([...fast.map((id) => statusOf(id, g.key)), ...slowIds.map((id) => statusOf(id, s.key))]),
    (rs) => rs.every((r) => isTerminalStatus(r.body.status)),
    HANG_MS,
    POLL_MS,
  );
  for (const r of finals.slice(0, 5)) expect(r.body.status).toBe('completed');
  for (const r of finals.slice(5)) {
    if (r.body.status === 'failed') expect(r.body.error_message).toMatch(/interrupted/);
    else expect(r.body.status).toBe('completed');
  }

  const all = [...fast, ...slowIds];
  await waitUntil(
    async () => new Set(hooks.map((h) => h.execution)),
    (seen) => all.every((id) => seen.has(id)),
  );
  // One webhook id per execution, whatever happened in between.
  const idsByExecution = new Map<string, Set<string>>();
  for (const h of hooks) idsByExecution.set(h.execution, (idsByExecution.get(h.execution) ?? new Set()).add(h.id));
  for (const id of all) expect(idsByExecution.get(id)?.size).toBe(1);
});
