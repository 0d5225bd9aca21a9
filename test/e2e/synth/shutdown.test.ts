/**
 * `npm run start:synth` stops as `npm start` does (test/e2e/shutdown.test.ts): on SIGTERM new
 * requests are answered 503, an execution that finishes within the drain time completes, one
 * whose step outlives it is left to the next start, which runs that step again (a GET, safe to
 * repeat) and completes it, and the outcome is printed. One stop covers both cases: two
 * executions wait on a gate, one is let through during the drain.
 */
import type { ServerResponse } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reply, startTestServer, type TestServer } from '../../support/http-server';
import { spawnRuntime, type RuntimeProcess } from '../../support/process';
import { request, useE2eMode, waitUntil } from '../../support/runtime';
import { HANG_MS } from '../../support/hang';
import { gatedDef } from '../../support/scenarios';

useE2eMode('synth');

const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-synth-drain-'));
let rt: RuntimeProcess | undefined;
let gate: TestServer;
let open = true;
const held: ServerResponse[] = [];

beforeAll(async () => {
  gate = await startTestServer((_req, res) => (open ? reply(res, 200, { word: 'done' }) : held.push(res)));
});
afterAll(async () => {
  open = true;
  held.splice(0).forEach((res) => reply(res, 200, { word: 'done' }));
  await rt?.stop();
  await gate?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it('drains on SIGTERM: refuses new work, lets what finishes in time complete, leaves the rest to the next start, which completes it', async () => {
  // Prepare: a published pipeline whose one call waits on the gate, and two executions held there.
  // Long enough for the execution whose call is answered during the drain to finish on a
  // loaded machine; the other one, still held, is failed when it ends.
  const drainSeconds = 15;
  const env = { PIPEGATE_DRAIN_SECONDS: String(drainSeconds) };
  rt = await spawnRuntime(dataDir, env);
  const url = rt.url;
  const owner = (m: string, p: string, b?: unknown) =>
    request<Record<string, unknown>>(`${url}${p}`, m, b, { authorization: `Bearer ${rt?.ownerToken ?? ''}` });
  const def = gatedDef(`${gate.origin}/`);
  await owner('PUT', '/v1/pipelines/gated', def);
  const run = await owner('POST', '/v1/pipelines/gated/runs', {});
  await waitUntil(
    () => owner('GET', `/v1/pipelines/gated/runs/${String(run.body.run_id)}`),
    (r) => r.body.status === 'completed',
  );
  const pub = await owner('PUT', '/v1/pipelines/gated/deployment', {});
  const dep = String(pub.body.deployment_id);
  const key = String(pub.body.api_key);
  open = false;
  const ids = await Promise.all(
    [1, 2].map(async () =>
      String(
        (await request<Record<string, unknown>>(`${url}/v1/deployments/${dep}/executions`, 'POST', {}, { 'x-api-key': key })).body
          .execution_id,
      ),
    ),
  );
  await waitUntil(
    () => Promise.resolve(held.length),
    (n) => n === 2,
  );

  // The CLI finds it through the URL it recorded in its data dir.
  const recorded = readFileSync(join(dataDir, 'runtime-url'), 'utf8');

  // Act: stop; while draining, new work is refused and one held call is answered.
  const signalled = Date.now();
  rt.child.kill('SIGTERM');
  const stopping = rt;
  await waitUntil(
    async () => stopping.output(),
    (o) => /SIGTERM: stopping/.test(o),
  );
  const refused = await request(`${url}/v1/deployments/${dep}/executions`, 'POST', {}, { 'x-api-key': key });
  reply(held.shift() as ServerResponse, 200, { word: 'done' });
  const code = await new Promise<number | null>((r) =>
    rt?.child.exitCode !== null ? r(rt?.child.exitCode ?? null) : rt.child.once('exit', r),
  );
  const tookMs = Date.now() - signalled;
  const urlLeftBehind = existsSync(join(dataDir, 'runtime-url'));
  // A finished stop says so, and the next start then skips the Scan an unclean stop needs.
  const markedClean = existsSync(join(dataDir, 'clean-stop'));
  const output = rt.output();
  // The call cut at the stop is made again by the next start: this time it is answered.
  open = true;
  rt = await spawnRuntime(dataDir, env);
  const markStillThere = existsSync(join(dataDir, 'clean-stop'));
  const finals = await waitUntil(
    () =>
      Promise.all(
        ids.map((id) =>
          request<Record<string, unknown>>(`${rt?.url ?? ''}/v1/deployments/executions/${id}/status`, 'GET', undefined, {
            'x-api-key': key,
          }),
        ),
      ),
    (rs) => rs.every((r) => r.body.status === 'completed' || r.body.status === 'failed' || r.body.status === 'cancelled'),
  );

  // Assess
  expect(recorded).toBe(`${url}\n`);
  expect(urlLeftBehind).toBe(false);
  expect(markedClean).toBe(true);
  expect(markStillThere).toBe(false);
  expect(refused.status).toBe(503);
  expect(refused.headers.get('retry-after')).toBeTruthy();
  expect(code).toBe(0);
  expect(output).toMatch(
    new RegExp(`SIGTERM: stopping\\. New requests are answered 503; waiting up to ${drainSeconds} s for 2 running executions`),
  );
  expect(output).toMatch(
    new RegExp(
      `1 of 2 finished in [\\d.]+ s; 1 left to the next start, which goes on with them from their last recorded step \\(1 cut in the middle of a step after ${drainSeconds} s\\)`,
    ),
  );
  expect(tookMs).toBeLessThan(drainSeconds * 1000 + HANG_MS);
  expect(finals.map((r) => r.body.status)).toEqual(['completed', 'completed']);
  // The next start took the cut one over (its step run again), and failed nothing.
  expect(rt.output()).toMatch(/1 interrupted and running again/);
  expect(rt.output()).not.toMatch(/[1-9]\d* interrupted \(marked failed\)/);
});
