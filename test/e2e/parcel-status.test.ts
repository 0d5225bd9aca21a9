/**
 * examples/parcel-status.json end to end, as an owner and a caller would use it: the tracking
 * server that wants a bearer token (examples/servers/parcel-tracking.mjs), `pipegate apply`
 * setting the token as an owner secret from the environment, testing and publishing, a caller
 * executing with a REFERENCE input through the API and through `pipegate execute`, and
 * `pipegate secrets set|list|delete` with the value piped in.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestRuntime, waitUntil, type TestRuntime } from '../support/runtime';
import { runCli, type CliRun } from '../support/cli';

const ROOT = join(__dirname, '..', '..');
const TOKEN = `trk_${Math.random().toString(36).slice(2)}${Date.now()}`;

let rt: TestRuntime;
let work: string;
let server: ChildProcess;
let serverUrl: string;
let serverLog = '';

type Done = CliRun;

/** The CLI against this suite's runtime; `stdin` is piped in when given, else closed. */
const pg = (args: string[], opts: { env?: Record<string, string>; stdin?: string } = {}): Promise<Done> =>
  runCli(args, { cwd: work, env: { PIPEGATE_URL: rt.url, PIPEGATE_OWNER_TOKEN: rt.ownerToken, ...opts.env }, stdin: opts.stdin });

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'pipegate-parcel-'));
  rt = await startTestRuntime();
  server = spawn(process.execPath, [join(ROOT, 'examples', 'servers', 'parcel-tracking.mjs')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', TRACKING_TOKEN: TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout?.on('data', (c: Buffer) => (serverLog += c.toString()));
  server.stderr?.on('data', (c: Buffer) => (serverLog += c.toString()));
  serverUrl = await waitUntil(
    async () => /listening on (http:\/\/\S+)/.exec(serverLog)?.[1] ?? '',
    (url) => url !== '',
  );
  // The example as it is, its url on the port the server took.
  const example = JSON.parse(readFileSync(join(ROOT, 'examples', 'parcel-status.json'), 'utf8')) as {
    nodes: Record<string, Record<string, unknown>>;
  };
  example.nodes.track = { ...example.nodes.track, url: `${serverUrl}/track` };
  writeFileSync(join(work, 'parcel-status.json'), JSON.stringify(example, null, 2));
});

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  await rt?.cleanup();
  rmSync(work, { recursive: true, force: true });
});

describe('examples/parcel-status.json', () => {
  let deploymentId: string;
  let apiKey: string;

  it('names its token only as a secret and takes it from the environment', () => {
    const text = readFileSync(join(ROOT, 'examples', 'parcel-status.json'), 'utf8');
    expect(text).toContain('Bearer {{secrets.TRACKING_TOKEN}}');
    expect(JSON.parse(text).secrets).toEqual({ TRACKING_TOKEN: { from_env: 'TRACKING_TOKEN' } });
  });

  it('refuses to apply when the environment variable the file names is not set, and does nothing', async () => {
    // Act
    const done = await pg(['apply', 'parcel-status.json']);
    const pipelines = await rt.owner('GET', '/v1/pipelines');

    // Assess
    expect(done.code).toBe(2);
    expect(done.stderr).toContain('secrets.TRACKING_TOKEN reads $TRACKING_TOKEN, which is not set');
    expect(pipelines.body.pipelines).toEqual([]);
  });

  it('is applied: the secret set from the environment, its tests passed against the server, published', async () => {
    // Act
    const done = await pg(['apply', 'parcel-status.json', '--json', '--secrets-out', 'creds.json'], { env: { TRACKING_TOKEN: TOKEN } });
    const report = JSON.parse(done.stdout) as { ok: boolean; pipelines: Record<string, unknown>[] };
    const creds = JSON.parse(readFileSync(join(work, 'creds.json'), 'utf8')) as Record<string, { deployment_id: string; api_key: string }>;
    deploymentId = creds['parcel-status']?.deployment_id ?? '';
    apiKey = creds['parcel-status']?.api_key ?? '';

    // Assess
    expect({ code: done.code, stderr: done.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(report.ok).toBe(true);
    expect(report.pipelines[0]).toMatchObject({
      pipeline_id: 'parcel-status',
      secrets_set: ['TRACKING_TOKEN'],
      published: 'created',
      tests: { run: 2, passed: 2, failed: 0 },
    });
    expect(serverLog).toContain('POST /track {"number":"PG-2002","notify_url":"https://hooks.example.com/p/2002"} → 200');
    expect(`${done.stdout}${done.stderr}`).not.toContain(TOKEN);
  });

  it('shows the secret by name only, and the pipeline with its reference, not its value', async () => {
    // Act
    const listed = await pg(['secrets', 'list']);
    const pipeline = await rt.owner('GET', '/v1/pipelines/parcel-status');

    // Assess
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('TRACKING_TOKEN');
    expect(listed.stdout).not.toContain(TOKEN);
    expect(JSON.stringify(pipeline.body)).toContain('Bearer {{secrets.TRACKING_TOKEN}}');
    expect(pipeline.text).not.toContain(TOKEN);
  });

  it('executes for a caller with a REFERENCE input through the API, and refuses a URL the guard refuses', async () => {
    // Act
    const contract = await rt.caller('GET', `/v1/deployments/${deploymentId}/`, apiKey);
    const accepted = await rt.caller('POST', `/v1/deployments/${deploymentId}/executions/`, apiKey, {
      workflow_input: {
        tracking_number: { value: 'PG-3003', value_type: 'RAW' },
        notify_url: { value: 'https://hooks.example.org/parcels?id=3003', value_type: 'REFERENCE' },
      },
    });
    await rt.waitForExecution(accepted.body.execution_id as string, apiKey);
    const result = await rt.caller('GET', `/v1/deployments/executions/${accepted.body.execution_id as string}/result/`, apiKey);
    const metadata = await rt.caller('POST', `/v1/deployments/${deploymentId}/executions/`, apiKey, {
      workflow_input: { notify_url: { value: 'http://169.254.169.254/latest/meta-data/', value_type: 'REFERENCE' } },
    });
    const asRaw = await rt.caller('POST', `/v1/deployments/${deploymentId}/executions/`, apiKey, {
      workflow_input: { notify_url: { value: 'https://hooks.example.org/x', value_type: 'RAW' } },
    });

    // Assess
    expect(contract.body.inputs).toContainEqual({ id: 'notify_url', value_type: 'reference', value: 'https://example.com/parcel-events' });
    expect(result.body).toMatchObject({
      status: 'completed',
      response_data: {
        summary: {
          value: 'PG-3003 is waiting for pickup (Hamburg depot); updates go to https://hooks.example.org/parcels?id=3003',
          value_type: 'RAW',
        },
      },
    });
    expect({ status: metadata.status, body: metadata.body }).toEqual({
      status: 422,
      body: { error: 'Invalid Input', detail: "input 'notify_url' is not an allowed URL: address 169.254.169.254 is not allowed" },
    });
    expect(asRaw.status).toBe(422);
  });

  it('executes with a REFERENCE input through `pipegate execute`', async () => {
    // Act
    const done = await pg([
      'execute',
      deploymentId,
      '--key',
      apiKey,
      '--input',
      'tracking_number=PG-2002',
      '--input',
      'notify_url=https://hooks.example.net/2002',
      '--wait',
      '--json',
    ]);
    const bad = await pg(['execute', deploymentId, '--key', apiKey, '--input', 'notify_url=not-a-url']);

    // Assess
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({
      status: 'completed',
      response_data: {
        status: { value: 'delivered' },
        summary: { value: 'PG-2002 is delivered (Berlin, front door); updates go to https://hooks.example.net/2002' },
      },
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('notify_url is a reference input');
  });

  it('after `secrets set` with a wrong value piped in, a run fails with the echoed token redacted; after delete it names the missing secret', async () => {
    // Prepare
    const wrong = `wrong_${TOKEN}`;

    // Act
    const set = await pg(['secrets', 'set', 'TRACKING_TOKEN'], { stdin: `${wrong}\n` });
    const refused = await rt.runToEnd('parcel-status');
    const deleted = await pg(['secrets', 'delete', 'TRACKING_TOKEN']);
    const missing = await rt.runToEnd('parcel-status');
    const pushed = await pg(['push', 'parcel-status.json']);

    // Assess
    expect(set.code).toBe(0);
    expect(`${set.stdout}${set.stderr}`).not.toContain(wrong);
    expect(refused.status).toBe('failed');
    expect(refused.error_message).toMatch(/^Node 'track' failed: HTTP 401 from http:\/\/127\.0\.0\.1:\d+\/track: .*\[redacted\]/);
    expect(JSON.stringify(refused)).not.toContain(wrong);
    expect(deleted.code).toBe(0);
    expect(missing.error_message).toBe(
      "Node 'track' failed: secret 'TRACKING_TOKEN' is not set (set it with: pipegate secrets set TRACKING_TOKEN)",
    );
    expect(pushed.code).toBe(0);
    expect(pushed.stderr).toContain("warning: nodes.track.headers.authorization: secret 'TRACKING_TOKEN' is not set");
  });
});
