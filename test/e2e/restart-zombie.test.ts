/**
 * A restart while the killed process is still a zombie: its parent has not reaped it yet, so
 * its pid still answers `kill(pid, 0)`, as a supervisor's child can for a moment after
 * `kill -9`. The data dir's guard is a lock the kernel drops with the dead process's
 * descriptors, so the new `npm start` comes up at once; a guard that asks whether the old pid
 * is alive would refuse it for as long as the zombie stays.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnRuntime, type RuntimeProcess } from '../support/process';
import { waitUntil } from '../support/runtime';
import { HANG_MS } from '../support/hang';

const ROOT = join(__dirname, '..', '..');

/** The process state letter from /proc (Linux): 'Z' for a zombie, undefined once reaped. */
function stateOf(pid: number): string | undefined {
  try {
    return /\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-zombie-'));
let parent: ChildProcess | undefined;
let next: RuntimeProcess | undefined;
let oldPid = 0;

afterAll(async () => {
  await next?.stop();
  // Already dead unless the test failed before its kill.
  if (oldPid > 0 && stateOf(oldPid) !== undefined && stateOf(oldPid) !== 'Z') process.kill(oldPid, 'SIGKILL');
  parent?.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

const linux = process.platform === 'linux' ? it : it.skip;

linux('comes up at once after kill -9 while the old process is still an unreaped zombie', async () => {
  // `exec sleep` replaces the shell with a parent that never waits for its child, so the
  // runtime stays a zombie after its death until the parent itself goes (afterAll kills it;
  // only a hang outlasts the sleep).
  parent = spawn('sh', ['-c', `"${process.execPath}" --import tsx bin/local.ts & echo "pid $!"; exec sleep 600`], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', PIPEGATE_DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  parent.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  parent.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  await waitUntil(
    async () => out,
    (o) => /running at http/.test(o),
    HANG_MS,
    50,
  );
  const pid = Number(/pid (\d+)/.exec(out)?.[1]);
  expect(pid).toBeGreaterThan(0);
  oldPid = pid;

  process.kill(pid, 'SIGKILL');
  await waitUntil(
    async () => stateOf(pid),
    (s) => s === 'Z',
    HANG_MS,
    5,
  );
  // What fooled a pid-file guard: the dead process's pid still "exists".
  expect(() => process.kill(pid, 0)).not.toThrow();

  next = await spawnRuntime(dataDir);
  expect(next.output()).toMatch(/running at http/);
  // It came up while the old one was still a zombie, not because it had been reaped.
  expect(stateOf(pid)).toBe('Z');
});
