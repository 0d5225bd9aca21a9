/**
 * Security against the local runtime, quick version (`npm test`; the long fuzz is
 * test/long/security-fuzz.test.ts): the authentication matrix, owner routes without
 * credentials, the address guard through the API, no plaintext key or secret at rest or in
 * the logs, and fuzzing of every route that must never yield a 5xx. Prints its figures.
 */
import { readdirSync, readFileSync, rmSync, mkdtempSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { createDocumentClient, keys } from '../../functions/adapters/dynamo';
import { ownerSecretContext, parseEnvelope } from '../../functions/core/envelope';
import { createLogger } from '../../functions/adapters/logger';
import { generateApiKey } from '../../functions/core/api-key';
import { KEY_REFUSALS, type KeyRefusal } from '../../functions/core/errors';
import type { PipelineDefinition } from '../../functions/core/types';
import { ROUTES } from '../../lib/routes';
import { startReceiver, type Receiver } from '../support/receiver';
import { printFigures, testSeed, type Figures } from '../support/figures';
import { fuzzRequest, prepareFuzz, sendFuzz, StatusTally } from '../support/fuzz';
import { greeting, request, sleep, startTestRuntime, waitUntil, type Published, type Reply, type TestRuntime } from '../support/runtime';
import { reply, startTestServer } from '../support/http-server';
import { dataUri, png } from '../support/media';
import { HANG_MS } from '../support/hang';

const seed = testSeed();
const figures: Figures = [['seed (PIPEGATE_TEST_SEED)', seed]];
const fig = (label: string, value: number | string) => figures.push([label, value]);
afterAll(() => printFigures('Security (quick)', figures));

const FUZZ_RUNS = Number(process.env.PIPEGATE_FUZZ_RUNS ?? 200);

/** Every caller route of a deployment, with what an authorised caller gets for a finished execution. */
function callerRoutes(deploymentId: string, executionId: string): { name: string; method: string; path: string; ok: number }[] {
  return [
    { name: 'execute', method: 'POST', path: `/v1/deployments/${deploymentId}/executions/`, ok: 202 },
    { name: 'status', method: 'GET', path: `/v1/deployments/executions/${executionId}/status/`, ok: 200 },
    { name: 'result', method: 'GET', path: `/v1/deployments/executions/${executionId}/result/`, ok: 200 },
    { name: 'cancel', method: 'POST', path: `/v1/deployments/executions/${executionId}/cancel/`, ok: 409 },
    { name: 'contract', method: 'GET', path: `/v1/deployments/${deploymentId}/`, ok: 200 },
    { name: 'openapi', method: 'GET', path: `/v1/deployments/${deploymentId}/openapi.json`, ok: 200 },
  ];
}

/** The same key with the character at `i` replaced by another one of its alphabet. */
function oneCharChanged(key: string, i: number): string {
  const c = key[i] ?? 'a';
  const alphabet = /[0-9a-f]/.test(c) && i < 36 ? '0123456789abcdef' : 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const other = alphabet[(alphabet.indexOf(c) + 1) % alphabet.length] ?? 'x';
  return `${key.slice(0, i)}${other}${key.slice(i + 1)}`;
}

describe('caller authentication and owner credentials', () => {
  let rt: TestRuntime;
  let a: Published;
  let b: Published;
  let execA: string;
  let execB: string;
  let tried = 0;

  const send = (method: string, path: string, headers: Record<string, string>): Promise<Reply> => {
    tried += 1;
    return request(`${rt.url}${path}`, method, method === 'POST' ? {} : undefined, headers);
  };
  const finished = async (p: Published) => {
    const r = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {});
    await rt.waitForExecution(r.body.execution_id as string, p.apiKey);
    return r.body.execution_id as string;
  };

  beforeAll(async () => {
    rt = await startTestRuntime();
    a = await rt.publishPipeline('auth-a', greeting);
    b = await rt.publishPipeline('auth-b', greeting);
    execA = await finished(a);
    execB = await finished(b);
  });
  afterAll(async () => {
    await rt?.cleanup();
    fig('auth: requests tried', tried);
  });

  it('answers 401 with WWW-Authenticate for every missing, malformed or wrong credential, on every caller route', async () => {
    const key = a.apiKey;
    // A made-up key that passes the checksum: of this deployment, and of one that does not exist.
    const madeUp = generateApiKey(a.deploymentId, Buffer.alloc(24, 9));
    const nowhere = generateApiKey('00000000-0000-4000-8000-000000000000', Buffer.alloc(24, 9));
    const cases: [string, Record<string, string>, string][] = [
      ['no header', {}, 'missing'],
      ['X-API-Key empty', { 'x-api-key': '' }, 'missing'],
      ['X-API-Key blank', { 'x-api-key': '   ' }, 'missing'],
      ['Authorization: Api-Key with no key', { authorization: 'Api-Key ' }, 'missing'],
      ['Authorization: Bearer <key>', { authorization: `Bearer ${key}` }, 'wrong_scheme'],
      ['Authorization: Basic <key:>', { authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}` }, 'wrong_scheme'],
      ['Authorization: <key> with no scheme', { authorization: key }, 'wrong_scheme'],
      ['both headers, different keys', { 'x-api-key': key, authorization: `Api-Key ${b.apiKey}` }, 'two_keys'],
      ['truncated by one', { 'x-api-key': key.slice(0, -1) }, 'malformed'],
      ['truncated to the prefix and id', { 'x-api-key': key.slice(0, 36) }, 'malformed'],
      ['one more character', { 'x-api-key': `${key}A` }, 'malformed'],
      ['upper-cased', { 'x-api-key': key.toUpperCase() }, 'malformed'],
      ['another prefix', { 'x-api-key': `pgx_${key.slice(4)}` }, 'malformed'],
      ['one char changed in the deployment id', { 'x-api-key': oneCharChanged(key, 10) }, 'malformed'],
      ['one char changed in the random part', { 'x-api-key': oneCharChanged(key, 50) }, 'malformed'],
      ['one char changed in the checksum', { 'x-api-key': oneCharChanged(key, key.length - 1) }, 'malformed'],
      [
        'a key of the right shape that was never issued',
        { 'x-api-key': `pgk_${'0'.repeat(32)}${'A'.repeat(key.length - 42)}${key.slice(-6)}` },
        'malformed',
      ],
      ['a made-up key with a valid checksum, for this deployment', { 'x-api-key': madeUp }, 'unknown'],
      ['a made-up key with a valid checksum, for no deployment', { 'x-api-key': nowhere }, 'unknown'],
      ['the owner token as an API key', { 'x-api-key': rt.ownerToken }, 'malformed'],
      ['a 20 KB key', { 'x-api-key': `${key}${'A'.repeat(20 * 1024)}` }, 'malformed'],
      ['20 KB of header beside a wrong key', { 'x-api-key': 'nope', 'x-pad': 'p'.repeat(20 * 1024) }, 'malformed'],
    ];
    const unexpected: string[] = [];
    for (const [what, headers, reason] of cases) {
      for (const route of callerRoutes(a.deploymentId, execA)) {
        const r = await send(route.method, route.path, headers);
        // Node's HTTP server refuses more than 16 KB of headers with 431 before any handler runs.
        const big = what.includes('20 KB');
        const refused =
          r.status === 401 &&
          r.headers.get('www-authenticate') === 'Api-Key' &&
          JSON.stringify(r.body) === JSON.stringify({ error: 'Unauthorized', reason, detail: KEY_REFUSALS[reason as KeyRefusal] });
        const good = big ? r.status === 431 || refused : refused;
        if (!good) unexpected.push(`${what} → ${route.name}: ${r.status} ${r.text}`);
      }
    }
    fig('auth: bad credentials × caller routes', cases.length * 6);
    expect(unexpected).toEqual([]);
  });

  it('accepts the key in either header, or in both when it is the same key', async () => {
    const forms: Record<string, string>[] = [
      { 'x-api-key': a.apiKey },
      { authorization: `Api-Key ${a.apiKey}` },
      { 'x-api-key': a.apiKey, authorization: `api-key ${a.apiKey}` },
    ];
    for (const headers of forms) {
      for (const route of callerRoutes(a.deploymentId, execA)) {
        const r = await send(route.method, route.path, headers);
        expect([route.name, r.status]).toEqual([route.name, route.ok]);
      }
    }
  });

  it('answers 401 two_keys to a key header sent twice with two keys, on every caller route, rather than taking the last', async () => {
    // Prepare: header lines as sent, each its own (fetch would join them into one value); given
    // as a list, Node adds no Host of its own.
    const raw = (method: string, path: string, lines: string[]): Promise<{ status: number; body: unknown }> =>
      new Promise((resolve, reject) => {
        tried += 1;
        const req = httpRequest(
          `${rt.url}${path}`,
          { method, headers: ['host', new URL(rt.url).host, ...lines, 'content-type', 'application/json'] },
          (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown }));
          },
        );
        req.on('error', reject);
        req.end(method === 'POST' ? '{}' : undefined);
      });
    const cases: [string, string[], number | 'two_keys'][] = [
      ['X-API-Key twice, two keys', ['x-api-key', b.apiKey, 'X-API-Key', a.apiKey], 'two_keys'],
      ['X-API-Key twice in the same case, two keys', ['x-api-key', b.apiKey, 'x-api-key', a.apiKey], 'two_keys'],
      ['Authorization twice, two keys', ['authorization', `Api-Key ${b.apiKey}`, 'Authorization', `Api-Key ${a.apiKey}`], 'two_keys'],
      ['Authorization twice, a key and a Bearer token', ['authorization', 'Bearer t', 'authorization', `Api-Key ${a.apiKey}`], 'two_keys'],
      ['X-API-Key twice, the same key', ['x-api-key', a.apiKey, 'x-api-key', a.apiKey], 0],
    ];
    // Act
    const unexpected: string[] = [];
    for (const [what, lines, want] of cases) {
      for (const route of callerRoutes(a.deploymentId, execA)) {
        const r = await raw(route.method, route.path, lines);
        const ok =
          want === 'two_keys'
            ? r.status === 401 &&
              JSON.stringify(r.body) === JSON.stringify({ error: 'Unauthorized', reason: 'two_keys', detail: KEY_REFUSALS.two_keys })
            : r.status === route.ok;
        if (!ok) unexpected.push(`${what} → ${route.name}: ${r.status} ${JSON.stringify(r.body)}`);
      }
    }
    // Assess
    expect(unexpected).toEqual([]);
  });

  it("answers 401 other_deployment for another deployment's key on this deployment's routes, 404 for its executions", async () => {
    const statuses = [];
    for (const route of callerRoutes(a.deploymentId, execA)) {
      const r = await send(route.method, route.path, { 'x-api-key': b.apiKey });
      statuses.push([route.name, r.status, r.body.error, r.body.reason]);
    }
    // An execution id names no deployment: whether it exists elsewhere is not the caller's to learn.
    expect(statuses).toEqual([
      ['execute', 401, 'Unauthorized', 'other_deployment'],
      ['status', 404, 'Execution Not Found', undefined],
      ['result', 404, 'Execution Not Found', undefined],
      ['cancel', 404, 'Execution Not Found', undefined],
      ['contract', 401, 'Unauthorized', 'other_deployment'],
      ['openapi', 401, 'Unauthorized', 'other_deployment'],
    ]);
    const uploads = await send('POST', `/v1/deployments/${a.deploymentId}/uploads/`, { 'x-api-key': b.apiKey });
    expect([uploads.status, uploads.body.reason]).toEqual([401, 'other_deployment']);
  });

  it('stops the old key at once on rotation, or after the grace period asked for', async () => {
    const rot = await rt.owner('POST', '/v1/pipelines/auth-a/deployment/keys', {});
    const second = rot.body.api_key as string;
    for (const route of callerRoutes(a.deploymentId, execA)) {
      const old = await send(route.method, route.path, { 'x-api-key': a.apiKey });
      expect([route.name, old.status, old.body.reason]).toEqual([route.name, 401, 'revoked']);
      expect([route.name, (await send(route.method, route.path, { 'x-api-key': second })).status]).toEqual([route.name, route.ok]);
    }

    // The two checks below must run before the grace period ends: 10 s leave them room on a
    // loaded machine (its end is waited for after).
    const graced = await rt.owner('POST', '/v1/pipelines/auth-a/deployment/keys', { grace_seconds: 10 });
    const third = graced.body.api_key as string;
    const contract = `/v1/deployments/${a.deploymentId}/`;
    expect((await send('GET', contract, { 'x-api-key': second })).status).toBe(200);
    expect((await send('GET', contract, { 'x-api-key': third })).status).toBe(200);
    const lapsed = await waitUntil(
      () => send('GET', contract, { 'x-api-key': second }),
      (r) => r.status === 401,
      HANG_MS,
      250,
    );
    expect(lapsed.body.reason).toBe('expired');
    expect((await send('GET', contract, { 'x-api-key': third })).status).toBe(200);
    const first = await send('GET', contract, { 'x-api-key': a.apiKey });
    expect([first.status, first.body.reason]).toEqual([401, 'revoked']);
  });

  it('answers 404 on every route, for good, once the deployment is deleted', async () => {
    const del = await rt.owner('DELETE', `/v1/pipelines/auth-b/deployment?confirm=${b.deploymentId}`);
    expect(del.status).toBe(204);
    for (const route of callerRoutes(b.deploymentId, execB)) {
      const r = await send(route.method, route.path, { 'x-api-key': b.apiKey });
      expect([route.name, r.status]).toEqual([route.name, 404]);
    }
    // A new publish of the same pipeline is a new deployment; the old id and key stay dead.
    await rt.runToEnd('auth-b');
    const again = await rt.owner('PUT', '/v1/pipelines/auth-b/deployment', {});
    expect(again.status).toBe(201);
    expect(again.body.deployment_id).not.toBe(b.deploymentId);
    expect((await send('GET', `/v1/deployments/${b.deploymentId}/`, { 'x-api-key': b.apiKey })).status).toBe(404);
    const crossed = await send('GET', `/v1/deployments/${again.body.deployment_id as string}/`, { 'x-api-key': b.apiKey });
    expect([crossed.status, crossed.body.reason]).toEqual([401, 'other_deployment']);
  });

  it('answers 401 on every owner route without the owner token', async () => {
    const token = rt.ownerToken;
    const cases: [string, Record<string, string>][] = [
      ['no header', {}],
      ['wrong token', { authorization: 'Bearer wrong' }],
      ['truncated token', { authorization: `Bearer ${token.slice(0, -1)}` }],
      ['token plus one character', { authorization: `Bearer ${token}x` }],
      ['token and more words', { authorization: `Bearer ${token} extra` }],
      ['Basic scheme', { authorization: `Basic ${Buffer.from(`owner:${token}`).toString('base64')}` }],
      ['Api-Key scheme', { authorization: `Api-Key ${token}` }],
      ['token in X-API-Key', { 'x-api-key': token }],
      ['a caller key as bearer', { authorization: `Bearer ${a.apiKey}` }],
      ['a caller key', { 'x-api-key': a.apiKey }],
      ['Bearer and nothing', { authorization: 'Bearer' }],
    ];
    const params: Record<string, string> = { pipeline_id: 'auth-a', run_id: execA, execution_id: execA };
    const owner = ROUTES.filter((r) => r.auth === 'owner');
    const unexpected: string[] = [];
    for (const route of owner) {
      const path =
        route.path.replace(/\{([a-z_]+)\}/g, (_, n: string) => params[n] ?? 'x') +
        (route.method === 'DELETE' ? `?confirm=${a.deploymentId}` : '');
      for (const [what, headers] of cases) {
        const r = await send(route.method, path, headers);
        if (r.status !== 401 || r.body.error !== 'Unauthorized') unexpected.push(`${what} → ${route.method} ${route.path}: ${r.status}`);
      }
    }
    fig('auth: bad owner credentials × owner routes', cases.length * owner.length);
    expect(unexpected).toEqual([]);
    // The deployment is still there: none of those requests reached the handlers.
    expect((await rt.owner('GET', '/v1/pipelines/auth-a/deployment')).body.deployment).toMatchObject({ deployment_id: a.deploymentId });
  });
});

describe('the address guard through the API (PIPEGATE_ALLOW_PRIVATE_URLS=false)', () => {
  let rt: TestRuntime;
  let p: Published;

  beforeAll(async () => {
    rt = await startTestRuntime({
      env: { ...process.env, PIPEGATE_ALLOW_PRIVATE_URLS: 'false', PIPEGATE_CALLBACK_SCHEDULE: '0', PIPEGATE_CALLBACK_TIMEOUT_MS: '500' },
    });
    p = await rt.publishPipeline('guarded', greeting);
  });
  afterAll(async () => {
    await rt?.cleanup();
  });

  const refused = [
    'http://127.0.0.1/hook',
    'http://127.0.0.1:8080/hook',
    'https://127.255.255.254/',
    'http://localhost/',
    'http://LOCALHOST./',
    'http://app.localhost/',
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://printer.local/',
    'http://10.0.0.1/',
    'http://172.16.0.1/',
    'http://172.31.255.254/',
    'http://192.168.1.1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://169.254.170.2/v2/credentials',
    'http://100.64.0.1/',
    'http://0.0.0.0/',
    'http://0/',
    'http://224.0.0.1/',
    'http://255.255.255.255/',
    'http://198.18.0.1/',
    'http://192.0.2.1/',
    'http://[::1]/',
    'http://[::]/',
    'http://[0:0:0:0:0:0:0:1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://[::ffff:169.254.169.254]/',
    'http://[::ffff:10.0.0.1]/',
    'http://[64:ff9b::a9fe:a9fe]/',
    'http://[2002:7f00:1::1]/',
    'http://[fd00::1]/',
    'http://[fc00::]/',
    'http://[fe80::1]/',
    'http://[ff02::1]/',
    'http://[fd00:ec2::254]/',
    'http://2130706433/',
    'http://0x7f000001/',
    'http://0x7f.0.0.1/',
    'http://0177.0.0.1/',
    'http://017700000001/',
    'http://127.1/',
    'http://127.0.1/',
    'http://0xa9.0xfe.0xa9.0xfe/',
    'http://[::1%25eth0]/',
    'ftp://8.8.8.8/',
    'file:///etc/passwd',
    'gopher://8.8.8.8:70/',
    'javascript:alert(1)',
    'http://user:pass@8.8.8.8/',
  ];

  it('refuses callbacks to private, loopback and metadata addresses and odd encodings with 422', async () => {
    const unexpected: string[] = [];
    for (const callback of refused) {
      const r = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, { callback });
      if (r.status !== 422 || r.body.error !== 'Invalid Callback URL') unexpected.push(`${callback}: ${r.status} ${r.text}`);
    }
    // A public address passes the same check (it is then delivered to, or not, at connect time).
    const ok = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, { callback: 'https://8.8.8.8:9/hook' });
    fig('guard: refused callback URLs tried', refused.length);
    fig('guard: of them accepted', unexpected.length);
    expect(unexpected).toEqual([]);
    expect(ok.status).toBe(202);
  });

  it.each([
    ['127.0.0.1', 'http://127.0.0.1:9/x'],
    ['169.254.169.254', 'http://169.254.169.254/latest/meta-data/'],
    ['localhost', 'http://localhost:9/x'],
    ['::1', 'http://[::1]:9/x'],
  ])('fails a run whose http node calls %s, naming the blocked address', async (address, url) => {
    const def: PipelineDefinition = {
      nodes: {
        x: { type: 'input', value_type: 'string', value: 'x' },
        call: { type: 'http', url, inputs: ['x'], timeout_ms: 1000 },
        out: { type: 'output', from: 'call' },
      },
    };
    const id = `blocked-${address.replace(/[^a-z0-9]/g, '')}`;
    expect((await rt.owner('PUT', `/v1/pipelines/${id}`, def)).status).toBe(201);
    const run = await rt.runToEnd(id);
    expect(run.status).toBe('failed');
    expect(run.error_message).toEqual(expect.stringContaining("'call'"));
    expect(run.error_message).toEqual(expect.stringContaining(address));
    expect(run.error_message).toMatch(/not allowed/);
  });
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

describe('no plaintext key or secret at rest or in the logs', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-secrets-'));
  const lines: string[] = [];
  let rt: TestRuntime;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    rt = await startTestRuntime({ dataDir, inMemory: false, log: createLogger('pipegate-test', (line) => lines.push(line)) });
  });
  afterAll(async () => {
    await rt?.cleanup();
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** An upstream that repeats the Authorization header it was sent: in its 200 body, and in its 401 error. */
  async function startEcho(): Promise<{ url: string; close: () => Promise<void> }> {
    const server = await startTestServer((req, res) => {
      const auth = req.headers.authorization ?? '';
      reply(
        res,
        req.path === '/refuse' ? 401 : 200,
        req.path === '/refuse' ? { error: `token ${auth} is not valid` } : { you_sent: auth, path: req.path },
      );
    });
    return { url: server.origin, close: () => server.close() };
  }

  /** Every owner and caller answer about a pipeline, a deployment and their executions, as one text. */
  async function everyAnswer(pipelineId: string, deploymentId: string, key: string, executionIds: string[]): Promise<string> {
    const answers: Reply[] = [
      await rt.owner('GET', '/v1/pipelines'),
      await rt.owner('GET', `/v1/pipelines/${pipelineId}`),
      await rt.owner('GET', `/v1/pipelines/${pipelineId}/runs`),
      await rt.owner('GET', `/v1/pipelines/${pipelineId}/deployment`),
      await rt.owner('GET', '/v1/secrets'),
      await rt.caller('GET', `/v1/deployments/${deploymentId}/`, key),
      await rt.caller('GET', `/v1/deployments/${deploymentId}/openapi.json`, key),
    ];
    for (const id of executionIds) {
      answers.push(await rt.owner('GET', `/v1/pipelines/${pipelineId}/runs/${id}`));
      answers.push(await rt.owner('GET', `/v1/pipelines/${pipelineId}/executions/${id}`));
      answers.push(await rt.caller('GET', `/v1/deployments/executions/${id}/status/`, key));
      answers.push(await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, key));
    }
    return answers.map((a) => `${a.status} ${a.text}`).join('\n');
  }

  it('keeps only hashes and sealed secrets: every file, every item and every log line is free of them', async () => {
    // An owner secret, planted and used by a pipeline whose upstream repeats it back.
    const ownerSecret = `planted-owner-secret-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const echo = await startEcho();
    expect((await rt.owner('PUT', '/v1/secrets/PLANTED', { value: ownerSecret })).status).toBe(200);
    const uses: PipelineDefinition = {
      nodes: {
        who: { type: 'input', value_type: 'string', value: 'x' },
        call: { type: 'http', url: `${echo.url}/k/{{secrets.PLANTED}}`, headers: { authorization: 'Bearer {{secrets.PLANTED}}' } },
        echoed: { type: 'transform', inputs: ['call'], expression: 'call.you_sent & " " & call.path' },
        out: { type: 'output', from: 'echoed' },
        name: { type: 'output', from: 'who' },
      },
    };
    const refused: PipelineDefinition = {
      nodes: {
        call: {
          type: 'http',
          method: 'POST',
          url: `${echo.url}/refuse`,
          headers: { authorization: 'Bearer {{secrets.PLANTED}}' },
          body: '{"k": $secrets.PLANTED}',
        },
        out: { type: 'output', from: 'call' },
      },
    };
    const up = await rt.publishPipeline('uses-secret', uses);
    const upRun = await rt.caller('POST', `/v1/deployments/${up.deploymentId}/executions/`, up.apiKey, {});
    await rt.waitForExecution(upRun.body.execution_id as string, up.apiKey);
    expect((await rt.owner('PUT', '/v1/pipelines/refused-secret', refused)).status).toBe(201);
    const refusedRun = await rt.runToEnd('refused-secret');
    expect(refusedRun.status).toBe('failed');
    expect(refusedRun.error_message).toContain('HTTP 401');
    const runIds = ((await rt.owner('GET', '/v1/pipelines/uses-secret/runs')).body.runs as { run_id: string }[]).map((r) => r.run_id);
    const answers =
      (await everyAnswer('uses-secret', up.deploymentId, up.apiKey, [...runIds, upRun.body.execution_id as string])) +
      (await everyAnswer('refused-secret', up.deploymentId, up.apiKey, [refusedRun.run_id as string]));
    expect(answers).toContain('[redacted]');
    await echo.close();

    const p = await rt.publishPipeline('secretive', greeting);
    const marker = `caller-value-${Date.now()}`;
    const run = async (key: string) => {
      const r = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, key, {
        callback: receiver.url,
        workflow_input: { name: { value: marker, value_type: 'RAW' } },
      });
      expect(r.status).toBe(202);
      await rt.waitForExecution(r.body.execution_id as string, key);
    };
    await run(p.apiKey);
    const rotatedKey = (await rt.owner('POST', '/v1/pipelines/secretive/deployment/keys', { grace_seconds: 600 })).body.api_key as string;
    const rotatedSecret = (
      await rt.owner('POST', '/v1/pipelines/secretive/deployment/keys', { credential: 'signing_secret', grace_seconds: 600 })
    ).body.signing_secret as string;
    await run(rotatedKey);
    await run(p.apiKey);
    // A consumer's keys: used, rotated with grace, the rotated one used, then revoked and refused.
    const consumer = (
      await rt.owner('POST', '/v1/pipelines/secretive/deployment/consumers', {
        name: 'planted',
        rate_limit: { requests: 100, per_seconds: 60 },
        quota: { executions: 100, per: 'day' },
      })
    ).body;
    const consumerKey = consumer.api_key as string;
    await run(consumerKey);
    const consumerPath = `/v1/pipelines/secretive/deployment/consumers/${consumer.consumer_id as string}`;
    const rotatedConsumerKey = (await rt.owner('POST', `${consumerPath}/keys`, { grace_seconds: 600 })).body.api_key as string;
    await run(rotatedConsumerKey);
    // Every owner answer about consumers after creation, and the views of their executions.
    const consumerAnswers = [
      await rt.owner('GET', '/v1/pipelines/secretive/deployment/consumers'),
      await rt.owner('PATCH', consumerPath, { name: 'planted again' }),
      await rt.owner('GET', '/v1/pipelines/secretive/deployment/usage'),
      await rt.owner('GET', '/v1/pipelines/secretive/deployment/executions'),
    ];
    expect(consumerAnswers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    await rt.owner('DELETE', consumerPath);
    expect((await rt.caller('GET', `/v1/deployments/${p.deploymentId}/`, consumerKey)).body.reason).toBe('consumer_revoked');
    // Rejected credentials are a classic way for a key to end up in a log.
    await rt.caller('GET', `/v1/deployments/${p.deploymentId}/`, null, undefined, { authorization: `Bearer ${rotatedKey}` });
    await rt.caller('GET', `/v1/deployments/${p.deploymentId}/`, `${p.apiKey}x`);
    // Every kind of refusal, each carrying a real key: the answer says why, never which key.
    const contract = `/v1/deployments/${p.deploymentId}/`;
    const refusals: Reply[] = [
      await rt.caller('GET', contract, up.apiKey),
      await rt.caller('GET', contract, p.apiKey, undefined, { authorization: `Api-Key ${rotatedKey}` }),
      await rt.caller('GET', contract, null, undefined, { authorization: `Basic ${Buffer.from(`${rotatedKey}:`).toString('base64')}` }),
      await rt.caller('GET', contract, null, undefined, { authorization: rotatedKey }),
      await rt.caller('GET', contract, null, undefined, { authorization: `Api-Key ${rotatedKey} ${p.apiKey}` }),
      await rt.caller('GET', contract, `${rotatedKey.slice(0, -1)}${rotatedKey.endsWith('A') ? 'B' : 'A'}`),
    ];
    expect(refusals.map((r) => [r.status, r.body.reason])).toEqual([
      [401, 'other_deployment'],
      [401, 'two_keys'],
      [401, 'wrong_scheme'],
      [401, 'wrong_scheme'],
      [401, 'malformed'],
      [401, 'malformed'],
    ]);
    const refusalText = [...refusals, ...consumerAnswers].map((r) => `${JSON.stringify([...r.headers.entries()])} ${r.text}`).join('\n');
    await waitUntil(
      async () => receiver.delivered().length,
      (n) => n >= 3,
    );

    const secrets: [string, string][] = [
      ['owner secret', ownerSecret],
      ['owner secret (percent-encoded)', encodeURIComponent(ownerSecret)],
      ['api key', p.apiKey],
      ["the other deployment's api key", up.apiKey],
      ['rotated api key', rotatedKey],
      ['consumer api key', consumerKey],
      ['rotated consumer api key', rotatedConsumerKey],
      ['signing secret', p.signingSecret],
      ['rotated signing secret', rotatedSecret],
    ];
    const needles: [string, Buffer][] = [];
    for (const [what, s] of secrets) {
      needles.push([what, Buffer.from(s)]);
      // The random part: after the deployment's hex (and a consumer key's consumer hex).
      if (s.startsWith('pgk_')) needles.push([`${what} (random part)`, Buffer.from(s.length > 74 ? s.slice(68, 100) : s.slice(36, 60))]);
      if (s.startsWith('whsec_')) {
        needles.push([`${what} (base64)`, Buffer.from(s.slice('whsec_'.length))]);
        needles.push([`${what} (raw bytes)`, Buffer.from(s.slice('whsec_'.length), 'base64')]);
      }
    }

    const table = createDocumentClient({ region: rt.deps.config.region, endpoint: rt.deps.config.dynamodbEndpoint });
    const items = JSON.stringify((await table.send(new ScanCommand({ TableName: rt.deps.config.table }))).Items ?? []);
    // The owner secret's data key (opened here as task-run opens it) is never kept in plaintext either.
    const sealed = String(
      (await table.send(new GetCommand({ TableName: rt.deps.config.table, Key: keys.ownerSecret('PLANTED') }))).Item?.sealed,
    );
    expect(sealed).toMatch(/^v2\./);
    const dataKey = await rt.deps.dataKeys.decrypt(parseEnvelope(sealed).encryptedDataKey, ownerSecretContext('PLANTED'));
    needles.push(
      ['owner secret data key (raw bytes)', dataKey],
      ['owner secret data key (base64)', Buffer.from(dataKey.toString('base64'))],
    );
    expect(items).toContain(p.deploymentId);
    const log = lines.join('\n');
    expect(lines.length).toBeGreaterThan(10);
    await rt.cleanup();
    const files = filesUnder(dataDir).map((f) => [f, readFileSync(f)] as const);

    const found: string[] = [];
    for (const [what, needle] of needles) {
      if (items.includes(needle.toString())) found.push(`${what} in the table`);
      if (log.includes(needle.toString())) found.push(`${what} in the log`);
      if (refusalText.includes(needle.toString())) found.push(`${what} in a refusal`);
      for (const [file, bytes] of files) if (bytes.includes(needle)) found.push(`${what} in ${file.slice(dataDir.length)}`);
    }
    if (log.includes(marker)) found.push('a caller input value in the log');
    if (answers.includes(ownerSecret)) found.push('the owner secret in an owner or caller answer');
    if (log.includes(rt.ownerToken)) found.push('the owner token in the log');
    fig('at rest: files searched', files.length);
    fig('at rest: table items searched', (JSON.parse(items) as unknown[]).length);
    fig('at rest: log lines searched', lines.length);
    fig('at rest: secrets searched for', needles.length);
    fig('at rest: plaintext found', found.length);
    expect(found).toEqual([]);
    // The search can find: the caller's input value is stored with its execution, as it must be.
    expect(items).toContain(marker);
  });
});

describe('no upload URL, asset link or storage secret in the logs or at rest', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-media-secrets-'));
  const lines: string[] = [];
  let rt: TestRuntime;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    rt = await startTestRuntime({ dataDir, inMemory: false, log: createLogger('pipegate-test', (line) => lines.push(line)) });
  });
  afterAll(async () => {
    await rt?.cleanup();
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps presigned signatures, link tokens and the storage secret out of every log line and table item', async () => {
    // A photo through the uploads route (a presigned PUT), out again as an asset link, in the result and a callback.
    const p = await rt.publishPipeline('media-secrets', {
      nodes: { photo: { type: 'input', value_type: 'asset', value: dataUri('image/png', png()) }, copy: { type: 'output', from: 'photo' } },
    });
    const bytes = png(40, 40);
    const upload = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/uploads/`, p.apiKey, {
      media_type: 'image/png',
      bytes: bytes.length,
    });
    expect(upload.status).toBe(201);
    const put = await fetch(upload.body.upload_url as string, {
      method: 'PUT',
      headers: upload.body.headers as Record<string, string>,
      body: bytes,
    });
    expect(put.status).toBe(200);
    const submitted = await rt.caller('POST', `/v1/deployments/${p.deploymentId}/executions/`, p.apiKey, {
      callback: receiver.url,
      workflow_input: { photo: upload.body.asset },
    });
    const id = submitted.body.execution_id as string;
    await rt.waitForExecution(id, p.apiKey);
    const result = await rt.caller('GET', `/v1/deployments/executions/${id}/result/`, p.apiKey);
    const link = (result.body.response_data as Record<string, { value: string }>).copy?.value ?? '';
    expect(link).toContain('/v1/assets/');
    const served = await fetch(link);
    expect(Buffer.from(await served.arrayBuffer())).toEqual(bytes);
    await waitUntil(
      async () => receiver.delivered().length,
      (n) => n >= 1,
    );

    const signature = new URL(upload.body.upload_url as string).searchParams.get('X-Amz-Signature') ?? '';
    const token = link.slice(link.indexOf('/v1/assets/') + '/v1/assets/'.length);
    const storageSecret = readFileSync(join(dataDir, 's3-secret'), 'utf8').trim();
    expect([signature.length > 0, token.length > 20, storageSecret.length > 20]).toEqual([true, true, true]);
    const needles: [string, string][] = [
      ['the upload URL signature', signature],
      ['an asset link token', token],
      ['the storage secret', storageSecret],
    ];

    const table = createDocumentClient({ region: rt.deps.config.region, endpoint: rt.deps.config.dynamodbEndpoint });
    const items = JSON.stringify((await table.send(new ScanCommand({ TableName: rt.deps.config.table }))).Items ?? []);
    expect(items).toContain(p.deploymentId);
    const log = lines.join('\n');
    // The search can find: the asset route's request is in the log, by its template.
    expect(log).toContain('/v1/assets/{token}');
    await rt.cleanup();
    // The storage secret's own file is where it lives; every other file is searched for it.
    const files = filesUnder(dataDir)
      .filter((f) => !f.endsWith('s3-secret'))
      .map((f) => [f, readFileSync(f)] as const);

    const found: string[] = [];
    for (const [what, needle] of needles) {
      if (items.includes(needle)) found.push(`${what} in the table`);
      if (log.includes(needle)) found.push(`${what} in the log`);
      for (const [file, content] of files)
        if (content.includes(Buffer.from(needle))) found.push(`${what} in ${file.slice(dataDir.length)}`);
    }
    fig('media: log lines searched', lines.length);
    fig('media: plaintext found', found.length);
    expect(found).toEqual([]);
  });
});

describe('fuzzing every route over HTTP', () => {
  let rt: TestRuntime;
  const tally = new StatusTally();

  beforeAll(async () => {
    rt = await startTestRuntime({ env: { ...process.env, PIPEGATE_CALLBACK_SCHEDULE: '0', PIPEGATE_CALLBACK_TIMEOUT_MS: '300' } });
  });
  afterAll(async () => {
    await rt?.cleanup();
    fig('fuzz: requests sent', tally.total());
    fig('fuzz: refused by the HTTP client', tally.refused);
    fig('fuzz: answers by status', tally.summary());
    fig('fuzz: 5xx seen', tally.fiveXX.length);
  });

  it('never answers 5xx, whatever the path, query, headers or body', async () => {
    const ctx = await prepareFuzz(rt);

    await fc.assert(
      fc.asyncProperty(fuzzRequest(ctx), async (req) => {
        const reply = await sendFuzz(rt.url, req);
        tally.add(req, reply);
        return reply === null || reply.status < 500;
      }),
      { numRuns: FUZZ_RUNS, seed },
    );
    // The fuzz reached the handlers, not only the gateway's refusals.
    expect([...tally.byStatus.keys()]).toEqual(expect.arrayContaining([200, 400, 401, 404]));
    await sleep(50);
  });
});
