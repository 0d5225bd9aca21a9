/**
 * The synthesized assembly for the current sources, shared by every test file of a run: the
 * first caller synthesizes (≈ 30 s idle), the others wait on the same lock and then read the
 * cache in .tmp/synth.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cachedAssembly, loadAssembly, type Assembly } from '../../lib/synth/assembly';
import { startSynthRuntime, type SynthRuntime } from '../../lib/synth/runtime';
import { withTemplate } from '../synth/synth-helpers';

/**
 * Jest hook time-out for a test file that may run the synth: a cold one of every bundle takes
 * minutes here (a first start:synth 351 s under load), so only a hang reaches this.
 */
export const SYNTH_TIMEOUT_MS = 600_000;

let loaded: Promise<Assembly> | undefined;

export function testAssembly(): Promise<Assembly> {
  loaded ??= cachedAssembly().then((r) => {
    if (!r.cached) console.log(`synthesized the assembly in ${(r.ms / 1000).toFixed(1)} s`);
    return loadAssembly(r.dir);
  });
  return loaded;
}

type TemplateEdit = Parameters<typeof withTemplate>[2];

/**
 * For a test file that starts synthesized runtimes of its own (in memory, each in a temp data
 * dir removed after the file): start one, from the assembly or from an edit of its main
 * stack's template.
 */
export function ownSynthRuntimes(name: string): (edit?: TemplateEdit) => Promise<SynthRuntime> {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return async (edit) => {
    const dataDir = mkdtempSync(join(tmpdir(), `pipegate-synth-${name}-`));
    dirs.push(dataDir);
    const assembly = edit ? withTemplate(await testAssembly(), 'Pipegate', edit) : await testAssembly();
    return startSynthRuntime({ port: 0, inMemory: true, log: false, dataDir, assembly });
  };
}
