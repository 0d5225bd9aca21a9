/**
 * start:synth's first start and the suite's global setup: a synth of both stacks through the
 * CDK CLI (lib/synth/assembly.ts), cold (no assembly, no bundle in the cache), with every bundle
 * cached but the assembly not (an edit outside the functions), and answered by the cache. Each
 * in caches of its own under .tmp, so the developer's own caches are neither used nor touched.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { cachedAssembly, REPO_ROOT } from '../lib/synth/assembly';

export interface SynthFigure {
  label: string;
  ms: number;
  bundleMs: number;
  loadBefore: number;
  loadAfter: number;
}

export async function measureSynth(log: (line: string) => void): Promise<SynthFigure[]> {
  mkdirSync(join(REPO_ROOT, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(REPO_ROOT, '.tmp', 'bench-synth-'));
  const before = process.env.PIPEGATE_BUNDLE_CACHE_DIR;
  process.env.PIPEGATE_BUNDLE_CACHE_DIR = join(dir, 'bundles');
  const figures: SynthFigure[] = [];
  const run = async (label: string, cacheDir: string) => {
    const loadBefore = loadavg()[0] ?? 0;
    const started = Date.now();
    const r = await cachedAssembly({ cacheDir, progress: (line) => log(`${label}: ${line}`) });
    figures.push({ label, ms: r.cached ? Date.now() - started : r.ms, bundleMs: r.bundleMs, loadBefore, loadAfter: loadavg()[0] ?? 0 });
  };
  try {
    await run('cold: no assembly, no bundle cached', join(dir, 'synth-cold'));
    await run('every bundle cached, the assembly not', join(dir, 'synth-warm'));
    await run('the assembly cached', join(dir, 'synth-warm'));
  } finally {
    if (before === undefined) delete process.env.PIPEGATE_BUNDLE_CACHE_DIR;
    else process.env.PIPEGATE_BUNDLE_CACHE_DIR = before;
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}

export function synthRows(figures: SynthFigure[]): string[][] {
  const cold = figures[0]?.ms ?? Number.NaN;
  return figures.map((f) => [
    f.label,
    `${(f.ms / 1000).toFixed(1)} s`,
    `${(f.bundleMs / 1000).toFixed(1)} s`,
    `${((100 * f.ms) / cold).toFixed(0)} %`,
    `${f.loadBefore.toFixed(1)} → ${f.loadAfter.toFixed(1)}`,
  ]);
}
