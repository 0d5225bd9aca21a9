/** The pipegate CLI as a real process, for the end-to-end suites that use it as an owner would. */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const PIPEGATE_BIN = join(__dirname, '..', '..', 'bin', 'pipegate.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd: string;
  /** Added to PATH, HOME and TMPDIR, the only variables of this process that reach the CLI; undefined removes one. */
  env?: Record<string, string | undefined>;
  /** Piped to the CLI's stdin when given; otherwise stdin is closed. */
  stdin?: string;
  /** Called with all of stderr so far each time more arrives (e.g. to press Ctrl-C: child.kill('SIGINT')). */
  onStderr?: (stderr: string, child: ChildProcess) => void;
}

/** Spawns the CLI asynchronously: a blocking spawn would freeze a runtime hosted in this process. */
export function runCli(args: string[], opts: CliOptions): Promise<CliRun> {
  const env: Record<string, string> = {};
  const base = { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR, ...opts.env };
  for (const [k, v] of Object.entries(base)) if (v !== undefined) env[k] = v;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PIPEGATE_BIN, ...args], {
      cwd: opts.cwd,
      env,
      stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString();
      opts.onStderr?.(stderr, child);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    if (opts.stdin !== undefined) child.stdin?.end(opts.stdin);
  });
}
