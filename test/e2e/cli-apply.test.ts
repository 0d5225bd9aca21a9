/**
 * `pipegate apply` end to end: a started local runtime and the CLI spawned as real processes
 * against a folder of pipeline files. The steps build on each other as a deploy job's runs
 * would: first apply, an apply with nothing changed, a dry run, a changed file, a failing
 * test, a visibility change, --json, and files that cannot be applied.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestRuntime, type TestRuntime } from '../support/runtime';
import { runCli, type CliRun } from '../support/cli';

let rt: TestRuntime;
let work: string;
let dir: string;
let secretsPath: string;

type Done = CliRun;

/** The CLI against this suite's runtime, in the work dir. */
const pg = (args: string[], env: Record<string, string> = {}): Promise<Done> =>
  runCli(args, { cwd: work, env: { PIPEGATE_URL: rt.url, PIPEGATE_OWNER_TOKEN: rt.ownerToken, ...env } });

const greetingYaml = (greet: string, expectGreet = greet) => `description: Greets someone
nodes:
  name: { type: input, value_type: string, value: world }
  greeting: { type: transform, inputs: [name], expression: "'${greet}, ' & name & '!'" }
  message: { type: output, from: greeting }
tests:
  - name: greets the world by default
    expect: { message: '${expectGreet}, world!' }
  - name: greets Ada
    inputs: { name: Ada }
    expect: { message: '${expectGreet}, Ada!' }
`;

const stats = (hideDebug: boolean) =>
  JSON.stringify({
    description: 'Doubles a number',
    nodes: {
      n: { type: 'input', value_type: 'integer', value: 3 },
      double: { type: 'transform', inputs: ['n'], expression: 'n * 2' },
      doubled: { type: 'output', from: 'double' },
      debug: { type: 'output', from: 'n' },
    },
    publish: { outputs: { debug: { visible: !hideDebug } } },
    tests: [{ name: 'doubles 21', inputs: { n: 21 }, expect: { doubled: 42 } }],
  });

const shoutYml = `nodes:
  text: { type: input, value_type: string, value: hey }
  loud: { type: transform, inputs: [text], expression: "$uppercase(text)" }
  out: { type: output, from: loud }
`;

interface RunView {
  run_id: string;
  version: number;
  status: string;
  created_at: string;
  completed_at: string | null;
}
interface ReadinessView {
  deployment: { deployment_id: string; version: number; published_at: string; outputs: { id: string; visible: boolean }[] } | null;
}

const runsOf = async (id: string) => (await rt.owner<{ runs: RunView[] }>('GET', `/v1/pipelines/${id}/runs?limit=100`)).body.runs;
const readinessOf = async (id: string) => (await rt.owner<ReadinessView>('GET', `/v1/pipelines/${id}/deployment`)).body;
const versionOf = async (id: string) => (await rt.owner<{ version: number }>('GET', `/v1/pipelines/${id}`)).body.version;
const secrets = () =>
  JSON.parse(readFileSync(secretsPath, 'utf8')) as Record<
    string,
    { deployment_id: string; api_key: string; signing_secret: string; execute_url: string }
  >;

/** Executes a deployment as a caller and returns its response data. */
async function execute(id: string, inputs: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const s = secrets()[id];
  if (!s) throw new Error(`no secrets for ${id}`);
  const workflowInput = Object.fromEntries(Object.entries(inputs).map(([k, value]) => [k, { value, value_type: 'RAW' }]));
  const accepted = await rt.caller<{ execution_id: string }>('POST', `/v1/deployments/${s.deployment_id}/executions/`, s.api_key, {
    workflow_input: workflowInput,
  });
  if (accepted.status !== 202) throw new Error(accepted.text);
  await rt.waitForExecution(accepted.body.execution_id, s.api_key);
  const result = await rt.caller<{ response_data: Record<string, { value: unknown }> }>(
    'GET',
    `/v1/deployments/executions/${accepted.body.execution_id}/result/`,
    s.api_key,
  );
  return Object.fromEntries(Object.entries(result.body.response_data).map(([k, v]) => [k, v.value]));
}

const IDS = ['greeting', 'shout', 'stats'];

beforeAll(async () => {
  rt = await startTestRuntime();
  work = mkdtempSync(join(tmpdir(), 'pipegate-apply-e2e-'));
  dir = join(work, 'pipelines');
  mkdirSync(dir);
  writeFileSync(join(dir, 'greeting.yaml'), greetingYaml('Hello'));
  writeFileSync(join(dir, 'stats.json'), stats(true));
  writeFileSync(join(dir, 'shout.yml'), shoutYml);
  writeFileSync(join(dir, 'README.md'), 'not a pipeline file, so not read');
  secretsPath = join(work, 'out', 'secrets.json');
  mkdirSync(join(work, 'out'));
});

afterAll(async () => {
  await rt?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('pipegate apply against a running local runtime', () => {
  it('first apply: plans, tests and publishes every pipeline of a folder, a bounded number at a time, one block each; keys only in the secrets file', async () => {
    // Act
    const done = await pg(['apply', 'pipelines', '--secrets-out', 'out/secrets.json', '--concurrency', '2']);

    // Assess
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    const out = done.stdout;
    expect(out).not.toContain('\x1b[');
    // The plan comes first, then one block per pipeline, then the summary.
    const planAt = out.indexOf('Plan (3 pipelines):');
    expect(planAt).toBe(0);
    expect(out).toMatch(
      / {2}greeting {2}\(pipelines\/greeting\.yaml\)\n {4}push {5}create, version 1\n {4}runs {5}run "greets Ada", "greets the world by default"/,
    );
    expect(out).toMatch(/ {4}publish {2}create if every run passes \(not published yet\)/);
    const blocks = out
      .slice(out.indexOf('\n\n') + 2, out.indexOf('Summary:'))
      .trim()
      .split('\n\n');
    expect(blocks).toHaveLength(3);
    for (const block of blocks) {
      const [header, ...rest] = block.split('\n');
      const id = IDS.find((i) => header?.startsWith(`${i}  (`));
      expect(id).toBeDefined();
      // A block holds only its own pipeline's lines: no other header in between.
      for (const line of rest) expect(line.startsWith('  ')).toBe(true);
      expect(block).toContain('✔ published: version 1 is live');
    }
    expect(blocks.find((b) => b.startsWith('stats'))).toContain('✔ test "doubles 21"\n  ✔ run with the current values\n');
    expect(blocks.find((b) => b.startsWith('stats'))).toContain('hiding output debug');
    expect(blocks.find((b) => b.startsWith('shout'))).toContain('✔ run with the current values');
    expect(out).toMatch(/Summary: 3 pipelines · 3 published · 0 unchanged · 0 failed/);

    // At most two pipelines were under way at any moment: their runs' spans overlap at most twice.
    const spans = await Promise.all(
      IDS.map(async (id) => {
        const runs = await runsOf(id);
        return [
          Math.min(...runs.map((r) => Date.parse(r.created_at))),
          Math.max(...runs.map((r) => Date.parse(r.completed_at ?? ''))),
        ] as const;
      }),
    );
    const overlapAt = (t: number) => spans.filter(([a, b]) => a <= t && t <= b).length;
    expect(Math.max(...spans.map(([a]) => overlapAt(a)))).toBeLessThanOrEqual(2);

    const s = secrets();
    expect(Object.keys(s).sort()).toEqual(IDS);
    expect(statSync(secretsPath).mode & 0o777).toBe(0o600);
    for (const id of IDS) {
      const entry = s[id];
      expect(entry?.api_key).toMatch(/^pgk_/);
      expect(entry?.signing_secret).toMatch(/^whsec_/);
      expect(entry?.execute_url).toBe(`${rt.url}/v1/deployments/${entry?.deployment_id}/executions/`);
      expect(out).toContain(entry?.deployment_id);
      expect(out + done.stderr).not.toContain(entry?.api_key);
      expect(out + done.stderr).not.toContain(entry?.signing_secret);
    }
    // The live APIs work with the saved keys and publish the file's own values.
    expect(await execute('greeting')).toEqual({ message: 'Hello, world!' });
    expect(await execute('stats')).toEqual({ doubled: 6 });
  });

  it('an apply with nothing changed starts no run and publishes nothing (--json)', async () => {
    // Prepare
    const before = await Promise.all(IDS.map(async (id) => ({ runs: (await runsOf(id)).length, r: await readinessOf(id) })));

    // Act
    const done = await pg(['apply', 'pipelines', '--json', '--secrets-out', 'out/secrets.json']);

    // Assess
    expect(done.code).toBe(0);
    expect(done.stderr).toBe('');
    const doc = JSON.parse(done.stdout) as { ok: boolean; dry_run: boolean; pipelines: Record<string, unknown>[] };
    expect(doc.ok).toBe(true);
    expect(doc.dry_run).toBe(false);
    expect(doc.pipelines.map((p) => p.pipeline_id)).toEqual(IDS);
    for (const [i, p] of doc.pipelines.entries()) {
      expect(p).toEqual({
        pipeline_id: IDS[i],
        file: expect.stringMatching(/^pipelines\//),
        ok: true,
        plan: {
          push: { version: 1, created: false },
          tests: { run: false, reason: 'version 1 is live', runs: [] },
          publish: { action: 'none', reason: 'version 1 is live with the visibility the file asks' },
          consumers: null,
        },
        pushed: { version: 1, created: false },
        tests: { run: 0, passed: 0, failed: 0, results: [] },
        published: 'unchanged',
        deployment_id: before[i]?.r.deployment?.deployment_id,
        live_version: 1,
        secrets: null,
        secrets_set: [],
        files: [],
        consumers: null,
        error: null,
      });
    }
    const after = await Promise.all(IDS.map(async (id) => ({ runs: (await runsOf(id)).length, r: await readinessOf(id) })));
    for (const [i, a] of after.entries()) {
      expect(a.runs).toBe(before[i]?.runs);
      expect(a.r.deployment?.published_at).toBe(before[i]?.r.deployment?.published_at);
    }
  });

  it('--dry-run prints the plan for a changed file and changes nothing', async () => {
    // Prepare
    writeFileSync(join(dir, 'greeting.yaml'), greetingYaml('Hi'));
    const runsBefore = (await runsOf('greeting')).length;

    // Act
    const done = await pg(['apply', 'pipelines/greeting.yaml', '--dry-run']);

    // Assess
    expect(done.code).toBe(0);
    expect(done.stdout).toContain('push     new version 2');
    expect(done.stdout).toContain('runs     run "greets Ada", "greets the world by default" (version 2 is new)');
    expect(done.stdout).toContain('publish  update if every run passes (live version 1 → 2)');
    expect(done.stdout).toContain('dry run: nothing was pushed, run or published');
    expect(await versionOf('greeting')).toBe(1);
    expect((await runsOf('greeting')).length).toBe(runsBefore);
  });

  it('a changed file makes a new version, runs its tests and republishes the same deployment', async () => {
    // Prepare
    const runsBefore = (await runsOf('greeting')).length;
    const live = (await readinessOf('greeting')).deployment;
    const keysBefore = secrets();

    // Act
    const done = await pg(['apply', 'pipelines/greeting.yaml', '--secrets-out', 'out/secrets.json']);

    // Assess
    expect(done.code).toBe(0);
    expect(done.stdout).toContain('✔ pushed version 2');
    expect(done.stdout).toContain('✔ test "greets Ada"\n  ✔ test "greets the world by default"');
    expect(done.stdout).toContain('✔ updated: version 2 is live');
    expect((await runsOf('greeting')).length).toBe(runsBefore + 2);
    const now = (await readinessOf('greeting')).deployment;
    expect(now?.deployment_id).toBe(live?.deployment_id);
    expect(now?.version).toBe(2);
    expect(now?.published_at).not.toBe(live?.published_at);
    expect(secrets()).toEqual(keysBefore);
    expect(await execute('greeting', { name: 'Grace' })).toEqual({ message: 'Hi, Grace!' });
  });

  it('a failing test publishes nothing, the live API keeps serving the old version, and apply exits 1 showing expected and actual', async () => {
    // Prepare
    writeFileSync(join(dir, 'greeting.yaml'), greetingYaml('Yo', 'Hi'));
    const live = (await readinessOf('greeting')).deployment;

    // Act
    const human = await pg(['apply', 'pipelines/greeting.yaml']);
    const again = await pg(['apply', 'pipelines/greeting.yaml', '--json']);

    // Assess
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(
      /✖ test "greets Ada" failed {2}\(run [0-9a-f-]{36}\)\n {6}inputs: name="Ada"\n {6}output {3}expected {4}actual\n {6}message {2}"Hi, Ada!" {2}"Yo, Ada!"/,
    );
    expect(human.stdout).toContain('✖ test "greets the world by default" failed');
    expect(human.stdout).toContain('✖ not published: 2 runs failed; the live API keeps serving version 2');
    expect(human.stdout).toMatch(/0 published · 0 unchanged · 1 failed/);
    const now = (await readinessOf('greeting')).deployment;
    expect(now?.version).toBe(2);
    expect(now?.published_at).toBe(live?.published_at);
    expect(await execute('greeting')).toEqual({ message: 'Hi, world!' });

    // The version whose tests failed is tested again rather than published.
    expect(again.code).toBe(1);
    const doc = JSON.parse(again.stdout) as { ok: boolean; pipelines: Record<string, unknown>[] };
    expect(doc.ok).toBe(false);
    expect(doc.pipelines[0]).toMatchObject({
      pipeline_id: 'greeting',
      ok: false,
      pushed: { version: 3, created: false },
      published: 'skipped',
      live_version: 2,
      error: { message: '2 runs of 2 failed; nothing was published' },
      tests: {
        run: 2,
        passed: 0,
        failed: 2,
        results: [
          {
            name: 'greets Ada',
            test: true,
            version: 3,
            status: 'completed',
            passed: false,
            inputs: { name: 'Ada' },
            expected: { message: 'Hi, Ada!' },
            actual: { message: 'Yo, Ada!' },
            mismatches: [{ output: 'message', expected: 'Hi, Ada!', actual: 'Yo, Ada!' }],
            error_message: null,
          },
          expect.objectContaining({ name: 'greets the world by default', passed: false }),
        ],
      },
    });
  });

  it('a visibility change alone publishes without a run', async () => {
    // Prepare
    writeFileSync(join(dir, 'stats.json'), stats(false));
    const runsBefore = (await runsOf('stats')).length;

    // Act
    const done = await pg(['apply', 'pipelines/stats.json']);

    // Assess
    expect(done.code).toBe(0);
    expect(done.stdout).toContain('publish  update (show output debug)');
    expect(done.stdout).toContain('· no runs: version 1 is live and its latest run succeeded; only the visibility changes');
    expect((await runsOf('stats')).length).toBe(runsBefore);
    expect((await readinessOf('stats')).deployment?.outputs).toEqual([
      { id: 'doubled', visible: true, value_type: 'RAW' },
      { id: 'debug', visible: true, value_type: 'RAW' },
    ]);
    expect(await execute('stats')).toEqual({ doubled: 6, debug: 3 });
  });

  it('warns on a first publish without --secrets-out, and prints the key nowhere', async () => {
    // Prepare
    writeFileSync(join(work, 'solo.yml'), shoutYml);

    // Act
    const done = await pg(['apply', 'solo.yml']);

    // Assess
    expect(done.code).toBe(0);
    expect(done.stderr).toContain('warning: the API key and signing secret of solo were not saved (no --secrets-out)');
    expect(done.stderr).toContain('pipegate keys rotate solo');
    expect((done.stdout + done.stderr).match(/not saved/g)).toHaveLength(1);
    expect(done.stdout + done.stderr).not.toMatch(/pgk_|whsec_/);
    expect((await readinessOf('solo')).deployment?.version).toBe(1);
  });

  it('refuses files it cannot apply, listing every problem with its path, and changes nothing (exit 2); refused credentials stop it at once', async () => {
    // Prepare
    const bad = join(work, 'bad');
    mkdirSync(bad);
    writeFileSync(join(bad, 'good.yaml'), shoutYml);
    writeFileSync(
      join(bad, 'typos.json'),
      JSON.stringify({
        nodes: { n: { type: 'input', value_type: 'integer', value: 1 }, o: { type: 'output', from: 'n' } },
        publish: { outputs: { p: { visible: false } } },
        tests: [{ name: 't', inputs: { n: 'one' }, expect: { q: 1 } }],
      }),
    );
    writeFileSync(join(bad, 'package.json'), '{"name": "app"}');

    // Act
    const [human, json, missing, refused] = await Promise.all([
      pg(['apply', 'bad']),
      pg(['apply', 'bad', '--json']),
      pg(['apply', 'nowhere']),
      pg(['apply', 'bad/good.yaml', '--token', 'pgo_wrong']),
    ]);

    // Assess
    expect(human.code).toBe(2);
    expect(human.stdout).toBe('');
    expect(human.stderr).toContain('error: 2 pipeline files cannot be applied; nothing was changed');
    expect(human.stderr).toMatch(/bad\/typos\.json \(3 problems\):\n {4}publish\.outputs\.p {2}no output node "p" \(outputs: o\)/);
    expect(human.stderr).toMatch(/tests\[0\]\.inputs\.n {2}must be a whole number \(input n is integer\), got the string "one"/);
    expect(human.stderr).toMatch(/tests\[0\]\.expect\.q/);
    expect(human.stderr).toMatch(
      /bad\/package\.json \(2 problems\):\n {4}name {3}unknown key; a pipeline file holds only description, retry_interrupted, timeout_ms, nodes, publish, tests, secrets, consumers\n {4}nodes {2}is required/,
    );
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, files: [{ file: 'bad/package.json' }, { file: 'bad/typos.json' }] });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file or directory: nowhere');
    // Credentials refused: one error with its hint, not one per pipeline.
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('error: Unauthorized');
    expect(refused.stderr).toContain('owner credential was refused');
    const good = await rt.owner('GET', '/v1/pipelines/good');
    expect(good.status).toBe(404);
  });
});

describe('apply --dry-run without secret values', () => {
  it('plans, says which secrets are unset, and exits 0; a real apply still refuses', async () => {
    // Prepare: a file naming a secret whose variable this job does not have (a merge request's preview).
    writeFileSync(
      join(dir, 'tokened.json'),
      JSON.stringify({
        description: 'Needs a token',
        secrets: { PREVIEW_TOKEN: { from_env: 'PREVIEW_TOKEN_VALUE' } },
        nodes: { n: { type: 'input', value_type: 'integer', value: 3 }, out: { type: 'output', from: 'n' } },
      }),
    );

    // Act
    const dry = await pg(['apply', 'pipelines/tokened.json', '--dry-run']);
    const json = await pg(['apply', 'pipelines/tokened.json', '--dry-run', '--json']);
    const real = await pg(['apply', 'pipelines/tokened.json']);

    // Assess
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('secrets  set PREVIEW_TOKEN from $PREVIEW_TOKEN_VALUE');
    expect(dry.stdout).toContain(
      '1 secret not set here (an apply needs it; the plan does not):\n  pipelines/tokened.json: secrets.PREVIEW_TOKEN reads $PREVIEW_TOKEN_VALUE, which is not set',
    );
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { secrets_unset: unknown }).secrets_unset).toEqual([
      { file: 'pipelines/tokened.json', secret: 'PREVIEW_TOKEN', from_env: 'PREVIEW_TOKEN_VALUE' },
    ]);
    expect(real.code).toBe(2);
    expect(real.stderr).toContain('secrets.PREVIEW_TOKEN reads $PREVIEW_TOKEN_VALUE, which is not set');
  });
});
