/**
 * The functions' bundler (lib/stacks/bundler.ts) on a small project of its own: a stack's
 * missing bundles built together, reused across bundlers (processes) while every input is the
 * same, and never served stale: an edited source, an upgraded package, a new file that an import
 * now resolves to, other options, an input that changed while esbuild ran.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { BundleSpec } from '../../../lib/stacks/bundles';
import { Bundler, estimateMs, relocateSourceMap } from '../../../lib/stacks/bundler';

const SPECS: Record<string, BundleSpec> = {
  alpha: { entry: 'src/alpha/handler.ts', external: [], stack: 'service' },
  beta: { entry: 'src/beta/handler.ts', external: [], stack: 'service' },
  init: { entry: 'src/init/handler.ts', external: [], stack: 'stateful' },
};

/** Every file and folder under `dir` dated a minute ago. */
function setPast(dir: string): void {
  const past = new Date(Date.now() - 60_000);
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const abs = path.join(dir, e.name);
    if (e.isDirectory()) setPast(abs);
    utimesSync(abs, past, past);
  }
  utimesSync(dir, past, past);
}

describe('the bundler', () => {
  let root: string;
  let lines: string[];

  const write = (rel: string, text: string) => {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  };
  /** A new bundler each time, as each synth is a new process. */
  const bundler = (specs: Record<string, BundleSpec> = SPECS) => new Bundler({ root, specs, report: (l) => lines.push(l) });
  const code = (dir: string) => readFileSync(path.join(dir, 'index.js'), 'utf8');

  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'pipegate-bundler-'));
    lines = [];
    write('package.json', JSON.stringify({ name: 'fixture', private: true }));
    write('tsconfig.json', '{}');
    write('node_modules/.package-lock.json', JSON.stringify({ name: 'fixture', packages: { 'node_modules/dep': { version: '1.0.0' } } }));
    write('node_modules/dep/package.json', JSON.stringify({ name: 'dep', version: '1.0.0', main: 'index.js' }));
    write('node_modules/dep/index.js', "module.exports = 'dep-one';");
    write('src/shared/word.ts', "export const word = 'apple';");
    write('src/shared/thing/index.ts', "export const thing = 'thing-from-folder';");
    write(
      'src/alpha/handler.ts',
      "import dep from 'dep';\nimport { word } from '../shared/word';\nimport { thing } from '../shared/thing';\nexport const handler = () => [word, dep, thing].join(' ');",
    );
    write('src/beta/handler.ts', "export const handler = () => 'beta';");
    write('src/init/handler.ts', "export const handler = () => 'init';");
    // Sources written a moment ago count as changing under esbuild (see the last test): these are older.
    setPast(root);
  });

  afterEach(() => rmSync(root, { recursive: true, force: true }));

  /** Writes a file as an editor would have some time before the synth. */
  const edit = (rel: string, text: string) => {
    const abs = path.join(root, rel);
    const dir = path.dirname(abs);
    const before = statSync(dir, { throwIfNoEntry: false });
    write(rel, text);
    const past = new Date(Date.now() - 30_000);
    utimesSync(abs, past, past);
    if (before) utimesSync(dir, past, past);
  };

  it("builds a stack's missing bundles together, and a later bundler reuses them", () => {
    // Act
    const first = bundler().bundle('alpha');
    const beta = bundler().bundle('beta');
    // Assess
    expect(first.source).toBe('built');
    expect(code(first.dir)).toContain('apple');
    expect(code(first.dir)).toContain('dep-one');
    expect(lines[0]).toMatch(/^service stack: 2 of 2 bundles to build/);
    expect(lines.some((l) => l.startsWith('stateful'))).toBe(false);
    expect(beta.source).toBe('cache');
    const again = bundler().bundle('alpha');
    expect(again).toEqual({ dir: first.dir, source: 'cache' });
  });

  it('never serves a stale bundle: edited source, upgraded package, new file an import resolves to', () => {
    // Prepare
    const apple = bundler().bundle('alpha');
    // Act: the same size and the same modification time as before, only the bytes differ.
    const word = path.join(root, 'src/shared/word.ts');
    const { mtime } = statSync(word);
    writeFileSync(word, "export const word = 'grape';");
    utimesSync(word, mtime, mtime);
    lines = [];
    const grape = bundler().bundle('alpha');
    // Assess
    expect(grape.source).toBe('built');
    expect(grape.dir).not.toBe(apple.dir);
    expect(code(grape.dir)).toContain('grape');
    expect(code(grape.dir)).not.toContain('apple');
    expect(lines[0]).toMatch(/^service stack: 1 of 2 bundles to build \(1 unchanged, reused\)/);

    // Act: a package upgraded in node_modules.
    edit('node_modules/dep/index.js', "module.exports = 'dep-two';");
    const upgraded = bundler().bundle('alpha');
    // Assess
    expect(upgraded.source).toBe('built');
    expect(code(upgraded.dir)).toContain('dep-two');

    // Act: `../shared/thing` now finds thing.ts before thing/index.ts.
    edit('src/shared/thing.ts', "export const thing = 'thing-from-file';");
    const shadowed = bundler().bundle('alpha');
    // Assess
    expect(shadowed.source).toBe('built');
    expect(code(shadowed.dir)).toContain('thing-from-file');
    expect(code(shadowed.dir)).not.toContain('thing-from-folder');
  });

  it('serves an earlier entry again when the sources are back to what it was built from', () => {
    // Prepare
    const apple = bundler().bundle('alpha');
    edit('src/shared/word.ts', "export const word = 'lemon';");
    expect(code(bundler().bundle('alpha').dir)).toContain('lemon');
    // Act
    edit('src/shared/word.ts', "export const word = 'apple';");
    const back = bundler().bundle('alpha');
    // Assess
    expect(back).toEqual({ dir: apple.dir, source: 'cache' });
    expect(code(back.dir)).toContain('apple');
  });

  it('replaces an entry that is not whole (damaged by hand) instead of serving or keeping it', () => {
    // Prepare
    const first = bundler().bundle('alpha');
    writeFileSync(path.join(first.dir, 'inputs.json'), '{');
    // Act: the same inputs, so the same entry, which is there but unreadable.
    const again = bundler().bundle('alpha');
    const third = bundler().bundle('alpha');
    // Assess
    expect(again).toEqual({ dir: first.dir, source: 'built' });
    expect(third).toEqual({ dir: first.dir, source: 'cache' });
    expect(code(third.dir)).toContain('apple');
  });

  it('builds again for other options', () => {
    // Prepare
    const bundled = bundler().bundle('alpha');
    expect(code(bundled.dir)).toContain('dep-one');
    // Act
    const external = bundler({ ...SPECS, alpha: { ...SPECS.alpha!, external: ['dep'] } }).bundle('alpha');
    // Assess
    expect(external.source).toBe('built');
    expect(code(external.dir)).not.toContain('dep-one');
    expect(code(external.dir)).toContain('require("dep")');
  });

  it('keeps no bundle whose input changed while esbuild ran', () => {
    // Prepare: a modification time past the build's start stands for an edit during the build.
    const word = path.join(root, 'src/shared/word.ts');
    const later = new Date(Date.now() + 5_000);
    utimesSync(word, later, later);
    // Act
    const once = bundler().bundle('alpha');
    const next = bundler().bundle('alpha');
    // Assess: used by its own synth, built again by the next.
    expect(once.source).toBe('built');
    expect(code(once.dir)).toContain('apple');
    expect(next.source).toBe('built');
  });

  it("writes a bundle where the CDK asks, its source map naming the same files from there, with the spec's extra files", () => {
    // Prepare
    write('extra/page.css', 'body{}');
    const specs = {
      ...SPECS,
      alpha: { ...SPECS.alpha!, copyFiles: { fromDir: path.join(root, 'extra'), files: ['page.css'], toDir: 'assets' } },
    };
    const b = bundler(specs);
    const { dir } = b.bundle('alpha');
    const outDir = path.join(root, 'cdk.out', 'bundling-temp-x');
    // Act
    b.writeTo('alpha', outDir);
    // Assess
    expect(readFileSync(path.join(outDir, 'index.js'), 'utf8')).toBe(code(dir));
    const sources = (JSON.parse(readFileSync(path.join(outDir, 'index.js.map'), 'utf8')) as { sources: string[] }).sources;
    expect(sources.map((s) => path.relative(root, path.resolve(outDir, s))).sort()).toEqual(
      ['node_modules/dep/index.js', 'src/alpha/handler.ts', 'src/shared/thing/index.ts', 'src/shared/word.ts'].sort(),
    );
    expect(readFileSync(path.join(outDir, 'assets', 'page.css'), 'utf8')).toBe('body{}');
  });
});

describe('source maps moved to another folder', () => {
  it('name the same files, and only the sources change', () => {
    const text = '{\n  "version": 3,\n  "sources": ["../../src/a.ts", "../../node_modules/x/i.js"],\n  "mappings": "AAAA"\n}\n';
    const moved = relocateSourceMap(text, '/r/.tmp/x', '/r/cdk.out/asset.1/y');
    expect(moved).toBe(
      '{\n  "version": 3,\n  "sources": ["../../../src/a.ts", "../../../node_modules/x/i.js"],\n  "mappings": "AAAA"\n}\n',
    );
    expect(relocateSourceMap(text, '/r/.tmp/x', '/r/.tmp/z')).toBe(text);
  });
});

describe('the bundling estimate', () => {
  it('scales the last measured rate by the load beyond the cores, now against then', () => {
    const rate = { msPerBundle: 500, load: 1, cores: 2 };
    expect(estimateMs(rate, 10, 1, 2)).toBe(5000);
    expect(estimateMs(rate, 10, 8, 2)).toBe(20_000);
    expect(estimateMs({ ...rate, load: 8 }, 10, 2, 2)).toBe(1250);
  });
});
