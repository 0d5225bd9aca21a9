/**
 * The figures the reliability and security suites print (docs/reliability.md quotes them), and
 * the seeded randomness that lets a failing schedule be replayed.
 */

export type Figures = [label: string, value: number | string][];

/** The compact table a suite prints at its end (and docs/reliability.md quotes). */
export function printFigures(title: string, rows: Figures): void {
  const width = Math.max(...rows.map(([label]) => label.length));
  const lines = rows.map(([label, value]) => `  ${label.padEnd(width)}  ${String(value).padStart(8)}`);
  console.log(`${title}\n${'-'.repeat(width + 12)}\n${lines.join('\n')}`);
}

/** A small seeded generator (mulberry32), so a failing random schedule can be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** PIPEGATE_TEST_SEED replays a run; otherwise a fresh seed, printed with the figures. */
export const testSeed = (): number => Number(process.env.PIPEGATE_TEST_SEED ?? Math.floor(Math.random() * 2 ** 31));
