/**
 * Consumers declared in pipeline files, applied by `pipegate apply` against a started local
 * runtime with the CLI spawned as a deploy job would: keys only in `--secrets-out`, limits that
 * callers meet, changes by name, unnamed consumers left alone, and a plan that says all of it.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestRuntime, type TestRuntime } from '../support/runtime';
import { runCli, type CliRun } from '../support/cli';

let rt: TestRuntime;
let work: string;

const pg = (args: string[]): Promise<CliRun> =>
  runCli(args, { cwd: work, env: { PIPEGATE_URL: rt.url, PIPEGATE_OWNER_TOKEN: rt.ownerToken } });

const file = (consumers: string) => `description: Greets someone
nodes:
  name: { type: input, value_type: string, value: world }
  greeting: { type: transform, inputs: [name], expression: "'Hello, ' & name & '!'" }
  message: { type: output, from: greeting }
consumers:
${consumers}`;

interface Saved {
  deployment_id: string;
  api_key: string;
  consumers?: Record<string, { deployment_id: string; consumer_id: string; api_key: string }>;
}
const saved = (): Record<string, Saved> => JSON.parse(readFileSync(join(work, 'secrets.json'), 'utf8')) as Record<string, Saved>;

interface ConsumerView {
  consumer_id: string;
  name: string;
  status: string;
  rate_limit: { requests: number; per_seconds: number } | null;
  quota: { executions: number; per: string } | null;
  metadata: Record<string, string>;
}
const consumersOf = async () =>
  (await rt.owner<{ consumers: ConsumerView[] }>('GET', '/v1/pipelines/shop/deployment/consumers')).body.consumers;

const submit = (deploymentId: string, key: string) =>
  rt.caller<{ execution_id?: string; detail?: string; limit?: string }>('POST', `/v1/deployments/${deploymentId}/executions/`, key, {
    workflow_input: {},
  });

beforeAll(async () => {
  rt = await startTestRuntime();
  work = mkdtempSync(join(tmpdir(), 'pipegate-apply-consumers-'));
  mkdirSync(join(work, 'pipelines'));
});

afterAll(async () => {
  await rt?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('apply with consumers', () => {
  it('refuses to create keys it could not save, before changing anything', async () => {
    writeFileSync(join(work, 'pipelines', 'shop.yaml'), file('  free: { quota: { executions: 1, per: day } }\n'));
    const done = await pg(['apply', 'pipelines']);
    expect(done.code).toBe(2);
    expect(done.stdout).toContain('consumers create free (after publishing)');
    expect(done.stderr).toMatch(
      /1 consumer would get a new key \(shop: free\), and keys are written only to --secrets-out; nothing was changed/,
    );
    expect((await rt.owner('GET', '/v1/pipelines/shop')).status).toBe(404);
  });

  it('publishes, creates each consumer with its limits, and writes the keys only to --secrets-out', async () => {
    writeFileSync(
      join(work, 'pipelines', 'shop.yaml'),
      file(`  free: { rate_limit: { requests: 100, per_seconds: 60 }, quota: { executions: 1, per: day } }
  paid: { metadata: { plan: pro } }
`),
    );
    const done = await pg(['apply', 'pipelines', '--secrets-out', 'secrets.json']);
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(done.stdout).toContain('consumers create free, paid (after publishing)');
    expect(done.stdout).toMatch(/✔ consumer free: created, key written to .*secrets\.json/);
    const s = saved().shop;
    const free = s?.consumers?.free;
    const paid = s?.consumers?.paid;
    expect(free?.api_key).toBeDefined();
    expect(paid?.deployment_id).toBe(s?.deployment_id);
    for (const key of [free?.api_key, paid?.api_key, s?.api_key]) expect(done.stdout + done.stderr).not.toContain(key);

    const listed = await consumersOf();
    expect(listed.map((c) => [c.name, c.quota, c.rate_limit, c.metadata])).toEqual([
      ['free', { executions: 1, per: 'day' }, { requests: 100, per_seconds: 60 }, {}],
      ['paid', null, null, { plan: 'pro' }],
    ]);
    // The limits hold for the callers.
    const dep = s?.deployment_id ?? '';
    expect((await submit(dep, free?.api_key ?? '')).status).toBe(202);
    const refused = await submit(dep, free?.api_key ?? '');
    expect(refused.status).toBe(429);
    expect(refused.body.limit).toBe('quota');
    expect((await submit(dep, paid?.api_key ?? '')).status).toBe(202);
  });

  it('a second apply with the same file changes nothing and makes no key', async () => {
    const before = readFileSync(join(work, 'secrets.json'), 'utf8');
    const done = await pg(['apply', 'pipelines', '--secrets-out', 'secrets.json', '--json']);
    expect(done.code).toBe(0);
    const report = JSON.parse(done.stdout) as { pipelines: { consumers: unknown; plan: { consumers: unknown } }[] };
    expect(report.pipelines[0]?.plan.consumers).toEqual({ create: [], update: [], unchanged: ['free', 'paid'], not_in_file: [] });
    expect(report.pipelines[0]?.consumers).toEqual({ created: [], updated: [], unchanged: ['free', 'paid'], not_in_file: [] });
    expect(readFileSync(join(work, 'secrets.json'), 'utf8')).toBe(before);
  });

  it('changes limits by name, keeps the keys, and leaves consumers the file does not name', async () => {
    const manual = await rt.owner<{ consumer_id: string }>('POST', '/v1/pipelines/shop/deployment/consumers', { name: 'made by hand' });
    expect(manual.status).toBe(201);
    writeFileSync(
      join(work, 'pipelines', 'shop.yaml'),
      file(`  free: { quota: { executions: 3, per: day } }
  paid: { metadata: { plan: pro } }
`),
    );
    const dry = await pg(['apply', 'pipelines', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('consumers update free (rate_limit, quota) · unchanged paid · 1 not in the file left as it is');

    const done = await pg(['apply', 'pipelines', '--secrets-out', 'secrets.json']);
    expect(done.code).toBe(0);
    expect(done.stdout).toContain('✔ consumer free: updated rate_limit, quota');
    expect(done.stdout).toContain('consumers not in the file, left as they are: made by hand');
    const listed = await consumersOf();
    expect(listed.find((c) => c.name === 'free')).toMatchObject({ rate_limit: null, quota: { executions: 3, per: 'day' } });
    expect(listed.find((c) => c.name === 'made by hand')?.status).toBe('active');
    // The same key works with its new quota: one spent today, two more allowed.
    const s = saved().shop;
    expect((await submit(s?.deployment_id ?? '', s?.consumers?.free?.api_key ?? '')).status).toBe(202);
  });

  it('lists a bad consumers block with every path and changes nothing', async () => {
    writeFileSync(join(work, 'pipelines', 'shop.yaml'), file(`  free: { quota: { executions: 0, per: week }, colour: red }\n`));
    const done = await pg(['apply', 'pipelines', '--secrets-out', 'secrets.json']);
    expect(done.code).toBe(2);
    expect(done.stderr).toContain('consumers.free.quota.executions');
    expect(done.stderr).toContain('consumers.free.quota.per');
    expect(done.stderr).toContain('consumers.free.colour');
    expect((await consumersOf()).find((c) => c.name === 'free')?.quota).toEqual({ executions: 3, per: 'day' });
  });
});
