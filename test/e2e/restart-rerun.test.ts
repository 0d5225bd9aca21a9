/**
 * A crash loses no work that AWS would not lose: an execution that was running when the
 * process was killed -9 runs again from the start at the next start (same id, one callback),
 * unless its pipeline sets `retry_interrupted: false`, which fails it with the reason.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PipelineDefinition } from '../../functions/core/types';
import { spawnRuntime, type RuntimeProcess } from '../support/process';
import { request, waitUntil } from '../support/runtime';
import { reply, startTestServer, type TestServer } from '../support/http-server';
import { HANG_MS } from '../support/hang';

let dataDir: string;
let upstream: TestServer;
let receiver: TestServer;
let runtime: RuntimeProcess | undefined;
/** Calls the upstream got, by the `who` query parameter. */
const calls = new Map<string, number>();
/**
 * The executions' own calls (each name's second) get no answer: their executions stay running,
 * however slow the machine, until the kill cuts the connection. Every other call is answered.
 */
const held: ServerResponse[] = [];
const hooks: { id: string; execution: string; status: string }[] = [];

/** Calls the upstream (so a re-run shows); held there, the execution is killed mid-run. */
const slowCall = (who: string, retryInterrupted?: boolean): PipelineDefinition => ({
  ...(retryInterrupted === undefined ? {} : { retry_interrupted: retryInterrupted }),
  nodes: {
    name: { type: 'input', value_type: 'string', value: who },
    call: { type: 'http', url: `${upstream.origin}/count?who=${who}` },
    wait: { type: 'delay', inputs: ['call'], ms: 100 },
    said: { type: 'transform', inputs: ['name', 'wait'], expression: "name & ' called ' & $string(wait.n) & ' times'" },
    out: { type: 'output', from: 'said' },
  },
});

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'pipegate-rerun-'));
  upstream = await startTestServer((req, res) => {
    const who = new URL(req.path, 'http://x').searchParams.get('who') ?? '';
    calls.set(who, (calls.get(who) ?? 0) + 1);
    if (calls.get(who) === 2) held.push(res);
    else reply(res, 200, { n: calls.get(who) });
  });
  receiver = await startTestServer((req, res) => {
    hooks.push({
      id: String(req.headers['webhook-id']),
      execution: (JSON.parse(req.body) as { execution_id: string }).execution_id,
      status: String(req.headers['x-pipegate-status']),
    });
    reply(res, 204);
  });
});

afterAll(async () => {
  for (const res of held) res.destroy();
  await runtime?.stop();
  await upstream.close();
  await receiver.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function publish(rt: RuntimeProcess, id: string, def: PipelineDefinition) {
  const owner = (m: string, p: string, b?: unknown) =>
    request<Record<string, unknown>>(`${rt.url}${p}`, m, b, { authorization: `Bearer ${rt.ownerToken}` });
  expect((await owner('PUT', `/v1/pipelines/${id}`, def)).status).toBe(201);
  const run = await owner('POST', `/v1/pipelines/${id}/runs`, {});
  await waitUntil(
    () => owner('GET', `/v1/pipelines/${id}/runs/${run.body.run_id}`),
    (r) => r.body.status === 'completed',
    HANG_MS,
    100,
  );
  const pub = await owner('PUT', `/v1/pipelines/${id}/deployment`, {});
  return { dep: pub.body.deployment_id as string, key: pub.body.api_key as string };
}

it('runs an interrupted execution again from the start after a kill -9, or fails it when its pipeline opts out', async () => {
  runtime = await spawnRuntime(dataDir);
  const again = await publish(runtime, 'runs-again', slowCall('again'));
  const once = await publish(runtime, 'runs-once', slowCall('once', false));
  const submit = async (p: { dep: string; key: string }) => {
    const r = await request<Record<string, unknown>>(
      `${runtime?.url}/v1/deployments/${p.dep}/executions/`,
      'POST',
      { callback: `${receiver.origin}/hook` },
      { 'x-api-key': p.key },
    );
    expect(r.status).toBe(202);
    return r.body.execution_id as string;
  };
  const statusOf = (id: string, key: string) =>
    request<Record<string, unknown>>(`${runtime?.url}/v1/deployments/executions/${id}/status/`, 'GET', undefined, { 'x-api-key': key });

  // The publishing runs called the upstream once each; the executions call it once more and are held.
  const a = await submit(again);
  const b = await submit(once);
  await waitUntil(
    async () => [calls.get('again'), calls.get('once')],
    ([x, y]) => x === 2 && y === 2,
    HANG_MS,
    50,
  );
  expect((await statusOf(a, again.key)).body.status).toBe('running');
  expect((await statusOf(b, once.key)).body.status).toBe('running');
  await runtime.kill9();

  runtime = await spawnRuntime(dataDir);
  expect(runtime.output()).toMatch(/recovered .*1 interrupted and running again, 1 interrupted \(marked failed\)/);

  const finalA = await waitUntil(
    () => statusOf(a, again.key),
    (r) => r.body.status === 'completed',
    HANG_MS,
    250,
  );
  const finalB = await waitUntil(
    () => statusOf(b, once.key),
    (r) => r.body.status === 'failed',
    HANG_MS,
    250,
  );
  // Run again from the start: the upstream was called once more.
  expect(calls.get('again')).toBe(3);
  expect(calls.get('once')).toBe(2);
  expect(finalA.body.error_message).toBeNull();
  expect(finalB.body.error_message).toMatch(/interrupted by a service restart/);
  const ownerView = (pipeline: string, id: string) =>
    request<Record<string, unknown>>(`${runtime?.url}/v1/pipelines/${pipeline}/executions/${id}`, 'GET', undefined, {
      authorization: `Bearer ${runtime?.ownerToken}`,
    });
  const [ownerA, ownerB] = [await ownerView('runs-again', a), await ownerView('runs-once', b)];
  expect([ownerA.body.reruns, ownerB.body.reruns]).toEqual([1, 0]);
  expect(ownerB.body.error_message).toMatch(/retry_interrupted/);

  // Each callback once, with the final status.
  await waitUntil(
    async () => hooks.filter((h) => h.execution === a || h.execution === b).length,
    (n) => n >= 2,
    HANG_MS,
    100,
  );
  const forA = hooks.filter((h) => h.execution === a);
  const forB = hooks.filter((h) => h.execution === b);
  expect([forA.length, forA[0]?.status, forB.length, forB[0]?.status]).toEqual([1, 'completed', 1, 'failed']);
});
