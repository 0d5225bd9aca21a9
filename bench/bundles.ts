/**
 * Every Lambda bundle, built with the esbuild options the stack uses
 * (lib/stacks/bundler.ts), measured for size and for cold init: a fresh `node`
 * process timing the `require` of the bundle, with the NODE_OPTIONS the functions run with.
 * A hello-world handler bundled the same way is the floor.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { REPO_ROOT } from '../lib/stacks/pipegate-function';
import type { FunctionName } from '../lib/routes';
import { allFunctionNames } from '../lib/stacks/permissions';
import { bundleSpec } from '../lib/stacks/bundles';
import { esbuildOptions } from '../lib/stacks/bundler';
import { median } from './stats';
import { AWSLAMBDA_SHIM_SOURCE } from '../lib/local/gateway/awslambda-shim';

export const HELLO = 'hello-world' as const;

/** Every function the stack deploys: route handlers and workers. */
export const functionNames = (): FunctionName[] => allFunctionNames();

export interface BundleFigure {
  name: string;
  bytes: number;
  initMs: number[];
  /** Bytes in the output by package (`pipegate` for the project's own code). */
  packages: Record<string, number>;
}

const entryOf = (name: string): string =>
  name === HELLO ? join(__dirname, 'hello', 'handler.ts') : join(REPO_ROOT, bundleSpec(name).entry);

/** The package a bundled input file belongs to. */
export function packageOf(input: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  return m?.[1] ?? 'pipegate';
}

function byPackage(meta: Metafile): Record<string, number> {
  const out: Record<string, number> = {};
  for (const o of Object.values(meta.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(o.inputs)) {
      const p = packageOf(input);
      out[p] = (out[p] ?? 0) + bytesInOutput;
    }
  }
  return out;
}

export async function buildBundle(
  name: FunctionName | typeof HELLO,
  outRoot: string,
): Promise<{ file: string; bytes: number; packages: Record<string, number> }> {
  const outfile = join(outRoot, name, 'index.js');
  const result = await build({
    ...esbuildOptions({ external: name === HELLO ? [] : bundleSpec(name).external }),
    entryPoints: [entryOf(name)],
    absWorkingDir: REPO_ROOT,
    outfile,
    metafile: true,
    logLevel: 'error',
  });
  return { file: outfile, bytes: statSync(outfile).size, packages: byPackage(result.metafile) };
}

// Lambda's runtime defines `awslambda` before it loads a handler (a streamed route's module
// calls it as it loads): the stand-in is installed first, outside the timing.
const INIT_SCRIPT = `${AWSLAMBDA_SHIM_SOURCE};const t=process.hrtime.bigint();require(process.argv[1]);const d=process.hrtime.bigint()-t;process.stdout.write(String(Number(d)/1e6))`;

/** One cold start: a new process, the time its `require` of the bundle takes. */
export function measureInit(file: string): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['-e', INIT_SCRIPT, file],
      {
        // As the functions run: source maps on (the stack sets this), nothing inherited from here.
        env: {
          PATH: process.env.PATH ?? '',
          NODE_OPTIONS: '--enable-source-maps',
          AWS_REGION: 'us-east-1',
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        },
        timeout: 20_000,
      },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`init of ${file} failed: ${stderr || err.message}`));
        const ms = Number(stdout);
        if (!Number.isFinite(ms)) return reject(new Error(`init of ${file} printed ${stdout}`));
        resolve(ms);
      },
    );
  });
}

export async function measureBundles(opts: { outRoot: string; samples: number; names?: FunctionName[] }): Promise<BundleFigure[]> {
  mkdirSync(opts.outRoot, { recursive: true });
  const names: (FunctionName | typeof HELLO)[] = [HELLO, ...(opts.names ?? functionNames())];
  const built = await Promise.all(names.map(async (name) => ({ name, ...(await buildBundle(name, opts.outRoot)) })));
  const figures: BundleFigure[] = built.map((b) => ({ name: b.name, bytes: b.bytes, initMs: [], packages: b.packages }));
  // Round-robin, one process at a time: noise spreads over every bundle alike, and the machine
  // is never loaded by more than one cold start.
  for (let s = 0; s < opts.samples; s++) {
    for (const [i, b] of built.entries()) figures[i]?.initMs.push(await measureInit(b.file));
  }
  return figures;
}

export const initMedian = (f: BundleFigure): number => median(f.initMs);
