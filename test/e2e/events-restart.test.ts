/**
 * A runtime restart while a caller's event stream is open: the process dies (kill -9) mid-run,
 * comes back on the same data dir and port, re-runs the interrupted execution, and the client,
 * reconnecting with Last-Event-ID, loses nothing and sees nothing twice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PipelineDefinition } from '../../functions/core/types';
import { spawnRuntime, type RuntimeProcess } from '../support/process';
import { request, waitUntil } from '../support/runtime';
import { openSse } from '../support/sse';

const steps: PipelineDefinition = {
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'x' },
    first: { type: 'delay', inputs: ['name'], ms: 200 },
    long: { type: 'delay', inputs: ['first'], ms: 4000 },
    last: { type: 'delay', inputs: ['long'], ms: 200 },
    out: { type: 'output', from: 'last' },
  },
};

let dataDir: string;
let runtime: RuntimeProcess | undefined;

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'pipegate-events-restart-'));
});

afterAll(async () => {
  await runtime?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

it('a stream open across a kill -9 and restart resumes with Last-Event-ID and loses nothing', async () => {
  const env = { PORT: String(await freePort()) };
  runtime = await spawnRuntime(dataDir, env);
  const owner = (m: string, p: string, b?: unknown) =>
    request<Record<string, unknown>>(`${runtime?.url}${p}`, m, b, { authorization: `Bearer ${runtime?.ownerToken}` });
  await owner('PUT', '/v1/pipelines/steps', steps);
  const run = await owner('POST', '/v1/pipelines/steps/runs', {});
  await waitUntil(
    () => owner('GET', `/v1/pipelines/steps/runs/${String(run.body.run_id)}`),
    (r) => r.body.status === 'completed',
  );
  const pub = await owner('PUT', '/v1/pipelines/steps/deployment', {});
  const key = String(pub.body.api_key);
  const accepted = await request<Record<string, unknown>>(
    `${runtime.url}/v1/deployments/${String(pub.body.deployment_id)}/executions/`,
    'POST',
    {},
    { 'x-api-key': key },
  );
  const id = String(accepted.body.execution_id);
  const url = () => `${runtime?.url}/v1/deployments/executions/${id}/events/`;

  // Act: the stream is open while `long` runs; the process dies under it.
  const first = await openSse(url(), { 'x-api-key': key });
  await first.waitFor((evs) => evs.some((e) => e.event === 'node' && e.data.node_id === 'long' && e.data.state === 'started'));
  await runtime.kill9();
  await first.ended.catch(() => undefined);
  runtime = await spawnRuntime(dataDir, env);
  const lastId = first.events.at(-1)?.id ?? '0';
  const second = await openSse(url(), { 'x-api-key': key, 'last-event-id': lastId });
  await second.ended;

  // Assess: what the client pieced together is exactly the whole stream, ending in done.
  const replay = await openSse(url(), { 'x-api-key': key });
  await replay.ended;
  const joined = [...first.events, ...second.events].map((e) => [
    e.id,
    e.event,
    e.data.node_id ?? null,
    e.data.state ?? e.data.status ?? null,
  ]);
  expect(joined).toEqual(replay.events.map((e) => [e.id, e.event, e.data.node_id ?? null, e.data.state ?? e.data.status ?? null]));
  expect(new Set(joined.map((j) => j[0])).size).toBe(joined.length);
  expect(second.events.at(-1)?.event).toBe('done');
  expect(second.events.at(-1)?.data).toMatchObject({ status: 'completed' });
  // The restart resumed the execution where it was: `long` (a wait of the state machine) started
  // once, waited, and finished once; `first`, finished before the kill, never ran again.
  const of = (node: string, state: string) =>
    replay.events.filter((e) => e.event === 'node' && e.data.node_id === node && e.data.state === state).length;
  // (Its `waiting` event is shown when the write that parks it lands; a kill just before loses
  // that view, never the wait: at most one.)
  expect([of('long', 'started'), of('long', 'finished')]).toEqual([1, 1]);
  expect(of('long', 'waiting')).toBeLessThanOrEqual(1);
  expect([of('first', 'started'), of('first', 'finished')]).toEqual([1, 1]);
});
