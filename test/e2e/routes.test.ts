/**
 * Every route of the table is served by `npm start`: its handler (loaded by folder name,
 * lib/local/handlers.ts) answers, with credentials that pass, something other than a 5XX.
 * A route whose functions/<handler>/handler.ts is missing or exports no createHandler stops the
 * runtime from starting (the first test names it); one whose handler throws answers 5XX here.
 * Every caller route spends its key's rate limit.
 */
import { randomUUID } from 'node:crypto';
import { ROUTES } from '../../lib/routes';
import { loadHandler } from '../../lib/local/handlers';
import { greeting, request, startTestRuntime, type Published, type TestRuntime } from '../support/runtime';

/** Path parameters that name nothing: every handler reaches its own lookup and answers. */
const PARAMS: Record<string, () => string> = {
  pipeline_id: () => 'no-such-pipeline',
  name: () => 'NO_SUCH_SECRET',
  asset: () => 'no-such-file.js',
  token: () => 'not-a-token',
  form_token: () => 'not-a-form-token',
};

describe('every route of lib/routes.ts answers locally', () => {
  let rt: TestRuntime;
  let p: Published;

  beforeAll(async () => {
    rt = await startTestRuntime();
    p = await rt.publishPipeline('routes-all', greeting);
  });
  afterAll(async () => {
    await rt?.cleanup();
  });

  it('loads a handler for each route by its folder, and names a folder that has none', () => {
    for (const r of ROUTES) expect(typeof loadHandler(r.handler)).toBe('function');
    expect(() => loadHandler('no-such-handler' as never)).toThrow(
      'lib/routes.ts names handler "no-such-handler", but there is no functions/no-such-handler/handler.ts',
    );
  });

  it.each(ROUTES.map((r) => [r.method, r.path, r] as const))('%s %s: its handler answers, never a 5XX', async (_m, _p, route) => {
    // Prepare
    // The deployment's own id (the authorizer holds a key to its deployment); every other id names nothing.
    const path = route.path.replace(/\{([a-z_]+)\}/g, (_, name: string) =>
      name === 'deployment_id' ? p.deploymentId : (PARAMS[name] ?? randomUUID)(),
    );
    const headers: Record<string, string> =
      route.auth === 'owner' ? { authorization: `Bearer ${rt.ownerToken}` } : route.auth === 'apiKey' ? { 'x-api-key': p.apiKey } : {};
    const body = ['POST', 'PUT', 'PATCH'].includes(route.method) ? {} : undefined;

    // Act
    const r = await request(`${rt.url}${path}`, route.method, body, headers);

    // Assess: the credentials pass, so the answer is the handler's own (shown with its body).
    expect(`${r.status} ${r.text.slice(0, 300)}`).toMatch(/^(?!401|403)[1-4]\d\d /);
  });

  describe("with the key's rate limit spent", () => {
    beforeAll(async () => {
      const set = await rt.owner('PUT', '/v1/pipelines/routes-all/deployment/limits', { rate_limit: { requests: 1, per_seconds: 3600 } });
      expect(set.status).toBe(200);
      expect((await rt.caller('GET', `/v1/deployments/${p.deploymentId}`, p.apiKey)).status).toBe(200);
    });

    it.each(ROUTES.filter((r) => r.auth === 'apiKey').map((r) => [r.method, r.path, r] as const))(
      '%s %s refuses with 429 (every caller route spends the rate limit: its handler passes `gate: callerLimits`)',
      async (_m, _p, route) => {
        // Act
        const path = route.path.replace(/\{([a-z_]+)\}/g, (_, name: string) => (name === 'deployment_id' ? p.deploymentId : randomUUID()));
        const r = await request<{ limit?: string }>(`${rt.url}${path}`, route.method, route.method === 'POST' ? {} : undefined, {
          'x-api-key': p.apiKey,
        });

        // Assess
        expect([r.status, r.body.limit]).toEqual([429, 'rate']);
      },
    );
  });
});
