/**
 * The owner story of issue 26 through the CLI: a free-tier consumer (10 executions a day, one
 * request a second) and a paid one, both calling the API with their own keys; the free one
 * meets readable 429s, revoking it leaves the paid one working, and `pipegate usage` tells
 * them apart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../support/cli';
import { greeting, startTestRuntime, type Published, type Reply, type TestRuntime } from '../support/runtime';

let rt: TestRuntime;
let dep: Published;
let cwd: string;
const pg = (args: string[]) => runCli(args, { cwd, env: { PIPEGATE_URL: rt.url, PIPEGATE_OWNER_TOKEN: rt.ownerToken, NO_COLOR: '1' } });

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'pipegate-cli-consumers-'));
  rt = await startTestRuntime();
  dep = await rt.publishPipeline('tiers', greeting);
});
afterAll(async () => {
  await rt?.cleanup();
  rmSync(cwd, { recursive: true, force: true });
});

test('free and paid consumers from the CLI: limits, readable refusals, revoke, usage by consumer', async () => {
  const free = await pg([
    '--json',
    'consumers',
    'create',
    'tiers',
    '--name',
    'free',
    '--quota',
    '10/day',
    '--rate',
    '1/1',
    '--meta',
    'plan=free',
  ]);
  expect(free.code).toBe(0);
  const freeBody = JSON.parse(free.stdout) as {
    consumer_id: string;
    api_key: string;
    rate_limit: unknown;
    quota: unknown;
    metadata: unknown;
  };
  expect(freeBody).toMatchObject({
    rate_limit: { requests: 1, per_seconds: 1 },
    quota: { executions: 10, per: 'day' },
    metadata: { plan: 'free' },
  });
  const paid = await pg(['consumers', 'create', 'tiers', '--name', 'paid']);
  expect(paid.code).toBe(0);
  expect(paid.stdout).toMatch(/shown only this once/);
  const paidKey = /API key\s+(pgk_\S+)/.exec(paid.stdout)?.[1] ?? '';
  expect(paidKey).toHaveLength(106);

  // Two requests in the same second from the free key: the second is refused, readably.
  let refused: Reply | undefined;
  for (let i = 0; i < 5 && refused === undefined; i++) {
    const answers = await Promise.all(
      [0, 1].map(() => rt.caller('POST', `/v1/deployments/${dep.deploymentId}/executions`, freeBody.api_key, {})),
    );
    refused = answers.find((r) => r.status === 429);
  }
  expect(refused?.body).toMatchObject({ error: 'Too Many Requests', limit: 'rate' });
  expect(refused?.body.detail).toMatch(/1 request per 1 second/);
  expect(refused?.headers.get('retry-after')).toBe('1');
  expect((await rt.caller('POST', `/v1/deployments/${dep.deploymentId}/executions`, paidKey, {})).status).toBe(202);

  const listed = await pg(['consumers', 'list', 'tiers']);
  expect(listed.code).toBe(0);
  expect(listed.stdout).toMatch(/free .*active/);
  expect(listed.stdout).not.toContain(freeBody.api_key);

  const changed = await pg(['consumers', 'update', 'tiers', freeBody.consumer_id, '--rate', 'none']);
  expect([changed.code, changed.stdout]).toEqual([0, expect.stringMatching(/rate —, quota 10\/day/)]);
  const bad = await pg(['consumers', 'update', 'tiers', freeBody.consumer_id, '--quota', '10/week']);
  expect(bad.code).toBe(2);

  expect((await pg(['consumers', 'revoke', 'tiers', freeBody.consumer_id])).code).toBe(0);
  const after = await rt.caller('POST', `/v1/deployments/${dep.deploymentId}/executions`, freeBody.api_key, {});
  expect([after.status, after.body.reason]).toEqual([401, 'consumer_revoked']);
  expect((await rt.caller('POST', `/v1/deployments/${dep.deploymentId}/executions`, paidKey, {})).status).toBe(202);

  const rotated = await pg([
    '--json',
    'consumers',
    'rotate',
    'tiers',
    (
      JSON.parse((await pg(['--json', 'consumers', 'list', 'tiers'])).stdout) as { consumers: { name: string; consumer_id: string }[] }
    ).consumers.find((c) => c.name === 'paid')?.consumer_id ?? '',
    '--grace',
    '60',
  ]);
  expect(rotated.code).toBe(0);
  expect((await rt.caller('POST', `/v1/deployments/${dep.deploymentId}/executions`, paidKey, {})).status).toBe(202);

  const own = await pg(['--json', 'keys', 'limits', 'tiers', '--quota', '1000/day']);
  expect([own.code, JSON.parse(own.stdout)]).toEqual([
    0,
    expect.objectContaining({ rate_limit: null, quota: { executions: 1000, per: 'day' } }),
  ]);
  expect((await pg(['keys', 'limits', 'tiers'])).stdout).toMatch(/rate —, quota —/);

  const usage = await pg(['usage', 'tiers']);
  expect(usage.code).toBe(0);
  expect(usage.stdout).toMatch(/CONSUMER \(LAST DAY\)/);
  expect(usage.stdout).toMatch(/free .* [1-9]\d* +[1-9]\d* +0 /);
  expect(usage.stdout).toMatch(/paid .* 3 +0 +0 /);
});
