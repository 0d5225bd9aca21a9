/**
 * Requests at the edges a fuzz of the whole API met (26,700 generated requests): each answered
 * as the contract says, with a body naming what is wrong. A body sent as anything but JSON
 * answers 415 on every route that takes one, as on execute; an object with a key twice is
 * refused with the key named, where JSON.parse would keep the last; a JSON `null` is no request
 * object; a path that is not percent-encoded UTF-8 and headers past the server's limit get JSON
 * answers of their own. test/e2e/synth/request-edges.test.ts runs it against start:synth.
 */
import { request as httpRequest } from 'node:http';
import { greeting, request, startE2eRuntime, type E2eRuntime, type Published } from '../support/runtime';

let rt: E2eRuntime;
let greet: Published;

beforeAll(async () => {
  rt = await startE2eRuntime();
  greet = await rt.publishPipeline('edges', greeting);
});
afterAll(() => rt?.cleanup());

const owner = (method: string, path: string, body: string, contentType = 'application/json') =>
  request<Record<string, unknown>>(`${rt.url}${path}`, method, body, {
    authorization: `Bearer ${rt.ownerToken}`,
    'content-type': contentType,
  });
const caller = (method: string, path: string, body: string, contentType = 'application/json') =>
  request<Record<string, unknown>>(`${rt.url}${path}`, method, body, { 'x-api-key': greet.apiKey, 'content-type': contentType });

describe('bodies', () => {
  it('answers 415 to a body sent as anything but JSON on every route that takes one, as execute does', async () => {
    // Act
    const answers = {
      execute: await caller('POST', `/v1/deployments/${greet.deploymentId}/executions/`, '{}', 'text/plain'),
      uploads: await caller('POST', `/v1/deployments/${greet.deploymentId}/uploads/`, '{"media_type":"image/png","bytes":1}', 'text/plain'),
      push: await owner('PUT', '/v1/pipelines/edges', JSON.stringify(greeting), 'text/plain'),
      publish: await owner('PUT', '/v1/pipelines/edges/deployment', '{}', 'application/x-www-form-urlencoded'),
      run: await owner('POST', '/v1/pipelines/edges/runs', '{}', 'text/plain'),
      ownerUploads: await owner('POST', '/v1/pipelines/edges/uploads', '{"media_type":"image/png","bytes":1}', 'text/csv'),
      keys: await owner('POST', '/v1/pipelines/edges/deployment/keys', '{}', 'text/plain'),
      consumers: await owner('POST', '/v1/pipelines/edges/deployment/consumers', '{"name":"a"}', 'text/plain'),
      secret: await owner('PUT', '/v1/secrets/edge-secret', '{"value":"s"}', 'text/plain'),
    };
    // Assess
    for (const [route, a] of Object.entries(answers)) {
      expect({ route, status: a.status, body: a.body }).toEqual({
        route,
        status: 415,
        body: { error: 'Unsupported Media Type', detail: 'the body must be JSON (Content-Type: application/json)' },
      });
    }
  });

  it('takes JSON under any JSON media type, and a body with no content type at all', async () => {
    // Act
    const vendor = await owner('PUT', '/v1/pipelines/edges', JSON.stringify(greeting), 'application/vnd.pipegate+json; charset=utf-8');
    const none = await request<Record<string, unknown>>(`${rt.url}/v1/pipelines/edges/deployment`, 'PUT', undefined, {
      authorization: `Bearer ${rt.ownerToken}`,
    });
    // Assess
    expect(vendor.status).toBe(200);
    expect(none.status).toBe(200);
  });

  it('refuses an object with a key twice, naming the key and where it is, instead of keeping the last', async () => {
    // Act
    const execute = await caller(
      'POST',
      `/v1/deployments/${greet.deploymentId}/executions/`,
      '{"workflow_input":{"name":{"value":"a","value_type":"RAW"},"name":{"value":"b","value_type":"RAW"}}}',
    );
    const push = await owner(
      'PUT',
      '/v1/pipelines/edges-dup',
      '{"nodes":{"n":{"type":"input","value_type":"string","value":"x","value":"y"},"out":{"type":"output","from":"n"}}}',
    );
    const publish = await owner('PUT', '/v1/pipelines/edges/deployment', '{"outputs":{},"outputs":{"greeting":{"visible":false}}}');
    const uploads = await caller(
      'POST',
      `/v1/deployments/${greet.deploymentId}/uploads/`,
      '{"media_type":"image/png","bytes":1,"bytes":2}',
    );
    // Assess
    expect([execute.status, execute.body]).toEqual([
      400,
      { error: 'Invalid Input Structure', detail: 'workflow_input has the key "name" twice' },
    ]);
    expect([push.status, push.body.detail]).toEqual([400, [{ path: 'nodes.n', reason: 'has the key "value" twice' }]]);
    expect([publish.status, publish.body.detail]).toEqual([400, [{ path: '(body)', reason: 'has the key "outputs" twice' }]]);
    expect([uploads.status, uploads.body]).toEqual([400, { error: 'Invalid Input Structure', detail: 'body has the key "bytes" twice' }]);
  });

  it('refuses a JSON null body to publish as no request object, where it took it for {}', async () => {
    // Act
    const publish = await owner('PUT', '/v1/pipelines/edges/deployment', 'null');
    const rotate = await owner('POST', '/v1/pipelines/edges/deployment/keys', 'null');
    // Assess
    expect(publish.status).toBe(400);
    expect(publish.body).toEqual({ error: 'Invalid Request', detail: [{ path: '(body)', reason: 'must be an object' }] });
    expect(rotate.status).toBe(400);
  });
});

describe('requests the gateway cannot read', () => {
  it('answers 400 naming the path segment that is not percent-encoded UTF-8', async () => {
    // Act
    const r = await request<Record<string, unknown>>(`${rt.url}/v1/deployments/%FF/`, 'GET', undefined, { 'x-api-key': greet.apiKey });
    // Assess
    expect([r.status, r.body]).toEqual([
      400,
      { error: 'Bad Request', detail: 'the path segment "%FF" is not percent-encoded UTF-8: each %XX must be a byte of a UTF-8 character' },
    ]);
  });

  it("answers headers past the server's limit with a JSON 431 naming it, not Node's bare one", async () => {
    // Act
    const r = await new Promise<{ status: number; type: string | undefined; body: string }>((resolve, reject) => {
      const req = httpRequest(
        `${rt.url}/v1/deployments/${greet.deploymentId}/`,
        { headers: { 'x-api-key': greet.apiKey, 'x-pad': 'p'.repeat(20 * 1024) } },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    // Assess
    expect(r.status).toBe(431);
    expect(r.type).toBe('application/json');
    expect(JSON.parse(r.body)).toEqual({
      error: 'Request Header Fields Too Large',
      detail: 'the request line and headers are larger than 16384 bytes: send fewer or shorter headers',
    });
  });
});
