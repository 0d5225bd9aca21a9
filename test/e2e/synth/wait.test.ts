/**
 * Callers that wait (`Prefer: wait`) against `npm run start:synth`: the functions run as on
 * AWS, in separate environments that share no memory, so a waiting function learns of the
 * finish only by re-reading the record (PollingCompletions, strongly consistent GetItem under
 * its role), and its cap is the template's PIPEGATE_MAX_WAIT_SECONDS, not the local runtime's.
 */
import type { ServerResponse } from 'node:http';
import { reply, startTestServer, type TestServer } from '../../support/http-server';
import { testAssembly } from '../../support/synth';
import { startE2eRuntime, useE2eMode, waitUntil, type E2eRuntime, type Published } from '../../support/runtime';
import { gatedDef } from '../../support/scenarios';

useE2eMode('synth');

let rt: E2eRuntime;
let gated: Published;
let gate: TestServer;
let open = true;
const held: ServerResponse[] = [];
const release = () => held.splice(0).forEach((res) => reply(res, 200, { word: 'done' }));

beforeAll(async () => {
  gate = await startTestServer((_req, res) => (open ? reply(res, 200, { word: 'done' }) : held.push(res)));
  rt = await startE2eRuntime({ env: { ...process.env, PIPEGATE_CANCEL_POLL_MS: '50' } });
  const def = gatedDef(`${gate.origin}/`);
  gated = await rt.publishPipeline('gated', def);
});

afterAll(async () => {
  release();
  await rt?.cleanup();
  await gate?.close();
});

it('answers a waiting submit with the result once the re-reads see the finish', async () => {
  // Act
  const r = await rt.caller('POST', `/v1/deployments/${gated.deploymentId}/executions/`, gated.apiKey, {}, { prefer: 'wait=20' });

  // Assess
  expect(r.status).toBe(200);
  expect(r.headers.get('preference-applied')).toBe('wait=20');
  expect(r.body).toMatchObject({ status: 'completed', response_data: { out: { value: 'done', value_type: 'RAW' } } });
});

it('wakes a waiting result request when a held execution completes, capped at the template maximum', async () => {
  // Prepare: an execution held running at the gate.
  open = false;
  const accepted = await rt.caller('POST', `/v1/deployments/${gated.deploymentId}/executions/`, gated.apiKey, {});
  expect(accepted.status).toBe(202);
  await waitUntil(
    async () => held.length,
    (n) => n > 0,
  );

  // Act: wait longer than the stack allows, then let it finish.
  const waiting = rt.caller('GET', `/v1/deployments/executions/${String(accepted.body.execution_id)}/result/`, gated.apiKey, undefined, {
    prefer: 'wait=60',
  });
  await new Promise((r) => setTimeout(r, 500));
  open = true;
  release();
  const r = await waiting;

  // Assess
  const template = (await testAssembly()).stacks.find((s) => s.stackName === 'Pipegate')?.template;
  const maxWait = Object.values(template?.Resources ?? {})
    .map(
      (res) => (res.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.PIPEGATE_MAX_WAIT_SECONDS,
    )
    .find((v) => v !== undefined);
  expect(r.status).toBe(200);
  expect(r.headers.get('preference-applied')).toBe(`wait=${String(maxWait)}`);
  expect(r.body).toMatchObject({ status: 'completed', response_data: { out: { value: 'done', value_type: 'RAW' } } });
});
