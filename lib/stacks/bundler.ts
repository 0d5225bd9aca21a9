/**
 * The functions' bundles, for the function construct (pipegate-function.ts): esbuild run in this
 * process (the CDK's own NodejsFunction bundling runs `npx esbuild` and a shell per function, one
 * at a time), every missing bundle of a stack in one go, and a content-addressed cache across
 * synths in .tmp/bundles.
 *
 * A cache entry is addressed by everything its bundle was built from: the esbuild version and
 * options, the bytes of every file esbuild read (its metafile's inputs), the listing of every
 * folder those files are in and above them (a new file there can change what an import
 * resolves to), the installed package tree (node_modules/.package-lock.json), tsconfig.json and
 * the package.json fields esbuild reads. An entry is served only when all of those hash the same now; contents are
 * hashed, never trusted from modification times, and a bundle whose inputs changed while esbuild
 * ran is used once but not kept.
 */
import { createHash } from 'node:crypto';
import {
  constants as fsConstants,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import * as path from 'node:path';
import * as esbuild from 'esbuild';
import { bundleSpecs, ESBUILD_TARGET, type BundleSpec } from './bundles';

/** Bump when what an entry holds, or how it is made, changes: older entries are then never served. */
const CACHE_FORMAT = 1;

/** Entries kept per bundle beside the newest (switching branches back and forth reuses them). */
const KEEP = 3;

/** At most this many functions per esbuild run: progress (and the estimate) after each run. */
const RUN_SIZE = 8;

/** A file changed this close to a build's start (or later) may have been read half-way: not kept. */
const FRESH_MS = 100;

/** Lines on stderr from the bundler start with this (lib/synth/assembly.ts relays them). */
export const BUNDLE_LINE_PREFIX = 'pipegate bundles: ';

/**
 * esbuild's options for every function: a minified CommonJS bundle with a source map that names
 * files and lines but carries no source text (stack traces need no more; the bundle stays small).
 */
export function esbuildOptions(spec: Pick<BundleSpec, 'external'>): esbuild.BuildOptions {
  return {
    bundle: true,
    platform: 'node',
    target: ESBUILD_TARGET,
    format: 'cjs',
    minify: true,
    sourcemap: true,
    sourcesContent: false,
    // ESM builds of the SDK tree-shake far better than its CommonJS ones.
    mainFields: ['module', 'main'],
    // The SDK v3 is bundled, not taken from the runtime: the function runs the exact client
    // versions the tests ran against, and a minified, tree-shaken bundle loads faster on a cold
    // start than the runtime's full SDK from disk. Only what the function can use: SDK clients
    // it never creates stay out.
    external: [...spec.external],
    logLevel: 'warning',
  };
}

export interface BundlerOptions {
  /** The repository: entries, inputs and node_modules are found from here. */
  root: string;
  /** Default `<root>/.tmp/bundles`. */
  cacheDir?: string;
  /** Default: lib/stacks/bundles.ts. */
  specs?: Readonly<Record<string, BundleSpec>>;
  /** Default: stderr, each line after BUNDLE_LINE_PREFIX. */
  report?: (line: string) => void;
}

/** What the last bundle of this bundler came from. */
export type BundleSource = 'cache' | 'built';

interface InputsRecord {
  format: number;
  options: string;
  files: Record<string, string>;
  dirs: Record<string, string>;
}

interface Rate {
  msPerBundle: number;
  load: number;
  cores: number;
}

const sha = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

export class Bundler {
  readonly root: string;
  readonly cacheDir: string;
  private readonly specs: Readonly<Record<string, BundleSpec>>;
  private readonly report: (line: string) => void;
  /** Bundle name → its cache entry, once found or built in this process. */
  private readonly ready = new Map<string, { dir: string; source: BundleSource }>();
  private readonly fileHashes = new Map<string, string>();
  private readonly dirHashes = new Map<string, string>();

  constructor(options: BundlerOptions) {
    this.root = path.resolve(options.root);
    this.cacheDir = options.cacheDir ?? path.join(this.root, '.tmp', 'bundles');
    this.specs = options.specs ?? bundleSpecs();
    this.report = options.report ?? ((line) => process.stderr.write(`${BUNDLE_LINE_PREFIX}${line}\n`));
  }

  /**
   * The folder holding `name`'s bundle (index.js, index.js.map): from the cache when every input
   * is unchanged, else built now together with every other missing bundle of the same stack.
   */
  bundle(name: string): { dir: string; source: BundleSource } {
    const done = this.ready.get(name);
    if (done) return done;
    const spec = this.spec(name);
    const batch = Object.keys(this.specs).filter((n) => this.specs[n]?.stack === spec.stack && !this.ready.has(n));
    const missing: string[] = [];
    for (const n of batch) {
      const dir = this.lookup(n);
      if (dir) this.ready.set(n, { dir, source: 'cache' });
      else missing.push(n);
    }
    if (missing.length > 0) this.build(missing, batch.length, spec.stack);
    const out = this.ready.get(name);
    if (!out) throw new Error(`bundle ${name} was not built`);
    return out;
  }

  /**
   * Writes `name`'s bundle into `outDir` (the CDK's bundling output folder) with its extra files.
   * The source map's paths are made relative to `outDir`, as esbuild writing there would have.
   */
  writeTo(name: string, outDir: string): void {
    const spec = this.spec(name);
    const { dir } = this.bundle(name);
    mkdirSync(outDir, { recursive: true });
    copyFileSync(path.join(dir, 'index.js'), path.join(outDir, 'index.js'), fsConstants.COPYFILE_FICLONE);
    writeFileSync(path.join(outDir, 'index.js.map'), relocateSourceMap(readFileSync(path.join(dir, 'index.js.map'), 'utf8'), dir, outDir));
    if (spec.copyFiles) {
      const to = path.join(outDir, spec.copyFiles.toDir);
      mkdirSync(to, { recursive: true });
      for (const f of spec.copyFiles.files) copyFileSync(path.join(spec.copyFiles.fromDir, f), path.join(to, f));
    }
  }

  private spec(name: string): BundleSpec {
    const spec = this.specs[name];
    if (!spec) throw new Error(`No bundle "${name}" in lib/stacks/bundles.ts`);
    return spec;
  }

  /** What every entry of this bundle shares beyond its inputs: format, esbuild, options, entry, packages. */
  private optionsKey(name: string): string {
    const spec = this.spec(name);
    const options = esbuildOptions(spec);
    return sha(
      JSON.stringify({
        format: CACHE_FORMAT,
        esbuild: esbuild.version,
        options: { ...options, external: [...(options.external ?? [])].sort() },
        entry: spec.entry,
        installed: this.fileHash('node_modules/.package-lock.json'),
        tsconfig: this.fileHash('tsconfig.json'),
        packageJson: this.packageFields(),
      }),
    );
  }

  /** The root package.json's fields that change how esbuild reads the sources. */
  private packageFields(): unknown {
    try {
      const pkg = JSON.parse(readFileSync(path.join(this.root, 'package.json'), 'utf8')) as Record<string, unknown>;
      return ['type', 'sideEffects', 'browser', 'imports', 'exports', 'main', 'module'].map((k) => [k, pkg[k] ?? null]);
    } catch {
      return null;
    }
  }

  private fileHash(rel: string): string {
    let h = this.fileHashes.get(rel);
    if (h === undefined) {
      try {
        h = sha(readFileSync(path.join(this.root, rel)));
      } catch {
        h = 'absent';
      }
      this.fileHashes.set(rel, h);
    }
    return h;
  }

  private dirHash(rel: string): string {
    let h = this.dirHashes.get(rel);
    if (h === undefined) {
      try {
        const entries = readdirSync(path.join(this.root, rel), { withFileTypes: true })
          .map((e) => `${e.name}${e.isDirectory() ? '/' : ''}`)
          .sort();
        h = sha(entries.join('\0'));
      } catch {
        h = 'absent';
      }
      this.dirHashes.set(rel, h);
    }
    return h;
  }

  /** The newest entry of `name` whose every input hashes as it did when it was built. */
  private lookup(name: string): string | undefined {
    const base = path.join(this.cacheDir, name);
    if (!existsSync(base)) return undefined;
    const options = this.optionsKey(name);
    const entries = readdirSync(base)
      .filter((n) => /^[0-9a-f]{24}$/.test(n))
      .map((n) => ({ dir: path.join(base, n), t: statSync(path.join(base, n), { throwIfNoEntry: false })?.mtimeMs ?? 0 }))
      .sort((a, b) => b.t - a.t);
    for (const { dir } of entries) {
      const record = readRecord(dir);
      if (!record || record.format !== CACHE_FORMAT || record.options !== options) continue;
      const same =
        Object.entries(record.files).every(([f, h]) => this.fileHash(f) === h) &&
        Object.entries(record.dirs).every(([d, h]) => this.dirHash(d) === h);
      if (!same) continue;
      const now = new Date();
      utimesSync(dir, now, now);
      return dir;
    }
    return undefined;
  }

  /** Builds `names` (grouped by options, so shared modules are parsed once a run) into the cache. */
  private build(names: string[], batchSize: number, stack: BundleSpec['stack']): void {
    const reused = batchSize - names.length;
    const rate = this.readRate();
    const estimate = rate ? estimateMs(rate, names.length) : undefined;
    this.report(
      `${stack} stack: ${names.length} of ${batchSize} bundles to build${reused > 0 ? ` (${reused} unchanged, reused)` : ''}` +
        (rate && estimate !== undefined
          ? `, about ${seconds(estimate)} at the ${(rate.msPerBundle / 1000).toFixed(1)} s a bundle measured here last time (load ${rate.load.toFixed(1)} then, ${currentLoad().toFixed(1)} now)`
          : ', no earlier build here to estimate from: an estimate follows the first group'),
    );
    const groups = new Map<string, string[]>();
    for (const n of names) {
      const key = JSON.stringify([...this.spec(n).external].sort());
      groups.set(key, [...(groups.get(key) ?? []), n]);
    }
    const runs: string[][] = [];
    for (const group of groups.values()) {
      const size = Math.ceil(group.length / Math.ceil(group.length / RUN_SIZE));
      for (let i = 0; i < group.length; i += size) runs.push(group.slice(i, i + size));
    }
    // The largest runs first: their rate (shared parsing over more bundles) is most of the
    // work, so the estimate after the first one is the closest.
    runs.sort((a, b) => b.length - a.length);
    mkdirSync(this.cacheDir, { recursive: true });
    this.removeLeftovers();
    const started = Date.now();
    let built = 0;
    for (const run of runs) {
      this.buildRun(run);
      built += run.length;
      const elapsed = Date.now() - started;
      const left = ((elapsed / built) * (names.length - built)) | 0;
      this.report(`built ${built} of ${names.length} in ${seconds(elapsed)}${built < names.length ? `, about ${seconds(left)} left` : ''}`);
    }
    // A lone bundle pays a whole esbuild run's start and shared parsing alone: its rate would
    // overstate a stack's (1.2 s a bundle against 0.6 s here). A first start without a rate
    // estimates from its first run instead.
    if (names.length >= RUN_SIZE / 2) {
      this.writeRate({ msPerBundle: (Date.now() - started) / names.length, load: currentLoad(), cores: cores() });
    }
  }

  private buildRun(names: string[]): void {
    // At the depth of an entry (<cacheDir>/<name>/<key>): the source maps' relative paths hold after the move.
    const staging = path.join(this.cacheDir, `.building-${process.pid}-${Date.now().toString(36)}`);
    rmSync(staging, { recursive: true, force: true });
    const first = this.spec(names[0]!);
    const started = Date.now();
    let result: esbuild.BuildResult<{ metafile: true }>;
    try {
      result = esbuild.buildSync({
        ...esbuildOptions(first),
        absWorkingDir: this.root,
        entryPoints: names.map((n) => ({ in: path.join(this.root, this.spec(n).entry), out: `${n}/index` })),
        outdir: staging,
        metafile: true,
      });
    } catch (err) {
      rmSync(staging, { recursive: true, force: true });
      throw err;
    }
    const options = new Map(names.map((n) => [n, this.optionsKey(n)]));
    for (const n of names) {
      const outRel = path
        .relative(this.root, path.join(staging, n, 'index.js'))
        .split(path.sep)
        .join('/');
      const output = result.metafile.outputs[outRel];
      if (!output) throw new Error(`esbuild wrote no ${outRel}`);
      const files: Record<string, string> = {};
      const dirs: Record<string, string> = {};
      let fresh = false;
      for (const input of Object.keys(output.inputs).sort()) {
        const abs = path.resolve(this.root, input);
        const rel = path.relative(this.root, abs);
        this.fileHashes.delete(rel);
        files[rel] = this.fileHash(rel);
        if (changedSince(abs, started)) fresh = true;
        // Every folder from the file's up to the repository's: a file added to any of them can
        // change what an import resolves to (`./x` finding x.ts before x/index.ts).
        for (let d = path.dirname(rel); d !== '.' && !d.startsWith('..') && !(d in dirs); d = path.dirname(d)) {
          this.dirHashes.delete(d);
          dirs[d] = this.dirHash(d);
          if (changedSince(path.join(this.root, d), started)) fresh = true;
        }
      }
      const record: InputsRecord = { format: CACHE_FORMAT, options: options.get(n)!, files, dirs };
      const key = sha(JSON.stringify(record)).slice(0, 24);
      const from = path.join(staging, n);
      const to = path.join(this.cacheDir, n, key);
      writeFileSync(path.join(from, 'inputs.json'), JSON.stringify(record));
      if (fresh) {
        // Used by this synth only: what esbuild read may not be what the record says.
        const once = path.join(this.cacheDir, `.once-${process.pid}`, n);
        rmSync(once, { recursive: true, force: true });
        mkdirSync(path.dirname(once), { recursive: true });
        renameSync(from, once);
        this.ready.set(n, { dir: once, source: 'built' });
        continue;
      }
      mkdirSync(path.dirname(to), { recursive: true });
      try {
        renameSync(from, to);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
        // Another synth (a test run beside start:synth) stored the same entry first: the same
        // inputs, so the same bundle; keep theirs. One that is not whole (damaged by hand) is
        // replaced.
        if (readRecord(to)) rmSync(from, { recursive: true, force: true });
        else {
          rmSync(to, { recursive: true, force: true });
          renameSync(from, to);
        }
      }
      this.ready.set(n, { dir: to, source: 'built' });
      this.prune(n, key);
    }
    rmSync(staging, { recursive: true, force: true });
  }

  /** Staging folders of bundlers that are gone (a synth killed mid-build). */
  private removeLeftovers(): void {
    for (const n of readdirSync(this.cacheDir)) {
      const m = /^\.(?:building|once)-(\d+)/.exec(n);
      if (m && Number(m[1]) !== process.pid && !pidAlive(Number(m[1])))
        rmSync(path.join(this.cacheDir, n), { recursive: true, force: true });
    }
  }

  private prune(name: string, keep: string): void {
    const base = path.join(this.cacheDir, name);
    const entries = readdirSync(base)
      .filter((n) => n !== keep && /^[0-9a-f]{24}$/.test(n))
      .map((n) => ({ n, t: statSync(path.join(base, n)).mtimeMs }))
      .sort((a, b) => b.t - a.t);
    for (const { n } of entries.slice(KEEP - 1)) rmSync(path.join(base, n), { recursive: true, force: true });
  }

  private readRate(): Rate | undefined {
    try {
      const r = JSON.parse(readFileSync(path.join(this.cacheDir, 'rate.json'), 'utf8')) as Rate;
      return r.msPerBundle > 0 && r.cores > 0 && r.load >= 0 ? r : undefined;
    } catch {
      return undefined;
    }
  }

  private writeRate(rate: Rate): void {
    writeFileSync(path.join(this.cacheDir, 'rate.json'), JSON.stringify(rate));
  }
}

/** An entry's record when the entry is whole (its record readable, its bundle and map there). */
function readRecord(dir: string): InputsRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(path.join(dir, 'inputs.json'), 'utf8')) as InputsRecord;
    const whole = isPlainRecord(record.files) && isPlainRecord(record.dirs);
    return whole && existsSync(path.join(dir, 'index.js')) && existsSync(path.join(dir, 'index.js.map')) ? record : undefined;
  } catch {
    return undefined;
  }
}

const isPlainRecord = (v: unknown): v is Record<string, string> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether the file or folder changed this close to `started` or later (so perhaps while esbuild read it). */
const changedSince = (abs: string, started: number): boolean =>
  (statSync(abs, { throwIfNoEntry: false })?.mtimeMs ?? 0) >= started - FRESH_MS;

const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

const cores = (): number => availableParallelism();
const currentLoad = (): number => loadavg()[0] ?? 0;

/**
 * A time measured at load `then`, as it should take at load `now`: CPU-bound work slows in
 * proportion to the runnable processes beyond the cores.
 */
export function loadScaled(ms: number, then: number, now: number = currentLoad(), cpus: number = cores()): number {
  const busy = (l: number) => Math.max(1, l / cpus);
  return (ms * busy(now)) / busy(then);
}

/** The time `count` bundles should take, from the rate measured last time. */
export function estimateMs(rate: Rate, count: number, load = currentLoad(), cpus = cores()): number {
  const busy = (l: number, c: number) => Math.max(1, l / c);
  return (rate.msPerBundle * count * busy(load, cpus)) / busy(rate.load, rate.cores);
}

const seconds = (ms: number): string => `${Math.max(1, Math.round(ms / 1000))} s`;

/**
 * A source map written for a bundle in `fromDir` as esbuild writing it into `toDir` would: the
 * same files, named relative to `toDir`. The rest of the file is left byte for byte.
 */
export function relocateSourceMap(text: string, fromDir: string, toDir: string): string {
  const map = JSON.parse(text) as { sources?: string[] };
  const sources = map.sources ?? [];
  const moved = sources.map((s) => path.relative(toDir, path.resolve(fromDir, s)).split(path.sep).join('/'));
  if (moved.every((s, i) => s === sources[i])) return text;
  const render = (list: string[]) => `"sources": [${list.map((s) => JSON.stringify(s)).join(', ')}]`;
  const was = render(sources);
  return text.includes(was) ? text.replace(was, () => render(moved)) : JSON.stringify({ ...map, sources: moved });
}

let shared: Bundler | undefined;

/**
 * One bundler per process for the repository the app is built from; its cache is
 * PIPEGATE_BUNDLE_CACHE_DIR when set (benchmarks measure a cold cache without touching yours).
 */
export function sharedBundler(root: string): Bundler {
  const cacheDir = process.env.PIPEGATE_BUNDLE_CACHE_DIR || undefined;
  if (!shared || shared.root !== path.resolve(root)) shared = new Bundler({ root, ...(cacheDir ? { cacheDir } : {}) });
  return shared;
}
