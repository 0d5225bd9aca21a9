/**
 * SIGTERM (or Ctrl-C) drains: new requests are answered 503 + Retry-After, executions running
 * at the signal finish within the drain time, and whatever outlives it is failed as
 * interrupted, once, with its callback owed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { delayDef } from '../support/scenarios';
import { isTerminalStatus } from '../../functions/core/transitions';
import { spawnRuntime, type RuntimeProcess } from '../support/process';
import { request, sleep, waitUntil, type Reply } from '../support/runtime';

jest.setTimeout(90_000);

async function publishOn(rt: RuntimeProcess, id: string, ms: number): Promise<{ dep: string; key: string }> {
  const owner = (m: string, p: string, b?: unknown) => request<Record<string, unknown>>(`${rt.url}${p}`, m, b, { authorization: `Bearer ${rt.ownerToken}` });
  await owner('PUT', `/v1/pipelines/${id}`, delayDef(ms));
  const run = await owner('POST', `/v1/pipelines/${id}/runs`, {});
  await waitUntil(() => owner('GET', `/v1/pipelines/${id}/runs/${String(run.body.run_id)}`), (r) => r.body.status === 'completed', 30_000);
  const pub = await owner('PUT', `/v1/pipelines/${id}/deployment`, {});
  if (pub.status !== 201) throw new Error(`publish refused: ${pub.text}`);
  return { dep: String(pub.body.deployment_id), key: String(pub.body.api_key) };
}

const statusOf = (url: string, id: string, key: string): Promise<Reply> =>
  request(`${url}/v1/deployments/executions/${id}/status/`, 'GET', undefined, { 'x-api-key': key });

/** Submits `n` executions and waits until all of them are running. */
async function startRunning(rt: RuntimeProcess, t: { dep: string; key: string }, n: number): Promise<string[]> {
  const ids = await Promise.all(
    Array.from({ length: n }, async () => {
      const r = await request<Record<string, unknown>>(`${rt.url}/v1/deployments/${t.dep}/executions/`, 'POST', {}, { 'x-api-key': t.key });
      expect(r.status).toBe(202);
      return String(r.body.execution_id);
    }),
  );
  await waitUntil(() => Promise.all(ids.map((id) => statusOf(rt.url, id, t.key))), (rs) => rs.every((r) => r.body.status === 'running'), 20_000);
  return ids;
}

describe('stopping with executions running', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-drain-'));
  let rt: RuntimeProcess | undefined;
  afterAll(async () => {
    await rt?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('lets running executions finish within the drain time and refuses new work meanwhile', async () => {
    rt = await spawnRuntime(dataDir, { PIPEGATE_DRAIN_SECONDS: '20' });
    const t = await publishOn(rt, 'drain', 2_000);
    const ids = await startRunning(rt, t, 6);

    const signalled = Date.now();
    rt.child.kill('SIGTERM');
    await sleep(300);
    const refused = await request(`${rt.url}/v1/deployments/${t.dep}/executions/`, 'POST', {}, { 'x-api-key': t.key });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBeTruthy();
    const code = await new Promise<number | null>((r) => (rt?.child.exitCode !== null ? r(rt?.child.exitCode ?? null) : rt.child.once('exit', r)));
    const tookMs = Date.now() - signalled;
    expect(code).toBe(0);
    expect(rt.output()).toMatch(/6 of 6 finished/);
    expect(tookMs).toBeLessThan(20_000);

    rt = await spawnRuntime(dataDir, { PIPEGATE_DRAIN_SECONDS: '20' });
    const finals = await Promise.all(ids.map((id) => statusOf(rt?.url ?? '', id, t.key)));
    expect(finals.map((r) => r.body.status)).toEqual(ids.map(() => 'completed'));
    await rt.stop();
    rt = undefined;
  });

  it('fails as interrupted, at once and once, what outlives the drain time', async () => {
    rt = await spawnRuntime(dataDir, { PIPEGATE_DRAIN_SECONDS: '1' });
    const t = await publishOn(rt, 'long', 4_000);
    const ids = await startRunning(rt, t, 3);

    const signalled = Date.now();
    await rt.stop();
    expect(Date.now() - signalled).toBeLessThan(7_000);
    expect(rt.output()).toMatch(/0 of 3 finished.*3 still running after 1 s failed as interrupted/);

    rt = await spawnRuntime(dataDir, { PIPEGATE_DRAIN_SECONDS: '1' });
    expect(rt.output()).not.toMatch(/interrupted \(marked failed\)/);
    const finals = await Promise.all(ids.map((id) => statusOf(rt?.url ?? '', id, t.key)));
    for (const r of finals) {
      expect(isTerminalStatus(r.body.status)).toBe(true);
      expect(r.body.status).toBe('failed');
      expect(String(r.body.error_message)).toMatch(/interrupted by a service shutdown/);
    }
  });
});
