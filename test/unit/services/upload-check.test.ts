/**
 * An upload named by an execution is checked as a stream (functions/services/asset-inputs.service.ts):
 * its 100 MiB are counted, hashed and sniffed as they pass, never read whole, so the check holds
 * its head and not the file (bench/upload-memory.ts measures the runtime: +33 MB for a 100 MiB
 * upload PUT, checked and executed, where reading it whole took +326 MB).
 */
import { createHash, randomUUID } from 'node:crypto';
import { checkAssets } from '../../../functions/services/asset-inputs.service';
import { UPLOAD_MAX_BYTES } from '../../../functions/core/assets';
import { ownerUploadKey, type ObjectOwner } from '../../../functions/core/object-keys';
import type { ContractInput } from '../../../functions/core/types';
import type { ObjectStorePort, OpenedObject } from '../../../functions/core/ports';
import { isAppError } from '../../../functions/core/errors';
import { testDeps } from '../../support/fakes';
import { MemoryUploads } from '../../support/memory-objects';
import { memoryStores } from '../../support/memory-stores';
import { png } from '../../support/media';

const MIB = 1024 * 1024;
const NOW = new Date('2026-11-27T12:00:00Z');
const owner: ObjectOwner = { kind: 'deployment', deployment_id: randomUUID() };
const photo: ContractInput = { id: 'photo', value_type: 'asset', visible: true } as ContractInput;

/** A store whose objects only stream, 1 MiB at a time, and which fails a read of a whole object. */
function streamingOnly(size: number): { store: ObjectStorePort; chunksServed: () => number; expected: string } {
  const chunk = Buffer.alloc(MIB, 7);
  png(4, 4).copy(chunk);
  const hash = createHash('sha256');
  for (let at = 0; at < size; at += MIB) hash.update(chunk.subarray(0, Math.min(MIB, size - at)));
  let served = 0;
  const store = {
    head: () => Promise.resolve({ bytes: size, media_type: 'image/png' }),
    read: () => Promise.reject(new Error('the check read the whole object')),
    open: (): Promise<OpenedObject> =>
      Promise.resolve({
        bytes: size,
        media_type: 'image/png',
        body: (async function* () {
          for (let at = 0; at < size; at += MIB) {
            served += 1;
            yield chunk.subarray(0, Math.min(MIB, size - at));
          }
        })(),
      }),
  } as unknown as ObjectStorePort;
  return { store, chunksServed: () => served, expected: hash.digest('hex') };
}

async function world(size: number, recorded = size) {
  const uploads = new MemoryUploads();
  const uploadId = randomUUID();
  await uploads.create({
    upload_id: uploadId,
    owner,
    media_type: 'image/png',
    bytes: recorded,
    created_at: NOW.toISOString(),
    expires_at: NOW.getTime() / 1000 + 3600,
    used_by: null,
  });
  const objects = streamingOnly(size);
  const d = testDeps({ ...memoryStores(), uploads }, { objects: objects.store });
  return { d, uploadId, objects };
}

describe('the check of an upload an execution names', () => {
  it('counts, hashes and sniffs the largest upload as it streams, never reading it whole', async () => {
    // Prepare
    const { d, uploadId, objects } = await world(UPLOAD_MAX_BYTES);
    // Act
    const [checked] = await checkAssets(d, owner, [photo], { photo: { kind: 'upload', uploadId } }, NOW);
    // Assess
    expect(checked).toMatchObject({
      id: 'photo',
      media_type: 'image/png',
      bytes: UPLOAD_MAX_BYTES,
      sha256: objects.expected,
      source: { kind: 'upload', uploadId, key: ownerUploadKey(owner, uploadId) },
    });
    expect(objects.chunksServed()).toBe(UPLOAD_MAX_BYTES / MIB);
  });

  it('refuses an upload of another size than it was made for without reading its bytes', async () => {
    // Prepare
    const { d, uploadId, objects } = await world(3 * MIB, 2 * MIB);
    // Act
    const refused = await checkAssets(d, owner, [photo], { photo: { kind: 'upload', uploadId } }, NOW).catch((e: unknown) => e);
    // Assess
    expect(isAppError(refused) && refused.detail).toBe(
      `input 'photo' names an upload of ${3 * MIB} bytes, not the ${2 * MIB} it was made for`,
    );
    expect(objects.chunksServed()).toBe(0);
  });
});
