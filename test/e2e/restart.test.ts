/**
 * Nothing accepted is lost when the process dies: a kill -9 with executions in flight and
 * callbacks being retried, then a restart on the same data dir.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PipelineDefinition } from '../../functions/core/types';
import { spawnRuntime, type RuntimeProcess } from '../support/process';
import { greeting, request, waitUntil } from '../support/runtime';

jest.setTimeout(120_000);

const slow: PipelineDefinition = {
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'slow' },
    wait: { type: 'delay', inputs: ['name'], ms: 3000 },
    out: { type: 'output', from: 'wait' },
  },
};

let dataDir: string;
let receiver: Server;
let hookUrl: string;
let failHooks = true;
const hooks: { id: string; execution: string }[] = [];
let runtime: RuntimeProcess | undefined;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'pipegate-restart-'));
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (failHooks) {
        res.statusCode = 500;
      } else {
        hooks.push({ id: String(req.headers['webhook-id']), execution: (JSON.parse(body) as { execution_id: string }).execution_id });
        res.statusCode = 204;
      }
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  await runtime?.stop();
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
  rmSync(dataDir, { recursive: true, force: true });
});

async function publish(rt: RuntimeProcess, id: string, def: PipelineDefinition) {
  const owner = (m: string, p: string, b?: unknown) => request<Record<string, unknown>>(`${rt.url}${p}`, m, b, { authorization: `Bearer ${rt.ownerToken}` });
  await owner('PUT', `/v1/pipelines/${id}`, def);
  const run = await owner('POST', `/v1/pipelines/${id}/runs`, {});
  await waitUntil(() => owner('GET', `/v1/pipelines/${id}/runs/${run.body.run_id}`), (r) => r.body.status === 'completed', 20_000);
  const pub = await owner('PUT', `/v1/pipelines/${id}/deployment`, {});
  return { dep: pub.body.deployment_id as string, key: pub.body.api_key as string };
}

it('finishes every accepted execution exactly once and delivers every callback after a kill -9', async () => {
  const env = { PIPEGATE_CALLBACK_SCHEDULE: '1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1' };
  runtime = await spawnRuntime(dataDir, env);
  const s = await publish(runtime, 'slow', slow);
  const g = await publish(runtime, 'greeting', greeting);

  const submit = async (p: { dep: string; key: string }) => {
    const r = await request<Record<string, unknown>>(`${runtime?.url}/v1/deployments/${p.dep}/executions/`, 'POST', { callback: hookUrl }, { 'x-api-key': p.key });
    expect(r.status).toBe(202);
    return r.body.execution_id as string;
  };
  // Fast ones finish and then fail their callbacks (retrying); slow ones are mid-run at the kill.
  const fast = await Promise.all(Array.from({ length: 5 }, () => submit(g)));
  const slowIds = await Promise.all(Array.from({ length: 5 }, () => submit(s)));
  await waitUntil(
    () => Promise.all(fast.map((id) => request<Record<string, unknown>>(`${runtime?.url}/v1/deployments/executions/${id}/status/`, 'GET', undefined, { 'x-api-key': g.key }))),
    (rs) => rs.every((r) => r.body.status === 'completed'),
  );
  await runtime.kill9();

  failHooks = false;
  runtime = await spawnRuntime(dataDir, env);
  expect(runtime.output()).toMatch(/recovered/);

  const statusOf = (id: string, key: string) =>
    request<Record<string, unknown>>(`${runtime?.url}/v1/deployments/executions/${id}/status/`, 'GET', undefined, { 'x-api-key': key });
  const finals = await waitUntil(
    () => Promise.all([...fast.map((id) => statusOf(id, g.key)), ...slowIds.map((id) => statusOf(id, s.key))]),
    (rs) => rs.every((r) => ['completed', 'failed', 'cancelled'].includes(r.body.status as string)),
    30_000,
  );
  for (const r of finals.slice(0, 5)) expect(r.body.status).toBe('completed');
  for (const r of finals.slice(5)) {
    if (r.body.status === 'failed') expect(r.body.error_message).toMatch(/interrupted/);
    else expect(r.body.status).toBe('completed');
  }

  const all = [...fast, ...slowIds];
  await waitUntil(async () => new Set(hooks.map((h) => h.execution)), (seen) => all.every((id) => seen.has(id)), 30_000);
  // One webhook id per execution, whatever happened in between.
  const idsByExecution = new Map<string, Set<string>>();
  for (const h of hooks) idsByExecution.set(h.execution, (idsByExecution.get(h.execution) ?? new Set()).add(h.id));
  for (const id of all) expect(idsByExecution.get(id)?.size).toBe(1);
});
