/**
 * How long a `pipegate` command takes to start, run the way users run it: `npx pipegate`, the
 * launcher itself (`node bin/pipegate.js`, what `npm link` puts on the PATH) and `node -e 0`
 * as the floor, round-robin so noise spreads over all three alike. Each figure is the median
 * of wall time and of the CPU time of the whole process tree (npm, its shell and the CLI), the
 * latter taken by the shell's `times`, so it holds under load where wall time does not.
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { REPO_ROOT } from '../lib/stacks/pipegate-function';
import { median } from './stats';

export interface StartFigure {
  label: string;
  command: string;
  wallMs: number[];
  cpuMs: number[];
}

const COMMANDS: Array<{ label: string; command: string }> = [
  { label: 'node -e 0 (floor)', command: 'node -e 0' },
  { label: 'node bin/pipegate.js --version', command: 'node bin/pipegate.js --version' },
  { label: 'npx pipegate --version', command: 'npx pipegate --version' },
];

/** `0m1.234s` as milliseconds. */
const shellTime = (t: string): number => {
  const m = /^(\d+)m([\d.]+)s$/.exec(t);
  return m ? (Number(m[1]) * 60 + Number(m[2])) * 1000 : Number.NaN;
};

function once(command: string): { wallMs: number; cpuMs: number } {
  const started = performance.now();
  // `times`' second line: the user and system time of the shell's children.
  const r = spawnSync('sh', ['-c', `${command} >/dev/null 2>&1; times`], { cwd: REPO_ROOT, encoding: 'utf8', env: process.env });
  const wallMs = performance.now() - started;
  if (r.status !== 0) throw new Error(`${command}: exit ${r.status}: ${r.stderr}`);
  const children = r.stdout.trim().split('\n')[1]?.trim().split(/\s+/) ?? [];
  return { wallMs, cpuMs: shellTime(children[0] ?? '') + shellTime(children[1] ?? '') };
}

export function measureCliStart(samples = 7): { figures: StartFigure[]; load: [number, number] } {
  const loadBefore = loadavg()[0] ?? 0;
  const figures: StartFigure[] = COMMANDS.map((c) => ({ ...c, wallMs: [], cpuMs: [] }));
  // One unmeasured round: the disk cache, V8's code cache beside the CLI bundle, npm's own files.
  for (const f of figures) once(f.command);
  for (let s = 0; s < samples; s++) {
    for (const f of figures) {
      const { wallMs, cpuMs } = once(f.command);
      f.wallMs.push(wallMs);
      f.cpuMs.push(cpuMs);
    }
  }
  return { figures, load: [loadBefore, loadavg()[0] ?? 0] };
}

export function cliStartRows(figures: StartFigure[]): string[][] {
  const floor = figures[0];
  const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  return figures.map((f) => [
    f.label,
    `${fmt(median(f.wallMs))} (${fmt(Math.min(...f.wallMs))}–${fmt(Math.max(...f.wallMs))})`,
    floor ? `×${(median(f.wallMs) / median(floor.wallMs)).toFixed(1)}` : '',
    fmt(median(f.cpuMs)),
    floor ? `×${(median(f.cpuMs) / Math.max(1, median(floor.cpuMs))).toFixed(1)}` : '',
  ]);
}
