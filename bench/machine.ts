/** Where the figures came from. */
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';

export interface Machine {
  nproc: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  platform: string;
}

function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m?.[1]) return m[1].trim();
  } catch {
    // Not Linux: fall back to what Node reports.
  }
  return cpus()[0]?.model ?? 'unknown';
}

export function machine(): Machine {
  return {
    nproc: availableParallelism(),
    cpuModel: cpuModel(),
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}
