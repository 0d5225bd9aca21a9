/** Starts the server under test (bench/server.ts) in its own process and talks to it. */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import * as v from 'valibot';
import { ChildMessage, type CommandName, type DoneMessage, type ServerMode } from './protocol';

export interface Done extends DoneMessage {
  /** performance.now() in this process when the notice arrived. */
  seenAt: number;
}

export class ServerChild {
  private readonly proc: ChildProcess;
  private seq = 0;
  private readonly pending = new Map<number, { resolve: (x: unknown) => void; reject: (e: Error) => void }>();
  private readonly waiters = new Map<string, (d: Done) => void>();
  private readonly early = new Map<string, Done>();
  readonly ready: Promise<{ url: string; apiKey?: string; deploymentId?: string }>;
  /** Every completion notice, in arrival order. */
  readonly done: Done[] = [];

  constructor(mode: ServerMode, opts: { cpuProfileDir?: string } = {}) {
    const execArgv = [...process.execArgv, ...(opts.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfileDir}`] : [])];
    this.proc = fork(join(__dirname, 'server.ts'), [mode], {
      execArgv,
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.ready = new Promise((resolve, reject) => {
      this.proc.once('exit', (code) => {
        const err = new Error(`the ${mode} server exited (code ${String(code)})`);
        reject(err);
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
      });
      this.proc.on('message', (raw: unknown) => {
        const parsed = v.safeParse(ChildMessage, raw);
        if (!parsed.success) return;
        const m = parsed.output;
        if (m.type === 'ready') resolve(m);
        else if (m.type === 'done') {
          const d: Done = { ...m, seenAt: performance.now() };
          this.done.push(d);
          const w = this.waiters.get(m.id);
          if (w) {
            this.waiters.delete(m.id);
            w(d);
          } else this.early.set(m.id, d);
        } else {
          const p = this.pending.get(m.seq);
          this.pending.delete(m.seq);
          if (m.ok) p?.resolve(m.result);
          else p?.reject(new Error(String(m.result)));
        }
      });
    });
  }

  command(name: CommandName, arg?: number): Promise<unknown> {
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { resolve, reject });
      this.proc.send({ type: 'cmd', seq, name, ...(arg === undefined ? {} : { arg }) });
    });
  }

  /** Resolves when the server reports the execution finished (whenever that was). */
  finished(id: string, timeoutMs = 30_000): Promise<Done> {
    const seen = this.early.get(id);
    if (seen) {
      this.early.delete(id);
      return Promise.resolve(seen);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        reject(new Error(`execution ${id} did not finish within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.set(id, (d) => {
        clearTimeout(timer);
        resolve(d);
      });
    });
  }

  /** Notices nobody waited for (executions finished after their wait was given up). */
  forget(): void {
    this.early.clear();
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 15_000);
    try {
      await this.command('stop');
    } catch {
      this.proc.kill('SIGTERM');
    }
    await exited;
    clearTimeout(timer);
  }
}
