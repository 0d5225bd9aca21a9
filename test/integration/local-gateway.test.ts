import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayRequestAuthorizerEvent,
  Context,
} from 'aws-lambda';
import fc from 'fast-check';
import { createGateway, wildcardMatch, type BufferedHandler, type GatewayOptions, type ProxyHandler } from '../../lib/local/gateway';
import { ROUTES, routeHandlers } from '../../lib/routes';
import { INLINE_ASSET_BODY_MAX_BYTES } from '../../functions/core/assets';
import { bodyLimitDetail, inlineLimitDetail } from '../../functions/core/body-size';
import { unauthorizedBody } from '../../functions/core/errors';

const OWNER_TOKEN = 'pgo_owner-secret-token';
const MAX_BODY = 1024;

interface Call {
  handler: string;
  event: APIGatewayProxyEvent;
  context: Context;
}

interface Harness {
  url: URL;
  calls: Call[];
  authCalls: APIGatewayRequestAuthorizerEvent[];
  logs: Array<Record<string, unknown>>;
  /** What the next handler call returns (or does). */
  respond: (event: APIGatewayProxyEvent) => Promise<unknown>;
  close: () => Promise<void>;
}

const allow = (resource: string, context?: APIGatewayAuthorizerResult['context']): APIGatewayAuthorizerResult => ({
  principalId: 'key-owner',
  policyDocument: { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'execute-api:Invoke', Resource: resource }] },
  ...(context === undefined ? {} : { context }),
});

async function fakeAuthorizer(event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> {
  const key = event.headers?.['X-API-Key'];
  switch (key) {
    case 'good':
      return allow('arn:aws:execute-api:local:000000000000:local/local/*', {
        deployment_id: 'd-1',
        key_version: 3,
        active: true,
        gone: null,
      });
    case 'deny':
      return {
        principalId: 'key-owner',
        policyDocument: {
          Version: '2012-10-17',
          Statement: [
            { Effect: 'Allow', Action: 'execute-api:Invoke', Resource: '*' },
            { Effect: 'Deny', Action: 'execute-api:*', Resource: 'arn:aws:execute-api:local:000000000000:local/local/POST/*' },
          ],
        },
        context: { reason: 'revoked', detail: 'rotated away' },
      };
    case 'narrow':
      return allow('arn:aws:execute-api:local:000000000000:local/local/GET/v1/deployments/other');
    case 'boom':
      throw new Error('store unreachable');
    case 'bad-context':
      return { ...allow('*'), context: { nested: { a: 1 } as unknown as string } };
    default:
      throw new Error('Unauthorized');
  }
}

async function startHarness(over: Partial<GatewayOptions> = {}): Promise<Harness> {
  const harness: Partial<Harness> & { calls: Call[]; authCalls: APIGatewayRequestAuthorizerEvent[]; logs: Array<Record<string, unknown>> } =
    {
      calls: [],
      authCalls: [],
      logs: [],
      respond: async () => ({ statusCode: 200, body: '{"ok":true}' }),
    };
  const handlers: Record<string, ProxyHandler> = {};
  for (const name of routeHandlers()) {
    const fn: BufferedHandler = async (event, context) => {
      harness.calls.push({ handler: name, event, context });
      return (await (harness.respond ?? (async () => undefined))(event)) as APIGatewayProxyResult;
    };
    handlers[name] = fn;
  }
  const server: Server = createServer(
    createGateway({
      // The fakes answer buffered, so every method here is invoked buffered (streamed methods
      // are covered in test/unit/lib/gateway-streaming.test.ts).
      routes: ROUTES.map(({ streams: _streams, ...r }) => r),
      handlers,
      authorizer: async (event) => {
        harness.authCalls.push(event);
        return fakeAuthorizer(event);
      },
      ownerToken: OWNER_TOKEN,
      maxBodyBytes: MAX_BODY,
      log: (line) => harness.logs.push(line),
      ...over,
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  harness.url = new URL(`http://127.0.0.1:${port}`);
  harness.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return harness as Harness;
}

interface Response {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  json: () => unknown;
}

function call(
  h: Harness,
  method: string,
  path: string,
  opts: { headers?: Record<string, string | string[]>; body?: string | Buffer } = {},
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, h.url), { method, headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body.toString('utf8')) });
      });
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const owner = { Authorization: `Bearer ${OWNER_TOKEN}` };

describe('local gateway', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness();
  });
  afterEach(async () => {
    await h.close();
  });

  it('builds a REST API proxy event and a REQUEST authorizer event like API Gateway', async () => {
    // Prepare
    const headers = { 'X-API-Key': 'good', 'Content-Type': 'application/json', 'X-Custom': ['A', 'B'], 'User-Agent': 'pipegate-test' };

    // Act
    const res = await call(h, 'POST', '/v1/deployments/d%2D1/executions?x=1&x=2&y=a%20b&flag', { headers, body: '{"a":1}' });

    // Assess
    expect(res.status).toBe(200);
    const requestId = res.headers['x-request-id'];
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(h.calls).toHaveLength(1);
    const { handler, event, context } = h.calls[0] as Call;
    expect(handler).toBe('execute');
    expect(event).toMatchObject({
      resource: '/v1/deployments/{deployment_id}/executions',
      path: '/v1/deployments/d%2D1/executions',
      httpMethod: 'POST',
      pathParameters: { deployment_id: 'd-1' },
      queryStringParameters: { x: '2', y: 'a b', flag: '' },
      multiValueQueryStringParameters: { x: ['1', '2'], y: ['a b'], flag: [''] },
      stageVariables: null,
      body: '{"a":1}',
      isBase64Encoded: false,
    });
    expect(event.headers['X-Custom']).toBe('B');
    expect(event.multiValueHeaders['X-Custom']).toEqual(['A', 'B']);
    expect(event.headers['X-API-Key']).toBe('good');
    expect(event.headers['x-api-key']).toBeUndefined();
    expect(event.requestContext).toMatchObject({
      accountId: '000000000000',
      apiId: 'local',
      stage: 'local',
      requestId,
      resourcePath: '/v1/deployments/{deployment_id}/executions',
      path: '/v1/deployments/d%2D1/executions',
      httpMethod: 'POST',
      protocol: 'HTTP/1.1',
      domainName: h.url.host,
      identity: { sourceIp: '127.0.0.1', userAgent: 'pipegate-test' },
      authorizer: { deployment_id: 'd-1', key_version: '3', active: 'true', gone: null, principalId: 'key-owner' },
    });
    expect(typeof event.requestContext.requestTimeEpoch).toBe('number');
    expect(typeof event.requestContext.authorizer?.integrationLatency).toBe('number');
    expect(context.functionName).toBe('execute');
    expect(context.awsRequestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(context.getRemainingTimeInMillis()).toBeGreaterThan(0);

    expect(h.authCalls).toHaveLength(1);
    const auth = h.authCalls[0] as APIGatewayRequestAuthorizerEvent;
    expect(auth).toMatchObject({
      type: 'REQUEST',
      methodArn: 'arn:aws:execute-api:local:000000000000:local/local/POST/v1/deployments/d%2D1/executions',
      resource: '/v1/deployments/{deployment_id}/executions',
      path: '/v1/deployments/d%2D1/executions',
      httpMethod: 'POST',
      pathParameters: { deployment_id: 'd-1' },
      queryStringParameters: { x: '2', y: 'a b', flag: '' },
      stageVariables: null,
    });
    expect(auth.headers?.['X-API-Key']).toBe('good');
    expect(auth.multiValueHeaders?.['X-Custom']).toEqual(['A', 'B']);
    expect(auth.requestContext.authorizer).toBeUndefined();
    expect(auth.requestContext.requestId).toBe(requestId);
  });

  it('gives no query string and no body as null', async () => {
    // Act
    await call(h, 'GET', '/v1/pipelines', { headers: owner });

    // Assess
    const { event } = h.calls[0] as Call;
    expect(event.queryStringParameters).toBeNull();
    expect(event.multiValueQueryStringParameters).toBeNull();
    expect(event.pathParameters).toBeNull();
    expect(event.body).toBeNull();
  });

  it('treats a trailing slash as optional', async () => {
    // Act
    const a = await call(h, 'GET', '/v1/pipelines/', { headers: owner });
    const b = await call(h, 'GET', '/v1/pipelines/p-1/', { headers: owner });

    // Assess
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(h.calls.map((c) => c.handler)).toEqual(['pipeline-list', 'pipeline-get']);
    expect(h.calls[1]?.event.pathParameters).toEqual({ pipeline_id: 'p-1' });
  });

  it('prefers literal segments over parameters', async () => {
    // Act
    await call(h, 'GET', '/v1/deployments/executions/e-1/status', { headers: { 'X-API-Key': 'good' } });
    await call(h, 'GET', '/v1/deployments/d-9', { headers: { 'X-API-Key': 'good' } });
    await call(h, 'GET', '/v1/deployments/d-9/openapi.json', { headers: { 'X-API-Key': 'good' } });

    // Assess
    expect(h.calls.map((c) => [c.handler, c.event.pathParameters])).toEqual([
      ['execution-status', { execution_id: 'e-1' }],
      ['deployment-contract', { deployment_id: 'd-9' }],
      ['deployment-openapi', { deployment_id: 'd-9' }],
    ]);
  });

  it('answers unknown paths with 404, other methods with 405 and Allow, health without auth', async () => {
    // Act
    const unknown = await call(h, 'GET', '/v2/nothing');
    const tooDeep = await call(h, 'GET', '/v1/pipelines/p/runs/r/extra', { headers: owner });
    const method = await call(h, 'DELETE', '/v1/deployments/d-1');
    const many = await call(h, 'POST', '/v1/pipelines/p-1/deployment', { headers: owner });
    const health = await call(h, 'GET', '/health');

    // Assess
    expect([unknown.status, unknown.json()]).toEqual([404, { error: 'Not Found' }]);
    expect(tooDeep.status).toBe(404);
    expect([method.status, method.json(), method.headers.allow]).toEqual([405, { error: 'Method Not Allowed' }, 'GET']);
    expect([many.status, many.headers.allow]).toEqual([405, 'DELETE, GET, PUT']);
    expect([health.status, health.json()]).toEqual([200, { status: 'ok' }]);
    expect(h.calls).toEqual([]);
    expect(h.authCalls).toEqual([]);
  });

  it('refuses a declared oversize body with 413 before it is sent, calling nothing', async () => {
    // Prepare
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(new URL('/v1/deployments/d-1/executions', h.url), {
        method: 'POST',
        headers: { 'X-API-Key': 'good', 'Content-Type': 'application/json', 'Content-Length': String(10 * 1024 * 1024) },
      });
      req.on('response', (r) => {
        let body = '';
        r.on('data', (c: Buffer) => (body += c.toString()));
        r.on('end', () => {
          resolve({ status: r.statusCode ?? 0, body });
          req.destroy();
        });
      });
      req.on('error', reject);
      // Act: only a sliver of the declared 10 MiB is ever sent.
      req.write('{"a":');
    });

    // Assess
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toEqual({
      error: 'Payload Too Large',
      detail: expect.stringMatching(/^the request body must be at most \d+ bytes/),
    });
    expect(h.calls).toEqual([]);
    expect(h.authCalls).toEqual([]);
  });

  it('stops reading a chunked body once it passes the limit and answers 413', async () => {
    // Prepare
    let written = 0;
    const res = await new Promise<number>((resolve, reject) => {
      const req = request(new URL('/v1/pipelines/p-1', h.url), {
        method: 'PUT',
        headers: { ...owner, 'Content-Type': 'application/json' },
      });
      req.on('response', (r) => {
        r.resume();
        resolve(r.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', (err) => (written > MAX_BODY ? undefined : reject(err)));
      // Act: more than the limit, and the request is never ended.
      const chunk = Buffer.alloc(256, 0x61);
      for (let i = 0; i < 8; i += 1) {
        req.write(chunk);
        written += chunk.length;
      }
    });

    // Assess
    expect(res).toBe(413);
    expect(h.calls).toEqual([]);
  });

  it('lets a route taking inline assets (the route table says which) take a body past the usual limit, up to the inline one', async () => {
    // Prepare: past the usual limit, far below the inline one.
    const body = 'x'.repeat(MAX_BODY + 1);
    const api = { 'X-API-Key': 'good', 'Content-Type': 'application/json' };

    // Act
    const execute = await call(h, 'POST', '/v1/deployments/d-1/executions', { headers: api, body });
    const push = await call(h, 'PUT', '/v1/pipelines/p-1', { headers: { ...owner, 'Content-Type': 'application/json' }, body });
    const beyond = await call(h, 'POST', '/v1/deployments/d-1/executions', {
      headers: { ...api, 'Content-Length': String(INLINE_ASSET_BODY_MAX_BYTES + 1) },
    });

    // Assess: the handler counts the ASSET values; the gateway holds it to the ceiling only.
    expect(execute.status).toBe(200);
    expect(h.calls.map((c) => [c.handler, c.event.body?.length])).toEqual([['execute', MAX_BODY + 1]]);
    expect([push.status, push.json()]).toEqual([413, { error: 'Payload Too Large', detail: bodyLimitDetail(MAX_BODY) }]);
    expect([beyond.status, beyond.json()]).toEqual([413, { error: 'Payload Too Large', detail: inlineLimitDetail() }]);
  });

  it('accepts a body right at the limit', async () => {
    // Act
    const res = await call(h, 'PUT', '/v1/pipelines/p-1', {
      headers: { ...owner, 'Content-Type': 'application/json' },
      body: 'x'.repeat(MAX_BODY),
    });

    // Assess
    expect(res.status).toBe(200);
    expect(h.calls[0]?.event.body).toHaveLength(MAX_BODY);
  });

  it('hands binary bodies over as base64 and text bodies as UTF-8', async () => {
    // Act
    await call(h, 'PUT', '/v1/pipelines/p-1', {
      headers: { ...owner, 'Content-Type': 'application/octet-stream' },
      body: Buffer.from([0, 255, 1]),
    });
    await call(h, 'PUT', '/v1/pipelines/p-1', { headers: { ...owner, 'Content-Type': 'text/plain; charset=utf-8' }, body: 'héllo' });

    // Assess
    expect(h.calls.map((c) => [c.event.body, c.event.isBase64Encoded])).toEqual([
      ['AP8B', true],
      ['héllo', false],
    ]);
  });

  it('evaluates the authorizer policy and errors like API Gateway', async () => {
    // Act
    const denied = await call(h, 'POST', '/v1/deployments/d-1/executions', { headers: { 'X-API-Key': 'deny' } });
    const deniedGetAllowed = await call(h, 'GET', '/v1/deployments/d-1', { headers: { 'X-API-Key': 'deny' } });
    const noMatch = await call(h, 'GET', '/v1/deployments/d-1', { headers: { 'X-API-Key': 'narrow' } });
    const matched = await call(h, 'GET', '/v1/deployments/other', { headers: { 'X-API-Key': 'narrow' } });
    const missing = await call(h, 'GET', '/v1/deployments/d-1');
    const broken = await call(h, 'GET', '/v1/deployments/d-1', { headers: { 'X-API-Key': 'boom' } });
    const badContext = await call(h, 'GET', '/v1/deployments/d-1', { headers: { 'X-API-Key': 'bad-context' } });

    // Assess
    // ACCESS_DENIED renders the Deny's context ($context.authorizer.*); a policy that merely
    // does not match has none, and the fields render empty, as on AWS.
    expect([denied.status, denied.json(), denied.headers['www-authenticate']]).toEqual([
      401,
      { error: 'Unauthorized', reason: 'revoked', detail: 'rotated away' },
      'Api-Key',
    ]);
    expect(deniedGetAllowed.status).toBe(200);
    expect([noMatch.status, noMatch.json()]).toEqual([401, { error: 'Unauthorized', reason: '', detail: '' }]);
    expect(matched.status).toBe(200);
    expect([missing.status, missing.json(), missing.headers['www-authenticate']]).toEqual([401, unauthorizedBody('apiKey'), 'Api-Key']);
    // A throwing authorizer is API Gateway's AUTHORIZER_CONFIGURATION_ERROR, answered 503 so callers retry.
    expect(broken.status).toBe(503);
    expect(broken.json()).toEqual({ error: 'Service Unavailable', request_id: broken.headers['x-request-id'] });
    expect(broken.headers['retry-after']).toBe('1');
    // An unusable answer is the same AuthorizerConfigurationException to API Gateway.
    expect([badContext.status, badContext.headers['retry-after']]).toEqual([503, '1']);
    expect(h.calls.map((c) => c.event.path)).toEqual(['/v1/deployments/d-1', '/v1/deployments/other']);
  });

  it('lets owner routes through only with the owner bearer token', async () => {
    // Act
    const none = await call(h, 'GET', '/v1/pipelines');
    const wrong = await call(h, 'GET', '/v1/pipelines', { headers: { Authorization: 'Bearer pgo_owner-secret-tokeN' } });
    const apiKey = await call(h, 'GET', '/v1/pipelines', { headers: { 'X-API-Key': 'good' } });
    const right = await call(h, 'GET', '/v1/pipelines', { headers: { Authorization: `bearer ${OWNER_TOKEN}` } });

    // Assess
    for (const res of [none, wrong, apiKey]) {
      expect([res.status, res.json(), res.headers['www-authenticate']]).toEqual([401, unauthorizedBody('ownerToken'), 'Bearer']);
    }
    expect(right.status).toBe(200);
    expect(h.calls).toHaveLength(1);
    expect(h.calls[0]?.event.requestContext.authorizer).toEqual({ principalId: 'owner' });
    expect(h.authCalls).toEqual([]);
  });

  it.each<[string, () => Promise<unknown>]>([
    ['a string statusCode', async () => ({ statusCode: '200', body: '' })],
    ['a statusCode out of range', async () => ({ statusCode: 700, body: '' })],
    ['a non-integer statusCode', async () => ({ statusCode: 200.5, body: '' })],
    ['an object body', async () => ({ statusCode: 200, body: { secret: 'do-not-log' } })],
    ['a null header value', async () => ({ statusCode: 200, body: '', headers: { 'X-A': null } })],
    ['an unknown field', async () => ({ statusCode: 200, body: '', cookies: [] })],
    ['a string isBase64Encoded', async () => ({ statusCode: 200, body: '', isBase64Encoded: 'true' })],
    ['a header with a line break', async () => ({ statusCode: 200, body: '', headers: { 'X-A': 'a\r\nSet-Cookie: x=1' } })],
    ['nothing at all', async () => undefined],
    ['a throw', async () => Promise.reject(new Error('handler crashed'))],
  ])('answers 502 for a handler response with %s, logging the cause but never the body', async (_what, respond) => {
    // Prepare
    h.respond = respond;

    // Act
    const res = await call(h, 'GET', '/v1/pipelines', { headers: owner });

    // Assess
    expect(res.status).toBe(502);
    expect(res.json()).toEqual({ error: 'Internal Error', request_id: res.headers['x-request-id'] });
    const line = h.logs.at(-1) ?? {};
    expect(line).toMatchObject({ method: 'GET', route: '/v1/pipelines', status: 502, request_id: res.headers['x-request-id'] });
    expect(line.cause).toEqual(expect.stringMatching(/Malformed Lambda proxy response|handler crashed/));
    expect(JSON.stringify(h.logs)).not.toContain('do-not-log');
  });

  it('passes valid responses through: merged headers, base64 bodies, JSON by default', async () => {
    // Prepare
    h.respond = async () => ({
      statusCode: 201,
      headers: { Location: '/x', 'X-Both': 'single', 'X-Count': 3 },
      multiValueHeaders: { 'X-Both': ['m1', 'm2'] },
      body: Buffer.from([1, 2, 250]).toString('base64'),
      isBase64Encoded: true,
    });

    // Act
    const res = await call(h, 'GET', '/v1/pipelines', { headers: owner });

    // Assess
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe('/x');
    expect(res.headers['x-count']).toBe('3');
    expect(res.headers['x-both']).toBe('m1, m2');
    expect(res.headers['content-type']).toBe('application/json');
    expect([...res.body]).toEqual([1, 2, 250]);
  });

  it('logs one line per request without bodies or credentials', async () => {
    // Act
    await call(h, 'PUT', '/v1/pipelines/p-1', {
      headers: { ...owner, 'Content-Type': 'application/json' },
      body: '{"nodes":"body-marker"}',
    });
    await call(h, 'GET', '/nowhere');

    // Assess
    expect(h.logs).toHaveLength(2);
    expect(h.logs[0]).toEqual({
      method: 'PUT',
      path: '/v1/pipelines/p-1',
      route: '/v1/pipelines/{pipeline_id}',
      status: 200,
      duration_ms: expect.any(Number),
      request_id: expect.any(String),
    });
    expect(h.logs[1]).toMatchObject({ method: 'GET', route: null, status: 404 });
    const text = JSON.stringify(h.logs);
    expect(text).not.toContain('body-marker');
    expect(text).not.toContain(OWNER_TOKEN);
  });
});

describe('local gateway options', () => {
  it('serves under a base path, keeping it in requestContext.path only', async () => {
    // Prepare
    const h = await startHarness({ basePath: '/api' });

    // Act
    const inside = await call(h, 'GET', '/api/v1/pipelines/p-1', { headers: owner });
    const outside = await call(h, 'GET', '/v1/pipelines/p-1', { headers: owner });
    const health = await call(h, 'GET', '/health');
    await h.close();

    // Assess
    expect([inside.status, outside.status, health.status]).toEqual([200, 404, 200]);
    expect(h.calls[0]?.event.path).toBe('/v1/pipelines/p-1');
    expect(h.calls[0]?.event.requestContext.path).toBe('/api/v1/pipelines/p-1');
  });

  it('answers 504 when a handler outlasts the integration time-out', async () => {
    // Prepare
    const h = await startHarness({ integrationTimeoutMs: 50 });
    h.respond = () => new Promise(() => undefined);

    // Act
    const res = await call(h, 'GET', '/v1/pipelines', { headers: owner });
    await h.close();

    // Assess
    expect(res.status).toBe(504);
  });

  it('answers with the gateway responses it is given, falling back to DEFAULT_4XX/5XX by status class', async () => {
    // Prepare
    const h = await startHarness({
      gatewayResponses: [
        {
          type: 'ACCESS_DENIED',
          statusCode: '418',
          body: '{"nope":"$context.requestId","why":"$context.authorizer.reason","who":"$context.authorizer.principalId","none":"$context.authorizer.absent"}',
          headers: { 'X-Why': "'policy'" },
        },
        { type: 'DEFAULT_4XX', body: '{"e":$context.error.messageString}' },
      ],
    });

    // Act
    const denied = await call(h, 'POST', '/v1/deployments/d-1/executions', { headers: { 'X-API-Key': 'deny' } });
    const missing = await call(h, 'GET', '/v1/deployments/d-1');
    const broken = await call(h, 'GET', '/v1/deployments/d-1', { headers: { 'X-API-Key': 'boom' } });
    await h.close();

    // Assess
    expect([denied.status, denied.json(), denied.headers['x-why']]).toEqual([
      418,
      { nope: denied.headers['x-request-id'], why: 'revoked', who: 'key-owner', none: '' },
      'policy',
    ]);
    expect([missing.status, missing.json(), missing.headers['www-authenticate']]).toEqual([401, { e: 'Unauthorized' }, undefined]);
    // No DEFAULT_5XX either: API Gateway's own body.
    expect(broken.status).toBe(500);
    expect(broken.json()).toEqual({ message: expect.any(String) });
  });

  it('refuses a gateway response header it cannot render', () => {
    expect(() =>
      createGateway({
        routes: [],
        handlers: {},
        authorizer: fakeAuthorizer,
        ownerToken: 't',
        maxBodyBytes: 1,
        gatewayResponses: [{ type: 'UNAUTHORIZED', body: '{}', headers: { 'X-A': 'method.request.header.x' } }],
      }),
    ).toThrow('only literal values');
  });

  it('answers 401 without calling the authorizer when an identity source is missing, and caches its policy per source value', async () => {
    // Prepare
    const h = await startHarness({ authorizerSettings: { identitySources: ['method.request.header.X-API-Key'], ttlSeconds: 300 } });

    // Act
    const missing = await call(h, 'GET', '/v1/deployments/other');
    const first = await call(h, 'GET', '/v1/deployments/other', { headers: { 'X-API-Key': 'narrow' } });
    const again = await call(h, 'GET', '/v1/deployments/other', { headers: { 'X-API-Key': 'narrow' } });
    const elsewhere = await call(h, 'GET', '/v1/deployments/d-1', { headers: { 'X-API-Key': 'narrow' } });
    await h.close();

    // Assess
    expect([missing.status, first.status, again.status, elsewhere.status]).toEqual([401, 200, 200, 401]);
    // One call for the key: the cached policy is evaluated afresh against each method ARN.
    expect(h.authCalls).toHaveLength(1);
  });

  it('refuses a route table naming a handler it was not given', () => {
    expect(() => createGateway({ routes: ROUTES, handlers: {}, authorizer: fakeAuthorizer, ownerToken: 't', maxBodyBytes: 1 })).toThrow(
      'No handler for route',
    );
  });
});

describe('wildcardMatch', () => {
  it('matches a literal pattern only against itself, and * against anything', () => {
    fc.assert(
      fc.property(
        fc.string().filter((s) => !s.includes('*') && !s.includes('?')),
        fc.string(),
        (literal, other) => {
          expect(wildcardMatch(literal, literal)).toBe(true);
          expect(wildcardMatch('*', other)).toBe(true);
          expect(wildcardMatch(literal, other)).toBe(literal === other);
          expect(wildcardMatch(`${literal}*`, `${literal}${other}`)).toBe(true);
        },
      ),
    );
  });
});
