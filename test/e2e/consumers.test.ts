/**
 * Consumers over HTTP (issue 26): each caller its own key, on its own deployment only, with
 * expiry, revocation, rotation, a rate limit and an exact quota. Runs against the local runtime
 * and again against start:synth (test/e2e/synth/consumers.test.ts).
 */
import { greeting, request, startE2eRuntime, type E2eRuntime, type Published, type Reply } from '../support/runtime';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('consumers', () => {
  let rt: E2eRuntime;
  let a: Published;
  let b: Published;
  const consumers = (p: string) => `/v1/pipelines/${p}/deployment/consumers`;
  const execute = (dep: Published, key: string, headers: Record<string, string> = {}) =>
    rt.caller('POST', `/v1/deployments/${dep.deploymentId}/executions`, key, {}, headers);
  const create = (p: string, body: unknown) => rt.owner('POST', consumers(p), body);

  beforeAll(async () => {
    rt = await startE2eRuntime();
    a = await rt.publishPipeline('consumers-a', greeting);
    b = await rt.publishPipeline('consumers-b', greeting);
  });
  afterAll(async () => {
    await rt?.cleanup();
  });

  test('a consumer key is shown once and works like the deployment key, on its own deployment only', async () => {
    const made = await create('consumers-a', { name: 'acme', metadata: { plan: 'paid' } });
    expect(made.status).toBe(201);
    expect(made.headers.get('cache-control')).toBe('no-store');
    const key = made.body.api_key as string;
    expect(key).toMatch(/^pgk_[0-9a-f]{64}[A-Za-z0-9_-]{38}$/);
    expect(made.body).toMatchObject({
      name: 'acme',
      status: 'active',
      rate_limit: null,
      quota: null,
      expires_at: null,
      metadata: { plan: 'paid' },
    });
    expect(made.body.consumer_id).toMatch(UUID);

    const viaHeader = await execute(a, key);
    expect(viaHeader.status).toBe(202);
    const viaAuthorization = await rt.caller(
      'POST',
      `/v1/deployments/${a.deploymentId}/executions`,
      null,
      {},
      { authorization: `Api-Key ${key}` },
    );
    expect(viaAuthorization.status).toBe(202);
    const done = await rt.waitForExecution(viaHeader.body.execution_id as string, key);
    expect(done.status).toBe('completed');
    expect((await rt.caller('GET', `/v1/deployments/${a.deploymentId}`, key)).status).toBe(200);

    const elsewhere = await execute(b, key);
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.body.reason).toBe('other_deployment');

    // The owner sees who submitted it; the deployment key's executions name no consumer.
    const seen = await rt.owner('GET', `/v1/pipelines/consumers-a/executions/${viaHeader.body.execution_id as string}`);
    expect(seen.body.consumer_id).toBe(made.body.consumer_id);
    const own = await execute(a, a.apiKey);
    const ownSeen = await rt.owner('GET', `/v1/pipelines/consumers-a/executions/${own.body.execution_id as string}`);
    expect(ownSeen.body.consumer_id).toBeNull();

    // Listed with a prefix and last use, never the key.
    const list = await rt.owner('GET', consumers('consumers-a'));
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(key);
    expect(list.text).not.toContain(key.slice(12, -4));
    const listed = (list.body.consumers as Record<string, unknown>[]).find((c) => c.consumer_id === made.body.consumer_id);
    expect(listed).toMatchObject({ key_prefix: `${key.slice(0, 12)}…${key.slice(-4)}`, status: 'active' });
    expect(listed?.last_used_at).toEqual(expect.any(String));
    expect(listed).not.toHaveProperty('api_key');
  });

  test('bad limits are refused naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ name: 'x', rate_limit: { requests: 0, per_seconds: 1 } }, 'rate_limit.requests'],
      [{ name: 'x', rate_limit: { requests: 1, per_seconds: 86_400 } }, 'rate_limit.per_seconds'],
      [{ name: 'x', quota: { executions: 10, per: 'week' } }, 'quota.per'],
      [{ name: 'x', quota: { executions: 1.5, per: 'day' } }, 'quota.executions'],
      [{ name: 'x', expires_at: 'tomorrow' }, 'expires_at'],
      [{ name: 'x', expires_at: '2001-01-01T00:00:00.000Z' }, 'expires_at'],
      [{ name: ' ' }, 'name'],
      [{ name: 'x', colour: 'red' }, 'colour'],
    ];
    for (const [body, path] of cases) {
      const r = await create('consumers-a', body);
      expect([r.status, (r.body.detail as { path: string }[]).map((p) => p.path)]).toEqual([400, [path]]);
    }
  });

  test('revoking one consumer stops its key at once and leaves the others working', async () => {
    const one = await create('consumers-a', { name: 'one' });
    const two = await create('consumers-a', { name: 'two' });
    expect((await execute(a, one.body.api_key as string)).status).toBe(202);
    const revoked = await rt.owner('DELETE', `${consumers('consumers-a')}/${one.body.consumer_id as string}`);
    expect(revoked.status).toBe(204);
    const refused = await execute(a, one.body.api_key as string);
    expect(refused.status).toBe(401);
    expect(refused.body.reason).toBe('consumer_revoked');
    expect((await execute(a, two.body.api_key as string)).status).toBe(202);
    expect((await execute(a, a.apiKey)).status).toBe(202);
    const patched = await rt.owner('PATCH', `${consumers('consumers-a')}/${one.body.consumer_id as string}`, { name: 'again' });
    expect(patched.status).toBe(409);
  });

  test('an expired key is refused with a detail that says it expired', async () => {
    const c = await create('consumers-a', { name: 'trial', expires_at: new Date(Date.now() + 3600_000).toISOString() });
    expect((await execute(a, c.body.api_key as string)).status).toBe(202);
    // The owner may move the end into the past: the trial ends now.
    const ended = await rt.owner('PATCH', `${consumers('consumers-a')}/${c.body.consumer_id as string}`, {
      expires_at: new Date(Date.now() - 1000).toISOString(),
    });
    expect(ended.status).toBe(200);
    expect(ended.body.status).toBe('expired');
    const refused = await execute(a, c.body.api_key as string);
    expect(refused.status).toBe(401);
    expect(refused.body.reason).toBe('key_expired');
    expect(refused.body.detail).toMatch(/expired/);
  });

  test("a consumer's key rotates with a grace period, or at once", async () => {
    const c = await create('consumers-a', { name: 'rotating' });
    const old = c.body.api_key as string;
    const path = `${consumers('consumers-a')}/${c.body.consumer_id as string}/keys`;
    const graced = await rt.owner('POST', path, { grace_seconds: 3600 });
    expect(graced.status).toBe(200);
    const second = graced.body.api_key as string;
    expect(second).not.toBe(old);
    expect((await execute(a, old)).status).toBe(202);
    expect((await execute(a, second)).status).toBe(202);
    const now = await rt.owner('POST', path, {});
    const third = now.body.api_key as string;
    for (const k of [old, second]) {
      const r = await execute(a, k);
      expect([r.status, r.body.reason]).toEqual([401, 'revoked']);
    }
    expect((await execute(a, third)).status).toBe(202);
  });

  test('over the rate: 429 with Retry-After and which limit; accepted answers carry the RateLimit headers', async () => {
    const c = await create('consumers-a', { name: 'slow', rate_limit: { requests: 2, per_seconds: 3600 } });
    const key = c.body.api_key as string;
    const first = await rt.caller('GET', `/v1/deployments/${a.deploymentId}`, key);
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-policy')).toBe('"rate";q=2;w=3600');
    expect(first.headers.get('ratelimit')).toMatch(/^"rate";r=1;t=\d+$/);
    const accepted = await execute(a, key);
    expect(accepted.status).toBe(202);
    const refused = await execute(a, key);
    expect(refused.status).toBe(429);
    expect(refused.body.limit).toBe('rate');
    expect(refused.body.detail).toMatch(/2 requests per 3600 seconds/);
    const retry = Number(refused.headers.get('retry-after'));
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(3600);
    expect(refused.headers.get('ratelimit')).toMatch(/^"rate";r=0;t=\d+$/);
    // An event stream (a streamed route) spends the same limit.
    const stream = await rt.caller('GET', `/v1/deployments/executions/${accepted.body.execution_id as string}/events`, key);
    expect([stream.status, stream.body.limit]).toEqual([429, 'rate']);
    // The limit is the consumer's, not the deployment's.
    expect((await execute(a, a.apiKey)).status).toBe(202);
  });

  test('12 simultaneous submits against a quota of 3 accept exactly 3; reads never spend it; the refusal says when it resets', async () => {
    const c = await create('consumers-a', { name: 'free', quota: { executions: 3, per: 'day' } });
    const key = c.body.api_key as string;
    const answers: Reply[] = await Promise.all(Array.from({ length: 12 }, () => execute(a, key)));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([202, 202, 202, ...Array<number>(9).fill(429)]);
    const accepted = answers.filter((r) => r.status === 202);
    expect(accepted.map((r) => r.headers.get('ratelimit-policy'))).toEqual(Array(3).fill('"quota";q=3;w=86400'));
    const refused = answers.find((r) => r.status === 429);
    const tomorrow = new Date();
    tomorrow.setUTCHours(24, 0, 0, 0);
    expect(refused?.body).toMatchObject({ limit: 'quota', resets_at: tomorrow.toISOString() });
    expect(refused?.body.detail).toContain(`it resets at ${tomorrow.toISOString()}`);
    expect(Number(refused?.headers.get('retry-after'))).toBeGreaterThan(0);
    // Reads go on: status and result of an accepted execution, and the contract.
    const id = accepted[0]?.body.execution_id as string;
    await rt.waitForExecution(id, key);
    expect((await rt.caller('GET', `/v1/deployments/executions/${id}/result`, key)).status).toBe(200);
    expect((await rt.caller('GET', `/v1/deployments/${a.deploymentId}`, key)).status).toBe(200);
    // Raising the quota lets the next one in at once.
    await rt.owner('PATCH', `${consumers('consumers-a')}/${c.body.consumer_id as string}`, { quota: { executions: 4, per: 'day' } });
    expect((await execute(a, key)).status).toBe(202);
    expect((await execute(a, key)).status).toBe(429);
  });

  test('usage tells consumers apart: accepted, refused by rate, refused by quota, finished by status', async () => {
    const dep = (await rt.publishPipeline('consumers-usage', greeting)).deploymentId;
    const path = consumers('consumers-usage');
    const free = await rt.owner('POST', path, { name: 'free', quota: { executions: 1, per: 'day' } });
    const limited = await rt.owner('POST', path, { name: 'limited', rate_limit: { requests: 1, per_seconds: 3600 } });
    const paid = await rt.owner('POST', path, { name: 'paid' });
    const submit = (key: string) => rt.caller('POST', `/v1/deployments/${dep}/executions`, key, {});
    const ids: string[] = [];
    for (const [c, times] of [
      [free, 3],
      [limited, 2],
      [paid, 2],
    ] as const) {
      for (let i = 0; i < times; i++) {
        const r = await submit(c.body.api_key as string);
        if (r.status === 202) ids.push(r.body.execution_id as string);
      }
    }
    expect(ids).toHaveLength(4);
    for (const id of ids) await rt.waitForExecution(id, paid.body.api_key as string).catch(() => undefined);
    // Usage is counted just after the terminal write, which is what the status shows first:
    // read it until the four finished executions are in (or a hang ends the test).
    let usage = await rt.owner('GET', '/v1/pipelines/consumers-usage/deployment/usage');
    while ((usage.body.last_day as { total?: number } | undefined)?.total !== 4) {
      await new Promise((r) => setTimeout(r, 100));
      usage = await rt.owner('GET', '/v1/pipelines/consumers-usage/deployment/usage');
    }
    expect(usage.status).toBe(200);
    const row = (name: string) =>
      (usage.body.by_consumer as { name: string; last_day: Record<string, unknown> }[]).find((c) => c.name === name)?.last_day;
    expect(row('free')).toMatchObject({ accepted: 1, refused_rate: 0, refused_quota: 2, total: 1, by_status: { completed: 1 } });
    expect(row('limited')).toMatchObject({ accepted: 1, refused_rate: 1, refused_quota: 0, total: 1 });
    expect(row('paid')).toMatchObject({ accepted: 2, refused_rate: 0, refused_quota: 0, total: 2, by_status: { completed: 2 } });
    expect(row('paid')?.p50_ms).toEqual(expect.any(Number));
    expect(usage.body.last_day).toMatchObject({ total: 4 });
  });

  test("the deployment key can carry limits too, and usage lists it as the deployment's own", async () => {
    const own = await rt.publishPipeline('consumers-own', greeting);
    const set = await rt.owner('PUT', '/v1/pipelines/consumers-own/deployment/limits', { quota: { executions: 1, per: 'month' } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ rate_limit: null, quota: { executions: 1, per: 'month' } });
    const first = await execute(own, own.apiKey);
    expect(first.status).toBe(202);
    expect(first.headers.get('ratelimit')).toMatch(/^"quota";r=0;t=\d+$/);
    const second = await execute(own, own.apiKey);
    expect([second.status, second.body.limit]).toEqual([429, 'quota']);
    const usage = await rt.owner('GET', '/v1/pipelines/consumers-own/deployment/usage');
    expect(usage.body.by_consumer).toEqual([
      expect.objectContaining({ consumer_id: null, last_day: expect.objectContaining({ accepted: 1, refused_quota: 1 }) }),
    ]);
    // Absent or null removes them.
    expect((await rt.owner('PUT', '/v1/pipelines/consumers-own/deployment/limits', {})).status).toBe(200);
    expect((await execute(own, own.apiKey)).status).toBe(202);
    const bad = await rt.owner('PUT', '/v1/pipelines/consumers-own/deployment/limits', { rate_limit: { requests: 1 } });
    expect([bad.status, (bad.body.detail as { path: string }[])[0]?.path]).toEqual([400, 'rate_limit.per_seconds']);
  });

  test('an unknown consumer is 404 and owner routes need the owner', async () => {
    const missing = await rt.owner('PATCH', `${consumers('consumers-a')}/00000000-0000-4000-8000-000000000000`, { name: 'x' });
    expect(missing.status).toBe(404);
    const anonymous = await request(`${rt.url}${consumers('consumers-a')}`, 'GET', undefined, {});
    expect(anonymous.status).toBe(401);
    const withKey = await request(`${rt.url}${consumers('consumers-a')}`, 'GET', undefined, { 'x-api-key': a.apiKey });
    expect(withKey.status).toBe(401);
  });
});
