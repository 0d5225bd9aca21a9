/**
 * The runtime under measure for bench/upload-memory.ts, in a process of its own: `npm start`'s
 * runtime (gateway, handlers, the S3 emulation, the state machine), whose resident memory is
 * sampled every 5 ms between the parent's `start` and `stop`. The parent is the client: its
 * bytes are not counted here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRuntime } from '../lib/local/runtime';

const gc = (globalThis as { gc?: () => void }).gc;

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-bench-upload-'));
  const rt = await startRuntime({
    port: 0,
    inMemory: true,
    dataDir,
    env: { ...process.env, PIPEGATE_ALLOW_PRIVATE_URLS: 'true', PIPEGATE_LOG_LEVEL: 'error' },
  });
  let before = 0;
  let peak = 0;
  let sampler: NodeJS.Timeout | undefined;
  process.on('message', (m: string) => {
    if (m === 'start') {
      gc?.();
      before = process.memoryUsage.rss();
      peak = before;
      sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
      process.send?.({ started: true });
    } else if (m === 'stop') {
      clearInterval(sampler);
      const now = process.memoryUsage.rss();
      process.send?.({ growth: now - before, peak: Math.max(peak, now) - before });
    } else if (m === 'exit') {
      void rt.stop({ drainMs: 0 }).finally(() => {
        rmSync(dataDir, { recursive: true, force: true });
        process.exit(0);
      });
    }
  });
  process.send?.({ url: rt.url, ownerToken: rt.ownerToken });
}

main().catch((e: unknown) => {
  process.stderr.write(`${String(e)}\n`);
  process.exit(1);
});
