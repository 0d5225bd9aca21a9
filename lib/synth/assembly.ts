/**
 * The cloud assembly `cdk deploy` would upload, built offline and read back: synthesis through
 * the CDK CLI exactly as `npm run synth` runs it, a cache keyed by the inputs so tests and
 * `npm run start:synth` reuse one synth, and a reader for the stacks' templates and each Lambda's
 * bundled asset.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import * as path from 'node:path';
import { bundleSpecs } from '../stacks/bundles';
import { BUNDLE_LINE_PREFIX, loadScaled } from '../stacks/bundler';
import { PLACEHOLDER_ENV } from '../stacks/settings';
import { isPlainObject } from '../../functions/core/values';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
/** The account and region every local synth is made for (no AWS lookup needed). */
export const SYNTH_ENV = PLACEHOLDER_ENV;

/**
 * What the app and the bundles are built from. lib/local, lib/cli and lib/synth are left out:
 * neither the CDK app nor any function imports them (test/synth/assembly.test.ts checks the
 * bundles' source maps), and leaving them out spares a 30 s re-synth on every change to them.
 */
const INPUTS = ['lib', 'functions', 'bin/app.ts', 'cdk.json', 'package-lock.json'];
const NOT_INPUTS = ['lib/local', 'lib/cli', 'lib/synth'];

/**
 * cdk-nag is not run for the local assembly: its checks only report (errors fail the synth,
 * findings land in validation-report.json); the templates it leaves are the same byte for byte
 * but for CDK's deflated construct-usage string in AWS::CDK::Metadata. `npm run synth` and the
 * stack tests still run it.
 */
const LOCAL_CONTEXT: Readonly<Record<string, string>> = { nag: 'false' };

/**
 * Nor are the CDK's own default CloudFormation rules (`CDK_VALIDATION=false`): they only report
 * too, leave every template and manifest the same byte for byte, and took over half of the
 * app's time here (7 of 13 s of CPU). `npm run synth` and deploys still run them.
 */
const LOCAL_ENV: Readonly<Record<string, string>> = { CDK_VALIDATION: 'false' };

export interface SynthOptions {
  root?: string;
  /** Extra `-c key=value` context (also part of the cache key). */
  context?: Record<string, string>;
  /** A line per stage of a synth that is not answered from the cache, with estimates from earlier ones. */
  progress?: (line: string) => void;
}

/** Bundles a synth makes: every entry of lib/stacks/bundles.ts. */
export const EXPECTED_BUNDLES = Object.keys(bundleSpecs()).length;

/**
 * Relays the bundler's lines from the synth's output (lib/stacks/bundler.ts writes them to
 * stderr while the CDK runs the app), and times the bundling they announce. Chunks may split lines.
 */
export class BundleLines {
  /** Milliseconds between each "to build" line and its batch's last "built" line. */
  bundleMs = 0;
  private rest = '';
  private since: number | undefined;

  constructor(
    private readonly progress: (line: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  feed(chunk: string): void {
    const lines = (this.rest + chunk).split('\n');
    this.rest = lines.pop() ?? '';
    for (const raw of lines) {
      if (!raw.startsWith(BUNDLE_LINE_PREFIX)) continue;
      const line = raw.slice(BUNDLE_LINE_PREFIX.length).trim();
      if (/ bundles to build\b/.test(line)) this.since = this.now();
      const built = /^built (\d+) of (\d+)\b/.exec(line);
      if (built && built[1] === built[2] && this.since !== undefined) {
        this.bundleMs += this.now() - this.since;
        this.since = undefined;
      }
      this.progress(line);
    }
  }
}

export interface SynthResult {
  dir: string;
  /** Milliseconds the synth took; 0 when the cache answered. */
  ms: number;
  /** Of which bundling (the bundler's own lines, timed as they arrived). */
  bundleMs: number;
  cached: boolean;
}

/** Every file under the inputs, sorted, hashed with its path: the cache key. */
export function inputsHash(root: string = REPO_ROOT, context: Record<string, string> = {}): string {
  const hash = createHash('sha256');
  const skip = new Set(NOT_INPUTS.map((p) => path.join(root, p)));
  const visit = (abs: string): void => {
    if (skip.has(abs)) return;
    const st = statSync(abs, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isDirectory()) {
      for (const entry of readdirSync(abs).sort()) visit(path.join(abs, entry));
      return;
    }
    if (!st.isFile()) return;
    hash.update(path.relative(root, abs)).update('\0').update(readFileSync(abs)).update('\0');
  };
  for (const input of INPUTS) visit(path.join(root, input));
  hash.update(JSON.stringify(Object.entries({ ...LOCAL_CONTEXT, ...context }).sort()));
  return hash.digest('hex').slice(0, 24);
}

/**
 * Runs the CDK CLI as `npm run synth` does (explicit account and region, no telemetry, no
 * version check, no notices; esbuild bundles locally) into `outdir`.
 */
export async function synthesize(outdir: string, options: SynthOptions = {}): Promise<{ ms: number; bundleMs: number }> {
  const root = options.root ?? REPO_ROOT;
  const context = { account: SYNTH_ENV.account, region: SYNTH_ENV.region, ...LOCAL_CONTEXT, ...options.context };
  const env: NodeJS.ProcessEnv = {};
  // No credentials, profile or default environment of the caller's may leak into the synth.
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('AWS_') && !k.startsWith('CDK_')) env[k] = v;
  Object.assign(env, {
    ...LOCAL_ENV,
    CDK_DISABLE_CLI_TELEMETRY: 'true',
    CDK_DISABLE_VERSION_CHECK: '1',
    AWS_EC2_METADATA_DISABLED: 'true',
  });
  const args = [
    require.resolve('aws-cdk/bin/cdk'),
    'synth',
    '--no-notices',
    '-q',
    '-o',
    outdir,
    ...Object.entries(context).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
  ];
  const started = Date.now();
  const output: string[] = [];
  const lines = new BundleLines(options.progress ?? (() => undefined));
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => output.push(d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      output.push(d.toString());
      lines.feed(d.toString());
    });
    child.on('error', reject);
    child.on('close', resolve);
  });
  if (code !== 0) throw new Error(`cdk synth failed (exit ${code}):\n${output.join('').slice(-4000)}`);
  return { ms: Date.now() - started, bundleMs: lines.bundleMs };
}

const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

const readPid = (file: string): number => {
  try {
    const n = Number(readFileSync(file, 'utf8'));
    return Number.isInteger(n) && n > 0 ? n : NaN;
  } catch {
    return NaN;
  }
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Assemblies kept beside the newest; each is ≈ 25 MB. */
const KEEP = 3;

/**
 * The assembly for the current sources: from `<cacheDir>/<inputs hash>` when an earlier synth
 * left it there, else synthesized once. Concurrent callers (jest workers, a server) share one
 * synth through a lock directory; a lock whose owner died is taken over.
 */
export async function cachedAssembly(options: SynthOptions & { cacheDir?: string } = {}): Promise<SynthResult> {
  const root = options.root ?? REPO_ROOT;
  const cacheDir = options.cacheDir ?? path.join(root, '.tmp', 'synth');
  const key = inputsHash(root, options.context);
  const dir = path.join(cacheDir, key);
  const done = path.join(dir, '.complete');
  const lock = `${dir}.lock`;
  mkdirSync(cacheDir, { recursive: true });
  let waitingSaid = false;
  for (;;) {
    if (existsSync(done)) return { dir, ms: 0, bundleMs: 0, cached: true };
    try {
      mkdirSync(lock);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = readPid(path.join(lock, 'pid'));
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      // An owner that died mid-synth leaves its lock behind; one that has not yet written its pid is young.
      if ((Number.isFinite(owner) && !pidAlive(owner)) || (!Number.isFinite(owner) && age > 10_000)) {
        rmSync(lock, { recursive: true, force: true });
      } else {
        if (!waitingSaid) options.progress?.('waiting for another process synthesizing the same sources');
        waitingSaid = true;
        await sleep(250);
      }
      continue;
    }
    try {
      writeFileSync(path.join(lock, 'pid'), String(process.pid));
      if (existsSync(done)) return { dir, ms: 0, bundleMs: 0, cached: true };
      const partial = `${dir}.partial-${process.pid}`;
      rmSync(partial, { recursive: true, force: true });
      options.progress?.(`synthesizing the CDK app (first start, or the sources changed)${estimateLine(readLastSynth(cacheDir))}`);
      const { ms, bundleMs } = await synthesize(partial, options);
      options.progress?.(`synthesized in ${(ms / 1000).toFixed(1)} s`);
      writeLastSynth(cacheDir, { ms, bundleMs, load: loadavg()[0] ?? 0 });
      writeFileSync(path.join(partial, '.complete'), new Date().toISOString());
      rmSync(dir, { recursive: true, force: true });
      renameSync(partial, dir);
      prune(cacheDir, key);
      return { dir, ms, bundleMs, cached: false };
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

interface LastSynth {
  ms: number;
  bundleMs: number;
  load: number;
}

const LAST_SYNTH = 'last-synth.json';

function readLastSynth(cacheDir: string): LastSynth | undefined {
  try {
    const r = JSON.parse(readFileSync(path.join(cacheDir, LAST_SYNTH), 'utf8')) as LastSynth;
    return r.ms > 0 && r.bundleMs >= 0 && r.load >= 0 ? r : undefined;
  } catch {
    return undefined;
  }
}

function writeLastSynth(cacheDir: string, r: LastSynth): void {
  writeFileSync(path.join(cacheDir, LAST_SYNTH), JSON.stringify(r));
}

const seconds = (ms: number): string => `${Math.max(1, Math.round(ms / 1000))} s`;

/** What the last synth here says of this one: its time besides bundling, scaled by the load now against then. */
function estimateLine(last: LastSynth | undefined): string {
  if (!last) return '; no earlier synth here to estimate from, the bundling estimate follows as it starts';
  const now = loadavg()[0] ?? 0;
  const rest = loadScaled(last.ms - last.bundleMs, last.load, now);
  return (
    `: about ${seconds(rest)} besides bundling, from the last synth here ` +
    `(${seconds(last.ms)}, ${seconds(last.bundleMs)} of it bundling, at load ${last.load.toFixed(1)}; ${now.toFixed(1)} now)`
  );
}

function prune(cacheDir: string, keep: string): void {
  const entries = readdirSync(cacheDir)
    .filter((n) => n !== keep && /^[0-9a-f]{24}$/.test(n) && !existsSync(path.join(cacheDir, `${n}.lock`)))
    .map((n) => ({ n, t: statSync(path.join(cacheDir, n)).mtimeMs }))
    .sort((a, b) => b.t - a.t);
  for (const { n } of entries.slice(KEEP - 1)) rmSync(path.join(cacheDir, n), { recursive: true, force: true });
}

// --- Reading an assembly -------------------------------------------------------------------

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
  DependsOn?: string | string[];
  Condition?: string;
  DeletionPolicy?: string;
}

export interface Template {
  Resources: Record<string, TemplateResource>;
  Outputs?: Record<string, { Value: unknown; Export?: { Name: unknown }; Description?: string }>;
  Parameters?: Record<string, { Type: string; Default?: unknown }>;
  Mappings?: Record<string, Record<string, Record<string, unknown>>>;
  Conditions?: Record<string, unknown>;
}

export interface AssemblyStack {
  /** The artifact id in manifest.json (also the CloudFormation stack name unless set otherwise). */
  id: string;
  stackName: string;
  account: string;
  region: string;
  templateFile: string;
  template: Template;
  /** Other stacks this one depends on (deployed first). */
  dependencies: string[];
}

export interface AssemblyFunction {
  stack: string;
  logicalId: string;
  /** Absolute directory of the bundled asset (what the zip a deploy uploads holds). */
  assetDir: string;
  /** The template's Handler, e.g. `index.handler`. */
  handler: string;
  /** Absolute path of the module the handler names, and the export to call. */
  file: string;
  exportName: string;
  /** The resource's Properties, unresolved (Environment, Timeout, MemorySize, Role, ...). */
  properties: Record<string, unknown>;
}

export interface Assembly {
  dir: string;
  /** In deployment order: every stack after the stacks it depends on. */
  stacks: AssemblyStack[];
  functions: AssemblyFunction[];
}

const readJson = (file: string): unknown => JSON.parse(readFileSync(file, 'utf8'));

interface ManifestArtifact {
  type: string;
  environment?: string;
  properties?: Record<string, unknown>;
  dependencies?: string[];
}

/** The stacks and functions of a synthesized cloud assembly directory (cdk.out). */
export function loadAssembly(dir: string): Assembly {
  const manifest = readJson(path.join(dir, 'manifest.json'));
  if (!isPlainObject(manifest) || !isPlainObject(manifest.artifacts)) throw new Error(`${dir}/manifest.json has no artifacts`);
  const artifacts = manifest.artifacts as Record<string, ManifestArtifact>;

  // Asset object key -> asset directory, from every asset manifest.
  const assetPaths = new Map<string, string>();
  for (const a of Object.values(artifacts)) {
    if (a.type !== 'cdk:asset-manifest' || typeof a.properties?.file !== 'string') continue;
    const files = (readJson(path.join(dir, a.properties.file)) as { files?: Record<string, unknown> }).files ?? {};
    for (const f of Object.values(files)) {
      if (!isPlainObject(f) || !isPlainObject(f.source) || typeof f.source.path !== 'string' || !isPlainObject(f.destinations)) continue;
      for (const d of Object.values(f.destinations)) {
        if (isPlainObject(d) && typeof d.objectKey === 'string') assetPaths.set(d.objectKey, path.join(dir, f.source.path));
      }
    }
  }

  const unordered: AssemblyStack[] = [];
  for (const [id, a] of Object.entries(artifacts)) {
    if (a.type !== 'aws:cloudformation:stack') continue;
    const templateFile = a.properties?.templateFile;
    if (typeof templateFile !== 'string') throw new Error(`Stack ${id} has no templateFile`);
    const m = /^aws:\/\/([^/]+)\/(.+)$/.exec(a.environment ?? '');
    if (!m?.[1] || !m[2] || m[1].startsWith('unknown') || m[2].startsWith('unknown')) {
      throw new Error(`Stack ${id} has no explicit account and region (${a.environment ?? 'none'})`);
    }
    const template = readJson(path.join(dir, templateFile)) as Template;
    if (!isPlainObject(template.Resources)) throw new Error(`${templateFile} has no Resources`);
    unordered.push({
      id,
      stackName: typeof a.properties?.stackName === 'string' ? a.properties.stackName : id,
      account: m[1],
      region: m[2],
      templateFile: path.join(dir, templateFile),
      template,
      dependencies: (a.dependencies ?? []).filter((d) => artifacts[d]?.type === 'aws:cloudformation:stack'),
    });
  }
  const stacks = deploymentOrder(unordered);

  const functions: AssemblyFunction[] = [];
  for (const stack of stacks) {
    for (const [logicalId, r] of Object.entries(stack.template.Resources)) {
      if (r.Type !== 'AWS::Lambda::Function') continue;
      const props = r.Properties ?? {};
      const where = `${stack.id}/${logicalId}`;
      const code = props.Code;
      const key = isPlainObject(code) ? code.S3Key : undefined;
      const fromMetadata = r.Metadata?.['aws:asset:path'];
      const assetDir =
        (typeof key === 'string' ? assetPaths.get(key) : undefined) ??
        (typeof fromMetadata === 'string' ? path.join(dir, fromMetadata) : undefined);
      if (!assetDir) throw new Error(`${where}: Code is not a file asset of this assembly (${JSON.stringify(code)})`);
      const handler = props.Handler;
      if (typeof handler !== 'string') throw new Error(`${where}: Handler is not a plain string`);
      const dot = handler.lastIndexOf('.');
      if (dot <= 0) throw new Error(`${where}: Handler "${handler}" is not <module>.<export>`);
      const base = path.join(assetDir, handler.slice(0, dot));
      const file = ['.js', '.cjs', '.mjs'].map((ext) => base + ext).find((f) => existsSync(f));
      if (!file) throw new Error(`${where}: no module ${handler.slice(0, dot)}.js in ${assetDir}`);
      functions.push({ stack: stack.id, logicalId, assetDir, handler, file, exportName: handler.slice(dot + 1), properties: props });
    }
  }
  return { dir, stacks, functions };
}

function deploymentOrder(stacks: AssemblyStack[]): AssemblyStack[] {
  const byId = new Map(stacks.map((s) => [s.id, s]));
  const out: AssemblyStack[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (s: AssemblyStack): void => {
    const st = state.get(s.id);
    if (st === 'done') return;
    if (st === 'visiting') throw new Error(`Stacks depend on each other in a cycle through ${s.id}`);
    state.set(s.id, 'visiting');
    for (const d of s.dependencies) {
      const dep = byId.get(d);
      if (dep) visit(dep);
    }
    state.set(s.id, 'done');
    out.push(s);
  };
  for (const s of stacks) visit(s);
  return out;
}

/** The stack with this artifact id or stack name. */
export function stackOf(assembly: Assembly, name: string): AssemblyStack {
  const s = assembly.stacks.find((x) => x.id === name || x.stackName === name);
  if (!s) throw new Error(`No stack ${name} in ${assembly.dir} (has ${assembly.stacks.map((x) => x.id).join(', ')})`);
  return s;
}
