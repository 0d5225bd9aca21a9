/**
 * Bytes written to object storage as they arrive, never held whole: an http node's binary
 * answer goes from the response body to the bucket this way. The bytes are counted and hashed
 * on the way, the media type is sniffed from the first of them, and the size limit is enforced
 * as they come: past it the write stops, and nothing is left at the key.
 *
 * Memory is bounded by one part (PART_BYTES plus at most one arriving chunk): an answer smaller
 * than a part is stored with one PutObject, a larger one as a multipart upload whose parts are
 * sent one at a time, reading no more of the answer while a part is in flight.
 */
import { createHash } from 'node:crypto';
import type { ObjectStorePort, PartedWrite } from '../core/ports';
import { SNIFF_BYTES } from '../core/sniff';

/** Each part of a streamed write (S3 takes at least MIN_PART_BYTES, 5 MiB, per part but the last). */
export const PART_BYTES = 8 * 1024 * 1024;

/** A streamed write past its limit: the message names the limit. */
export class StreamTooLargeError extends Error {
  override readonly name = 'StreamTooLargeError';
}

export interface StreamWriteOptions {
  /** Most bytes the object may have; one more ends the write with StreamTooLargeError. */
  maxBytes: number;
  /** The media type to store the object as, from its first bytes (up to SNIFF_BYTES of them). */
  mediaType(head: Uint8Array): Promise<string>;
  /** What the bytes are, for the limit's message: `<what> larger than <maxBytes> bytes`. */
  what?: string;
  /** Bytes per part (tests make it small; at least MIN_PART_BYTES on S3). */
  partBytes?: number;
}

export interface StreamWritten {
  bytes: number;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
  media_type: string;
}

const concat = (chunks: readonly Uint8Array[], size: number): Uint8Array => {
  if (chunks.length === 1 && chunks[0]) return chunks[0];
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
};

/**
 * Writes `body` to `key`, as it is read. On any failure (the limit, the source, storage) the
 * multipart upload, if one was begun, is aborted before the error is rethrown, and the source is
 * ended, so neither an object nor a half-read connection is left behind.
 */
export async function writeStream(
  objects: ObjectStorePort,
  key: string,
  body: AsyncIterable<Uint8Array>,
  opts: StreamWriteOptions,
): Promise<StreamWritten> {
  const partBytes = Math.max(1, opts.partBytes ?? PART_BYTES);
  const hash = createHash('sha256');
  // Without multipart the whole object is one part: the limit still holds while it streams.
  const parted = objects.begin !== undefined;
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let total = 0;
  let upload: { write: PartedWrite; mediaType: string } | undefined;

  // Sniffed once, from the object's first bytes: its first part, or the whole of a small one.
  const sniff = (head: Uint8Array): Promise<string> => opts.mediaType(head.subarray(0, SNIFF_BYTES));
  const flush = async (): Promise<void> => {
    const part = concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    if (upload === undefined) {
      const mediaType = await sniff(part);
      upload = { mediaType, write: await (objects.begin as NonNullable<ObjectStorePort['begin']>).call(objects, key, mediaType) };
    }
    await upload.write.part(part);
  };

  const iterator = body[Symbol.asyncIterator]();
  let drained = false;
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) {
        drained = true;
        break;
      }
      const chunk = next.value;
      total += chunk.length;
      if (total > opts.maxBytes) throw new StreamTooLargeError(`${opts.what ?? 'object'} larger than ${opts.maxBytes} bytes`);
      hash.update(chunk);
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (parted && pendingBytes >= partBytes) await flush();
    }
    let mediaType: string;
    if (upload === undefined) {
      const whole = concat(pending, pendingBytes);
      mediaType = await sniff(whole);
      await objects.put(key, whole, mediaType);
    } else {
      if (pendingBytes > 0) await flush();
      await upload.write.complete();
      mediaType = upload.mediaType;
    }
    return { bytes: total, sha256: hash.digest('hex'), media_type: mediaType };
  } catch (e) {
    if (!drained) await iterator.return?.().catch(() => undefined);
    if (upload !== undefined) await upload.write.abort().catch(() => undefined);
    throw e;
  }
}
