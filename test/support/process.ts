import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { e2eMode } from './runtime';
import { HANG_MS } from './hang';

export interface RuntimeProcess {
  child: ChildProcess;
  url: string;
  ownerToken: string;
  output: () => string;
  /** SIGKILL: no clean-up at all, as when a machine loses power. */
  kill9(): Promise<void>;
  /** SIGTERM and wait for a clean exit. */
  stop(): Promise<number | null>;
}

const ROOT = join(__dirname, '..', '..');

/**
 * `npm start` (or `npm run start:synth` in the synth e2e mode) as a real process (through
 * tsx, or through npm itself with `how` = 'npm'), on a free port, with its own data dir.
 */
export async function spawnRuntime(
  dataDir: string,
  env: Record<string, string> = {},
  how: 'node' | 'npm' = 'node',
): Promise<RuntimeProcess> {
  const synth = e2eMode() === 'synth';
  const script = synth ? 'local-synth.ts' : 'local.ts';
  const child =
    how === 'npm'
      ? // As a supervisor (systemd, Docker, a Procfile) runs it: the signals go to npm's pid.
        spawn('npm', synth ? ['run', '--silent', 'start:synth'] : ['start', '--silent'], {
          cwd: ROOT,
          env: { ...process.env, PORT: '0', PIPEGATE_DATA_DIR: dataDir, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        })
      : // `--import tsx` keeps it one process: a kill -9 must not leave a child holding the data dir.
        spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bin', script)], {
          cwd: ROOT,
          env: { ...process.env, PORT: '0', PIPEGATE_DATA_DIR: dataDir, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`runtime did not start within ${HANG_MS} ms:\n${out}`));
    }, HANG_MS);
    const check = () => {
      const m = /running at (http:\/\/\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stderr?.on('data', check);
    child.once('exit', () => reject(new Error(`runtime exited early:\n${out}`)));
  });
  const ownerToken = /owner token\s+(\S+)/.exec(out)?.[1] ?? '';
  return {
    child,
    url,
    ownerToken,
    output: () => out,
    kill9: async () => {
      child.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
