/**
 * Every command against a scripted fake of the service (an injected fetch, no network):
 * the requests it sends, what it prints, and its exit code.
 */
import { join } from 'node:path';
import { runCli } from '../../../lib/cli/program';
import type { CliIO } from '../../../lib/cli/output';

const FIXTURES = join(__dirname, '..', '..', 'fixtures', 'cli');
const BASE = 'http://127.0.0.1:3999';
const DEP = '6f1c0f7e-2a55-4d1e-9a53-0a2f3c4b5d6e';

interface Call {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}
type Answer = [number, unknown?];
type Script = (call: Call, nth: number) => Answer | undefined;

/** Runs the CLI against `script`; unknown requests answer 599 so a test sees them fail. */
async function cli(args: string[], script: Script = () => undefined, env: Record<string, string> = {}) {
  const calls: Call[] = [];
  let stdout = '';
  let stderr = '';
  const counts = new Map<string, number>();
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const text = typeof init?.body === 'string' ? init.body : undefined;
    const call: Call = {
      method: init?.method ?? 'GET',
      path: url.pathname + url.search,
      headers: (init?.headers ?? {}) as Record<string, string>,
      body: text === undefined ? undefined : (JSON.parse(text) as unknown),
    };
    calls.push(call);
    const key = `${call.method} ${call.path}`;
    const nth = (counts.get(key) ?? 0) + 1;
    counts.set(key, nth);
    const [status, body] = script(call, nth) ?? [599, { error: `unscripted ${key}` }];
    return new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { PIPEGATE_URL: BASE, PIPEGATE_OWNER_TOKEN: 'pgo_test', ...env },
    cwd: FIXTURES,
    fetch: fakeFetch,
    sleep: async () => undefined,
  };
  const code = await runCli(args, io, {});
  return { code, stdout, stderr, calls };
}

const GREETING_DEF = {
  description: 'Greets someone',
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    greeting: { type: 'transform', inputs: ['name'], expression: "'Hello, ' & name & '!'" },
    message: { type: 'output', from: 'greeting' },
  },
};
const COUNTER_DEF = {
  nodes: {
    word: { type: 'input', value_type: 'string', value: 'hi' },
    times: { type: 'input', value_type: 'integer', value: 2 },
    scale: { type: 'input', value_type: 'float', value: 1.5 },
    loud: { type: 'input', value_type: 'boolean', value: false },
    says: { type: 'output', from: 'word' },
  },
};
const pipeline = (id: string, definition: unknown) => ({ pipeline_id: id, version: 3, definition, created_at: 'x', updated_at: 'y' });
const runView = (status: string, extra: Record<string, unknown> = {}) => ({
  run_id: 'r-1',
  pipeline_id: 'greeting',
  version: 3,
  status,
  inputs: { name: 'Ada' },
  outputs: status === 'completed' ? { message: 'Hello, Ada!' } : null,
  error_message: null,
  created_at: '2026-01-01T00:00:00.000Z',
  started_at: status === 'pending' ? null : '2026-01-01T00:00:00.100Z',
  completed_at: status === 'completed' || status === 'failed' ? '2026-01-01T00:00:00.135Z' : null,
  completion_duration: status === 'completed' || status === 'failed' ? 35 : null,
  ...extra,
});
const deployment = {
  deployment_id: DEP,
  version: 3,
  published_at: '2026-01-01T00:00:01.000Z',
  execute_url: `${BASE}/v1/deployments/${DEP}/executions/`,
  inputs: [
    { id: 'name', value_type: 'string', value: 'world', visible: true },
    { id: 'punct', value_type: 'string', value: '!', visible: false },
  ],
  outputs: [{ id: 'message', visible: true }],
};
const readiness = (state: string, dep: unknown = null) => ({
  pipeline_id: 'greeting',
  state,
  publishable: state !== 'run_required',
  latest_run: state === 'run_required' ? null : { run_id: 'r-1', status: 'completed', version: 3 },
  counts: { inputs: 2, outputs: 1 },
  published_at: null,
  discovered: null,
  deployment: dep,
});

describe('push', () => {
  it('sends description and nodes with the owner token and reports the new version', async () => {
    // Act
    const r = await cli(['push', 'greeting.yaml'], (c) =>
      c.method === 'PUT' && c.path === '/v1/pipelines/greeting' ? [201, { pipeline_id: 'greeting', version: 1, created: true }] : undefined,
    );

    // Assess
    expect(r.code).toBe(0);
    expect(r.calls).toHaveLength(1);
    expect(r.calls[0]?.headers.authorization).toBe('Bearer pgo_test');
    expect(r.calls[0]?.body).toEqual(GREETING_DEF);
    expect(r.stdout).toBe('✔ pushed greeting version 1\n');
    expect(r.stderr).toContain('next: pipegate run greeting');
  });

  it('says which state machine the version runs on, and why', async () => {
    // Act
    const r = await cli(['push', 'greeting.yaml'], () => [
      201,
      {
        pipeline_id: 'greeting',
        version: 2,
        created: true,
        workflow: 'standard',
        workflow_reason: "node 'approval' may wait up to 86400000 ms",
      },
    ]);

    // Assess
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('✔ pushed greeting version 2\n');
    expect(r.stderr).toContain("runs on Standard: node 'approval' may wait up to 86400000 ms");
  });

  it('says when nothing changed, and prints only the body with --json', async () => {
    // Prepare
    const script: Script = () => [200, { pipeline_id: 'hello', version: 4, created: false }];

    // Act
    const human = await cli(['push', 'greeting.json', '--id', 'hello'], script);
    const json = await cli(['push', 'greeting.json', '--id', 'hello', '--json'], script);

    // Assess
    expect(human.calls[0]?.path).toBe('/v1/pipelines/hello');
    expect(human.stdout).toBe('✔ hello is unchanged at version 4\n');
    expect(JSON.parse(json.stdout)).toEqual({ pipeline_id: 'hello', version: 4, created: false });
    expect(json.stderr).toBe('');
  });

  it('lists every problem of a refused definition with its path and exits 1', async () => {
    // Prepare
    const detail = [
      { path: 'nodes.greeting.inputs[0]', reason: 'refers to a node that does not exist: nme' },
      { path: 'nodes.weird.type', reason: 'unknown node type "teleport"' },
    ];

    // Act
    const human = await cli(['push', 'invalid.json'], () => [400, { error: 'Invalid Pipeline Definition', detail }]);
    const json = await cli(['push', 'invalid.json', '--json'], () => [400, { error: 'Invalid Pipeline Definition', detail }]);

    // Assess
    expect(human.code).toBe(1);
    expect(human.stdout).toBe('');
    expect(human.stderr).toContain('error: Invalid Pipeline Definition (2 problems):');
    expect(human.stderr).toContain('  nodes.greeting.inputs[0]  refers to a node that does not exist: nme\n');
    expect(human.stderr).toContain('  nodes.weird.type          unknown node type "teleport"\n');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({ error: 'Invalid Pipeline Definition', detail });
  });

  it('refuses a missing file as a usage error without calling the service', async () => {
    // Act
    const r = await cli(['push', 'nope.json']);

    // Assess
    expect(r.code).toBe(2);
    expect(r.calls).toHaveLength(0);
    expect(r.stderr).toContain('no such file: nope.json');
  });
});

describe('list and runs', () => {
  it('print an aligned table', async () => {
    // Prepare
    const pipelines = [
      { pipeline_id: 'greeting', version: 12, description: 'Greets someone', created_at: 'a', updated_at: '2026-01-02T03:04:05.678Z' },
      { pipeline_id: 'text-statistics', version: 1, description: null, created_at: 'a', updated_at: '2026-01-02T03:04:05.678Z' },
    ];

    // Act
    const r = await cli(['list'], () => [200, { pipelines }]);

    // Assess
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        'PIPELINE         VERSION  UPDATED               DESCRIPTION',
        'greeting         12       2026-01-02 03:04:05Z  Greets someone',
        'text-statistics  1        2026-01-02 03:04:05Z',
        '',
      ].join('\n'),
    );
  });

  it('explain an empty list, and give the body as is with --json', async () => {
    // Act
    const human = await cli(['list'], () => [200, { pipelines: [] }]);
    const json = await cli(['--json', 'list'], () => [200, { pipelines: [] }]);

    // Assess
    expect(human.stdout).toBe('No pipelines yet.\n');
    expect(human.stderr).toContain('pipegate push');
    expect(JSON.parse(json.stdout)).toEqual({ pipelines: [] });
  });

  it('list runs newest first with status and error', async () => {
    // Prepare
    const runs = [runView('failed', { run_id: 'r-2', error_message: 'node obj failed' }), runView('completed')];

    // Act
    const r = await cli(['runs', 'greeting', '--limit', '5'], (c) =>
      c.path === '/v1/pipelines/greeting/runs?limit=5' ? [200, { runs, next_cursor: null }] : undefined,
    );

    // Assess
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^RUN\s+VERSION\s+STATUS\s+CREATED\s+DURATION\s+ERROR$/);
    expect(lines[1]).toMatch(/^r-2\s+3\s+failed\s+2026-01-01 00:00:00Z\s+35 ms\s+node obj failed$/);
    expect(lines[2]).toMatch(/^r-1\s+3\s+completed/);
  });
});

describe('run', () => {
  const runScript =
    (finalStatus: string, extra: Record<string, unknown> = {}): Script =>
    (c, nth) => {
      if (c.method === 'GET' && c.path === '/v1/pipelines/greeting') return [200, pipeline('greeting', COUNTER_DEF)];
      if (c.method === 'POST' && c.path === '/v1/pipelines/greeting/runs') {
        return [202, { run_id: 'r-1', version: 3, status: 'pending', status_url: `${BASE}/v1/pipelines/greeting/runs/r-1` }];
      }
      if (c.method === 'GET' && c.path === '/v1/pipelines/greeting/runs/r-1') {
        return [200, nth === 1 ? runView('pending') : nth === 2 ? runView('running') : runView(finalStatus, extra)];
      }
      return undefined;
    };

  it('reads inputs by type, waits until the run finishes and prints its outputs', async () => {
    // Act
    const r = await cli(
      ['run', 'greeting', '-i', 'times=3', '--input', 'loud=true', '-i', 'scale=0.5', '-i', 'word=42'],
      runScript('completed'),
    );

    // Assess
    expect(r.code).toBe(0);
    expect(r.calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      'GET /v1/pipelines/greeting',
      'POST /v1/pipelines/greeting/runs',
      'GET /v1/pipelines/greeting/runs/r-1',
      'GET /v1/pipelines/greeting/runs/r-1',
      'GET /v1/pipelines/greeting/runs/r-1',
    ]);
    expect(r.calls[1]?.body).toStrictEqual({ inputs: { times: 3, loud: true, scale: 0.5, word: '42' } });
    expect(r.stdout).toBe('✔ greeting version 3 completed in 35 ms  (run r-1)\n  message  Hello, Ada!\n');
    // Off a terminal, progress is one line per state, on stderr.
    expect(r.stderr).toContain('run r-1 of greeting version 3 started\n');
    expect(r.stderr).toContain('greeting v3 pending…');
    expect(r.stderr).toContain('greeting v3 running…');
  });

  it('says once, while it goes on waiting, where to send the event a run waits for', async () => {
    const url = `${BASE}/v1/resume/w1.r-1.approval.tag`;
    const waiting = [{ node_id: 'approval', resume_url: url, expires_at: '2026-01-02T00:00:00.000Z' }];
    const r = await cli(['run', 'greeting'], (c, nth) => {
      if (c.method === 'POST' && c.path === '/v1/pipelines/greeting/runs') {
        return [202, { run_id: 'r-1', version: 3, status: 'pending', status_url: `${BASE}/v1/pipelines/greeting/runs/r-1` }];
      }
      if (c.method === 'GET' && c.path === '/v1/pipelines/greeting/runs/r-1')
        return [200, nth <= 3 ? runView('running', { waiting }) : runView('completed')];
      return undefined;
    });
    expect(r.code).toBe(0);
    expect(r.stderr.split('waiting for an event (POST a JSON object to the URL)')).toHaveLength(2);
    expect(r.stderr).toMatch(new RegExp(`approval\\s+${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+until 2026-01-02 00:00:00Z`));
  });

  it('starts a run without inputs without reading the pipeline, and prints one document with --json', async () => {
    // Act
    const r = await cli(['run', 'greeting', '--json'], runScript('completed'));

    // Assess
    expect(r.code).toBe(0);
    expect(r.calls[0]).toMatchObject({ method: 'POST', body: {} });
    expect(JSON.parse(r.stdout)).toEqual(runView('completed'));
  });

  it('exits 1 and shows the error when the run fails', async () => {
    // Act
    const human = await cli(['run', 'greeting'], runScript('failed', { error_message: 'node "obj" failed: output is not a RAW value' }));
    const json = await cli(['run', 'greeting', '--json'], runScript('failed', { error_message: 'boom' }));

    // Assess
    expect(human.code).toBe(1);
    expect(human.stdout).toBe('');
    expect(human.stderr).toContain('✖ run r-1 of greeting version 3 failed: node "obj" failed: output is not a RAW value');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'failed', error_message: 'boom' });
  });

  it('returns at once with --no-wait', async () => {
    // Act
    const r = await cli(['run', 'greeting', '--no-wait', '--json'], runScript('completed'));

    // Assess
    expect(r.code).toBe(0);
    expect(r.calls).toHaveLength(1);
    expect(JSON.parse(r.stdout)).toEqual({
      run_id: 'r-1',
      version: 3,
      status: 'pending',
      status_url: `${BASE}/v1/pipelines/greeting/runs/r-1`,
    });
  });

  it.each([
    [['-i', 'times=many'], /times is an integer input/],
    [['-i', 'nope=1'], /there is no input "nope"/],
    [['-i', 'times'], /expected id=value/],
    [['-i', 'loud=maybe'], /loud is a boolean input/],
  ])('refuses %j as a usage error (exit 2) and starts nothing', async (extra, message) => {
    // Act
    const r = await cli(['run', 'greeting', ...extra], runScript('completed'));

    // Assess
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.calls.filter((c) => c.method === 'POST')).toHaveLength(0);
  });

  it('names an unknown pipeline and says how to find one', async () => {
    // Act
    const r = await cli(['run', 'ghost'], () => [404, { error: 'Pipeline Not Found' }]);

    // Assess
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: Pipeline Not Found');
    expect(r.stderr).toContain('hint: see your pipelines with: pipegate list');
  });
});

describe('status', () => {
  it('shows state, latest run, contract, deployment and the next step', async () => {
    // Act
    const r = await cli(['status', 'greeting'], () => [200, { ...readiness('live', deployment), published_at: deployment.published_at }]);

    // Assess
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('state         live');
    expect(r.stdout).toContain('latest run    completed · version 3 · r-1');
    expect(r.stdout).toContain('contract      2 inputs, 1 output');
    expect(r.stdout).toContain(`deployment    ${DEP}`);
    expect(r.stdout).toContain('inputs        name: string = "world", punct: string = "!" (hidden)');
    expect(r.stdout).toContain(`next: callers can execute it: pipegate execute ${DEP} --key <api key>`);
  });

  it('tells a new pipeline to run first, and --json is the readiness body', async () => {
    // Act
    const human = await cli(['status', 'greeting'], () => [200, readiness('run_required')]);
    const json = await cli(['status', 'greeting', '--json'], () => [200, readiness('run_required')]);

    // Assess
    expect(human.stdout).toContain('latest run   none yet');
    expect(human.stdout).toContain('next: run it until a run succeeds: pipegate run greeting');
    expect(JSON.parse(json.stdout)).toEqual(readiness('run_required'));
  });
});

describe('publish', () => {
  it('turns --hide/--show flags into the body and prints the secrets once with a curl example that exports the key', async () => {
    // Prepare
    const created = { ...deployment, api_key: 'pgk_abc', signing_secret: 'whsec_xyz' };

    // Act
    const r = await cli(['publish', 'greeting', '--hide-input', 'punct,extra', '--hide-output', 'debug', '--show-input', 'name'], (c) =>
      c.method === 'PUT' && c.path === '/v1/pipelines/greeting/deployment' ? [201, created] : undefined,
    );

    // Assess
    expect(r.code).toBe(0);
    expect(r.calls[0]?.body).toEqual({
      inputs: { punct: { visible: false }, extra: { visible: false }, name: { visible: true } },
      outputs: { debug: { visible: false } },
    });
    expect(r.stdout).toContain('✔ published greeting version 3');
    expect(r.stdout).toContain(`deployment   ${DEP}`);
    expect(r.stdout).toContain(`execute URL  ${deployment.execute_url}`);
    expect(r.stdout).toContain('API key         pgk_abc');
    expect(r.stdout).toContain('signing secret  whsec_xyz');
    expect(r.stdout).toContain('Store these now');
    expect(r.stdout).toContain('export PIPEGATE_API_KEY=pgk_abc');
    expect(r.stdout).toContain(`curl -sS -X POST '${deployment.execute_url.replace(/\/$/, '')}' \\`);
    expect(r.stdout).toContain('-H "X-API-Key: $PIPEGATE_API_KEY"');
    // Hidden inputs stay out of the example.
    expect(r.stdout).toContain(`-d '{"workflow_input":{"name":{"value":"world","value_type":"RAW"}}}'`);
  });

  it('on update prints no secrets, and a curl example that says where the key comes from', async () => {
    // Act
    const r = await cli(['publish', 'greeting'], () => [200, deployment]);

    // Assess
    expect(r.calls[0]?.body).toEqual({});
    expect(r.stdout).toContain('✔ updated greeting version 3');
    expect(r.stdout).not.toContain('Store these now');
    expect(r.stdout).not.toMatch(/^ *export PIPEGATE_API_KEY=/m);
    expect(r.stdout).toContain(
      '# export PIPEGATE_API_KEY= the API key shown at the first publish (lost it? pipegate keys rotate greeting)',
    );
    expect(r.stdout).toContain('-H "X-API-Key: $PIPEGATE_API_KEY"');
  });

  it('--form turns the web form on (with its title and description) and prints its link; --no-form turns it off', async () => {
    // Prepare
    const formUrl = 'http://127.0.0.1:8080/v1/forms/pgf_' + 'a'.repeat(43);

    // Act
    const on = await cli(['publish', 'greeting', '--form', '--form-title', 'Greeter', '--form-description', 'Says hello'], () => [
      200,
      { ...deployment, form_url: formUrl },
    ]);
    const off = await cli(['publish', 'greeting', '--no-form'], () => [200, { ...deployment, form_url: null }]);
    const both = await cli(['publish', 'greeting', '--no-form', '--form-title', 'x']);

    // Assess
    expect(on.calls[0]?.body).toEqual({ form: { enabled: true, title: 'Greeter', description: 'Says hello' } });
    expect(on.stdout).toContain(formUrl);
    expect(off.calls[0]?.body).toEqual({ form: { enabled: false } });
    expect(off.stdout).not.toContain('/v1/forms/');
    expect(both.code).toBe(2);
    expect(both.calls).toHaveLength(0);
  });

  it('refuses the same id hidden and shown', async () => {
    // Act
    const r = await cli(['publish', 'greeting', '--hide-input', 'name', '--show-input', 'name']);

    // Assess
    expect(r.code).toBe(2);
    expect(r.calls).toHaveLength(0);
  });

  it('reports a refusal with exit 1 and says to run', async () => {
    // Act
    const r = await cli(['publish', 'greeting'], () => [
      409,
      { error: 'To deploy the workflow, there must be at least one successful execution.' },
    ]);

    // Assess
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: To deploy the workflow, there must be at least one successful execution.');
    expect(r.stderr).toContain('hint: run it until a run succeeds');
  });
});

describe('delete', () => {
  it('refuses without --yes (exit 2) and explains, calling nothing', async () => {
    // Act
    const r = await cli(['delete', 'greeting']);

    // Assess
    expect(r.code).toBe(2);
    expect(r.calls).toHaveLength(0);
    expect(r.stderr).toContain('without --yes');
    expect(r.stderr).toContain('cannot be undone');
  });

  it('confirms with the deployment id it reads from readiness', async () => {
    // Act
    const r = await cli(['delete', 'greeting', '--yes', '--json'], (c) => {
      if (c.method === 'GET') return [200, readiness('live', deployment)];
      if (c.method === 'DELETE') return [204];
      return undefined;
    });

    // Assess
    expect(r.code).toBe(0);
    expect(r.calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      'GET /v1/pipelines/greeting/deployment',
      `DELETE /v1/pipelines/greeting/deployment?confirm=${DEP}`,
    ]);
    expect(JSON.parse(r.stdout)).toEqual({ pipeline_id: 'greeting', deployment_id: DEP, deleted: true });
  });

  it('fails (exit 1) when there is no deployment', async () => {
    // Act
    const r = await cli(['delete', 'greeting', '--yes'], () => [200, readiness('not_published')]);

    // Assess
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('greeting has no deployment');
  });
});

describe('keys rotate', () => {
  it('asks for a new signing secret with a grace period', async () => {
    // Act
    const r = await cli(['keys', 'rotate', 'greeting', '--grace', '60', '--signing-secret'], () => [200, { signing_secret: 'whsec_new' }]);

    // Assess
    expect(r.code).toBe(0);
    expect(r.calls[0]).toMatchObject({
      method: 'POST',
      path: '/v1/pipelines/greeting/deployment/keys',
      body: { grace_seconds: 60, credential: 'signing_secret' },
    });
    expect(r.stdout).toContain('signing secret  whsec_new');
    expect(r.stdout).toContain('keeps working for 60 s');
  });

  it('--form-link asks for a new web-form link and prints it', async () => {
    // Act
    const r = await cli(['keys', 'rotate', 'greeting', '--form-link'], () => [200, { form_url: 'http://127.0.0.1:8080/v1/forms/pgf_new' }]);
    const bad = await cli(['keys', 'rotate', 'greeting', '--form-link', '--grace', '60']);

    // Assess
    expect(r.code).toBe(0);
    expect(r.calls[0]?.body).toEqual({ credential: 'form_link' });
    expect(r.stdout).toContain('http://127.0.0.1:8080/v1/forms/pgf_new');
    expect(bad.code).toBe(2);
  });

  it('rotates the API key by default, and --grace must be a whole number', async () => {
    // Act
    const ok = await cli(['keys', 'rotate', 'greeting', '--json'], () => [200, { api_key: 'pgk_new' }]);
    const bad = await cli(['keys', 'rotate', 'greeting', '--grace', 'soon']);

    // Assess
    expect(ok.calls[0]?.body).toEqual({});
    expect(JSON.parse(ok.stdout)).toEqual({ api_key: 'pgk_new' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--grace must be a whole number');
  });
});

describe('execute', () => {
  const contract = { deployment_id: DEP, inputs: [{ id: 'times', value_type: 'integer', value: 2 }], outputs: [{ id: 'says' }] };
  const accepted = {
    status: 'queued',
    status_url: `${BASE}/v1/deployments/executions/e-1/status/`,
    result_url: `${BASE}/v1/deployments/executions/e-1/result/`,
    deployment_id: DEP,
    execution_id: 'e-1',
  };
  const statusView = (status: string) => ({
    status,
    execution_id: 'e-1',
    deployment_id: DEP,
    error_message: status === 'failed' ? 'boom' : null,
    completion_duration: status === 'completed' || status === 'failed' ? 12 : null,
  });
  const script =
    (final: string): Script =>
    (c, nth) => {
      if (c.path === `/v1/deployments/${DEP}/` && c.method === 'GET') return [200, contract];
      if (c.path === `/v1/deployments/${DEP}/executions/`) return [202, accepted];
      if (c.path === '/v1/deployments/executions/e-1/status/') return [200, statusView(nth < 2 ? 'running' : final)];
      if (c.path === '/v1/deployments/executions/e-1/result/') {
        return [
          200,
          {
            status: final,
            execution_id: 'e-1',
            deployment_id: DEP,
            completion_duration: 12,
            output_artifacts: [],
            error_message: final === 'failed' ? 'boom' : null,
            response_data: final === 'completed' ? { says: { value: 'hi hi hi', value_type: 'RAW' } } : {},
          },
        ];
      }
      return undefined;
    };

  it('sends typed inputs with the key, callback and idempotency key, waits and prints the result', async () => {
    // Act
    const r = await cli(
      ['execute', DEP, '--key', 'pgk_k', '-i', 'times=3', '--callback', 'https://example.com/hook', '--idempotency-key', 'job-7', '--wait'],
      script('completed'),
    );

    // Assess
    expect(r.code).toBe(0);
    expect(r.calls.every((c) => c.headers['x-api-key'] === 'pgk_k' && c.headers.authorization === undefined)).toBe(true);
    const post = r.calls.find((c) => c.method === 'POST');
    expect(post?.body).toStrictEqual({ workflow_input: { times: { value: 3, value_type: 'RAW' } }, callback: 'https://example.com/hook' });
    expect(post?.headers['idempotency-key']).toBe('job-7');
    expect(r.stdout).toBe('✔ execution e-1 completed in 12 ms\n  says  hi hi hi\n');
  });

  it('without --wait prints where to look; with --json the acceptance body', async () => {
    // Act
    const human = await cli(['execute', DEP, '--key', 'pgk_k'], script('completed'));
    const json = await cli(['execute', DEP, '--json'], script('completed'), { PIPEGATE_API_KEY: 'pgk_env' });

    // Assess
    expect(human.calls).toHaveLength(1);
    expect(human.calls[0]?.body).toEqual({});
    expect(human.stdout).toContain('execution e-1 queued');
    expect(human.stdout).toContain(`status  ${accepted.status_url}`);
    expect(json.calls[0]?.headers['x-api-key']).toBe('pgk_env');
    expect(JSON.parse(json.stdout)).toEqual(accepted);
  });

  it('exits 1 when the execution fails, printing the result document with --json', async () => {
    // Act
    const r = await cli(['execute', DEP, '--key', 'k', '--wait', '--json'], script('failed'));

    // Assess
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', error_message: 'boom', response_data: {} });
  });

  it('refuses a missing key and unknown inputs as usage errors', async () => {
    // Act
    const noKey = await cli(['execute', DEP], script('completed'));
    const unknown = await cli(['execute', DEP, '--key', 'k', '-i', 'punct=?'], script('completed'));

    // Assess
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('--key');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('there is no input "punct"');
    expect(unknown.stderr).toContain('times (integer)');
    expect(unknown.calls.filter((c) => c.method === 'POST')).toHaveLength(0);
  });

  it('explains a refused key', async () => {
    // Act
    const r = await cli(['execute', DEP, '--key', 'wrong'], () => [401, { error: 'Unauthorized' }]);

    // Assess
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('hint: the API key was refused');
  });
});

describe('errors and exit codes', () => {
  it('a refused owner token is explained', async () => {
    // Act
    const r = await cli(['list'], () => [401, { error: 'Unauthorized' }]);

    // Assess
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: Unauthorized');
    expect(r.stderr).toContain('hint: the owner credential was refused');
  });

  it('a missing owner token is a usage error saying where it looked', async () => {
    // Act
    const r = await cli(['list'], () => [200, { pipelines: [] }], { PIPEGATE_OWNER_TOKEN: '', PIPEGATE_DATA_DIR: '/nonexistent/data' });

    // Assess
    expect(r.code).toBe(2);
    expect(r.calls).toHaveLength(0);
    expect(r.stderr).toContain('no owner token');
    expect(r.stderr).toContain('/nonexistent/data/owner-token');
  });

  it('a body the CLI does not understand is a failure, not a crash', async () => {
    // Act
    const r = await cli(['list'], () => [200, { items: [] }]);

    // Assess
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('does not understand');
  });

  it.each([
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['push'], /missing required argument 'file'/],
    [['list', '--bogus'], /unknown option '--bogus'/],
    [['status', 'a', 'b'], /too many arguments/],
    [['run', 'Bad_Id'], /not a valid pipeline id/],
  ])('%j is a usage error (exit 2)', async (args, message) => {
    // Act
    const r = await cli(args);

    // Assess
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.calls).toHaveLength(0);
  });

  it('a usage error under --json still prints one JSON document', async () => {
    // Act
    const r = await cli(['list', '--bogus', '--json']);

    // Assess
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toEqual({ error: "unknown option '--bogus'" });
  });

  it('--help and --version exit 0', async () => {
    // Act
    const help = await cli(['--help']);
    const version = await cli(['--version']);

    // Assess
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: pipegate');
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
