/**
 * Reads a V8 CPU profile (`node --cpu-prof`) and says where the time went: self time by
 * package or project file, and the hottest functions. `npm run bench` writes the servers'
 * profiles with BENCH_PROFILE=1; `node --import tsx bench/profile.ts <file.cpuprofile>` prints one.
 */
import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';

const REPO_ROOT = resolve(__dirname, '..');

const CpuProfile = v.object({
  nodes: v.array(
    v.object({
      id: v.number(),
      callFrame: v.object({ functionName: v.string(), url: v.string(), lineNumber: v.number() }),
    }),
  ),
  samples: v.array(v.number()),
  timeDeltas: v.array(v.number()),
});

export interface ProfileSummary {
  totalMs: number;
  byPlace: [string, number][];
  byFunction: [string, number][];
}

/** Where a frame lives: a package, a project file, node's internals, or V8's own buckets. */
export function placeOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg?.[1]) return pkg[1];
  return relative(REPO_ROOT, path);
}

export function summarizeProfile(json: unknown, top = 15): ProfileSummary {
  const p = v.parse(CpuProfile, json);
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000));
  const places = new Map<string, number>();
  const fns = new Map<string, number>();
  let total = 0;
  for (const [id, ms] of self) {
    const n = nodes.get(id);
    if (!n) continue;
    total += ms;
    const place = placeOf(n.callFrame.url, n.callFrame.functionName);
    places.set(place, (places.get(place) ?? 0) + ms);
    const fn = `${n.callFrame.functionName || '(anonymous)'} ${place}:${n.callFrame.lineNumber + 1}`;
    fns.set(fn, (fns.get(fn) ?? 0) + ms);
  }
  const sorted = (m: Map<string, number>) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
  return { totalMs: total, byPlace: sorted(places), byFunction: sorted(fns) };
}

/** Milliseconds not spent idle. */
export const busy = (s: ProfileSummary): number => s.totalMs - (s.byPlace.find(([k]) => k === '(idle)')?.[1] ?? 0);

export function formatProfile(s: ProfileSummary): string {
  const pct = (ms: number) => `${((ms / s.totalMs) * 100).toFixed(1).padStart(5)} %`;
  return [
    `self time ${Math.round(s.totalMs)} ms, by place:`,
    ...s.byPlace.map(([k, ms]) => `  ${pct(ms)}  ${k}`),
    'hottest functions:',
    ...s.byFunction.map(([k, ms]) => `  ${pct(ms)}  ${k}`),
  ].join('\n');
}

if (require.main === module) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node --import tsx bench/profile.ts <file.cpuprofile>');
    process.exit(2);
  }
  console.log(formatProfile(summarizeProfile(JSON.parse(readFileSync(file, 'utf8')))));
}

/**
 * A CPU profile of this process from now until the returned function is called, which gives
 * the profile (what `node --cpu-prof` would write). For a bench whose whole system runs in
 * its own process (start:synth and the scale model).
 */
export async function startProfile(): Promise<() => Promise<unknown>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    return profile;
  };
}
