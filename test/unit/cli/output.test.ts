import { CommanderError } from 'commander';
import type { Readiness } from '../../../lib/cli/client';
import { createColors } from 'picocolors';
import { publishedSnippets, renderPublished, visibilityBody } from '../../../lib/cli/commands/publish';
import { nextStep } from '../../../lib/cli/commands/status';
import { EXIT, exitCodeFor, FailureError, ServiceError, UnreachableError, UsageError } from '../../../lib/cli/errors';
import { colorEnabled, duration, fields, Output, table, type CliIO } from '../../../lib/cli/output';
import { describeError } from '../../../lib/cli/program';

const plain = createColors(false);

const sink = (isTTY: boolean) => {
  const s = { text: '', isTTY, write: (c: string) => (s.text += c) };
  return s;
};
const io = (
  tty: boolean,
  env: Record<string, string> = {},
): CliIO & { stdout: ReturnType<typeof sink>; stderr: ReturnType<typeof sink> } => ({
  stdout: sink(tty),
  stderr: sink(tty),
  env,
  cwd: '/',
});

describe('tables', () => {
  it('align columns by the widest cell, header first, no trailing blanks', () => {
    // Act
    const text = table(
      ['ID', 'VERSION', 'DESCRIPTION'],
      [
        ['greeting', '1', 'Greets'],
        ['x', '123', ''],
      ],
    );

    // Assess
    expect(text).toBe(['ID        VERSION  DESCRIPTION', 'greeting  1        Greets', 'x         123'].join('\n'));
  });

  it('ignore colour escapes when measuring', () => {
    // Prepare
    const green = (s: string) => `\x1b[32m${s}\x1b[39m`;

    // Act
    const text = table(
      ['S', 'N'],
      [
        [green('ok'), '1'],
        ['failed', '2'],
      ],
    );

    // Assess
    expect(text.split('\n')[1]).toBe(`${green('ok')}      1`);
    expect(text.split('\n')[2]).toBe('failed  2');
  });

  it('label/value fields align the values', () => {
    expect(
      fields([
        ['a', '1'],
        ['longer', '2'],
      ]),
    ).toBe('  a       1\n  longer  2');
  });
});

describe('colour and modes', () => {
  it('colour only on a terminal without NO_COLOR, and never for --json', () => {
    expect(colorEnabled({ write: () => 0, isTTY: true }, {})).toBe(true);
    expect(colorEnabled({ write: () => 0, isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(colorEnabled({ write: () => 0 }, {})).toBe(false);
    expect(colorEnabled({ write: () => 0, isTTY: true }, {}, false)).toBe(false);
    expect(new Output(io(true), false).c.green('x')).toBe('\x1b[32mx\x1b[39m');
    expect(new Output(io(true), true).c.green('x')).toBe('x');
    expect(new Output(io(false), false).c.green('x')).toBe('x');
  });

  it('--json writes only the document to stdout; human mode only lines', () => {
    // Prepare
    const j = io(false);
    const h = io(false);

    // Act
    for (const out of [new Output(j, true), new Output(h, false)]) {
      out.line('human');
      out.document({ a: 1 });
      out.note('progress');
    }

    // Assess
    expect(JSON.parse(j.stdout.text)).toEqual({ a: 1 });
    expect(h.stdout.text).toBe('human\n');
    expect(j.stderr.text).toBe('progress\n');
  });

  it('progress off a terminal prints a line per change of state, no control characters', () => {
    // Prepare
    const o = io(false);
    const p = new Output(o, false).spinner();

    // Act
    p.update('pending… 0.1 s', 'pending');
    p.update('pending… 0.4 s', 'pending');
    p.update('running… 0.9 s', 'running');
    p.stop();

    // Assess
    expect(o.stderr.text).toBe('pending… 0.1 s\nrunning… 0.9 s\n');
  });

  it('progress on a terminal redraws one line and clears it when done', () => {
    // Prepare
    const o = io(true, { NO_COLOR: '1' });
    const p = new Output(o, false).spinner();

    // Act
    p.update('running… 0.1 s');
    p.stop();

    // Assess
    expect(o.stderr.text).toBe('\r\x1b[2K⠙ running… 0.1 s\r\x1b[2K');
  });
});

describe('formatting helpers', () => {
  it.each([
    [null, ''],
    [35, '35 ms'],
    [1234, '1.23 s'],
    [12_345, '12.3 s'],
    [125_000, '2 min 5 s'],
  ])('duration %j → %j', (ms, text) => expect(duration(ms)).toBe(text));

  it('builds a curl command with the visible inputs at their published values', () => {
    // Prepare
    const p = {
      deployment_id: 'd',
      version: 1,
      published_at: 't',
      execute_url: 'http://127.0.0.1:3000/v1/deployments/d/executions/',
      inputs: [
        { id: 'name', value_type: 'string' as const, value: "O'Brien", visible: true },
        { id: 'n', value_type: 'integer' as const, value: 2, visible: false },
      ],
      outputs: [],
    };

    // Act
    const snippets = publishedSnippets('greet', p);
    const shown = renderPublished('greet', { ...p, api_key: 'pgk_1' }, true, plain, 'python');

    // Assess: the deployment's own document is their source (its base URL and paths, visible inputs only).
    expect(snippets.curl).toContain(`curl -sS -X POST 'http://127.0.0.1:3000/v1/deployments/d/executions' \\`);
    expect(snippets.curl).toContain(`-d '{"workflow_input":{"name":{"value":"O'\\''Brien","value_type":"RAW"}}}'`);
    expect(snippets.typescript).toContain('client.POST("/v1/deployments/d/executions"');
    expect(snippets.python).toContain('"http://127.0.0.1:3000/v1/deployments/d/executions"');
    expect(shown).toContain('export PIPEGATE_API_KEY=pgk_1');
    expect(shown).toContain('import requests');
    expect(renderPublished('greet', p, false, plain, 'none')).not.toContain('curl');
    // For agents: the MCP URL always (derived from the execute URL where the service did not say it), and a client's configuration.
    expect(shown).toMatch(/MCP URL +http:\/\/127\.0\.0\.1:3000\/v1\/deployments\/d\/mcp\n/);
    expect(renderPublished('greet', { ...p, mcp_url: 'https://x.example/v1/deployments/d/mcp' }, false, plain, 'none')).toContain(
      'https://x.example/v1/deployments/d/mcp',
    );
    expect(renderPublished('greet', p, false, plain, 'mcp')).toContain('"Authorization": "Bearer ${PIPEGATE_API_KEY}"');
  });

  it('builds the publish body from hide/show lists', () => {
    expect(visibilityBody({ hideInput: ['a,b', 'c'], hideOutput: [], showInput: [], showOutput: ['x'] })).toEqual({
      inputs: { a: { visible: false }, b: { visible: false }, c: { visible: false } },
      outputs: { x: { visible: true } },
    });
    expect(visibilityBody({ hideInput: [], hideOutput: [], showInput: [], showOutput: [] })).toEqual({});
    expect(() => visibilityBody({ hideInput: ['a'], hideOutput: [], showInput: ['a'], showOutput: [] })).toThrow(UsageError);
  });
});

describe('next steps by readiness', () => {
  const base: Readiness = {
    pipeline_id: 'greeting',
    state: 'run_required',
    publishable: false,
    latest_run: null,
    discovered: null,
    deployment: null,
  };
  const dep = { deployment_id: 'dep-1', version: 2, published_at: 't', execute_url: 'u', inputs: [], outputs: [] };

  it.each<[string, Partial<Readiness>, RegExp]>([
    ['never run', {}, /^run it until a run succeeds: pipegate run greeting$/],
    ['failed run', { latest_run: { run_id: 'r', status: 'failed', version: 1 } }, /latest run failed; fix the pipeline/],
    ['not published', { state: 'not_published', publishable: true }, /^publish it: pipegate publish greeting$/],
    ['live', { state: 'live', publishable: true, deployment: dep }, /pipegate execute dep-1 --key/],
    [
      'needs publish',
      { state: 'needs_publish', publishable: true, deployment: dep, latest_run: { run_id: 'r', status: 'completed', version: 3 } },
      /version 3 ran successfully but version 2 is live/,
    ],
    [
      'needs publish, failed',
      { state: 'needs_publish', publishable: false, deployment: dep, latest_run: { run_id: 'r', status: 'failed', version: 3 } },
      /callers keep the live version 2/,
    ],
  ])('%s', (_, over, expected) => {
    expect(nextStep({ ...base, ...over })).toMatch(expected);
  });
});

describe('exit codes', () => {
  it.each<[string, unknown, number]>([
    ['usage error', new UsageError('bad'), EXIT.usage],
    ['commander error', new CommanderError(1, 'commander.unknownOption', "error: unknown option '--x'"), EXIT.usage],
    ['commander help', new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'), EXIT.ok],
    ['service error', new ServiceError(409, { error: 'Conflict' }, 'owner'), EXIT.failure],
    ['unreachable', new UnreachableError('http://x', 'ECONNREFUSED'), EXIT.failure],
    ['failed run', new FailureError('run failed'), EXIT.failure],
    ['anything else', new Error('bug'), EXIT.failure],
  ])('%s → %d', (_, e, code) => expect(exitCodeFor(e)).toBe(code));
});

describe('error descriptions', () => {
  it('list problems aligned by path', () => {
    // Act
    const d = describeError(
      new ServiceError(
        400,
        {
          error: 'Invalid Pipeline Definition',
          detail: [
            { path: 'a', reason: 'r1' },
            { path: 'nodes.x', reason: 'r2' },
          ],
        },
        'owner',
      ),
    );

    // Assess
    expect(d).toEqual({ message: 'Invalid Pipeline Definition (2 problems):', lines: ['a        r1', 'nodes.x  r2'] });
  });

  it('show a string detail and API Gateway bodies that carry `message`', () => {
    expect(describeError(new ServiceError(400, { error: 'Confirmation Required', detail: 'repeat the id' }, 'owner')).lines).toEqual([
      'repeat the id',
    ]);
    expect(describeError(new ServiceError(403, { message: 'Missing Authentication Token' }, 'owner'))).toMatchObject({
      message: 'Missing Authentication Token',
      hint: expect.stringContaining('execute-api:Invoke'),
    });
  });

  it('say how to start the service when it cannot be reached', () => {
    expect(describeError(new UnreachableError('http://127.0.0.1:3000', 'ECONNREFUSED'))).toEqual({
      message: 'cannot reach pipegate at http://127.0.0.1:3000 — is it running? (npm start)',
      lines: ['(ECONNREFUSED)'],
    });
  });
});
