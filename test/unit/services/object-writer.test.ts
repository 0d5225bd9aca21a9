/**
 * The streaming writer: bytes go to storage as they arrive, counted, hashed and sniffed on the
 * way; at the limit's edge exactly the limit passes and one byte more fails naming it; a failure
 * of any kind (the limit, the source, storage) leaves no object and no open multipart upload,
 * and ends the source; memory holds at most one part.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { writeStream, StreamTooLargeError } from '../../../functions/services/object-writer';
import { SNIFF_BYTES } from '../../../functions/core/sniff';
import { MemoryObjects } from '../../support/memory-objects';

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const pattern = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + 7) % 256);

/** `bytes` in chunks of `size`, noting whether the reader ended it early. */
function source(bytes: Uint8Array, size: number, failAt?: number) {
  const state = { ended: false, read: 0 };
  const body: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]: () => ({
      next: async () => {
        if (failAt !== undefined && state.read >= failAt) throw new Error('connection reset by upstream');
        if (state.read >= bytes.length) return { done: true, value: undefined };
        const chunk = bytes.subarray(state.read, state.read + size);
        state.read += chunk.length;
        return { done: false, value: chunk };
      },
      return: async () => {
        state.ended = true;
        return { done: true, value: undefined };
      },
    }),
  };
  return { body, state };
}

const sniffed = async (head: Uint8Array) => (head[0] === 0x89 ? 'image/png' : 'application/octet-stream');

describe('writeStream', () => {
  it('takes exactly the limit, in parts: the object, its size, hash and sniffed type are right', async () => {
    // Prepare
    const objects = new MemoryObjects();
    const bytes = pattern(100);
    bytes[0] = 0x89;

    // Act
    const written = await writeStream(objects, 'd/x/e/1/node.a', source(bytes, 7).body, {
      maxBytes: 100,
      partBytes: 20,
      mediaType: sniffed,
    });

    // Assess
    expect(written).toEqual({ bytes: 100, sha256: sha(bytes), media_type: 'image/png' });
    const stored = objects.objects.get('d/x/e/1/node.a');
    expect(Buffer.from(stored?.body ?? []).equals(bytes)).toBe(true);
    expect(stored?.media_type).toBe('image/png');
    expect(objects.uploads.size).toBe(0);
    // One part held at a time: at most a part plus the chunk that filled it.
    expect(Math.max(...objects.partSizes)).toBeLessThan(20 + 7);
    expect(objects.partSizes.reduce((a, b) => a + b, 0)).toBe(100);
  });

  it.each([
    ['in parts', 20],
    ['below one part', 1000],
  ])('refuses one byte more than the limit, naming it, and leaves nothing (%s)', async (_, partBytes) => {
    const objects = new MemoryObjects();
    const src = source(pattern(101), 7);
    const write = writeStream(objects, 'k', src.body, { maxBytes: 100, partBytes, what: 'binary response', mediaType: sniffed });
    await expect(write).rejects.toThrow(new StreamTooLargeError('binary response larger than 100 bytes'));
    expect(objects.objects.has('k')).toBe(false);
    expect(objects.uploads.size).toBe(0);
    expect(src.state.ended).toBe(true);
    expect(objects.puts).toBe(0);
  });

  it('aborts the multipart upload when the source fails midway: no object, no parts left', async () => {
    const objects = new MemoryObjects();
    const write = writeStream(objects, 'k', source(pattern(100), 7, 49).body, { maxBytes: 1000, partBytes: 20, mediaType: sniffed });
    await expect(write).rejects.toThrow('connection reset by upstream');
    expect(objects.partSizes.length).toBeGreaterThan(0);
    expect(objects.uploads.size).toBe(0);
    expect(objects.objects.has('k')).toBe(false);
  });

  it('aborts when storage refuses a part, and ends the source it stopped reading', async () => {
    const objects = new MemoryObjects();
    const begin = objects.begin.bind(objects);
    objects.begin = async (key, type) => {
      const w = await begin(key, type);
      return { ...w, part: async () => Promise.reject(new Error('SlowDown')) };
    };
    const src = source(pattern(100), 7);
    await expect(writeStream(objects, 'k', src.body, { maxBytes: 1000, partBytes: 20, mediaType: sniffed })).rejects.toThrow('SlowDown');
    expect(objects.uploads.size).toBe(0);
    expect(src.state.ended).toBe(true);
    expect(objects.objects.has('k')).toBe(false);
  });

  it('stores an answer smaller than a part with one put, and an empty one too', async () => {
    const objects = new MemoryObjects();
    const small = await writeStream(objects, 'a', source(pattern(30), 7).body, { maxBytes: 100, partBytes: 1000, mediaType: sniffed });
    const empty = await writeStream(objects, 'b', source(new Uint8Array(0), 7).body, { maxBytes: 100, mediaType: sniffed });
    expect(small).toEqual({ bytes: 30, sha256: sha(pattern(30)), media_type: 'application/octet-stream' });
    expect(empty).toEqual({ bytes: 0, sha256: sha(new Uint8Array(0)), media_type: 'application/octet-stream' });
    expect(objects.puts).toBe(2);
    expect(objects.partSizes).toEqual([]);
  });

  it('sniffs from the first bytes only', async () => {
    const objects = new MemoryObjects();
    const heads: number[] = [];
    await writeStream(objects, 'k', source(pattern(SNIFF_BYTES * 3), 1000).body, {
      maxBytes: SNIFF_BYTES * 3,
      partBytes: SNIFF_BYTES * 2,
      mediaType: async (head) => {
        heads.push(head.length);
        return 'application/octet-stream';
      },
    });
    expect(heads).toEqual([SNIFF_BYTES]);
  });

  it('holds the limit on a store without multipart writes, storing the whole once', async () => {
    const objects = new MemoryObjects();
    Object.defineProperty(objects, 'begin', { value: undefined });
    await expect(
      writeStream(objects, 'k', source(pattern(101), 7).body, { maxBytes: 100, partBytes: 20, mediaType: sniffed }),
    ).rejects.toThrow('object larger than 100 bytes');
    const ok = await writeStream(objects, 'k', source(pattern(100), 7).body, { maxBytes: 100, partBytes: 20, mediaType: sniffed });
    expect(ok.bytes).toBe(100);
    expect(objects.puts).toBe(1);
  });

  it('stores the same bytes and hash however the answer is cut into chunks and parts', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 300 }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 80 }),
        async (bytes, chunk, part) => {
          const objects = new MemoryObjects();
          const written = await writeStream(objects, 'k', source(bytes, chunk).body, {
            maxBytes: 300,
            partBytes: part,
            mediaType: sniffed,
          });
          expect(written.bytes).toBe(bytes.length);
          expect(written.sha256).toBe(sha(bytes));
          expect(Buffer.from(objects.objects.get('k')?.body ?? []).equals(Buffer.from(bytes))).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});
