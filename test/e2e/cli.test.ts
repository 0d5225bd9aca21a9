/**
 * The `pipegate` CLI end to end: a started local runtime and the CLI spawned as real processes
 * (`node bin/pipegate.js …`, stdin closed), for every command, its human and --json output,
 * its exit codes and its errors. Independent commands run side by side to keep the file fast.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startRuntime, type Runtime } from '../../lib/local/runtime';
import { runCli, type CliRun } from '../support/cli';

const ROOT = join(__dirname, '..', '..');
const FIXTURES = join(ROOT, 'test', 'fixtures', 'cli');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let rt: Runtime;
let dataDir: string;
let emptyDir: string;

type Done = CliRun;

/** The CLI against this suite's runtime; only the variables given (plus PATH, HOME, TMPDIR) reach it. */
const pg = (args: string[], opts: { env?: Record<string, string | undefined>; cwd?: string } = {}): Promise<Done> =>
  runCli(args, { cwd: opts.cwd ?? FIXTURES, env: { PIPEGATE_URL: rt.url, PIPEGATE_OWNER_TOKEN: rt.ownerToken, ...opts.env } });

const json = <T = Record<string, unknown>>(d: Done): T => {
  try {
    return JSON.parse(d.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${d.code}):\n${d.stdout}\nstderr:\n${d.stderr}`);
  }
};

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'pipegate-cli-e2e-'));
  emptyDir = mkdtempSync(join(tmpdir(), 'pipegate-cli-empty-'));
  // No ownerToken option: the runtime writes one into the data dir, which the CLI can read.
  rt = await startRuntime({ port: 0, dataDir, inMemory: true, log: false, env: { ...process.env, PIPEGATE_OWNER_TOKEN: undefined } });
});

afterAll(async () => {
  await rt?.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(emptyDir, { recursive: true, force: true });
});

// State carried from one step to the next, as a user would carry it.
const live: { greeting?: { deployment: string; key: string }; counter?: { deployment: string; key: string }; curl?: string } = {};

describe('pipegate CLI against a running local runtime', () => {
  it('explains what is wrong before anything is pushed', async () => {
    // Prepare
    const port = await closedPort();

    // Act
    const [empty, unreachable, unreachableJson, noToken, fromDataDir, badToken, unknown, invalid, missing, badUsage, foundByDataDir] =
      await Promise.all([
        pg(['list', '--json']),
        pg(['list'], { env: { PIPEGATE_URL: `http://127.0.0.1:${port}` } }),
        pg(['status', 'greeting', '--json', '--url', `http://127.0.0.1:${port}`]),
        pg(['list'], { env: { PIPEGATE_OWNER_TOKEN: undefined }, cwd: emptyDir }),
        pg(['list', '--json'], { env: { PIPEGATE_OWNER_TOKEN: undefined, PIPEGATE_DATA_DIR: dataDir }, cwd: emptyDir }),
        pg(['list'], { env: { PIPEGATE_OWNER_TOKEN: 'pgo_wrong' } }),
        pg(['status', 'ghost']),
        pg(['push', 'invalid.json']),
        pg(['push', 'missing.json']),
        pg(['frobnicate']),
        // No URL at all: the runtime (on a port picked at random) recorded its URL in the data dir.
        pg(['list', '--json'], {
          env: { PIPEGATE_URL: undefined, PIPEGATE_OWNER_TOKEN: undefined, PIPEGATE_DATA_DIR: dataDir },
          cwd: emptyDir,
        }),
      ]);

    // Assess
    expect(empty.code).toBe(0);
    expect(json(empty)).toEqual({ pipelines: [] });
    expect(empty.stderr).toBe('');

    expect(unreachable.code).toBe(1);
    expect(unreachable.stdout).toBe('');
    expect(unreachable.stderr).toContain(`cannot reach pipegate at http://127.0.0.1:${port} — is it running? (npm start)`);
    expect(unreachableJson.code).toBe(1);
    expect(json(unreachableJson).error).toContain('cannot reach pipegate');

    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('no owner token');
    expect(noToken.stderr).toContain(join(emptyDir, '.pipegate', 'owner-token'));
    expect(fromDataDir.code).toBe(0);
    expect(json(fromDataDir)).toEqual({ pipelines: [] });
    expect(new URL(rt.url).port).not.toBe('3000');
    expect([foundByDataDir.code, json(foundByDataDir)]).toEqual([0, { pipelines: [] }]);

    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toContain('error: Unauthorized');
    expect(badToken.stderr).toContain('owner credential was refused');
    expect(badToken.stderr).toContain("owner routes need 'Authorization: Bearer <owner token>'");

    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('Pipeline Not Found');
    expect(unknown.stderr).toContain('pipegate list');

    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toBe('');
    expect(invalid.stderr).toMatch(/error: .*\(\d+ problems\):/);
    // Every problem on its own line, with its path.
    for (const node of ['nodes.name', 'nodes.greeting', 'nodes.weird'])
      expect(invalid.stderr).toMatch(new RegExp(`^  ${node.replace('.', '\\.')}\\S*\\s{2,}\\S`, 'm'));

    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file: missing.json');
    expect(badUsage.code).toBe(2);
    expect(badUsage.stderr).toContain("unknown command 'frobnicate'");
  });

  it('pushes JSON and YAML; the same content is the same version', async () => {
    // Act
    const first = await pg(['push', 'greeting.json']);
    const [yaml, counter, failing] = await Promise.all([
      pg(['push', 'greeting.yaml', '--json']),
      pg(['push', 'counter.json', '--json']),
      pg(['push', 'failing.json', '--id', 'broken-output']),
    ]);
    const list = await pg(['list']);

    // Assess
    expect(first.code).toBe(0);
    expect(first.stdout).toBe('✔ pushed greeting version 1\n');
    expect(first.stderr).toContain('next: pipegate run greeting');
    expect(first.stderr).toContain(
      'runs on Express: its nodes end within 0 ms one after another, which fits an Express execution (170000 ms)',
    );
    expect(json(yaml)).toMatchObject({ pipeline_id: 'greeting', version: 1, created: false, workflow: 'express' });
    expect(json(counter)).toMatchObject({ pipeline_id: 'counter', version: 1, created: true, workflow: 'express' });
    expect(failing.stdout).toBe('✔ pushed broken-output version 1\n');
    expect(list.code).toBe(0);
    const rows = list.stdout.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^PIPELINE\s+VERSION\s+.*DESCRIPTION$/);
    expect(rows.slice(1).map((r) => r.split(/\s+/)[0])).toEqual(['broken-output', 'counter', 'greeting']);
    expect(rows.find((r) => r.startsWith('greeting'))).toMatch(/^greeting\s+1\s+.*Greets someone$/);
  });

  it('refuses to publish before a successful run, and says what to do', async () => {
    // Act
    const [status, publish] = await Promise.all([pg(['status', 'greeting']), pg(['publish', 'greeting'])]);

    // Assess
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/state\s+run required/);
    expect(status.stdout).toContain('next: run it until a run succeeds: pipegate run greeting');
    expect(publish.code).toBe(1);
    expect(publish.stderr).toContain('To deploy the workflow, there must be at least one successful execution.');
  });

  it('runs pipelines: typed inputs, outputs, failures, --no-wait and bad inputs', async () => {
    // Act
    const [greet, counter, failed, noWait, unknownInput, badValue, badSyntax] = await Promise.all([
      pg(['run', 'greeting', '--input', 'name=Ada']),
      pg(['run', 'counter', '-i', 'times=3', '-i', 'loud=true', '-i', 'scale=0.5', '--json']),
      pg(['run', 'broken-output']),
      pg(['run', 'broken-output', '--no-wait', '--json']),
      pg(['run', 'greeting', '-i', 'nme=Ada']),
      pg(['run', 'counter', '-i', 'times=three']),
      pg(['run', 'greeting', '-i', 'name']),
    ]);

    // Assess
    expect(greet.code).toBe(0);
    expect(greet.stdout).toMatch(
      /^✔ greeting version 1 completed in \d+(\.\d+)? m?s {2}\(run [0-9a-f-]{36}\)\n {2}message {2}Hello, Ada!\n$/,
    );
    expect(greet.stderr).toMatch(/run [0-9a-f-]{36} of greeting version 1 started/);

    expect(counter.code).toBe(0);
    const run = json(counter);
    expect(run).toMatchObject({
      pipeline_id: 'counter',
      version: 1,
      status: 'completed',
      inputs: { word: 'hi', times: 3, loud: true, scale: 0.5 },
    });
    expect(run.outputs).toEqual({ says: 'HI HI HI', size: 1.5 });
    expect(counter.stderr).not.toContain('✔');

    expect(failed.code).toBe(1);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toMatch(/✖ run [0-9a-f-]{36} of broken-output version 1 failed: \S/);

    expect(noWait.code).toBe(0);
    expect(json(noWait)).toMatchObject({ version: 1, status: 'pending', run_id: expect.stringMatching(UUID) });

    expect(unknownInput.code).toBe(2);
    expect(unknownInput.stderr).toContain('there is no input "nme"');
    expect(unknownInput.stderr).toContain('name (string)');
    expect(badValue.code).toBe(2);
    expect(badValue.stderr).toContain('times is an integer input');
    expect(badSyntax.code).toBe(2);
    expect(badSyntax.stderr).toContain('expected id=value');
  });

  it('lists runs and shows readiness once a run succeeded', async () => {
    // Act
    const [runs, runsJson, status] = await Promise.all([
      pg(['runs', 'greeting']),
      pg(['runs', 'broken-output', '--json']),
      pg(['status', 'greeting', '--json']),
    ]);

    // Assess
    expect(runs.code).toBe(0);
    expect(runs.stdout).toMatch(/^RUN\s+VERSION\s+STATUS/);
    expect(runs.stdout).toMatch(/\n[0-9a-f-]{36}\s+1\s+completed\s/);
    const list = json<{ runs: { status: string }[]; next_cursor: string | null }>(runsJson);
    expect(list.runs.length).toBeGreaterThanOrEqual(1);
    expect(list.runs.some((r) => r.status === 'failed')).toBe(true);
    expect(json(status)).toMatchObject({ pipeline_id: 'greeting', state: 'not_published', publishable: true, deployment: null });
  });

  it('publishes: secrets once with a working curl command, hidden outputs, updates without secrets', async () => {
    // Act
    const [greet, counter] = await Promise.all([
      pg(['publish', 'greeting', '--json']),
      pg(['publish', 'counter', '--hide-output', 'size', '--hide-input', 'scale']),
    ]);

    // Assess
    expect(greet.code).toBe(0);
    const g = json(greet);
    expect(g).toMatchObject({
      version: 1,
      deployment_id: expect.stringMatching(UUID),
      api_key: expect.any(String),
      signing_secret: expect.any(String),
    });
    expect(g.execute_url).toBe(`${rt.url}/v1/deployments/${String(g.deployment_id)}/executions/`);
    live.greeting = { deployment: String(g.deployment_id), key: String(g.api_key) };

    expect(counter.code).toBe(0);
    const out = counter.stdout;
    expect(out).toContain('✔ published counter version 1');
    const deployment = /deployment\s+([0-9a-f-]{36})/.exec(out)?.[1];
    const key = /API key\s+(\S+)/.exec(out)?.[1];
    expect(deployment).toMatch(UUID);
    expect(out).toMatch(/signing secret\s+\S+/);
    expect(out).toContain('Store these now');
    expect(out).toContain('size (hidden)');
    expect(out).toContain('scale: float = 0.5 (hidden)');
    live.counter = { deployment: deployment ?? '', key: key ?? '' };
    // The block printed under "Try it": the key's export, then the curl command from the
    // deployment's own document.
    const block = out.slice(out.indexOf('export PIPEGATE_API_KEY='));
    expect(block).toContain(`export PIPEGATE_API_KEY=${key ?? ''}`);
    expect(block).toContain('curl -sS -X POST');
    expect(block).not.toContain('scale');
    live.curl = block;

    // The ready-to-paste command works as printed (asynchronously: the runtime answering it
    // lives in this process).
    const pasted = await promisify(execFile)('sh', ['-c', live.curl], { encoding: 'utf8' });
    expect(JSON.parse(pasted.stdout)).toMatchObject({ status: 'queued', deployment_id: deployment });

    // A second publish updates the same deployment and shows no secrets.
    const again = await pg(['publish', 'greeting']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('✔ updated greeting version 1');
    expect(again.stdout).toContain(`deployment   ${live.greeting.deployment}`);
    expect(again.stdout).not.toContain('Store these now');
    expect(again.stdout).toContain('"X-API-Key: $PIPEGATE_API_KEY"');
  });

  it('executes a deployment as a caller and prints the result', async () => {
    // Prepare
    const g = live.greeting ?? { deployment: '', key: '' };
    const c = live.counter ?? { deployment: '', key: '' };

    // Act
    const [waited, queued, counter, wrongKey, hiddenInput, noKey, status] = await Promise.all([
      pg(['execute', g.deployment, '--key', g.key, '-i', 'name=Grace', '--wait']),
      pg(['execute', g.deployment, '--json', '--idempotency-key', 'job-1'], { env: { PIPEGATE_API_KEY: g.key } }),
      pg(['execute', c.deployment, '--key', c.key, '-i', 'times=2', '--wait', '--json']),
      pg(['execute', g.deployment, '--key', `${g.key.slice(0, -4)}AAAA`, '-i', 'name=x']),
      pg(['execute', c.deployment, '--key', c.key, '-i', 'scale=2']),
      pg(['execute', g.deployment]),
      pg(['status', 'greeting']),
    ]);

    // Assess
    expect(waited.code).toBe(0);
    expect(waited.stdout).toMatch(/^✔ execution [0-9a-f-]{36} completed in .+\n {2}message {2}Hello, Grace!\n$/);

    expect(queued.code).toBe(0);
    const accepted = json(queued);
    expect(accepted).toMatchObject({ status: 'queued', deployment_id: g.deployment, execution_id: expect.stringMatching(UUID) });
    expect(accepted.status_url).toBe(`${rt.url}/v1/deployments/executions/${String(accepted.execution_id)}/status/`);
    const repeat = await pg(['execute', g.deployment, '--json', '--idempotency-key', 'job-1'], { env: { PIPEGATE_API_KEY: g.key } });
    expect(json(repeat).execution_id).toBe(accepted.execution_id);

    expect(counter.code).toBe(0);
    const result = json(counter);
    expect(result).toMatchObject({ status: 'completed', deployment_id: c.deployment, output_artifacts: [], error_message: null });
    // Published defaults are the values of the successful run (loud=true); size is hidden.
    expect(result.response_data).toEqual({ says: { value: 'HI HI', value_type: 'RAW' } });

    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toContain('the API key was refused');
    expect(hiddenInput.code).toBe(2);
    expect(hiddenInput.stderr).toContain('there is no input "scale"');
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('--key');

    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/state\s+live/);
    expect(status.stdout).toContain(`deployment    ${g.deployment}`);
    expect(status.stdout).toContain(`execute URL   ${rt.url}/v1/deployments/${g.deployment}/executions/`);
  });

  it('rotates keys: the old key stops at once, a grace period keeps it', async () => {
    // Prepare
    const g = live.greeting ?? { deployment: '', key: '' };

    // Act
    const rotated = await pg(['keys', 'rotate', 'greeting', '--json']);
    const newKey = String(json(rotated).api_key);
    const [oldKey, withNew, secret] = await Promise.all([
      pg(['execute', g.deployment, '--key', g.key]),
      pg(['execute', g.deployment, '--key', newKey, '--wait']),
      pg(['keys', 'rotate', 'greeting', '--signing-secret', '--grace', '60']),
    ]);

    // Assess
    expect(rotated.code).toBe(0);
    expect(newKey).not.toBe(g.key);
    expect(oldKey.code).toBe(1);
    expect(oldKey.stderr).toContain('Unauthorized');
    expect(withNew.code).toBe(0);
    expect(secret.code).toBe(0);
    expect(secret.stdout).toMatch(/signing secret\s+\S+/);
    expect(secret.stdout).toContain('keeps working for 60 s');
    live.greeting = { deployment: g.deployment, key: newKey };
  });

  it('deletes only with --yes, and then the API answers 404', async () => {
    // Prepare
    const g = live.greeting ?? { deployment: '', key: '' };

    // Act
    const refused = await pg(['delete', 'greeting']);
    const deleted = await pg(['delete', 'greeting', '--yes', '--json']);
    const [after, again, status] = await Promise.all([
      pg(['execute', g.deployment, '--key', g.key]),
      pg(['delete', 'greeting', '--yes']),
      pg(['status', 'greeting', '--json']),
    ]);

    // Assess
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('cannot be undone');
    expect(refused.stderr).toContain('pipegate delete greeting --yes');
    expect(deleted.code).toBe(0);
    expect(json(deleted)).toEqual({ pipeline_id: 'greeting', deployment_id: g.deployment, deleted: true });
    expect(after.code).toBe(1);
    expect(after.stderr).toContain('Deployment Not Found');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('greeting has no deployment');
    expect(json(status)).toMatchObject({ deployment: null });
  });
});
