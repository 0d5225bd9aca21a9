/**
 * The CLI's prebuilt bundle: built by the prepare script, it answers as the sources do, and
 * the launcher uses it only while no source it was built from is newer.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCli } from '../../../bin/build-cli';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { freshBundle, ROOT } = require('../../../bin/cli-bundle.js') as {
  freshBundle(dist?: string, root?: string): string | null;
  ROOT: string;
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

  it('is used while current, and not once a source is newer', () => {
    expect(freshBundle(dist, ROOT)).toBe(built.file);
    // As if lib/cli/program.ts had been edited after the build.
    const past = new Date(Date.now() - 365 * 24 * 3600 * 1000);
    utimesSync(built.file, past, past);
    expect(freshBundle(dist, ROOT)).toBeNull();
    expect(freshBundle(join(dist, 'missing'), ROOT)).toBeNull();
  });
});
