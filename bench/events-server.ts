/**
 * The local runtime as a child of bench/events.ts, so the CPU and memory the event streams cost
 * the server are read apart from the readers': it answers its CPU time (process.cpuUsage) and
 * its RSS after a collection.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRuntime } from '../lib/local/runtime';

const gc = (globalThis as { gc?: () => void }).gc;

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-bench-events-'));
  const rt = await startRuntime({ port: 0, dataDir, log: false, inMemory: true });
  process.send?.({ type: 'ready', url: rt.url, ownerToken: rt.ownerToken });
  process.on('message', (m: { cmd?: string; seq?: number }) => {
    const reply = (result: unknown) => process.send?.({ type: 'reply', seq: m.seq, result });
    if (m.cmd === 'usage') {
      gc?.();
      const cpu = process.cpuUsage();
      reply({ cpuMs: (cpu.user + cpu.system) / 1000, rss: process.memoryUsage.rss() });
    } else if (m.cmd === 'stop') {
      void rt.stop({ drainMs: 0 }).then(() => {
        rmSync(dataDir, { recursive: true, force: true });
        reply(null);
        process.exit(0);
      });
    }
  });
}

void main();
