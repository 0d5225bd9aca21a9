/**
 * The service answers as docs/openapi.json says: a started local runtime, real HTTP, a whole
 * owner and caller flow with its errors, every response's status, headers and body checked
 * against the document (a status the document does not list for the route fails).
 */
import { randomUUID } from 'node:crypto';
import type { PipelineDefinition } from '../../functions/core/types';
import { ROUTES } from '../../lib/routes';
import { createValidator, loadServiceDocument, structuralProblems, type OpenApiValidator } from '../support/openapi';
import { startReceiver } from '../support/receiver';
import { e2eMode, greeting, request, startE2eRuntime, waitUntil, type Reply, type E2eRuntime } from '../support/runtime';
import { isTerminalStatus } from '../../functions/core/transitions';
import { uploadKey } from '../../functions/core/object-keys';

// Waits are bounded generously: a loaded machine (or Node 24's first compiles) is slow.

let rt: E2eRuntime;
const service = createValidator(loadServiceDocument());
/** `METHOD template status` of every checked response, to show what the flow covered. */
const covered = new Set<string>();

beforeAll(async () => {
  rt = await startE2eRuntime({ env: { ...process.env, PIPEGATE_CANCEL_POLL_MS: '50' } });
});

afterAll(async () => {
  await rt?.cleanup();
});

interface Call {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Owner token (default), an API key, or no credentials at all. */
  as?: { owner: true } | { key: string } | { none: true };
}

/** Sends a request and fails the test unless the response conforms to the document(s). */
async function call<T = Record<string, unknown>>(c: Call, also: OpenApiValidator[] = []): Promise<Reply<T>> {
  const as = c.as ?? { owner: true };
  const auth: Record<string, string> =
    'owner' in as ? { authorization: `Bearer ${rt.ownerToken}` } : 'key' in as ? { 'x-api-key': as.key } : {};
  const reply = await request<T>(`${rt.url}${c.path}`, c.method, c.body, { ...auth, ...(c.headers ?? {}) });
  const observed = { method: c.method, path: c.path, status: reply.status, headers: reply.headers, text: reply.text };
  const problems = [service, ...also].flatMap((v) => v.check(observed));
  expect({ request: `${c.method} ${c.path}`, problems }).toEqual({ request: `${c.method} ${c.path}`, problems: [] });
  const op = service.match(c.method, c.path);
  if (op) covered.add(`${op.method} ${op.template} ${reply.status}`);
  return reply;
}

const owner = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => call<T>({ method, path, body });
const caller = (
  method: string,
  path: string,
  key: string | null,
  body?: unknown,
  headers?: Record<string, string>,
  also: OpenApiValidator[] = [],
) => call({ method, path, body, headers, as: key === null ? { none: true } : { key } }, also);

async function runToEnd(id: string, inputs?: Record<string, unknown>): Promise<Record<string, unknown>> {
  const started = await owner('POST', `/v1/pipelines/${id}/runs`, inputs ? { inputs } : {});
  expect(started.status).toBe(202);
  const run = await waitUntil(
    () => owner('GET', `/v1/pipelines/${id}/runs/${started.body.run_id as string}`),
    (r) => isTerminalStatus(r.body.status),
  );
  return run.body;
}

const typed: PipelineDefinition = {
  description: 'Typed inputs and a hidden output',
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    times: { type: 'input', value_type: 'integer', value: 2 },
    loud: { type: 'input', value_type: 'boolean', value: false },
    text: {
      type: 'transform',
      inputs: ['name', 'times', 'loud'],
      expression: "($word := loud ? $uppercase(name) : name; $join([1..times].$word, ' '))",
    },
    message: { type: 'output', from: 'text' },
    length: { type: 'transform', inputs: ['text'], expression: '$length(text)' },
    size: { type: 'output', from: 'length' },
    debug: { type: 'output', from: 'name' },
  },
};

const slow: PipelineDefinition = {
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'slow' },
    // Long enough that a cancel right after the submit finds it running on a loaded machine.
    wait: { type: 'delay', inputs: ['name'], ms: 6000 },
    out: { type: 'output', from: 'wait' },
  },
};

const UNKNOWN = '00000000-0000-4000-8000-000000000000';

describe('the owner API conforms', () => {
  it('refuses a missing or wrong owner token with 401', async () => {
    const missing = await call({ method: 'GET', path: '/v1/pipelines', as: { none: true } });
    const wrong = await call({ method: 'GET', path: '/v1/pipelines', headers: { authorization: 'Bearer wrong' }, as: { none: true } });
    expect([missing.status, wrong.status]).toEqual([401, 401]);
  });

  it('pushes, lists, gets; refuses invalid definitions, bad ids and oversized bodies', async () => {
    expect((await owner('PUT', '/v1/pipelines/conform', typed)).status).toBe(201);
    expect((await owner('PUT', '/v1/pipelines/conform/', typed)).status).toBe(200);
    expect((await owner('PUT', '/v1/pipelines/conform-broken', { nodes: { a: { type: 'widget' } }, extra: 1 })).status).toBe(400);
    expect((await owner('PUT', '/v1/pipelines/Not_An_Id', greeting)).status).toBe(400);
    expect((await owner('PUT', '/v1/pipelines/conform-huge', { description: 'x'.repeat(300 * 1024), nodes: {} })).status).toBe(413);

    const list = await owner<{ pipelines: { pipeline_id: string }[] }>('GET', '/v1/pipelines');
    expect(list.body.pipelines.map((p) => p.pipeline_id)).toContain('conform');
    expect((await owner('GET', '/v1/pipelines/conform')).body).toMatchObject({ pipeline_id: 'conform', version: 1, deployment_id: null });
    expect((await owner('GET', '/v1/pipelines/no-such-pipeline')).status).toBe(404);
  });

  it('runs: 202 with Location, the run, the list with a cursor, and their errors', async () => {
    expect((await owner('POST', '/v1/pipelines/conform/runs', { inputs: { nope: 1, times: 'x' } })).status).toBe(400);
    expect((await owner('POST', '/v1/pipelines/no-such-pipeline/runs', {})).status).toBe(404);
    expect((await owner('GET', '/v1/pipelines/conform/deployment')).body).toMatchObject({ state: 'run_required' });
    expect((await owner('PUT', '/v1/pipelines/conform/deployment', {})).status).toBe(409);

    const first = await runToEnd('conform', { name: 'Ada', times: 1 });
    const events = await call({
      method: 'GET',
      path: `/v1/pipelines/conform/runs/${String(first.run_id)}/events`,
      headers: { accept: 'text/event-stream' },
    });
    expect(events.text).toContain('event: done');
    expect((await call({ method: 'GET', path: `/v1/pipelines/conform/runs/${UNKNOWN}/events` })).status).toBe(404);
    const second = await runToEnd('conform');
    expect([first.status, second.status]).toEqual(['completed', 'completed']);

    const page = await owner('GET', '/v1/pipelines/conform/runs?limit=1');
    expect(page.body.next_cursor).toEqual(expect.any(String));
    const next = await owner('GET', `/v1/pipelines/conform/runs?limit=1&cursor=${page.body.next_cursor as string}`);
    expect((next.body.runs as { run_id: string }[])[0]?.run_id).toBe(first.run_id);
    expect((await owner('GET', '/v1/pipelines/conform/runs?limit=0')).status).toBe(400);
    expect((await owner('GET', '/v1/pipelines/conform/runs?cursor=garbage')).status).toBe(400);
    expect((await owner('GET', '/v1/pipelines/no-such-pipeline/runs')).status).toBe(404);
    expect((await owner('GET', `/v1/pipelines/conform/runs/${UNKNOWN}`)).status).toBe(404);
  });

  it('publishes (201, then 200), with readiness at every step, and refuses bad visibility', async () => {
    expect((await owner('GET', '/v1/pipelines/conform/deployment')).body).toMatchObject({ state: 'not_published', publishable: true });
    expect((await owner('PUT', '/v1/pipelines/conform/deployment', { outputs: { nope: { visible: false } } })).status).toBe(400);
    const json = { 'content-type': 'application/json' };
    expect((await call({ method: 'PUT', path: '/v1/pipelines/conform/deployment', body: '{not json', headers: json })).status).toBe(400);
    expect(
      (await call({ method: 'PUT', path: '/v1/pipelines/conform/deployment', body: '{}', headers: { 'content-type': 'text/plain' } }))
        .status,
    ).toBe(415);

    const created = await owner('PUT', '/v1/pipelines/conform/deployment', { outputs: { debug: { visible: false } } });
    expect(created.status).toBe(201);
    expect((await owner('GET', '/v1/pipelines/conform/deployment')).body).toMatchObject({ state: 'live' });
    const updated = await owner('PUT', '/v1/pipelines/conform/deployment', {});
    expect(updated.status).toBe(200);
    expect(updated.body.deployment_id).toBe(created.body.deployment_id);

    await owner('PUT', '/v1/pipelines/conform', { ...typed, description: 'version 2' });
    await runToEnd('conform');
    expect((await owner('GET', '/v1/pipelines/conform/deployment')).body).toMatchObject({ state: 'needs_publish' });
  });

  it("consumers: created, listed, changed, rotated, revoked; the deployment key's limits set and removed", async () => {
    const base = '/v1/pipelines/conform/deployment/consumers';
    const made = await owner('POST', base, {
      name: 'conform-consumer',
      rate_limit: { requests: 100, per_seconds: 60 },
      quota: { executions: 1000, per: 'day' },
    });
    expect(made.status).toBe(201);
    const one = `${base}/${made.body.consumer_id as string}`;
    expect((await owner('POST', base, { name: 'x', rate_limit: { requests: 0, per_seconds: 1 } })).status).toBe(400);
    expect((await owner('GET', base)).status).toBe(200);
    expect((await owner('PATCH', one, { quota: null })).status).toBe(200);
    expect((await owner('PATCH', `${base}/${UNKNOWN}`, { name: 'x' })).status).toBe(404);
    expect((await owner('POST', `${one}/keys`, { grace_seconds: 60 })).status).toBe(200);
    expect((await owner('DELETE', one)).status).toBe(204);
    expect((await owner('PATCH', one, { name: 'again' })).status).toBe(409);
    expect((await owner('PUT', '/v1/pipelines/conform/deployment/limits', { rate_limit: { requests: 1000, per_seconds: 1 } })).status).toBe(
      200,
    );
    expect((await owner('PUT', '/v1/pipelines/conform/deployment/limits', {})).status).toBe(200);
  });

  it('refuses to publish after a failed latest run and without inputs or outputs (409)', async () => {
    const failing: PipelineDefinition = {
      nodes: {
        x: { type: 'input', value_type: 'integer', value: 1 },
        bad: { type: 'transform', inputs: ['x'], expression: '$error("boom")' },
        o: { type: 'output', from: 'bad' },
      },
    };
    await owner('PUT', '/v1/pipelines/conform-flaky', greeting);
    await runToEnd('conform-flaky');
    await owner('PUT', '/v1/pipelines/conform-flaky', failing);
    expect((await runToEnd('conform-flaky')).status).toBe('failed');
    const latestFailed = await owner('PUT', '/v1/pipelines/conform-flaky/deployment', {});
    expect(latestFailed.status).toBe(409);
    expect(latestFailed.body.latest_run).toMatchObject({ status: 'failed', version: 2 });

    await owner('PUT', '/v1/pipelines/conform-empty', { nodes: { t: { type: 'transform', inputs: [], expression: '1 + 1' } } });
    await runToEnd('conform-empty');
    expect((await owner('PUT', '/v1/pipelines/conform-empty/deployment', {})).status).toBe(409);
  });
});

describe("the caller API conforms, to the service document and to the deployment's own", () => {
  let key: string;
  let deploymentId: string;
  let own: OpenApiValidator;

  beforeAll(async () => {
    const p = await rt.publishPipeline('conform-caller', typed, {
      outputs: { debug: { visible: false } },
      inputs: { loud: { visible: false } },
    });
    key = p.apiKey;
    deploymentId = p.deploymentId;
  });

  it('serves the visible contract and a structurally valid per-deployment OpenAPI document', async () => {
    const contract = await caller('GET', `/v1/deployments/${deploymentId}/`, key);
    expect(contract.body).toEqual({
      deployment_id: deploymentId,
      inputs: [
        { id: 'name', value_type: 'string', value: 'world' },
        { id: 'times', value_type: 'integer', value: 2 },
      ],
      outputs: [
        { id: 'message', value_type: 'RAW' },
        { id: 'size', value_type: 'RAW' },
      ],
      waits: [],
    });

    const doc = await caller('GET', `/v1/deployments/${deploymentId}/openapi.json`, key);
    expect(structuralProblems(doc.body)).toEqual([]);
    expect(JSON.stringify(doc.body.paths)).toContain(deploymentId);
    own = createValidator(doc.body, { closed: false });
  });

  it('executes: 202 with Location, status, result; the same conforms to the deployment document', async () => {
    const accepted = await caller(
      'POST',
      `/v1/deployments/${deploymentId}/executions/`,
      key,
      {
        workflow_input: { name: { value: 'Ada', value_type: 'RAW' }, times: { value: 3, value_type: 'RAW' } },
      },
      undefined,
      [own],
    );
    expect(accepted.status).toBe(202);
    const id = accepted.body.execution_id as string;

    await waitUntil(
      () => caller('GET', `/v1/deployments/executions/${id}/status/`, key, undefined, undefined, [own]),
      (r) => r.body.status === 'completed',
    );
    const result = await caller('GET', `/v1/deployments/executions/${id}/result`, key, undefined, undefined, [own]);
    expect(result.body.response_data).toEqual({
      message: { value: 'Ada Ada Ada', value_type: 'RAW' },
      size: { value: 11, value_type: 'RAW' },
    });
    const events = await caller('GET', `/v1/deployments/executions/${id}/events/`, key, undefined, { accept: 'text/event-stream' }, [own]);
    expect(events.status).toBe(200);
    expect(events.text).toContain('event: done');

    const viaAuthorization = await caller(
      'POST',
      `/v1/deployments/${deploymentId}/executions`,
      null,
      undefined,
      { authorization: `Api-Key ${key}` },
      [own],
    );
    expect(viaAuthorization.status).toBe(202);
  });

  it("serves the deployment's MCP server: JSON-RPC answers (200 SSE), notifications (202), and the transport's refusals", async () => {
    const mcp = `/v1/deployments/${deploymentId}/mcp`;
    const accept = { accept: 'application/json, text/event-stream' };
    const bearer = { ...accept, authorization: `Bearer ${key}` };
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'conformance', version: '1' } },
    };
    const initialized = await caller('POST', mcp, null, init, bearer, [own]);
    expect(initialized.status).toBe(200);
    expect(initialized.text).toContain('"serverInfo"');
    const listed = await caller('POST', mcp, key, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, accept, [own]);
    expect(listed.text).toContain('"name":"conform_caller"');
    const called = await caller(
      'POST',
      mcp,
      key,
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'conform_caller', arguments: { name: 'Ada', times: 1 } } },
      accept,
      [own],
    );
    expect(called.text).toContain('"structuredContent":{"message":"Ada","size":3}');
    expect((await caller('POST', mcp, key, { jsonrpc: '2.0', method: 'notifications/initialized' }, accept, [own])).status).toBe(202);
    expect((await caller('POST', mcp, key, 'not json', { ...accept, 'content-type': 'application/json' }, [own])).status).toBe(400);
    expect((await caller('POST', mcp, key, { jsonrpc: '2.0', id: 4, method: 'ping' }, { accept: 'application/json' }, [own])).status).toBe(
      406,
    );
    expect((await caller('POST', mcp, key, 'x=1', { ...accept, 'content-type': 'text/plain' }, [own])).status).toBe(415);
    expect(
      (await caller('POST', mcp, key, { jsonrpc: '2.0', id: 5, method: 'ping' }, { ...accept, origin: 'https://elsewhere.example' }, [own]))
        .status,
    ).toBe(403);
    expect((await caller('GET', mcp, key, undefined, { accept: 'text/event-stream' }, [own])).status).toBe(405);
    expect((await caller('POST', mcp, null, { jsonrpc: '2.0', id: 6, method: 'ping' }, accept, [own])).status).toBe(401);
  });

  it('409 before the result is ready; cancel (200), a second cancel (409), then the cancelled result', async () => {
    const s = await rt.publishPipeline('conform-slow', slow);
    const accepted = await caller('POST', `/v1/deployments/${s.deploymentId}/executions/`, s.apiKey, {});
    const id = accepted.body.execution_id as string;

    const early = await caller('GET', `/v1/deployments/executions/${id}/result/`, s.apiKey);
    expect(early.status).toBe(409);
    const cancelled = await caller('POST', `/v1/deployments/executions/${id}/cancel/`, s.apiKey);
    expect(cancelled.body.status).toBe('cancelled');
    const again = await caller('POST', `/v1/deployments/executions/${id}/cancel/`, s.apiKey);
    expect(again.status).toBe(409);
    const result = await caller('GET', `/v1/deployments/executions/${id}/result/`, s.apiKey);
    expect(result.body).toMatchObject({ status: 'cancelled', response_data: {} });
  });

  it.each<[string, number, unknown, Record<string, string>]>([
    ['a body that is not JSON', 400, '{nope', { 'content-type': 'application/json' }],
    ['an unknown top-level field', 400, { inputs: {} }, {}],
    ['a malformed value object', 400, { workflow_input: { name: { value: 'x' } } }, {}],
    ['a null callback', 400, { callback: null }, {}],
    ['a malformed Idempotency-Key', 400, {}, { 'idempotency-key': 'with space' }],
    ['a hidden input', 422, { workflow_input: { loud: { value: true, value_type: 'RAW' } } }, {}],
    ['a wrong type', 422, { workflow_input: { times: { value: 1.5, value_type: 'RAW' } } }, {}],
    ['REFERENCE', 422, { workflow_input: { name: { value: 'https://example.com/x', value_type: 'REFERENCE' } } }, {}],
    ['a relative callback', 422, { callback: '/hook' }, {}],
    ['a non-JSON content type', 415, 'name=x', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['a body over 256 KiB', 413, { workflow_input: { name: { value: 'x'.repeat(300 * 1024), value_type: 'RAW' } } }, {}],
  ])('POST executions with %s: %i', async (_what, status, body, headers) => {
    const r = await caller('POST', `/v1/deployments/${deploymentId}/executions/`, key, body, headers, status === 413 ? [] : [own]);
    expect(r.status).toBe(status);
  });

  it('Idempotency-Key: the repeat is the first 202, another body 422', async () => {
    const headers = { 'idempotency-key': `conform-${Date.now()}` };
    const first = await caller('POST', `/v1/deployments/${deploymentId}/executions/`, key, {}, headers, [own]);
    const repeat = await caller('POST', `/v1/deployments/${deploymentId}/executions/`, key, {}, headers, [own]);
    expect(repeat.body.execution_id).toBe(first.body.execution_id);
    const reused = await caller('POST', `/v1/deployments/${deploymentId}/executions/`, key, { workflow_input: {} }, headers, [own]);
    expect(reused.status).toBe(422);
  });

  it('401 without a key or with a wrong one, on every caller route', async () => {
    const paths: [string, string][] = [
      ['POST', `/v1/deployments/${deploymentId}/executions/`],
      ['GET', `/v1/deployments/executions/${UNKNOWN}/status/`],
      ['GET', `/v1/deployments/executions/${UNKNOWN}/result/`],
      ['GET', `/v1/deployments/executions/${UNKNOWN}/events/`],
      ['POST', `/v1/deployments/executions/${UNKNOWN}/cancel/`],
      ['GET', `/v1/deployments/${deploymentId}/`],
      ['GET', `/v1/deployments/${deploymentId}/openapi.json`],
    ];
    for (const [method, path] of paths) {
      expect((await caller(method, path, null)).status).toBe(401);
      expect((await caller(method, path, 'pgk_wrong')).status).toBe(401);
    }
  });

  it('serves the docs page and its files without a key', async () => {
    expect((await caller('GET', `/v1/deployments/${deploymentId}/docs`, null)).status).toBe(200);
    expect((await caller('GET', '/v1/deployments/not-a-deployment/docs', null)).status).toBe(404);
    expect((await caller('GET', '/v1/docs/swagger-ui.css', null)).status).toBe(200);
    expect((await caller('GET', '/v1/docs/pipegate-docs.js', null)).status).toBe(200);
    expect((await caller('GET', '/v1/docs/package.json', null)).status).toBe(404);
  });

  it('serves an asset link without a key, and 404 for a made-up one', async () => {
    // Results carry no assets yet, so only the runtime whose dependencies the test holds with
    // every grant (npm start) can mint a link; both modes answer a made-up token.
    if (e2eMode() === 'local') {
      const deps = (rt as unknown as { deps: import('../../functions/adapters/deps').Deps }).deps;
      const key = `d/${deploymentId}/e/${randomUUID()}/out.bytes`;
      await deps.objects.put(key, Buffer.from([0, 1, 2, 255]), 'application/octet-stream');
      const link = await deps.assetLinks.link({ key, media_type: 'application/octet-stream', bytes: 4, sha256: '' }, rt.url, new Date());
      const path = link.url.slice(rt.url.length);
      expect((await caller('GET', path, null)).status).toBe(200);
      expect((await caller('GET', path, null, undefined, { range: 'bytes=1-2' })).status).toBe(206);
      expect((await caller('GET', path, null, undefined, { range: 'bytes=9-' })).status).toBe(416);
      expect((await caller('HEAD', path, null)).status).toBe(200);
      expect((await caller('HEAD', path, null, undefined, { range: 'bytes=1-2' })).status).toBe(206);
    }
    expect((await caller('GET', '/v1/assets/v1.e30.AAAA', null)).status).toBe(404);
    expect((await caller('HEAD', '/v1/assets/v1.e30.AAAA', null)).status).toBe(404);
  });

  it('serves a web form and its routes without a key, as documented', async () => {
    const png1 = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const p = await rt.publishPipeline(
      'conform-form',
      {
        nodes: {
          photo: { type: 'input', value_type: 'asset', value: png1, media_types: ['image/png'] },
          name: { type: 'input', value_type: 'string', value: 'x' },
          out: { type: 'output', from: 'name' },
        },
      },
      { form: { enabled: true } },
    );
    const form = (p.body.form_url as string).slice(rt.url.length);
    expect((await caller('GET', form, null)).status).toBe(200);
    expect((await caller('GET', `/v1/forms/pgf_${'A'.repeat(43)}`, null)).status).toBe(404);
    expect((await caller('GET', `${form}/files/pipegate-form.js`, null)).status).toBe(200);
    expect((await caller('GET', `${form}/files/package.json`, null)).status).toBe(404);
    const run = await caller('POST', `${form}/executions`, null, { workflow_input: { name: { value: 'y', value_type: 'RAW' } } });
    expect(run.status).toBe(202);
    expect((await caller('POST', `${form}/executions`, null, { callback: 'http://127.0.0.1:9/' })).status).toBe(400);
    expect((await caller('POST', `${form}/executions`, null, { workflow_input: { nope: { value: 1, value_type: 'RAW' } } })).status).toBe(
      422,
    );
    const read = await caller('GET', `${form}/executions/${run.body.execution_id as string}`, null, undefined, { prefer: 'wait=20' });
    expect(read.status).toBe(200);
    expect((await caller('GET', `${form}/executions/${UNKNOWN}`, null)).status).toBe(404);
    const events = await caller('GET', `${form}/executions/${run.body.execution_id as string}/events`, null, undefined, {
      accept: 'text/event-stream',
    });
    expect(events.status).toBe(200);
    expect(events.text).toContain('event: done');
    expect((await caller('GET', `${form}/executions/${UNKNOWN}/events`, null)).status).toBe(404);
    expect((await caller('POST', `${form}/uploads`, null, { media_type: 'image/png', bytes: 10 })).status).toBe(201);
    expect((await caller('POST', `${form}/uploads`, null, { media_type: 'text/plain', bytes: 10 })).status).toBe(422);
  });

  it('answers an upload for an asset input with its PUT URL, and refuses what no input takes', async () => {
    const media = await rt.publishPipeline('conform-media', {
      nodes: {
        photo: {
          type: 'input',
          value_type: 'asset',
          media_types: ['image/png'],
          value: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
        },
        size: { type: 'transform', inputs: ['photo'], expression: 'photo.bytes' },
        bytes: { type: 'output', from: 'size' },
      },
    });
    const uploads = `/v1/deployments/${media.deploymentId}/uploads/`;
    const created = await caller('POST', uploads, media.apiKey, { media_type: 'image/png', bytes: 1024 });
    expect(created.status).toBe(201);
    if (e2eMode() === 'synth') {
      // start:synth: the uploaded object, through a link minted with the runtime's key material
      // (results carry no assets yet), streamed by the asset function under its own role.
      const up = created.body as { upload_url: string; headers: Record<string, string>; asset: { value: string } };
      const bytes = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(1016, 7)]);
      expect((await fetch(up.upload_url, { method: 'PUT', headers: up.headers, body: bytes })).status).toBe(200);
      const deps = (rt as unknown as { deps: import('../../functions/adapters/deps').Deps }).deps;
      const key = uploadKey(media.deploymentId, up.asset.value.slice('upload:'.length));
      // Served as the document describes the route's body (application/octet-stream).
      const link = await deps.assetLinks.link(
        { key, media_type: 'application/octet-stream', bytes: bytes.length, sha256: '' },
        rt.url,
        new Date(),
      );
      const path = link.url.slice(rt.url.length);
      expect((await caller('GET', path, null)).status).toBe(200);
      expect((await caller('GET', path, null, undefined, { range: 'bytes=1-2' })).status).toBe(206);
      expect((await caller('GET', path, null, undefined, { range: 'bytes=2000-' })).status).toBe(416);
      expect((await caller('HEAD', path, null)).status).toBe(200);
      expect((await caller('HEAD', path, null, undefined, { range: 'bytes=1-2' })).status).toBe(206);
    }
    expect((await caller('POST', uploads, media.apiKey, { media_type: 'video/mp4', bytes: 1024 })).status).toBe(422);
    expect((await caller('POST', uploads, media.apiKey, { media_type: 'image/png' })).status).toBe(400);
    expect((await caller('POST', `/v1/deployments/${UNKNOWN}/uploads/`, media.apiKey, { media_type: 'image/png', bytes: 1 })).status).toBe(
      401,
    );
  });

  it("answers an owner's upload with its PUT URL, a run uses it, and refuses what no input takes", async () => {
    const png1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
    const def: PipelineDefinition = {
      nodes: {
        photo: {
          type: 'input',
          value_type: 'asset',
          media_types: ['image/png'],
          value: `data:image/png;base64,${png1.toString('base64')}`,
        },
        size: { type: 'transform', inputs: ['photo'], expression: 'photo.bytes' },
        bytes: { type: 'output', from: 'size' },
      },
    };
    expect((await owner('PUT', '/v1/pipelines/conform-owner-media', def)).status).toBe(201);
    const uploads = '/v1/pipelines/conform-owner-media/uploads';
    const created = await owner<{ upload_url: string; headers: Record<string, string>; asset: { value: string } }>('POST', uploads, {
      media_type: 'image/png',
      bytes: png1.length,
    });
    expect(created.status).toBe(201);
    expect((await fetch(created.body.upload_url, { method: 'PUT', headers: created.body.headers, body: png1 })).status).toBe(200);
    const run = await runToEnd('conform-owner-media', { photo: created.body.asset.value });
    expect(run).toMatchObject({ status: 'completed', outputs: { bytes: png1.length } });
    expect((await owner('POST', uploads, { media_type: 'video/mp4', bytes: 1024 })).status).toBe(400);
    expect((await owner('POST', uploads, { media_type: 'image/png' })).status).toBe(400);
    expect((await owner('POST', '/v1/pipelines/no-such-pipeline/uploads', { media_type: 'image/png', bytes: 1 })).status).toBe(404);
  });

  it('401 for a key on a deployment not its own (here: unknown), 404 for unknown executions', async () => {
    expect((await caller('POST', `/v1/deployments/${UNKNOWN}/executions/`, key, {})).status).toBe(401);
    expect((await caller('GET', `/v1/deployments/${UNKNOWN}/`, key)).status).toBe(401);
    expect((await caller('GET', `/v1/deployments/${UNKNOWN}/openapi.json`, key)).status).toBe(401);
    for (const what of ['status', 'result'])
      expect((await caller('GET', `/v1/deployments/executions/${UNKNOWN}/${what}/`, key)).status).toBe(404);
    expect((await caller('POST', `/v1/deployments/executions/not-a-uuid/cancel/`, key)).status).toBe(404);
  });
});

describe('owner keys, executions and delete conform', () => {
  it('rotates the key and the signing secret; refuses a bad body and a pipeline without a deployment', async () => {
    const p = await rt.publishPipeline('conform-keys', greeting);
    const key = await owner('POST', '/v1/pipelines/conform-keys/deployment/keys', {});
    expect(key.body.api_key).toMatch(/^pgk_/);
    const secret = await owner('POST', '/v1/pipelines/conform-keys/deployment/keys', { credential: 'signing_secret', grace_seconds: 60 });
    expect(secret.body.signing_secret).toMatch(/^whsec_/);
    expect((await owner('POST', '/v1/pipelines/conform-keys/deployment/keys', { grace_seconds: -1 })).status).toBe(400);
    expect((await owner('POST', '/v1/pipelines/conform-empty/deployment/keys', {})).status).toBe(404);
    expect((await owner('POST', '/v1/pipelines/no-such-pipeline/deployment/keys', {})).status).toBe(404);
    expect((await caller('GET', `/v1/deployments/${p.deploymentId}/`, p.apiKey)).status).toBe(401);
  });

  it('shows any execution to the owner, and 404 for an unknown one', async () => {
    const p = await rt.publishPipeline('conform-exec', greeting);
    const accepted = await caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {
      callback: 'http://127.0.0.1:9/hook?token=secret',
    });
    const id = accepted.body.execution_id as string;
    const view = await waitUntil(
      () => owner('GET', `/v1/pipelines/conform-exec/executions/${id}`),
      (r) => r.body.status === 'completed' && r.body.callback_delivery !== null,
    );
    expect(view.body).toMatchObject({ kind: 'api', deployment_id: p.deploymentId, callback: 'http://127.0.0.1:9/hook?…' });
    const runs = await owner<{ runs: { run_id: string }[] }>('GET', '/v1/pipelines/conform-exec/runs');
    const run = await owner('GET', `/v1/pipelines/conform-exec/executions/${runs.body.runs[0]?.run_id ?? ''}`);
    expect(run.body).toMatchObject({ kind: 'run', deployment_id: null, callback_delivery: null });
    expect((await owner('GET', `/v1/pipelines/conform-exec/executions/${UNKNOWN}`)).status).toBe(404);
  });

  it("lists the live deployment's executions, shows usage, redelivers a callback and cancels as the owner", async () => {
    const receiver = await startReceiver();
    try {
      const p = await rt.publishPipeline('conform-owner', slow);
      const hooked = await caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, { callback: receiver.url });
      const hookedId = hooked.body.execution_id as string;
      const delivered = await waitUntil(
        () => owner('GET', `/v1/pipelines/conform-owner/executions/${hookedId}`),
        (r) => (r.body.callback_delivery as { outcome?: string } | null)?.outcome === 'delivered',
      );
      expect(delivered.body.trace).toEqual(expect.arrayContaining([expect.objectContaining({ node: 'wait', outcome: 'completed' })]));
      const again = await owner('POST', `/v1/pipelines/conform-owner/executions/${hookedId}/callback/redeliver`);
      expect(again.status).toBe(202);
      await waitUntil(
        async () => receiver.delivered().filter((h) => h.executionId === hookedId).length,
        (n) => n === 2,
      );

      const running = await caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {});
      const runningId = running.body.execution_id as string;
      expect((await owner('POST', `/v1/pipelines/conform-owner/executions/${runningId}/callback/redeliver`)).status).toBe(409);
      const cancelled = await owner('POST', `/v1/pipelines/conform-owner/executions/${runningId}/cancel`);
      expect(cancelled.body).toMatchObject({ status: 'cancelled' });
      expect((await owner('POST', `/v1/pipelines/conform-owner/executions/${runningId}/cancel`)).status).toBe(409);
      expect((await owner('POST', `/v1/pipelines/conform-owner/executions/${UNKNOWN}/cancel`)).status).toBe(404);

      const first = await owner<{ executions: { execution_id: string }[]; next_cursor: string | null }>(
        'GET',
        '/v1/pipelines/conform-owner/deployment/executions?limit=1',
      );
      expect(first.body.executions.map((e) => e.execution_id)).toEqual([runningId]);
      const next = await owner<{ executions: { execution_id: string }[] }>(
        'GET',
        `/v1/pipelines/conform-owner/deployment/executions?limit=1&cursor=${first.body.next_cursor ?? ''}`,
      );
      expect(next.body.executions.map((e) => e.execution_id)).toEqual([hookedId]);
      expect((await owner('GET', '/v1/pipelines/conform-owner/deployment/executions?status=done')).status).toBe(400);
      expect((await owner('GET', '/v1/pipelines/conform-empty/deployment/executions')).status).toBe(404);
      const usage = await owner('GET', '/v1/pipelines/conform-owner/deployment/usage');
      expect(usage.body.last_hour).toMatchObject({ total: 2, by_status: { completed: 1, failed: 0, cancelled: 1 } });
      expect((await owner('GET', '/v1/pipelines/no-such-pipeline/deployment/usage')).status).toBe(404);
    } finally {
      await receiver.close();
    }
  });

  it('deletes with confirmation (204); refuses without it (400) or without a deployment (404); then callers get 404', async () => {
    const p = await rt.publishPipeline('conform-delete', greeting);
    const before = await caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {});

    expect((await owner('DELETE', '/v1/pipelines/conform-delete/deployment')).status).toBe(400);
    expect((await owner('DELETE', `/v1/pipelines/conform-delete/deployment?confirm=${UNKNOWN}`)).status).toBe(400);
    expect((await owner('DELETE', `/v1/pipelines/no-such-pipeline/deployment?confirm=${UNKNOWN}`)).status).toBe(404);
    expect((await owner('DELETE', `/v1/pipelines/conform-empty/deployment?confirm=${UNKNOWN}`)).status).toBe(404);
    expect((await owner('DELETE', `/v1/pipelines/conform-delete/deployment?confirm=${p.deploymentId}`)).status).toBe(204);

    expect((await caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {})).status).toBe(404);
    expect((await caller('GET', `/v1/deployments/executions/${before.body.execution_id as string}/status/`, p.apiKey)).status).toBe(404);
    expect((await caller('POST', `/v1/deployments/executions/${before.body.execution_id as string}/cancel/`, p.apiKey)).status).toBe(404);
  });
});

describe('owner secrets conform', () => {
  it('sets, lists and deletes a secret; refuses a bad name or body (400) and an unknown secret (404)', async () => {
    expect((await owner('PUT', '/v1/secrets/CONFORM_TOKEN', { value: 'conform-value' })).status).toBe(200);
    const list = await owner<{ secrets: { name: string }[] }>('GET', '/v1/secrets');
    expect(list.body.secrets.map((s) => s.name)).toContain('CONFORM_TOKEN');
    expect(JSON.stringify(list.body)).not.toContain('conform-value');
    expect((await owner('PUT', '/v1/secrets/CONFORM_TOKEN', { value: 42 })).status).toBe(400);
    expect((await owner('PUT', '/v1/secrets/not%20a%20name', { value: 'x' })).status).toBe(400);
    expect((await owner('DELETE', '/v1/secrets/CONFORM_TOKEN')).status).toBe(204);
    expect((await owner('DELETE', '/v1/secrets/CONFORM_TOKEN')).status).toBe(404);
  });
});

describe('resume URLs conform', () => {
  const waiting: PipelineDefinition = {
    nodes: {
      name: { type: 'input', value_type: 'string', value: 'world' },
      approval: { type: 'wait', inputs: ['name'], timeout_ms: 60_000, fields: { ok: { value_type: 'boolean' } } },
      said: { type: 'transform', inputs: ['approval', 'name'], expression: "name & (approval.ok ? ' ok' : ' no')" },
      out: { type: 'output', from: 'said' },
    },
  };
  /** A run of the pipeline once its view lists the wait, and the path of its resume URL. */
  async function waitingRun(): Promise<{ runId: string; path: string }> {
    const started = await owner('POST', '/v1/pipelines/conform-wait/runs', {});
    const runId = started.body.run_id as string;
    const view = await waitUntil(
      () => owner('GET', `/v1/pipelines/conform-wait/runs/${runId}`),
      (r) => Array.isArray(r.body.waiting) || isTerminalStatus(r.body.status),
    );
    const url = (view.body.waiting as { resume_url: string }[])[0]?.resume_url ?? '';
    return { runId, path: url.slice(rt.url.length) };
  }

  it('resumes once (202), then 409; refuses 400, 404, 413 and 415; 410 once the run was cancelled', async () => {
    expect((await owner('PUT', '/v1/pipelines/conform-wait', waiting)).status).toBe(201);
    const first = await waitingRun();
    const none = { none: true } as const;
    expect((await call({ method: 'POST', path: first.path, body: { ok: 'yes' }, as: none })).status).toBe(400);
    expect((await call({ method: 'POST', path: `${first.path}x`, body: { ok: true }, as: none })).status).toBe(404);
    expect((await call({ method: 'POST', path: first.path, body: { ok: true, pad: 'x'.repeat(300_000) }, as: none })).status).toBe(413);
    const text = { 'content-type': 'text/plain' };
    expect((await call({ method: 'POST', path: first.path, body: 'ok', headers: text, as: none })).status).toBe(415);
    expect((await call({ method: 'POST', path: first.path, body: { ok: true }, as: none })).status).toBe(202);
    expect((await call({ method: 'POST', path: first.path, body: { ok: false }, as: none })).status).toBe(409);

    const second = await waitingRun();
    expect((await owner('POST', `/v1/pipelines/conform-wait/executions/${second.runId}/cancel`)).status).toBe(200);
    expect((await call({ method: 'POST', path: second.path, body: { ok: true }, as: none })).status).toBe(410);
  });
});

describe('coverage of the flow', () => {
  it('answered every route with a success and the statuses of contract §5 and the owner errors', () => {
    // A route that documents no success (GET on the MCP URL: 405 by the MCP transport's rule) is held to its own answers.
    const successes = ROUTES.filter(
      (r) => Object.keys(r.answers).some((st) => st.startsWith('2')) && ![...covered].some((c) => c.startsWith(`${r.method} ${r.path} 2`)),
    );
    expect(ROUTES.filter((r) => !Object.keys(r.answers).some((st) => st.startsWith('2'))).map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v1/deployments/{deployment_id}/mcp',
    ]);
    expect(successes.map((r) => `${r.method} ${r.path}`)).toEqual([]);
    const statuses = new Set([...covered].map((c) => Number(c.split(' ').pop())));
    for (const s of [200, 201, 202, 204, 400, 401, 404, 409, 413, 415, 422])
      expect({ status: s, seen: statuses.has(s) }).toEqual({ status: s, seen: true });
  });
});
