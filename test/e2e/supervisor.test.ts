/**
 * Run as a supervisor runs it: `npm start` started, signalled and killed by npm's own pid,
 * never by the node process it starts. After each stop nothing may still serve or hold the
 * data dir. And a reader of stdout that goes away (`npm start | tee log`, Ctrl-C) must not cut
 * a drain short.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockDataDir } from '../../lib/local/data-dir-lock';
import { spawnRuntime, type RuntimeProcess } from '../support/process';
import { request, sleep } from '../support/runtime';

jest.setTimeout(90_000);

/** Whether anything still answers at `url`. */
async function answers(url: string): Promise<boolean> {
  try {
    await request(`${url}/v1/health`, 'GET', undefined, {});
    return true;
  } catch {
    return false;
  }
}

/** The data dir is free once the runtime, and any orphan of it, has gone. */
async function dataDirFreeWithin(dataDir: string, ms: number): Promise<boolean> {
  try {
    const lock = await lockDataDir(dataDir, ms);
    await lock.release();
    return true;
  } catch {
    return false;
  }
}

const exitOf = (rt: RuntimeProcess): Promise<number | null> =>
  new Promise((r) => (rt.child.exitCode !== null || rt.child.signalCode !== null ? r(rt.child.exitCode) : rt.child.once('exit', (code) => r(code))));

describe('npm start under a supervisor', () => {
  const dirs: string[] = [];
  const fresh = () => {
    const d = mkdtempSync(join(tmpdir(), 'pipegate-supervised-'));
    dirs.push(d);
    return d;
  };
  let rt: RuntimeProcess | undefined;
  afterEach(async () => {
    if (rt && rt.child.exitCode === null && rt.child.signalCode === null) await rt.kill9();
    rt = undefined;
  });
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it.each(['SIGTERM', 'SIGINT'] as const)('%s to the npm process drains and stops the service', async (signal) => {
    const dataDir = fresh();
    rt = await spawnRuntime(dataDir, {}, 'npm');
    expect(await answers(rt.url)).toBe(true);

    rt.child.kill(signal);
    expect(await exitOf(rt)).not.toBeNull();
    expect(rt.output()).toMatch(new RegExp(`${signal}: stopping`));
    expect(rt.output()).toMatch(/stopped\./);
    expect(await answers(rt.url)).toBe(false);
    expect(await dataDirFreeWithin(dataDir, 5_000)).toBe(true);
  });

  it('stops by itself when npm is killed outright', async () => {
    const dataDir = fresh();
    rt = await spawnRuntime(dataDir, {}, 'npm');
    const { url } = rt;
    await rt.kill9();
    // The orphaned service notices its parent is gone, drains (nothing runs) and exits.
    expect(await dataDirFreeWithin(dataDir, 15_000)).toBe(true);
    expect(await answers(url)).toBe(false);
  });

  it('drains when the reader of its stdout has gone', async () => {
    const dataDir = fresh();
    rt = await spawnRuntime(dataDir);
    // As `| tee` killed by the same Ctrl-C: the pipe's read end closes.
    rt.child.stdout?.destroy();
    // Each request logs a line to stdout, which now fails with EPIPE.
    for (let i = 0; i < 5; i++) await request(`${rt.url}/v1/health`, 'GET', undefined, {});
    await sleep(200);
    rt.child.kill('SIGINT');
    expect(await exitOf(rt)).toBe(0);
    expect(rt.output()).toMatch(/stopped\./);
  });
});
