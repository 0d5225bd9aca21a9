/**
 * Results past Lambda's 6 MB response limit over real HTTP: eight outputs of one ≈ 0.9 MB http
 * answer make a result of ≈ 8.4 MB of JSON. A buffered Lambda answer that large fails (Lambda
 * refuses it, API Gateway answers 502 and names nothing; the local gateway does the same), so
 * every route whose answer carries the values streams (lib/routes.ts `streams`), and each one
 * here gives back the exact values.
 */
import type { PipelineDefinition } from '../../functions/core/types';
import { MAX_BUFFERED_RESPONSE_BYTES } from '../../lib/local/gateway/streaming';
import { startTestServer, type TestServer } from '../support/http-server';
import type { Deps } from '../../functions/adapters/deps';
import { e2eMode, startE2eRuntime, type E2eRuntime, type Published, type Reply } from '../support/runtime';

/** ≈ 0.9 MB of JSON, under the http node's 1 MiB answer limit; strings and whole numbers, so $string gives back the same text. */
const bigAnswer = {
  items: Array.from({ length: 8_000 }, (_, i) => ({ id: i, name: `item-${i}`, text: 'x'.repeat(80) })),
};
const bigText = JSON.stringify(bigAnswer);
const OUTPUTS = ['o1', 'o2', 'o3', 'o4', 'o5', 'o6', 'o7', 'o8'];

const def = (origin: string): PipelineDefinition => ({
  nodes: {
    call: { type: 'http', url: `${origin}/big` },
    text: { type: 'transform', inputs: ['call'], expression: '$string(call)' },
    ...Object.fromEntries(OUTPUTS.map((o) => [o, { type: 'output', from: 'text' }])),
  },
});

let rt: E2eRuntime;
let upstream: TestServer;
let published: Published;

beforeAll(async () => {
  upstream = await startTestServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(bigText);
  });
  rt = await startE2eRuntime({ env: { PIPEGATE_CALLBACK_SCHEDULE: '0' } });
  published = await rt.publishPipeline('large-results', def(upstream.origin));
});

afterAll(async () => {
  await rt?.cleanup();
  await upstream?.close();
});

/** The answer came whole: past the buffered limit, every byte Content-Length announced. */
function expectWholeAndLarge(r: Reply<unknown>): void {
  expect(r.status).toBeLessThan(300);
  const bytes = Buffer.byteLength(r.text, 'utf8');
  expect(bytes).toBeGreaterThan(MAX_BUFFERED_RESPONSE_BYTES);
  expect(r.headers.get('content-length')).toBe(String(bytes));
  expect(r.headers.get('content-type')).toMatch(/^application\/json/);
}

const expectCallerValues = (data: Record<string, { value: unknown; value_type: string }>) => {
  for (const o of OUTPUTS) expect(data[o]).toEqual({ value: bigText, value_type: 'RAW' });
};
const expectOwnerValues = (outputs: Record<string, unknown>) => {
  for (const o of OUTPUTS) expect(outputs[o]).toBe(bigText);
};

it('the http answer fits the node, and the result does not fit a buffered Lambda answer', () => {
  expect(bigText.length).toBeLessThan(1_048_576);
  expect(bigText.length * OUTPUTS.length).toBeGreaterThan(MAX_BUFFERED_RESPONSE_BYTES);
});

describe('callers', () => {
  let executionId: string;

  it('POST executions with Prefer: wait answers 200 with the whole result', async () => {
    const r = await rt.caller<{
      execution_id: string;
      status: string;
      response_data: Record<string, { value: unknown; value_type: string }>;
    }>('POST', `/v1/deployments/${published.deploymentId}/executions/`, published.apiKey, { workflow_input: {} }, { prefer: 'wait=25' });
    expectWholeAndLarge(r);
    expect(r.status).toBe(200);
    expect(r.headers.get('preference-applied')).toBe('wait=25');
    expect(r.body.status).toBe('completed');
    expectCallerValues(r.body.response_data);
    executionId = r.body.execution_id;
  });

  it('GET result answers the exact values, with and without a wait', async () => {
    for (const headers of [{}, { prefer: 'wait=5' }] as Record<string, string>[]) {
      const r = await rt.caller<{ response_data: Record<string, { value: unknown; value_type: string }> }>(
        'GET',
        `/v1/deployments/executions/${executionId}/result/`,
        published.apiKey,
        undefined,
        headers,
      );
      expectWholeAndLarge(r);
      expectCallerValues(r.body.response_data);
    }
  });

  it('GET status (streamed too) still answers a wait with its headers', async () => {
    const r = await rt.caller<{ status: string }>('GET', `/v1/deployments/executions/${executionId}/status/`, published.apiKey, undefined, {
      prefer: 'wait=5',
    });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('completed');
    expect(r.headers.get('preference-applied')).toBe('wait=5');
    expect(r.headers.get('content-length')).toBe(String(Buffer.byteLength(r.text)));
  });

  it("the owner's execution view answers the exact values", async () => {
    const r = await rt.owner<{ outputs: Record<string, unknown> }>('GET', `/v1/pipelines/large-results/executions/${executionId}`);
    expectWholeAndLarge(r);
    expectOwnerValues(r.body.outputs);
  });

  it("the owner's list of executions answers as before", async () => {
    const r = await rt.owner<{ executions: { execution_id: string; status: string }[] }>(
      'GET',
      '/v1/pipelines/large-results/deployment/executions',
    );
    expect(r.status).toBe(200);
    expect(r.body.executions.find((x) => x.execution_id === executionId)?.status).toBe('completed');
  });
});

describe('owner runs', () => {
  let runId: string;

  it('POST runs with Prefer: wait answers 200 with the whole run, Location still set', async () => {
    const r = await rt.caller<{ run_id: string; status: string; outputs: Record<string, unknown> }>(
      'POST',
      '/v1/pipelines/large-results/runs',
      null,
      {},
      { authorization: `Bearer ${rt.ownerToken}`, prefer: 'wait=25' },
    );
    expectWholeAndLarge(r);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('completed');
    expect(r.headers.get('location')).toMatch(new RegExp(`/v1/pipelines/large-results/runs/${r.body.run_id}$`));
    expectOwnerValues(r.body.outputs);
    runId = r.body.run_id;
  });

  it('GET the run answers the exact values, with and without a wait', async () => {
    for (const prefer of [undefined, 'wait=5']) {
      const r = await rt.caller<{ outputs: Record<string, unknown> }>('GET', `/v1/pipelines/large-results/runs/${runId}`, null, undefined, {
        authorization: `Bearer ${rt.ownerToken}`,
        ...(prefer ? { prefer } : {}),
      });
      expectWholeAndLarge(r);
      expectOwnerValues(r.body.outputs);
    }
  });

  it('the run list answers a page holding the run, its stored values named and not read', async () => {
    const r = await rt.owner<{
      runs: { run_id: string; status: string; outputs: unknown; values_not_listed: string[]; values_expired: string[] }[];
    }>('GET', '/v1/pipelines/large-results/runs?limit=5');
    expect(r.status).toBe(200);
    const listed = r.body.runs.find((x) => x.run_id === runId);
    expect(listed?.status).toBe('completed');
    expect(listed?.values_not_listed).toContain('outputs');
    expect(listed?.outputs).toEqual({});
    expect(listed?.values_expired).toEqual([]);
    expect(Buffer.byteLength(r.text)).toBeLessThan(100_000);
  });

  it('once its stored values are gone, the run view says which (npm start: the objects removed as the expiry would)', async () => {
    const seen = await rt.owner<{ values_expired: string[] }>('GET', `/v1/pipelines/large-results/runs/${runId}`);
    expect(seen.body.values_expired).toEqual([]);
    if (e2eMode() !== 'local') return;
    const deps = (rt as unknown as { deps: Deps }).deps;
    await deps.objects.removePrefix(`p/large-results/r/${runId}/`);
    const r = await rt.owner<{ status: string; outputs: unknown; values_expired: string[] }>(
      'GET',
      `/v1/pipelines/large-results/runs/${runId}`,
    );
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('completed');
    expect(r.body.outputs).toEqual({});
    expect(r.body.values_expired).toContain('outputs');
    const owner = await rt.owner<{ values_expired: string[] }>('GET', `/v1/pipelines/large-results/executions/${runId}`);
    expect(owner.body.values_expired).toContain('outputs');
  });
});
