/**
 * The caller and owner APIs end to end: a started local runtime, real HTTP, every contract rule
 * a caller or an owner can observe.
 */
import { Webhook } from 'standardwebhooks';
import type { PipelineDefinition } from '../../functions/core/types';
import { greeting, sleep, startE2eRuntime, waitUntil, type E2eRuntime, type Published } from '../support/runtime';
import { KEY_REFUSALS, type KeyRefusal } from '../../functions/core/errors';
import { reply, startTestServer, type ReceivedRequest, type TestServer } from '../support/http-server';

let rt: E2eRuntime;
let greet: Published;

type Received = ReceivedRequest;
let receiver: TestServer;
let receiverUrl: string;
const received: Received[] = [];
let receiverStatus: number[] = [];

beforeAll(async () => {
  rt = await startE2eRuntime({ env: { ...process.env, PIPEGATE_CALLBACK_SCHEDULE: '0,0,0', PIPEGATE_CANCEL_POLL_MS: '50' } });
  greet = await rt.publishPipeline('greeting', greeting);
  receiver = await startTestServer((req, res) => {
    received.push(req);
    reply(res, receiverStatus.shift() ?? 204);
  });
  receiverUrl = `${receiver.origin}/hook`;
});

afterAll(async () => {
  await rt?.cleanup();
  await receiver?.close();
});

const executions = (p: Published) => `/v1/deployments/${p.deploymentId}/executions/`;

const slow: PipelineDefinition = {
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'slow' },
    // Long enough that a loaded machine still finds it running when it looks (409, cancel).
    wait: { type: 'delay', inputs: ['name'], ms: 8000 },
    out: { type: 'output', from: 'wait' },
  },
};

const typed: PipelineDefinition = {
  nodes: {
    count: { type: 'input', value_type: 'integer', value: 2 },
    ratio: { type: 'input', value_type: 'float', value: 0.5 },
    loud: { type: 'input', value_type: 'boolean', value: false },
    word: { type: 'input', value_type: 'string', value: 'hi' },
    secret: { type: 'input', value_type: 'string', value: 's3cret' },
    total: { type: 'transform', inputs: ['count', 'ratio'], expression: 'count * ratio' },
    text: { type: 'transform', inputs: ['word', 'loud', 'secret'], expression: "(loud ? $uppercase(word) : word) & '/' & secret" },
    product: { type: 'output', from: 'total' },
    said: { type: 'output', from: 'text' },
    debug: { type: 'output', from: 'secret' },
  },
};

describe('health and routing', () => {
  it('answers /health without auth', async () => {
    const r = await rt.caller('GET', '/health', null);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'ok' });
  });

  it('keeps idle connections 65 s, so a client on a stalled event loop never reuses one being closed', async () => {
    const r = await rt.caller('GET', '/health', null);
    expect(r.headers.get('keep-alive')).toBe('timeout=65');
  });
});

describe('executing a deployment', () => {
  it('accepts with 202, absolute URLs and a Location header, then completes', async () => {
    const r = await rt.caller('POST', executions(greet), greet.apiKey, { workflow_input: { name: { value: 'Ada', value_type: 'RAW' } } });

    expect(r.status).toBe(202);
    const id = r.body.execution_id as string;
    expect(r.body).toEqual({
      status: 'queued',
      status_url: `${rt.url}/v1/deployments/executions/${id}/status/`,
      result_url: `${rt.url}/v1/deployments/executions/${id}/result/`,
      deployment_id: greet.deploymentId,
      execution_id: id,
    });
    expect(r.headers.get('location')).toBe(r.body.status_url);

    const status = await rt.waitForExecution(id, greet.apiKey);
    expect(status).toMatchObject({ status: 'completed', execution_id: id, deployment_id: greet.deploymentId, error_message: null });
    expect(status.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(typeof status.completion_duration).toBe('number');

    const result = await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, greet.apiKey);
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      status: 'completed',
      execution_id: id,
      deployment_id: greet.deploymentId,
      completion_duration: status.completion_duration,
      output_artifacts: [],
      error_message: null,
      response_data: { message: { value: 'Hello, Ada!', value_type: 'RAW' } },
    });
  });

  it('accepts an empty body and the Authorization: Api-Key form, with or without trailing slashes', async () => {
    const r = await rt.caller('POST', `/v1/deployments/${greet.deploymentId}/executions`, null, undefined, {
      authorization: `Api-Key ${greet.apiKey}`,
    });
    expect(r.status).toBe(202);
    const status = await rt.waitForExecution(r.body.execution_id as string, greet.apiKey);
    expect(status.status).toBe('completed');
    const result = await rt.caller('GET', `/v1/deployments/executions/${r.body.execution_id}/result`, greet.apiKey);
    expect(result.body.response_data).toEqual({ message: { value: 'Hello, world!', value_type: 'RAW' } });
  });

  it('answers 409 with the current status before the execution is terminal', async () => {
    const s = await rt.publishPipeline('slow-409', slow);
    const r = await rt.caller('POST', executions(s), s.apiKey, {});
    const early = await rt.caller('GET', `/v1/deployments/executions/${r.body.execution_id}/result/`, s.apiKey);

    expect(early.status).toBe(409);
    expect(early.body).toEqual({ error: 'Execution not completed', status: expect.stringMatching(/^(pending|running)$/) });
  });

  it('shows callers only visible inputs and outputs, and refuses hidden inputs', async () => {
    const p = await rt.publishPipeline('typed', typed, { inputs: { secret: { visible: false } }, outputs: { debug: { visible: false } } });

    const contract = await rt.caller('GET', `/v1/deployments/${p.deploymentId}/`, p.apiKey);
    expect(contract.status).toBe(200);
    expect(contract.body).toEqual({
      deployment_id: p.deploymentId,
      inputs: [
        { id: 'count', value_type: 'integer', value: 2 },
        { id: 'ratio', value_type: 'float', value: 0.5 },
        { id: 'loud', value_type: 'boolean', value: false },
        { id: 'word', value_type: 'string', value: 'hi' },
      ],
      outputs: [
        { id: 'product', value_type: 'RAW' },
        { id: 'said', value_type: 'RAW' },
      ],
      waits: [],
    });

    const hidden = await rt.caller('POST', executions(p), p.apiKey, { workflow_input: { secret: { value: 'x', value_type: 'RAW' } } });
    expect(hidden.status).toBe(422);
    expect(hidden.body.error).toBe('Invalid Input');

    const ok = await rt.caller('POST', executions(p), p.apiKey, {
      workflow_input: { count: { value: 3, value_type: 'RAW' }, loud: { value: true, value_type: 'RAW' } },
    });
    await rt.waitForExecution(ok.body.execution_id as string, p.apiKey);
    const result = await rt.caller('GET', `/v1/deployments/executions/${ok.body.execution_id}/result/`, p.apiKey);
    expect(result.body.response_data).toEqual({
      product: { value: 1.5, value_type: 'RAW' },
      said: { value: 'HI/s3cret', value_type: 'RAW' },
    });
  });

  it('reports a failing node by name', async () => {
    const bad: PipelineDefinition = {
      nodes: {
        n: { type: 'input', value_type: 'integer', value: 1 },
        obj: { type: 'transform', inputs: ['n'], expression: '{"a": n}' },
        out: { type: 'output', from: 'obj' },
      },
    };
    await rt.owner('PUT', '/v1/pipelines/bad-output', bad);
    const run = await rt.runToEnd('bad-output');
    expect(run.status).toBe('failed');
    expect(run.error_message).toMatch(/Node 'out' failed/);
  });

  it('runs 50 concurrent executions, each to exactly one terminal status', async () => {
    const accepted = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        rt.caller('POST', executions(greet), greet.apiKey, { workflow_input: { name: { value: `n${i}`, value_type: 'RAW' } } }),
      ),
    );
    expect(accepted.map((a) => a.status)).toEqual(Array(50).fill(202));
    const results = await Promise.all(
      accepted.map(async (a, i) => {
        await rt.waitForExecution(a.body.execution_id as string, greet.apiKey);
        const r = await rt.caller('GET', `/v1/deployments/executions/${a.body.execution_id}/result/`, greet.apiKey);
        return [r.body.status, (r.body.response_data as Record<string, { value: string }>).message?.value, i] as const;
      }),
    );
    for (const [status, value, i] of results) {
      expect(status).toBe('completed');
      expect(value).toBe(`Hello, n${i}!`);
    }
  });
});

describe('the error table (contract §5)', () => {
  const post = (body: unknown, headers: Record<string, string> = {}) => rt.caller('POST', executions(greet), greet.apiKey, body, headers);

  it('401 for a missing or wrong key, with WWW-Authenticate and the reason', async () => {
    const cases: [string | null, KeyRefusal][] = [
      [null, 'missing'],
      ['nope', 'malformed'],
      [greet.apiKey.slice(0, -1) + (greet.apiKey.endsWith('A') ? 'B' : 'A'), 'malformed'],
    ];
    for (const [key, reason] of cases) {
      const r = await rt.caller('POST', executions(greet), key, {});
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ error: 'Unauthorized', reason, detail: KEY_REFUSALS[reason] });
      expect(r.headers.get('www-authenticate')).toBe('Api-Key');
    }
  });

  it("401 other_deployment for another deployment's key, whether or not the deployment in the path exists", async () => {
    const other = await rt.publishPipeline('other-dep', greeting);
    const unknown = await rt.caller('POST', '/v1/deployments/00000000-0000-4000-8000-000000000000/executions/', greet.apiKey, {});
    const crossed = await rt.caller('POST', executions(other), greet.apiKey, {});
    const contract = await rt.caller('GET', `/v1/deployments/${other.deploymentId}/`, greet.apiKey);
    for (const r of [unknown, crossed, contract]) {
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ error: 'Unauthorized', reason: 'other_deployment', detail: KEY_REFUSALS.other_deployment });
    }
  });

  it("404 Execution Not Found for an unknown execution or another deployment's", async () => {
    const other = await rt.publishPipeline('other-exec', greeting);
    const theirs = await rt.caller('POST', executions(other), other.apiKey, {});
    for (const id of ['00000000-0000-4000-8000-000000000000', theirs.body.execution_id as string, 'not-a-uuid']) {
      for (const path of ['status', 'result']) {
        const r = await rt.caller('GET', `/v1/deployments/executions/${id}/${path}/`, greet.apiKey);
        expect(r.status).toBe(404);
        expect(r.body).toEqual({ error: 'Execution Not Found' });
      }
    }
  });

  it.each([
    ['not JSON', '{nope', 'application/json'],
    ['not an object', '[1,2]', 'application/json'],
    ['an unknown top-level field', '{"inputs":{}}', 'application/json'],
    ['workflow_input not an object', '{"workflow_input":[]}', 'application/json'],
    ['a value object missing value_type', '{"workflow_input":{"name":{"value":"x"}}}', 'application/json'],
    ['a value object with an extra field', '{"workflow_input":{"name":{"value":"x","value_type":"RAW","x":1}}}', 'application/json'],
    ['an unknown value_type', '{"workflow_input":{"name":{"value":"x","value_type":"BLOB"}}}', 'application/json'],
    ['a value that is an object', '{"workflow_input":{"name":{"value":{},"value_type":"RAW"}}}', 'application/json'],
  ])('400 Invalid Input Structure for %s', async (_what, body, type) => {
    const r = await post(body, { 'content-type': type });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('Invalid Input Structure');
    expect(typeof r.body.detail).toBe('string');
  });

  it.each([
    ['an unknown input', { name2: { value: 'x', value_type: 'RAW' } }],
    ['a wrong type', { name: { value: 5, value_type: 'RAW' } }],
    ['REFERENCE', { name: { value: 'https://x', value_type: 'REFERENCE' } }],
    ['ASSET', { name: { value: 'aGk=', value_type: 'ASSET' } }],
  ])('422 Invalid Input for %s', async (_what, input) => {
    const r = await post({ workflow_input: input });
    expect(r.status).toBe(422);
    expect(r.body.error).toBe('Invalid Input');
    expect(r.body.detail).toBeTruthy();
  });

  it('422 Invalid Input for 1.5 given to an integer input', async () => {
    const p = await rt.publishPipeline('typed-int', typed);
    const r = await rt.caller('POST', executions(p), p.apiKey, { workflow_input: { count: { value: 1.5, value_type: 'RAW' } } });
    expect(r.status).toBe(422);
  });

  it.each([[null], [''], ['   ']])('400 Missing Callback URL for %p', async (callback) => {
    const r = await post({ callback });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('Missing Callback URL');
  });

  it.each([['not a url'], ['ftp://example.com/x'], ['/relative/path'], ['http://user:pw@example.com/']])(
    '422 Invalid Callback URL for %p',
    async (callback) => {
      const r = await post({ callback });
      expect(r.status).toBe(422);
      expect(r.body.error).toBe('Invalid Callback URL');
    },
  );

  it('413 Payload Too Large above 256 KiB', async () => {
    const r = await post(JSON.stringify({ workflow_input: { name: { value: 'x'.repeat(300 * 1024), value_type: 'RAW' } } }), {
      'content-type': 'application/json',
    });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ error: 'Payload Too Large', detail: 'the request body must be at most 262144 bytes (256 KiB)' });
  });

  it('415 Unsupported Media Type for a non-JSON body', async () => {
    const r = await post('name=x', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(r.status).toBe(415);
    expect(r.body).toMatchObject({ error: 'Unsupported Media Type' });
  });

  it('Idempotency-Key: a repeat returns the first 202 and starts nothing; a different body is 422', async () => {
    const body = { workflow_input: { name: { value: 'once', value_type: 'RAW' } } };
    const headers = { 'idempotency-key': `k-${Date.now()}` };
    const [a, b, c] = await Promise.all([post(body, headers), post(body, headers), post(body, headers)]);
    expect([a.status, b.status, c.status]).toEqual([202, 202, 202]);
    expect(new Set([a.body.execution_id, b.body.execution_id, c.body.execution_id]).size).toBe(1);

    const reused = await post({ workflow_input: { name: { value: 'other', value_type: 'RAW' } } }, headers);
    expect(reused.status).toBe(422);
    expect(reused.body.error).toBe('Idempotency Key Reused');
  });
});

describe('cancel', () => {
  it('cancels a running execution at once and stops its work; a second cancel is 409', async () => {
    const s = await rt.publishPipeline('slow-cancel', slow);
    const r = await rt.caller('POST', executions(s), s.apiKey, { callback: receiverUrl });
    const id = r.body.execution_id as string;
    await rt.waitForExecution(id, s.apiKey, (st) => st === 'running');

    const cancelled = await rt.caller('POST', `/v1/deployments/executions/${id}/cancel/`, s.apiKey);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');

    const again = await rt.caller('POST', `/v1/deployments/executions/${id}/cancel/`, s.apiKey);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: 'Execution already finished', status: 'cancelled' });

    // Its work stops: after the delay would have ended, it is still cancelled, with no outputs.
    await sleep(8200);
    const result = await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, s.apiKey);
    expect(result.body).toMatchObject({ status: 'cancelled', response_data: {} });
    expect(rt.workflow.running()).not.toContain(id);

    const hook = await waitUntil(
      async () => received.filter((x) => x.body.includes(id)),
      (xs) => xs.length > 0,
    );
    expect(hook[0]?.headers['x-pipegate-status']).toBe('cancelled');
    expect(JSON.parse(hook[0]?.body ?? '{}')).toEqual({ execution_id: id });
  });
});

describe('callbacks', () => {
  it('POSTs the visible outputs as arrays of strings, signed as a Standard Webhook', async () => {
    const p = await rt.publishPipeline('typed-cb', typed, { outputs: { debug: { visible: false } } });
    const r = await rt.caller('POST', executions(p), p.apiKey, { callback: receiverUrl });
    const id = r.body.execution_id as string;

    const hook = await waitUntil(
      async () => received.filter((x) => x.body.includes(id)),
      (xs) => xs.length > 0,
    );
    const got = hook[0] as Received;
    expect(JSON.parse(got.body)).toEqual({ product: ['1'], said: ['hi/s3cret'], execution_id: id });
    expect(got.headers['x-pipegate-status']).toBe('completed');
    const verified = new Webhook(p.signingSecret).verify(got.body, {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    });
    expect(verified).toEqual(JSON.parse(got.body));
  });

  it('retries a failing receiver with the same webhook-id and shows the attempts to the owner', async () => {
    receiverStatus = [500, 503];
    const r = await rt.caller('POST', executions(greet), greet.apiKey, { callback: receiverUrl });
    const id = r.body.execution_id as string;

    const hooks = await waitUntil(
      async () => received.filter((x) => x.body.includes(id)),
      (xs) => xs.length >= 3,
    );
    expect(new Set(hooks.map((h) => h.headers['webhook-id'])).size).toBe(1);
    const view = await waitUntil(
      () => rt.owner('GET', `/v1/pipelines/greeting/executions/${id}`),
      (v) => (v.body.callback_delivery as { outcome?: string } | null)?.outcome === 'delivered',
    );
    expect(view.body.callback_delivery).toMatchObject({ attempts: 3, outcome: 'delivered', last_status: 204 });
    // A failing callback never changes the execution's own status.
    expect(view.body.status).toBe('completed');
  });
});

describe('callbacks: redirects and secret rotation', () => {
  it('treats a redirect as a failure and does not follow it', async () => {
    receiverStatus = [302];
    const r = await rt.caller('POST', executions(greet), greet.apiKey, { callback: receiverUrl });
    const id = r.body.execution_id as string;
    const view = await waitUntil(
      () => rt.owner('GET', `/v1/pipelines/greeting/executions/${id}`),
      (v) => (v.body.callback_delivery as { outcome?: string } | null)?.outcome === 'delivered',
    );
    expect(view.body.callback_delivery).toMatchObject({ attempts: 2, outcome: 'delivered' });
    // Both attempts reached the callback URL itself; the Location was never requested.
    expect(received.filter((x) => x.body.includes(id))).toHaveLength(2);
  });

  it('signs with both secrets during a signing-secret rotation, and only the new one after', async () => {
    const p = await rt.publishPipeline('rotate-secret', greeting);
    const rot = await rt.owner('POST', '/v1/pipelines/rotate-secret/deployment/keys', {
      credential: 'signing_secret',
      grace_seconds: 3600,
    });
    expect(rot.status).toBe(200);
    const fresh = rot.body.signing_secret as string;
    expect(fresh).toMatch(/^whsec_/);

    const r = await rt.caller('POST', executions(p), p.apiKey, { callback: receiverUrl });
    const id = r.body.execution_id as string;
    const hook = (
      await waitUntil(
        async () => received.filter((x) => x.body.includes(id)),
        (xs) => xs.length > 0,
      )
    )[0] as Received;
    const headers = {
      'webhook-id': String(hook.headers['webhook-id']),
      'webhook-timestamp': String(hook.headers['webhook-timestamp']),
      'webhook-signature': String(hook.headers['webhook-signature']),
    };
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(fresh).verify(hook.body, headers)).not.toThrow();
    expect(() => new Webhook(p.signingSecret).verify(hook.body, headers)).not.toThrow();

    await rt.owner('POST', '/v1/pipelines/rotate-secret/deployment/keys', { credential: 'signing_secret' });
    const r2 = await rt.caller('POST', executions(p), p.apiKey, { callback: receiverUrl });
    const id2 = r2.body.execution_id as string;
    const hook2 = (
      await waitUntil(
        async () => received.filter((x) => x.body.includes(id2)),
        (xs) => xs.length > 0,
      )
    )[0] as Received;
    expect(String(hook2.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() =>
      new Webhook(p.signingSecret).verify(hook2.body, {
        'webhook-id': String(hook2.headers['webhook-id']),
        'webhook-timestamp': String(hook2.headers['webhook-timestamp']),
        'webhook-signature': String(hook2.headers['webhook-signature']),
      }),
    ).toThrow();
  });
});

describe('owner: readiness, versions, publishing, keys, delete', () => {
  it('walks run_required → not_published → live → needs_publish → live', async () => {
    const id = 'lifecycle';
    await rt.owner('PUT', `/v1/pipelines/${id}`, greeting);
    const r0 = await rt.owner('GET', `/v1/pipelines/${id}/deployment`);
    expect(r0.body).toMatchObject({ state: 'run_required', publishable: false, latest_run: null, deployment: null });

    const refused = await rt.owner('PUT', `/v1/pipelines/${id}/deployment`, {});
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('To deploy the workflow, there must be at least one successful execution.');

    await rt.runToEnd(id);
    const r1 = await rt.owner('GET', `/v1/pipelines/${id}/deployment`);
    expect(r1.body).toMatchObject({ state: 'not_published', publishable: true, counts: { inputs: 1, outputs: 1 } });

    const pub = await rt.owner('PUT', `/v1/pipelines/${id}/deployment`, {});
    expect(pub.status).toBe(201);
    expect(pub.body.api_key).toMatch(/^pgk_/);
    expect(pub.body.signing_secret).toMatch(/^whsec_/);
    const key = pub.body.api_key as string;
    const depId = pub.body.deployment_id as string;
    const r2 = await rt.owner('GET', `/v1/pipelines/${id}/deployment`);
    expect(r2.body).toMatchObject({ state: 'live', published_at: pub.body.published_at });

    // A new version, run: the owner sees needs_publish and the live API still serves version 1.
    const v2 = {
      ...greeting,
      nodes: { ...greeting.nodes, greeting: { type: 'transform', inputs: ['name'], expression: "'Bonjour, ' & name & '!'" } },
    } as PipelineDefinition;
    const pushed = await rt.owner('PUT', `/v1/pipelines/${id}`, v2);
    expect(pushed.body).toMatchObject({ version: 2, created: true });
    await rt.runToEnd(id);
    const r3 = await rt.owner('GET', `/v1/pipelines/${id}/deployment`);
    expect(r3.body).toMatchObject({ state: 'needs_publish', deployment: { version: 1 } });
    const before = await rt.caller('POST', `/v1/deployments/${depId}/executions/`, key, {});
    await rt.waitForExecution(before.body.execution_id as string, key);
    const oldResult = await rt.caller('GET', `/v1/deployments/executions/${before.body.execution_id}/result/`, key);
    expect(oldResult.body.response_data).toEqual({ message: { value: 'Hello, world!', value_type: 'RAW' } });

    const repub = await rt.owner('PUT', `/v1/pipelines/${id}/deployment`, {});
    expect(repub.status).toBe(200);
    expect(repub.body.deployment_id).toBe(depId);
    expect(repub.body.api_key).toBeUndefined();
    const after = await rt.caller('POST', `/v1/deployments/${depId}/executions/`, key, {});
    await rt.waitForExecution(after.body.execution_id as string, key);
    const newResult = await rt.caller('GET', `/v1/deployments/executions/${after.body.execution_id}/result/`, key);
    expect(newResult.body.response_data).toEqual({ message: { value: 'Bonjour, world!', value_type: 'RAW' } });
    expect((await rt.owner('GET', `/v1/pipelines/${id}/deployment`)).body.state).toBe('live');
  });

  it('refuses to publish after a failed latest run, and a pipeline with no inputs or outputs', async () => {
    const failing: PipelineDefinition = {
      nodes: {
        x: { type: 'input', value_type: 'integer', value: 1 },
        o: { type: 'output', from: 'bad' },
        bad: { type: 'transform', inputs: ['x'], expression: '$error("boom")' },
      },
    };
    await rt.owner('PUT', '/v1/pipelines/flaky', greeting);
    await rt.runToEnd('flaky');
    await rt.owner('PUT', '/v1/pipelines/flaky', failing);
    const run = await rt.runToEnd('flaky');
    expect(run.status).toBe('failed');
    const r = await rt.owner('PUT', '/v1/pipelines/flaky/deployment', {});
    expect(r.status).toBe(409);
    expect(r.body.error).toMatch(/latest run failed/i);

    const empty: PipelineDefinition = { nodes: { t: { type: 'transform', inputs: [], expression: '1 + 1' } } };
    await rt.owner('PUT', '/v1/pipelines/no-io', empty);
    await rt.runToEnd('no-io');
    const r2 = await rt.owner('PUT', '/v1/pipelines/no-io/deployment', {});
    expect(r2.status).toBe(409);
    expect(r2.body.error).toMatch(/no Input and no Output nodes/);
  });

  it('versions by content: an identical push returns the same version', async () => {
    const a = await rt.owner('PUT', '/v1/pipelines/versions', greeting);
    const b = await rt.owner('PUT', '/v1/pipelines/versions', JSON.parse(JSON.stringify(greeting)));
    expect(a.status).toBe(201);
    expect(b.status).toBe(200);
    // The same version, on the state machine it was given at its first push.
    expect(b.body).toEqual({
      pipeline_id: 'versions',
      version: 1,
      created: false,
      workflow: 'express',
      workflow_reason: expect.stringContaining('fits an Express execution') as unknown as string,
    });
  });

  it('lists every problem of an invalid definition with its path', async () => {
    const r = await rt.owner('PUT', '/v1/pipelines/broken', {
      nodes: { a: { type: 'transform', inputs: ['missing'], expression: '1 +' }, b: { type: 'widget' } },
    });
    expect(r.status).toBe(400);
    const paths = (r.body.detail as { path: string }[]).map((p) => p.path);
    expect(paths).toEqual(expect.arrayContaining([expect.stringContaining('nodes.a'), expect.stringContaining('nodes.b')]));
    expect(paths.length).toBeGreaterThanOrEqual(3);
  });

  it('requires the owner token on owner routes', async () => {
    const r = await fetch(`${rt.url}/v1/pipelines`);
    expect(r.status).toBe(401);
    const wrong = await fetch(`${rt.url}/v1/pipelines`, { headers: { authorization: 'Bearer wrong' } });
    expect(wrong.status).toBe(401);
  });

  it('rotates the key: the old one stops at once', async () => {
    const p = await rt.publishPipeline('rotating', greeting);
    const rot = await rt.owner('POST', '/v1/pipelines/rotating/deployment/keys', {});
    expect(rot.status).toBe(200);
    const fresh = rot.body.api_key as string;
    expect((await rt.caller('GET', `/v1/deployments/${p.deploymentId}/`, p.apiKey)).status).toBe(401);
    expect((await rt.caller('GET', `/v1/deployments/${p.deploymentId}/`, fresh)).status).toBe(200);
  });

  it('deletes with confirmation, at once and for good: every later request is 404', async () => {
    const p = await rt.publishPipeline('doomed', greeting);
    const before = await rt.caller('POST', executions(p), p.apiKey, {});
    await rt.waitForExecution(before.body.execution_id as string, p.apiKey);

    const unconfirmed = await rt.owner('DELETE', '/v1/pipelines/doomed/deployment');
    expect(unconfirmed.status).toBe(400);
    const wrong = await rt.owner('DELETE', '/v1/pipelines/doomed/deployment?confirm=nope');
    expect(wrong.status).toBe(400);
    const del = await rt.owner('DELETE', `/v1/pipelines/doomed/deployment?confirm=${p.deploymentId}`);
    expect(del.status).toBe(204);

    expect((await rt.caller('POST', executions(p), p.apiKey, {})).body).toEqual({ error: 'Deployment Not Found' });
    expect((await rt.caller('GET', `/v1/deployments/${p.deploymentId}/`, p.apiKey)).status).toBe(404);
    const status = await rt.caller('GET', `/v1/deployments/executions/${before.body.execution_id}/status/`, p.apiKey);
    expect(status.status).toBe(404);
    expect((await rt.owner('GET', '/v1/pipelines/doomed/deployment')).body).toMatchObject({ deployment: null, state: 'not_published' });
  });
});
