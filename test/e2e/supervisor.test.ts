/**
 * Run as a supervisor runs it: `npm start` started, signalled and killed by npm's own pid,
 * never by the node process it starts. After each stop nothing may still serve or hold the
 * data dir. And a reader of stdout that goes away (`npm start | tee log`, Ctrl-C) must not cut
 * a drain short.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockDataDir } from '../../lib/local/data-dir-lock';
import { spawnRuntime, type RuntimeProcess } from '../support/process';
import { request, sleep, waitUntil } from '../support/runtime';

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
async function dataDirFreeWithin(dataDir: string, ms: number, output?: () => string): Promise<boolean> {
  try {
    const lock = await lockDataDir(dataDir, ms);
    await lock.release();
    return true;
  } catch (e) {
    // What the runtime said, so a failure shows whether it noticed and how far its stop got.
    process.stderr.write(`data dir still held (${String(e)}); the runtime said:\n${output?.() ?? ''}\n`);
    return false;
  }
}

const exitOf = (rt: RuntimeProcess): Promise<number | null> =>
  new Promise((r) =>
    rt.child.exitCode !== null || rt.child.signalCode !== null ? r(rt.child.exitCode) : rt.child.once('exit', (code) => r(code)),
  );

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
    expect(await dataDirFreeWithin(dataDir, 45_000, rt.output)).toBe(true);
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

describe('request log lines', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-logs-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it.each([
    ['text', /\d\d:\d\d:\d\d GET \/v1\/pipelines 200 \d+ ms/],
    ['json', /\{"level":"info".*"message":"request","method":"GET","path":"\/v1\/pipelines"/],
  ])('PIPEGATE_LOG_FORMAT=%s', async (format, line) => {
    const rt = await spawnRuntime(dataDir, { PIPEGATE_LOG_FORMAT: format });
    try {
      await request(`${rt.url}/v1/pipelines`, 'GET', undefined, { authorization: `Bearer ${rt.ownerToken}` });
      await waitUntil(
        async () => rt.output(),
        (o) => line.test(o),
      );
      expect(rt.output()).toMatch(/running at http/);
    } finally {
      await rt.stop();
    }
  });

  it('is JSON when the output is not a terminal', async () => {
    const rt = await spawnRuntime(dataDir);
    try {
      await request(`${rt.url}/v1/pipelines`, 'GET', undefined, { authorization: `Bearer ${rt.ownerToken}` });
      await waitUntil(
        async () => rt.output(),
        (o) => /"message":"request","method":"GET","path":"\/v1\/pipelines"/.test(o),
      );
    } finally {
      await rt.stop();
    }
  });
});

describe('at a terminal', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-tty-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('writes requests as short text lines, and the banner stays', async () => {
    // util-linux `script` gives the runtime a pseudo-terminal for its stdout and stderr.
    const child = spawn('script', ['-qfec', `${process.execPath} --import tsx bin/local.ts`, '/dev/null'], {
      cwd: join(__dirname, '..', '..'),
      env: { ...process.env, PORT: '0', PIPEGATE_DATA_DIR: dataDir },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise((r) => child.once('exit', r));
    try {
      const url = await waitUntil(
        async () => /running at (http:\/\/\S+)/.exec(out)?.[1],
        (u) => u !== undefined,
      );
      const token = /owner token\s+(\S+)/.exec(out)?.[1] ?? '';
      await request(`${String(url)}/v1/pipelines`, 'GET', undefined, { authorization: `Bearer ${token}` });
      await waitUntil(
        async () => out,
        (o) => /GET \/v1\/pipelines 200 \d+ ms/.test(o),
      );
      expect(out).not.toMatch(/"message":"request"/);
    } finally {
      // Ctrl-C, as typed at the terminal.
      child.stdin.write('\x03');
      await exited;
    }
  });
});
