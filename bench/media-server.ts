/**
 * The local runtime as a child of bench/media.ts, so its memory is measured apart from the load
 * generator's: it reports its RSS (now, and the peak sampled every 10 ms since the last ask,
 * after a collection), stores objects and mints links to them with its own deps.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as v from 'valibot';
import { executionObjectKey } from '../functions/core/object-keys';
import { startRuntime } from '../lib/local/runtime';

export const MediaCommand = v.variant('cmd', [
  v.object({ cmd: v.literal('rss'), seq: v.number() }),
  v.object({ cmd: v.literal('object'), seq: v.number(), deploymentId: v.string(), bytes: v.number() }),
  v.object({ cmd: v.literal('stop'), seq: v.number() }),
]);
export type MediaCommand = v.InferOutput<typeof MediaCommand>;

const gc = (globalThis as { gc?: () => void }).gc;

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipegate-bench-media-'));
  const rt = await startRuntime({ port: 0, dataDir, log: false, inMemory: true });
  let peak = process.memoryUsage.rss();
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);
  sampler.unref();
  process.send?.({ type: 'ready', url: rt.url, ownerToken: rt.ownerToken });
  process.on('message', (raw: unknown) => {
    const parsed = v.safeParse(MediaCommand, raw);
    if (!parsed.success) return;
    const m = parsed.output;
    const reply = (result: unknown) => process.send?.({ type: 'reply', seq: m.seq, result });
    if (m.cmd === 'rss') {
      gc?.();
      const now = process.memoryUsage.rss();
      reply({ rss: now, peak: Math.max(peak, now) });
      peak = now;
    } else if (m.cmd === 'object') {
      const key = executionObjectKey(
        { kind: 'api', deployment_id: m.deploymentId, pipeline_id: 'bench', execution_id: randomUUID() },
        'out.image',
      );
      const body = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), randomBytes(m.bytes - 8)]);
      void rt.deps.objects
        .put(key, body, 'image/png')
        .then(() => rt.deps.assetLinks.link({ key, media_type: 'image/png', bytes: body.length, sha256: '' }, rt.url, new Date()))
        .then((link) => reply({ url: link.url }));
    } else {
      void rt.stop().then(() => {
        rmSync(dataDir, { recursive: true, force: true });
        reply({});
        process.exit(0);
      });
    }
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
