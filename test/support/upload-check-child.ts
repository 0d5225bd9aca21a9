/**
 * The execute function's check of an upload, in a process of its own so that its memory is its
 * own (test/integration/upload-check-memory.test.ts): the service's checkAssets with the S3
 * adapter a Lambda function uses (functions/adapters/objects.store.ts), reading the object from
 * the S3 endpoint the parent serves. Prints one JSON line: what the check found, the resident
 * memory before it, and this process's own peak resident memory (VmHWM, the kernel's high-water
 * mark, so no sample can miss a peak).
 */
import { readFileSync } from 'node:fs';
import { createObjectStore } from '../../functions/adapters/objects.store';
import type { ObjectOwner } from '../../functions/core/object-keys';
import type { ContractInput } from '../../functions/core/types';
import { checkAssets } from '../../functions/services/asset-inputs.service';
import { testDeps } from './fakes';
import { MemoryUploads } from './memory-objects';
import { memoryStores } from './memory-stores';

/**
 * This process's peak resident memory since its program started: VmHWM of /proc/self/status.
 * Not getrusage's maxRSS (`process.resourceUsage().maxRSS`): Linux keeps the high-water mark of
 * the memory a process had before exec in it, and a spawned child's was its parent's, so maxRSS
 * here is at least the spawning jest worker's own peak (394 MB once a full run had used it)
 * whatever the check takes.
 */
function peakResidentBytes(): number {
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  if (kb === undefined) throw new Error('no VmHWM in /proc/self/status: the peak is read from Linux /proc');
  return Number(kb) * 1024;
}

async function main(): Promise<void> {
  const { S3_URL, S3_BUCKET, S3_KEY_ID, S3_SECRET, DEPLOYMENT_ID, UPLOAD_ID, UPLOAD_BYTES } = process.env;
  const owner: ObjectOwner = { kind: 'deployment', deployment_id: String(DEPLOYMENT_ID) };
  const now = new Date();
  const uploads = new MemoryUploads();
  await uploads.create({
    upload_id: String(UPLOAD_ID),
    owner,
    media_type: 'image/png',
    bytes: Number(UPLOAD_BYTES),
    created_at: now.toISOString(),
    expires_at: now.getTime() / 1000 + 3600,
    used_by: null,
  });
  const objects = createObjectStore({ region: 'local', s3Endpoint: String(S3_URL), s3ForcePathStyle: true }, String(S3_BUCKET), {
    accessKeyId: String(S3_KEY_ID),
    secretAccessKey: String(S3_SECRET),
  });
  const d = testDeps({ ...memoryStores(), uploads }, { objects });
  const photo = { id: 'photo', value_type: 'asset', visible: true } as ContractInput;
  const before = process.memoryUsage.rss();
  const [checked] = await checkAssets(d, owner, [photo], { photo: { kind: 'upload', uploadId: String(UPLOAD_ID) } }, now);
  const peak = peakResidentBytes();
  process.stdout.write(
    `${JSON.stringify({ bytes: checked?.bytes, media_type: checked?.media_type, sha256: checked?.sha256, before, peak })}\n`,
  );
}

main().catch((e: unknown) => {
  process.stderr.write(`${String(e)}\n`);
  process.exit(1);
});
