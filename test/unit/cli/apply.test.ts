/**
 * `pipegate apply` without a service: the file checks (every problem with its path), which
 * files a set of paths names, the plan as a pure function of file, readiness and pushed
 * version, the run order, output comparison, the secrets file and the bounded fan-out.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { checkApplyDocument, readTargets, type ApplyFile } from '../../../lib/cli/apply-file';
import { compareOutputs, computePlan, CURRENT_VALUES_RUN, predictPush, scheduleRuns, visibilityBody } from '../../../lib/cli/apply-plan';
import { CredentialsFile } from '../../../lib/cli/apply-credentials';
import { mapBounded } from '../../../lib/cli/apply';
import type { Readiness } from '../../../lib/cli/client';
import { UsageError } from '../../../lib/cli/errors';
import { FORM_TITLE_MAX_CHARS } from '../../../functions/core/form-link';

const nodes = {
  name: { type: 'input', value_type: 'string', value: 'world' },
  count: { type: 'input', value_type: 'integer', value: 2 },
  greeting: { type: 'transform', inputs: ['name', 'count'], expression: "'Hello, ' & name & '!'" },
  message: { type: 'output', from: 'greeting' },
  debug: { type: 'output', from: 'name' },
};

const where = { path: '/p/greeting.yaml', shown: 'greeting.yaml', id: 'greeting' };

function file(extra: Record<string, unknown> = {}): ApplyFile {
  const checked = checkApplyDocument({ description: 'Greets', nodes, ...extra }, where);
  if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
  return checked.file;
}

type Deployment = NonNullable<Readiness['deployment']>;

function deployment(version: number, hidden: { inputs?: string[]; outputs?: string[] } = {}): Deployment {
  return {
    deployment_id: '11111111-2222-4333-8444-555555555555',
    version,
    published_at: '2026-01-01T00:00:00.000Z',
    execute_url: 'http://127.0.0.1/v1/deployments/x/executions/',
    inputs: [
      { id: 'name', value_type: 'string', value: 'world', visible: !(hidden.inputs ?? []).includes('name') },
      { id: 'count', value_type: 'integer', value: 2, visible: !(hidden.inputs ?? []).includes('count') },
    ],
    outputs: [
      { id: 'message', visible: !(hidden.outputs ?? []).includes('message') },
      { id: 'debug', visible: !(hidden.outputs ?? []).includes('debug') },
    ],
  };
}

function readiness(over: Partial<Readiness> = {}): Readiness {
  return {
    pipeline_id: 'greeting',
    state: 'live',
    publishable: true,
    latest_run: { run_id: 'r1', status: 'completed', version: 1 },
    discovered: {
      inputs: [
        { id: 'name', value_type: 'string', value: 'world', visible: true },
        { id: 'count', value_type: 'integer', value: 2, visible: true },
      ],
      outputs: [
        { id: 'message', visible: true },
        { id: 'debug', visible: true },
      ],
    },
    deployment: deployment(1),
    ...over,
  };
}

describe('pipeline file checks', () => {
  it('keeps retry_interrupted in the definition it sends', () => {
    const checked = checkApplyDocument({ retry_interrupted: false, nodes }, where);
    expect(checked.ok && checked.file.definition.retry_interrupted).toBe(false);
  });

  it('accepts a file with publish and tests blocks and keeps only description and nodes as the definition', () => {
    // Act
    const checked = checkApplyDocument(
      {
        description: 'Greets',
        nodes,
        publish: { inputs: { count: { visible: false } }, outputs: { debug: { visible: false } } },
        tests: [{ name: 'greets Ada', inputs: { name: 'Ada', count: 3 }, expect: { message: 'Hello, Ada!' } }],
      },
      where,
    );

    // Assess
    expect(checked.ok).toBe(true);
    if (!checked.ok) return;
    expect(Object.keys(checked.file.definition).sort()).toEqual(['description', 'nodes']);
    expect(checked.file.inputs).toEqual([
      { id: 'name', value_type: 'string', value: 'world' },
      { id: 'count', value_type: 'integer', value: 2 },
    ]);
    expect(checked.file.outputs).toEqual(['message', 'debug']);
    expect(checked.file.visibility).toEqual({ inputs: { count: false }, outputs: { debug: false }, waits: {} });
    expect(checked.file.tests).toEqual([{ name: 'greets Ada', inputs: { name: 'Ada', count: 3 }, expect: { message: 'Hello, Ada!' } }]);
  });

  it("reads a publish block's wait nodes, sends every wait's visibility, and names one that is no wait node", () => {
    const withWaits = {
      ...nodes,
      approval: { type: 'wait', inputs: ['name'], timeout_ms: 60_000 },
      hook: { type: 'wait', timeout_ms: 60_000 },
    };
    const checked = checkApplyDocument({ nodes: withWaits, publish: { waits: { hook: { visible: false } } } }, where);
    expect(checked.ok).toBe(true);
    if (!checked.ok) return;
    expect(checked.file.waits).toEqual(['approval', 'hook']);
    expect(visibilityBody(checked.file).waits).toEqual({ approval: { visible: true }, hook: { visible: false } });
    const wrong = checkApplyDocument({ nodes: withWaits, publish: { waits: { name: { visible: false } } } }, where);
    expect(wrong.ok ? [] : wrong.problems).toEqual([{ path: 'publish.waits.name', reason: 'node name is not a wait node' }]);
    // A file without wait nodes sends none (a service from before them takes no `waits`).
    const plain = checkApplyDocument({ nodes }, where);
    expect(plain.ok && 'waits' in visibilityBody(plain.file)).toBe(false);
  });

  it('lists every problem of a file at once, each with its path', () => {
    // Act
    const checked = checkApplyDocument(
      {
        nodes,
        test: [],
        publish: {
          inputs: { nme: { visible: false }, message: { visible: true } },
          outputs: { debug: { visible: 'no', extra: 1 } },
          everything: true,
        },
        tests: [
          { name: 'bad inputs', inputs: { name: 42, count: 1.5, nope: 'x' }, expect: { message: 'x' } },
          { name: 'bad expect', expect: { greeting: 'x', missing: 1, debug: { deep: true } } },
          { name: 'bad inputs', expect: {}, because: 'why not' },
          { expect: 'Hello' },
          'not a test',
        ],
      },
      where,
    );

    // Assess
    expect(checked.ok).toBe(false);
    if (checked.ok) return;
    const byPath = new Map(checked.problems.map((p) => [p.path, p.reason]));
    expect([...byPath.keys()].sort()).toEqual(
      [
        'test',
        'publish.everything',
        'publish.inputs.nme',
        'publish.inputs.message',
        'publish.outputs.debug.extra',
        'publish.outputs.debug.visible',
        'tests[0].inputs.name',
        'tests[0].inputs.count',
        'tests[0].inputs.nope',
        'tests[1].expect.greeting',
        'tests[1].expect.missing',
        'tests[1].expect.debug',
        'tests[2].name',
        'tests[2].because',
        'tests[3].name',
        'tests[3].expect',
        'tests[4]',
      ].sort(),
    );
    expect(byPath.get('test')).toMatch(/unknown key/);
    expect(byPath.get('publish.inputs.nme')).toMatch(/no input node "nme" \(inputs: name, count\)/);
    expect(byPath.get('publish.inputs.message')).toMatch(/not an input node/);
    expect(byPath.get('tests[0].inputs.name')).toMatch(/must be a string \(input name is string\), got number 42/);
    expect(byPath.get('tests[0].inputs.count')).toMatch(/must be a whole number \(input count is integer\), got number 1.5/);
    expect(byPath.get('tests[0].inputs.nope')).toMatch(/no input node "nope"/);
    expect(byPath.get('tests[1].expect.greeting')).toMatch(/not an output node/);
    expect(byPath.get('tests[1].expect.missing')).toMatch(/no output node "missing" \(outputs: message, debug\)/);
    expect(byPath.get('tests[1].expect.debug')).toMatch(/RAW/);
    expect(byPath.get('tests[2].name')).toMatch(/repeats the name of tests\[0\]/);
    expect(byPath.get('tests[3].expect')).toMatch(/object of output id/);
  });

  it("lists definition problems beside the blocks' problems", () => {
    // Act
    const checked = checkApplyDocument(
      {
        nodes: { ...nodes, broken: { type: 'transform', inputs: ['ghost'], expression: '1' } },
        tests: [{ name: 't', expect: { nope: 1 } }],
      },
      where,
    );

    // Assess
    expect(checked.ok).toBe(false);
    if (checked.ok) return;
    const paths = checked.problems.map((p) => p.path);
    expect(paths.some((p) => p.startsWith('nodes.broken'))).toBe(true);
    expect(paths).toContain('tests[0].expect.nope');
  });
});

describe('which files a set of paths names', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'pipegate-apply-unit-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, text: string) => writeFileSync(join(dir, name), text);
  const greeting = JSON.stringify({ nodes });

  it('reads the *.json, *.yaml and *.yml files directly in a directory and reports the ones that are not pipelines', () => {
    // Prepare
    write('a.json', greeting);
    write('b.yaml', `nodes:\n  x: { type: input, value_type: integer, value: 1 }\n  y: { type: output, from: x }\n`);
    write('c.yml', 'just: [a, list');
    write('package.json', JSON.stringify({ name: 'app', version: '1.0.0' }));
    write('notes.txt', 'not a pipeline, not read');
    mkdirSync(join(dir, 'nested'));
    writeFileSync(join(dir, 'nested', 'd.json'), greeting);

    // Act
    const t = readTargets([dir], dir);

    // Assess
    expect(t.files.map((f) => f.id)).toEqual(['a', 'b']);
    expect(t.invalid.map((i) => i.shown).sort()).toEqual(['c.yml', 'package.json']);
    expect(t.invalid.find((i) => i.shown === 'c.yml')?.problems[0]?.reason).toMatch(/not valid YAML/);
    expect(t.invalid.find((i) => i.shown === 'package.json')?.problems.map((p) => p.path)).toEqual(
      expect.arrayContaining(['name', 'version', 'nodes']),
    );
  });

  it('refuses a missing path, a directory without pipeline files, and two files for one pipeline', () => {
    // Prepare
    write('greeting.json', greeting);
    write('greeting.yaml', greeting);
    mkdirSync(join(dir, 'empty'));

    // Act
    const both = readTargets(['greeting.json', 'greeting.yaml'], dir);

    // Assess
    expect(() => readTargets(['nowhere'], dir)).toThrow(new UsageError('no such file or directory: nowhere'));
    expect(() => readTargets(['empty'], dir)).toThrow(/holds no pipeline files/);
    expect(() => readTargets([], dir)).toThrow(UsageError);
    expect(both.files.map((f) => f.shown)).toEqual(['greeting.json']);
    expect(both.invalid).toEqual([
      { shown: 'greeting.yaml', problems: [{ path: '(file)', reason: expect.stringMatching(/greeting\.json is pipeline greeting too/) }] },
    ]);
  });
});

describe('the plan', () => {
  it('creates, runs every test and publishes a pipeline that does not exist yet', () => {
    // Act
    const plan = computePlan(file({ tests: [{ name: 't', expect: { message: 'Hello, world!' } }] }), null, predictPush(null));

    // Assess
    expect(plan.push).toEqual({ version: 1, created: true });
    expect(plan.tests.run).toBe(true);
    expect(plan.tests.runs.map((r) => r.name)).toEqual(['t']);
    expect(plan.publish.action).toBe('create');
  });

  it('does nothing when the pushed version is live with the visibility the file asks', () => {
    // Act
    const plan = computePlan(
      file({ publish: { outputs: { debug: { visible: false } } } }),
      readiness({ deployment: deployment(1, { outputs: ['debug'] }) }),
      {
        version: 1,
        created: false,
      },
    );

    // Assess
    expect(plan.tests).toEqual({ run: false, reason: 'version 1 is live', runs: [] });
    expect(plan.publish.action).toBe('none');
  });

  it('turns the web form on (and off) as publish.form asks, and does nothing once it is as asked', () => {
    // Act
    const on = computePlan(file({ publish: { form: { title: 'Greeter' } } }), readiness(), { version: 1, created: false });
    const live = readiness({ deployment: { ...deployment(1), form: { enabled: true, title: 'Greeter', description: null } } });
    const same = computePlan(file({ publish: { form: { title: 'Greeter' } } }), live, { version: 1, created: false });
    const off = computePlan(file({ publish: { form: { enabled: false } } }), live, { version: 1, created: false });

    // Assess
    expect(on.publish.changes).toEqual(['turn the web form on', "change the web form's title"]);
    expect(on.publish.body.form).toEqual({ enabled: true, title: 'Greeter' });
    expect(same.publish.action).toBe('none');
    expect(off.publish.changes).toEqual(['turn the web form off']);
  });

  it("refuses a malformed publish.form, naming the field in the publish request's own words", () => {
    expect(checkApplyDocument({ nodes, publish: { form: { enabled: 'yes', colour: 'red' } } }, where)).toEqual({
      ok: false,
      problems: [
        { path: 'publish.form.enabled', reason: 'must be true or false' },
        { path: 'publish.form.colour', reason: 'is not a known field' },
      ],
    });
  });

  it("holds publish to the service's publish request: its limits, and every field it takes", () => {
    // Arrange: one character over the form title's limit, which the file used to let through to the service
    const long = 'x'.repeat(FORM_TITLE_MAX_CHARS + 1);

    // Act
    const tooLong = checkApplyDocument({ nodes, publish: { form: { title: long } } }, where);
    const atLimit = checkApplyDocument({ nodes, publish: { form: { title: long.slice(1) } } }, where);
    const plan = computePlan(file({ publish: { events: { node_detail: false } } }), readiness(), { version: 1, created: false });
    const same = computePlan(
      file({ publish: { events: { node_detail: false } } }),
      readiness({ deployment: { ...deployment(1), events: { node_detail: false } } }),
      { version: 1, created: false },
    );

    // Assess
    expect(tooLong).toEqual({
      ok: false,
      problems: [{ path: 'publish.form.title', reason: `must be at most ${FORM_TITLE_MAX_CHARS} characters` }],
    });
    expect(atLimit.ok).toBe(true);
    expect(plan.publish.changes).toEqual(["show only counts in callers' event streams"]);
    expect(plan.publish.body.events).toEqual({ node_detail: false });
    expect(same.publish.action).toBe('none');
  });

  it("publishes a visibility change without a run when the latest run succeeded on this version with the file's values", () => {
    // Act
    const plan = computePlan(file({ publish: { inputs: { count: { visible: false } } } }), readiness(), { version: 1, created: false });

    // Assess
    expect(plan.tests.run).toBe(false);
    expect(plan.publish.action).toBe('update');
    expect(plan.publish.changes).toEqual(['hide input count']);
    // Every entry is explicit, so a hide the file dropped is undone.
    expect(plan.publish.body).toEqual({
      inputs: { name: { visible: true }, count: { visible: false } },
      outputs: { message: { visible: true }, debug: { visible: true } },
    });
  });

  it('runs again before a visibility change when the latest run failed, was of another version or used other values', () => {
    // Prepare
    const f = file({ publish: { outputs: { debug: { visible: false } } } });
    const failed = readiness({ publishable: false, latest_run: { run_id: 'r2', status: 'failed', version: 1 } });
    const otherValues = readiness({
      discovered: {
        inputs: [
          { id: 'name', value_type: 'string', value: 'Ada', visible: true },
          { id: 'count', value_type: 'integer', value: 2, visible: true },
        ],
        outputs: [],
      },
    });

    // Act
    const plans = [failed, otherValues].map((r) => computePlan(f, r, { version: 1, created: false }));

    // Assess
    for (const plan of plans) {
      expect(plan.tests.run).toBe(true);
      expect(plan.publish).toMatchObject({ action: 'update', changes: ['hide output debug'] });
    }
  });

  it('tests and updates when the live version is another one, even if the version was pushed before', () => {
    // Act
    const fresh = computePlan(file(), readiness(), { version: 2, created: true });
    const earlierFailure = computePlan(file(), readiness({ latest_run: { run_id: 'r9', status: 'completed', version: 2 } }), {
      version: 2,
      created: false,
    });

    // Assess
    expect(fresh.tests).toMatchObject({ run: true, reason: 'version 2 is new' });
    expect(fresh.publish).toMatchObject({ action: 'update', reason: 'live version 1 → 2' });
    expect(earlierFailure.tests).toMatchObject({ run: true, reason: 'version 2 is not the live version' });
    expect(earlierFailure.publish.action).toBe('update');
  });

  it('predicts the push from the latest version and whether its content is the same', () => {
    expect(predictPush({ version: 4, sameContent: true })).toEqual({ version: 4, created: false });
    expect(predictPush({ version: 4, sameContent: false })).toEqual({ version: 5, created: true });
  });
});

describe('run order', () => {
  it("ends with a test that uses the file's values, so publishing snapshots them", () => {
    // Act
    const runs = scheduleRuns(
      file({
        tests: [
          { name: 'defaults', expect: {} },
          { name: 'same values spelled out', inputs: { name: 'world' }, expect: {} },
          { name: 'Ada', inputs: { name: 'Ada' }, expect: {} },
        ],
      }),
    );

    // Assess
    expect(runs.map((r) => r.name)).toEqual(['defaults', 'Ada', 'same values spelled out']);
    expect(runs.every((r) => r.test)).toBe(true);
  });

  it('adds a run with the current values after tests that all override, and makes it the only run without tests', () => {
    // Act
    const overriding = scheduleRuns(file({ tests: [{ name: 'Ada', inputs: { name: 'Ada' }, expect: { message: 'Hello, Ada!' } }] }));
    const none = scheduleRuns(file());

    // Assess
    expect(overriding.map((r) => [r.name, r.test])).toEqual([
      ['Ada', true],
      [CURRENT_VALUES_RUN, false],
    ]);
    expect(none).toEqual([{ name: CURRENT_VALUES_RUN, inputs: {}, expect: {}, test: false }]);
  });

  it('publishes every entry visible unless the file hides it', () => {
    expect(visibilityBody(file({ publish: { inputs: { name: { visible: false } } } }))).toEqual({
      inputs: { name: { visible: false }, count: { visible: true } },
      outputs: { message: { visible: true }, debug: { visible: true } },
    });
  });
});

describe('output comparison', () => {
  it('matches values exactly, type included, and reports a missing output', () => {
    // Act
    const mismatches = compareOutputs({ a: 1, b: '1', c: true, d: 'x', e: 'same' }, { a: 1, b: 1, c: 'true', e: 'same' });

    // Assess
    expect(mismatches).toEqual([
      { output: 'b', expected: '1', actual: 1 },
      { output: 'c', expected: true, actual: 'true' },
      { output: 'd', expected: 'x', actual: undefined },
    ]);
    expect(compareOutputs({ a: 1 }, null)).toEqual([{ output: 'a', expected: 1, actual: undefined }]);
  });
});

describe('the secrets file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'pipegate-apply-credentials-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const entry = (n: number) => ({
    deployment_id: `d${n}`,
    api_key: `pgk_${n}`,
    signing_secret: `whsec_${n}`,
    execute_url: `http://x/${n}`,
  });

  it('is created readable by its owner only and merges entries, written one after another', async () => {
    // Prepare
    const path = join(dir, 'secrets.json');
    writeFileSync(path, JSON.stringify({ kept: entry(0) }));
    const secrets = new CredentialsFile('secrets.json', dir);

    // Act
    await Promise.all([secrets.save('one', entry(1)), secrets.save('two', entry(2)), secrets.save('one', entry(3))]);

    // Assess
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ kept: entry(0), one: entry(3), two: entry(2) });
  });

  it('refuses, before anything is published, a file it could not merge into or a directory that does not exist', () => {
    // Prepare
    writeFileSync(join(dir, 'list.json'), '[1, 2]');
    writeFileSync(join(dir, 'text.json'), 'not json');

    // Assess
    expect(() => new CredentialsFile('list.json', dir)).toThrow(/does not hold a JSON object/);
    expect(() => new CredentialsFile('text.json', dir)).toThrow(/is not JSON/);
    expect(() => new CredentialsFile('missing/secrets.json', dir)).toThrow(/does not exist/);
    expect(() => new CredentialsFile('.', dir)).toThrow(/is a directory/);
  });
});

describe('bounded fan-out', () => {
  it('never has more than the bound under way and keeps results in input order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(5), { maxLength: 30 }), fc.integer({ min: 1, max: 6 }), async (delays, limit) => {
        // Prepare
        let running = 0;
        let peak = 0;

        // Act
        const results = await mapBounded(delays, limit, async (d, i) => {
          running += 1;
          peak = Math.max(peak, running);
          for (let k = 0; k <= d; k++) await Promise.resolve();
          running -= 1;
          return i;
        });

        // Assess
        expect(results).toEqual(delays.map((_, i) => i));
        expect(peak).toBeLessThanOrEqual(limit);
        if (delays.length > 0) expect(peak).toBe(Math.min(limit, delays.length));
      }),
    );
  });
});
