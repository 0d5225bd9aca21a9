/**
 * Values larger than a DynamoDB item over real HTTP: an http node answering ≈ 560 KB of JSON
 * and a ≈ 200 KB input. DynamoDB (and dynalite) refuse an item over 400 KB, so without the
 * claim check (functions/core/claim-check.ts) the run and the execution fail with a
 * ValidationException; with it, every view answers with the exact values.
 */
import type { PipelineDefinition } from '../../functions/core/types';
import { startTestServer, type TestServer } from '../support/http-server';
import { startReceiver, type Receiver } from '../support/receiver';
import { startE2eRuntime, waitUntil, type E2eRuntime, type Published } from '../support/runtime';

/** ≈ 560 KB of JSON: strings and whole numbers only, so JSONata's $string gives back the same text. */
const bigAnswer = {
  items: Array.from({ length: 5_000 }, (_, i) => ({ id: i, name: `item-${i}`, text: 'x'.repeat(72) })),
};
const bigText = JSON.stringify(bigAnswer);
const note = 'n'.repeat(200_000);

let rt: E2eRuntime;
let upstream: TestServer;
let receiver: Receiver;
let published: Published;
let runView: Record<string, unknown>;

const def = (origin: string): PipelineDefinition => ({
  nodes: {
    note: { type: 'input', value_type: 'string', value: 'short' },
    call: { type: 'http', url: `${origin}/big` },
    text: { type: 'transform', inputs: ['call'], expression: '$string(call)' },
    body: { type: 'output', from: 'text' },
    echo: { type: 'output', from: 'note' },
  },
});

beforeAll(async () => {
  upstream = await startTestServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(bigText);
  });
  receiver = await startReceiver(0);
  rt = await startE2eRuntime({ env: { PIPEGATE_CALLBACK_SCHEDULE: '0' } });
  await rt.owner('PUT', '/v1/pipelines/large-values', def(upstream.origin));
  runView = await rt.runToEnd('large-values', { note });
  published = await rt.publishPipeline('large-values', def(upstream.origin));
});

afterAll(async () => {
  await rt?.cleanup();
  await upstream?.close();
  await receiver?.close();
});

it('bigger than an item: the http node answers ≈ 560 KB, as the test means it to', () => {
  expect(bigText.length).toBeGreaterThan(550_000);
  expect(bigText.length).toBeLessThan(600_000);
});

it('an owner run with a ≈ 560 KB output and a 200 KB input completes, and its view holds both exactly', () => {
  expect(runView.status).toBe('completed');
  expect((runView.outputs as Record<string, string>).body).toBe(bigText);
  expect((runView.outputs as Record<string, string>).echo).toBe(note);
  expect((runView.inputs as Record<string, string>).note).toBe(note);
});

it('an API execution completes; result, owner view and callback carry the exact values', async () => {
  const submitted = await rt.caller('POST', `/v1/deployments/${published.deploymentId}/executions/`, published.apiKey, {
    workflow_input: { note: { value: note, value_type: 'RAW' } },
    callback: receiver.url,
  });
  expect(submitted.status).toBe(202);
  const id = String(submitted.body.execution_id);

  const status = await rt.waitForExecution(id, published.apiKey);
  expect(status.status).toBe('completed');

  const result = await rt.caller<{ response_data: Record<string, { value: string }> }>(
    'GET',
    `/v1/deployments/executions/${id}/result/`,
    published.apiKey,
  );
  expect(result.status).toBe(200);
  expect(result.body.response_data.body?.value).toBe(bigText);
  expect(result.body.response_data.echo?.value).toBe(note);

  const owner = await rt.owner<{ inputs: Record<string, string>; outputs: Record<string, string>; trace: unknown[] }>(
    'GET',
    `/v1/pipelines/large-values/executions/${id}`,
  );
  expect(owner.status).toBe(200);
  expect(owner.body.inputs.note).toBe(note);
  expect(owner.body.outputs.body).toBe(bigText);
  expect(owner.body.trace.length).toBe(5);

  const list = await rt.owner<{ executions: { execution_id: string; status: string }[] }>(
    'GET',
    '/v1/pipelines/large-values/deployment/executions',
  );
  expect(list.status).toBe(200);
  expect(list.body.executions.find((x) => x.execution_id === id)?.status).toBe('completed');

  const hook = await waitUntil(
    async () => receiver.delivered().find((h) => h.executionId === id),
    (h) => h !== undefined,
  );
  const payload = JSON.parse(hook?.body ?? '{}') as Record<string, unknown>;
  expect(payload.body).toEqual([bigText]);
  expect(payload.echo).toEqual([note]);
});

it('Prefer: wait answers with the exact values once the execution has finished', async () => {
  const r = await rt.caller<{ status: string; response_data: Record<string, { value: string }> }>(
    'POST',
    `/v1/deployments/${published.deploymentId}/executions/`,
    published.apiKey,
    { workflow_input: { note: { value: note, value_type: 'RAW' } } },
    { prefer: 'wait=30' },
  );

  expect(r.status).toBe(200);
  expect(r.body.status).toBe('completed');
  expect(r.body.response_data.body?.value).toBe(bigText);
  expect(r.body.response_data.echo?.value).toBe(note);
});
