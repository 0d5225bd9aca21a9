/**
 * The synthesized assembly for the current sources, shared by every test file of a run: the
 * first caller synthesizes (≈ 30 s idle), the others wait on the same lock and then read the
 * cache in .tmp/synth.
 */
import { cachedAssembly, loadAssembly, type Assembly } from '../../lib/synth/assembly';

/** Jest hook time-out for a test file that may run the synth. */
export const SYNTH_TIMEOUT_MS = 240_000;

let loaded: Promise<Assembly> | undefined;

export function testAssembly(): Promise<Assembly> {
  loaded ??= cachedAssembly().then((r) => {
    if (!r.cached) console.log(`synthesized the assembly in ${(r.ms / 1000).toFixed(1)} s`);
    return loadAssembly(r.dir);
  });
  return loaded;
}
