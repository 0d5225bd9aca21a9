/**
 * A configured public base URL decides every URL the service hands out, whatever Host header a
 * client sends. Its own file: a runtime wires the process's handlers (see base-path.test.ts).
 */
import { request as httpRequest } from 'node:http';
import { greeting, startTestRuntime, type TestRuntime } from '../support/runtime';

const PUBLIC = 'https://pipes.example.org/pg';
let rt: TestRuntime;

beforeAll(async () => {
  // A trailing slash in the setting is dropped.
  rt = await startTestRuntime({ env: { ...process.env, PIPEGATE_PUBLIC_URL: `${PUBLIC}/` } });
});
afterAll(async () => {
  await rt?.cleanup();
});

/** A request with a Host header of the client's choosing (fetch does not let one set it). */
function send(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Record<string, unknown> }> {
  const url = new URL(`${rt.url}${path}`);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        headers: { host: 'evil.example', ...(payload ? { 'content-type': 'application/json' } : {}), ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('PIPEGATE_PUBLIC_URL', () => {
  it('is the base of every URL in answers and of a deployment document, not the Host header', async () => {
    // Prepare
    const owner = { authorization: `Bearer ${rt.ownerToken}` };
    expect((await send('PUT', '/v1/pipelines/public', owner, greeting)).status).toBe(201);

    // Act
    const run = await send('POST', '/v1/pipelines/public/runs', owner, {});
    await rt.runToEnd('public');
    const published = await send('PUT', '/v1/pipelines/public/deployment', owner, {});
    const key = { 'x-api-key': published.body.api_key as string };
    const id = published.body.deployment_id as string;
    const accepted = await send('POST', `/v1/deployments/${id}/executions`, key, {});
    const status = await send('GET', `/v1/deployments/executions/${accepted.body.execution_id as string}/status`, key);
    const doc = await send('GET', `/v1/deployments/${id}/openapi.json`, key);

    // Assess
    expect(run.body.status_url).toMatch(new RegExp(`^${PUBLIC}/v1/pipelines/public/runs/`));
    expect(published.body.execute_url).toBe(`${PUBLIC}/v1/deployments/${id}/executions/`);
    expect(accepted.status).toBe(202);
    expect(accepted.body.status_url).toMatch(new RegExp(`^${PUBLIC}/v1/deployments/executions/`));
    expect(accepted.headers.location).toBe(accepted.body.status_url);
    expect(status.body.result_url).toMatch(new RegExp(`^${PUBLIC}/v1/deployments/executions/`));
    expect(doc.body.servers).toEqual([{ url: PUBLIC }]);
    expect(JSON.stringify([run.body, published.body, accepted.body, accepted.headers, status.body, doc.body])).not.toContain(
      'evil.example',
    );
  });
});
