/**
 * One synth per `npm test`: the assembly for the current sources is built (or found in the
 * .tmp/synth cache) before any test file starts, so the synthesized-mode suites only load it.
 */
import { cachedAssembly } from '../../lib/synth/assembly';

export default async function globalSetup(): Promise<void> {
  const r = await cachedAssembly();
  if (!r.cached) process.stderr.write(`\nsynthesized the assembly in ${(r.ms / 1000).toFixed(1)} s\n`);
}
