/**
 * The CLI's prebuilt bundle: built by the prepare script, it answers as the sources do, and
 * the launcher uses it only while every source it was built from holds the same content.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCli } from '../../../bin/build-cli';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { freshBundle, ROOT, sha256 } = require('../../../bin/cli-bundle.js') as {
  freshBundle(dist?: string, root?: string): string | null;
  ROOT: string;
  sha256(file: string): string;
};

describe('the CLI bundle', () => {
  const dist = mkdtempSync(join(tmpdir(), 'pipegate-cli-dist-'));
  afterAll(() => rmSync(dist, { recursive: true, force: true }));
  let built: { file: string; inputs: string[] };

  beforeAll(async () => {
    built = await buildCli(dist);
  });

  it('lists the repository sources it was built from, not node_modules', () => {
    expect(built.inputs).toEqual(expect.arrayContaining(['bin/pipegate.ts', 'lib/cli/program.ts', 'package.json']));
    expect(built.inputs.some((p) => p.includes('node_modules'))).toBe(false);
  });

  it("answers --help and --version as the TypeScript sources do, with V8's code cache written on first use and read after", () => {
    const env = { ...process.env, NO_COLOR: '1' };
    // What bin/pipegate.js does with a current bundle.
    const launch = join(dist, 'launch.js');
    writeFileSync(launch, `require(${JSON.stringify(join(ROOT, 'bin', 'cli-bundle.js'))}).runBundle(${JSON.stringify(built.file)});`);
    for (const args of [['--help'], ['--version'], ['push', '--help']]) {
      const fromSources = execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bin', 'pipegate.ts'), ...args], {
        cwd: ROOT,
        env,
      }).toString();
      expect(execFileSync(process.execPath, [launch, ...args], { cwd: ROOT, env }).toString()).toBe(fromSources);
      expect(existsSync(`${built.file}.v8cache`)).toBe(true);
      expect(execFileSync(process.execPath, [launch, ...args], { cwd: ROOT, env }).toString()).toBe(fromSources);
    }
  });

  it('is used while current; a missing build is not', () => {
    expect(freshBundle(dist, ROOT)).toBe(built.file);
    expect(freshBundle(join(dist, 'missing'), ROOT)).toBeNull();
  });

  it('stays current when a source is only touched (a checkout, a pull), and not once its content changes', () => {
    // Prepare: a repository of one source, with the bundle built from it a year ago.
    const root = mkdtempSync(join(tmpdir(), 'pipegate-cli-root-'));
    const out = join(root, 'dist');
    try {
      mkdirSync(out);
      writeFileSync(join(root, 'a.ts'), 'export const a = 1;');
      writeFileSync(join(out, 'pipegate.js'), '');
      writeFileSync(join(out, 'pipegate.inputs.json'), JSON.stringify({ 'a.ts': sha256(join(root, 'a.ts')) }));
      const past = new Date(Date.now() - 365 * 24 * 3600 * 1000);
      utimesSync(join(out, 'pipegate.js'), past, past);
      // Act and assess: the same bytes, newer than the bundle.
      expect(freshBundle(out, root)).toBe(join(out, 'pipegate.js'));
      writeFileSync(join(root, 'a.ts'), 'export const a = 2;');
      expect(freshBundle(out, root)).toBeNull();
      // A source recorded as changed during its build ('') is never current; nor, in the list
      // of an older build (no hashes), one newer than the bundle.
      writeFileSync(join(out, 'pipegate.inputs.json'), JSON.stringify({ 'a.ts': '' }));
      utimesSync(join(root, 'a.ts'), past, past);
      expect(freshBundle(out, root)).toBeNull();
      writeFileSync(join(out, 'pipegate.inputs.json'), JSON.stringify(['a.ts']));
      expect(freshBundle(out, root)).toBe(join(out, 'pipegate.js'));
      utimesSync(join(root, 'a.ts'), new Date(), new Date());
      expect(freshBundle(out, root)).toBeNull();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
