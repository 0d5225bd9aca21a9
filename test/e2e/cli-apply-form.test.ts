/**
 * `pipegate apply` with a web form, end to end (the CLI spawned against a started local
 * runtime): a file's `publish.form` turns the form on with its title and prints the link, which
 * opens the page; a file that turns it off plans and does that, and the link answers 404; the
 * same file again changes nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, type CliRun } from '../support/cli';
import { startTestRuntime, type TestRuntime } from '../support/runtime';

let rt: TestRuntime;
let work: string;
const pg = (args: string[]): Promise<CliRun> =>
  runCli(args, { cwd: work, env: { PIPEGATE_URL: rt.url, PIPEGATE_OWNER_TOKEN: rt.ownerToken, NO_COLOR: '1' } });

const file = (form: string) => `nodes:
  name: { type: input, value_type: string, value: world }
  greeting: { type: transform, inputs: [name], expression: "'Hello, ' & name & '!'" }
  message: { type: output, from: greeting }
publish:
  form: ${form}
tests:
  - name: greets the world
    expect: { message: 'Hello, world!' }
`;

beforeAll(async () => {
  rt = await startTestRuntime();
  work = mkdtempSync(join(tmpdir(), 'pipegate-apply-form-'));
});

afterAll(async () => {
  await rt?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('pipegate apply with publish.form', () => {
  let formUrl = '';

  it('turns the form on with its title and prints the link, which opens the page', async () => {
    writeFileSync(join(work, 'hello.yaml'), file('{ enabled: true, title: Say hello }'));
    const done = await pg(['apply', 'hello.yaml', '--secrets-out', 'secrets.json']);
    expect(done.code).toBe(0);
    formUrl = /form {9}(\S+)/.exec(done.stdout)?.[1] ?? '';
    expect(formUrl).toMatch(/\/v1\/forms\/pgf_[A-Za-z0-9_-]{43}$/);
    const page = await fetch(formUrl);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<h1>Say hello</h1>');
  });

  it('plans turning it off, does it (the link 404s at once), and then has nothing left to do', async () => {
    writeFileSync(join(work, 'hello.yaml'), file('{ enabled: false }'));
    const dry = await pg(['apply', 'hello.yaml', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('turn the web form off');

    const off = await pg(['apply', 'hello.yaml']);
    expect(off.code).toBe(0);
    expect((await fetch(formUrl)).status).toBe(404);

    const again = await pg(['apply', 'hello.yaml', '--json']);
    expect(again.code).toBe(0);
    const plan = (JSON.parse(again.stdout) as { pipelines: { plan: { publish: { action: string } } }[] }).pipelines[0]?.plan;
    expect(plan?.publish.action).toBe('none');
    expect((await fetch(formUrl)).status).toBe(404);
  });
});
