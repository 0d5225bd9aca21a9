/**
 * A 20 MiB (and a 60 MiB) binary answer taken by an http node (`node --import tsx bench/http-stream.ts`;
 * printed figures, not a timed test): time and RSS growth of the process taking it, three ways
 * in the same run, each in a fresh process (bench/http-stream-child.ts), alternating, 3 rounds:
 * streamed to storage (task-run now), held whole then put (task-run before), and a plain copy of
 * the response to a file (the floor). The upstream and the S3 emulation live in this process,
 * so their memory is not counted.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalS3 } from '../lib/local/s3';
import { png } from '../test/support/media';
import { median } from './stats';

const MIB = 1024 * 1024;
/** Answer sizes in MiB (BENCH_STREAM_MIB, default 20 and 60): the brief's 20, and a larger one to show what grows with the answer. */
const SIZES = (process.env.BENCH_STREAM_MIB ?? '20,60').split(',').map((x) => Number(x) * MIB);
const ROUNDS = 3;
const WAYS = ['streamed', 'whole', 'copy'] as const;
type Way = (typeof WAYS)[number];
interface Run {
  way: Way;
  ms: number;
  bytes: number;
  growth: number;
  peak: number;
}

async function main(): Promise<void> {
  for (const size of SIZES) await measure(size);
}

async function measure(SIZE: number): Promise<void> {
  const answer = Buffer.alloc(SIZE);
  png(4, 4).copy(answer);
  for (let i = 64; i < SIZE; i++) answer[i] = (i * 131) % 251;
  const dir = mkdtempSync(join(tmpdir(), 'pipegate-bench-stream-'));
  const creds = { id: 'AKBENCH', secret: 'bench-secret' };
  const s3 = await startLocalS3({
    dir,
    buckets: ['bench'],
    region: 'local',
    secretOf: (id) => (id === creds.id ? creds.secret : undefined),
  });
  const upstream = createServer((_req, res) => {
    // In 64 KiB chunks without a Content-Length, as a service generating its answer would.
    res.writeHead(200, { 'content-type': 'image/png' });
    let at = 0;
    const more = (): void => {
      while (at < SIZE) {
        const ok = res.write(answer.subarray(at, at + 64 * 1024));
        at += 64 * 1024;
        if (!ok) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  });
  await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/big.png`;
  const runs: Run[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const way of WAYS) {
      const child = fork(join(__dirname, 'http-stream-child.ts'), [], {
        execArgv: ['--import', 'tsx', '--expose-gc'],
        env: {
          ...process.env,
          BENCH_WAY: way,
          BENCH_UPSTREAM: url,
          BENCH_S3: s3.url,
          BENCH_BUCKET: 'bench',
          BENCH_KEY: creds.id,
          BENCH_SECRET: creds.secret,
          BENCH_FILE: join(dir, 'copy.bin'),
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      const run = await new Promise<Run>((resolve, reject) => {
        child.once('message', (m) => resolve(m as Run));
        child.once('exit', (code) => code !== 0 && reject(new Error(`${way} exited ${String(code)}`)));
      });
      child.kill();
      runs.push(run);
    }
  }
  await s3.stop();
  upstream.close();
  rmSync(dir, { recursive: true, force: true });
  const mb = (b: number): string => `${(b / MIB).toFixed(1)} MiB`;
  const floor = median(runs.filter((r) => r.way === 'copy').map((r) => r.ms));
  process.stdout.write(
    `\nA ${mb(SIZE)} binary answer, ${ROUNDS} rounds, medians (each run a fresh process; load average ${(await import('node:os'))
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')})\n`,
  );
  process.stdout.write('| way | time | × floor | RSS growth | RSS peak over start |\n|---|---|---|---|---|\n');
  for (const way of WAYS) {
    const rs = runs.filter((r) => r.way === way);
    if (rs.some((r) => r.bytes !== SIZE && way !== 'copy')) throw new Error(`${way} took ${rs.map((r) => r.bytes).join(', ')} bytes`);
    const ms = median(rs.map((r) => r.ms));
    process.stdout.write(
      `| ${way} | ${ms.toFixed(0)} ms | ×${(ms / floor).toFixed(2)} | ${mb(median(rs.map((r) => r.growth)))} | ${mb(median(rs.map((r) => r.peak)))} |\n`,
    );
  }
}

void main();
