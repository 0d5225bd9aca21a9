/**
 * One measured run of bench/http-stream.ts, in a process of its own so that each run's memory
 * is its own: takes a binary answer from the upstream one way (`BENCH_WAY`) and reports the time
 * and its RSS (after a collection before, and the peak sampled every 5 ms during).
 *
 * - `streamed`: what task-run does now: the engine's http node, the guarded HTTP port, the
 *   streaming writer and the S3 adapter's multipart calls against the S3 emulation.
 * - `whole`: the path before it: the answer collected into one buffer, hashed, sniffed and
 *   put with one PutObject (the same adapter and emulation).
 * - `copy`: a floor: the response piped to a file, nothing else.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { createGuardedHttp } from '../functions/adapters/guarded-http';
import { createObjectStore } from '../functions/adapters/objects.store';
import { runPipeline, type EngineObjects } from '../functions/core/engine';
import { answerMediaType } from '../functions/core/output-assets';
import { sniffMediaType } from '../functions/core/sniff';
import { writeStream } from '../functions/services/object-writer';

const gc = (globalThis as { gc?: () => void }).gc;
const env = (name: string): string => {
  const v = process.env[name];
  if (v === undefined) throw new Error(`${name} is not set`);
  return v;
};

async function main(): Promise<void> {
  const way = env('BENCH_WAY');
  const upstream = env('BENCH_UPSTREAM');
  const store = createObjectStore({ region: 'local', s3Endpoint: env('BENCH_S3'), s3ForcePathStyle: true }, env('BENCH_BUCKET'), {
    accessKeyId: env('BENCH_KEY'),
    secretAccessKey: env('BENCH_SECRET'),
  });
  const http = createGuardedHttp({ allowPrivate: true });
  // Warm the clients (first SDK call, first connection) outside the measurement.
  await store.put('d/warm/x', new Uint8Array(1), 'application/octet-stream');
  gc?.();
  const before = process.memoryUsage.rss();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
  const started = performance.now();
  let bytes = 0;
  if (way === 'streamed') {
    const objects: EngineObjects = {
      async store(name, body, declared, maxBytes) {
        const w = await writeStream(store, `d/bench/e/1/${name}`, body, {
          maxBytes,
          what: 'binary response',
          mediaType: async (head) => answerMediaType(await sniffMediaType(head), declared),
        });
        bytes = w.bytes;
        const ref = { key: `d/bench/e/1/${name}`, media_type: w.media_type, bytes: w.bytes, sha256: w.sha256 };
        return {
          ref,
          view: {
            url: 'http://127.0.0.1:9/x',
            media_type: w.media_type,
            bytes: w.bytes,
            sha256: w.sha256,
            expires_at: new Date().toISOString(),
          },
        };
      },
      open: () => Promise.reject(new Error('not used')),
    };
    const r = await runPipeline(
      { nodes: { big: { type: 'http', url: upstream, timeout_ms: 30_000 }, out: { type: 'output', from: 'big' } } },
      {},
      { http, timeoutMs: 60_000, objects },
    );
    if (r.status !== 'completed') throw new Error(JSON.stringify(r));
  } else if (way === 'whole') {
    const res = await http({ method: 'GET', url: upstream, headers: {}, timeoutMs: 30_000, maxBinaryResponseBytes: 100 * 1024 * 1024 });
    const chunks: Buffer[] = [];
    for await (const c of res.stream ?? []) chunks.push(Buffer.from(c));
    const whole = Buffer.concat(chunks);
    createHash('sha256').update(whole).digest('hex');
    const type = answerMediaType(await sniffMediaType(whole), res.headers['content-type']);
    await store.put('d/bench/e/1/node.whole', new Uint8Array(whole.buffer, whole.byteOffset, whole.byteLength), type);
    bytes = whole.length;
  } else {
    const res = await fetch(upstream);
    const file = env('BENCH_FILE');
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>), createWriteStream(file));
    bytes = Number(res.headers.get('content-length') ?? 0);
  }
  const ms = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage.rss());
  process.send?.({ way, ms, bytes, growth: process.memoryUsage.rss() - before, peak: peak - before });
}

main().catch((e: unknown) => {
  process.stderr.write(`${String(e)}\n`);
  process.exit(1);
});
