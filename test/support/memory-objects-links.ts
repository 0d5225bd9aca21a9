/**
 * An in-memory ObjectStorePort for the asset route's tests: what the S3 adapter does, minus
 * presigning. `open` streams in chunks so a test sees the route pass bytes on as they come.
 */
import type { ByteRange, ObjectStorePort, OpenedObject, PresignedDownload, PresignedUpload } from '../../functions/core/ports';

export class MemoryObjects implements ObjectStorePort {
  readonly items = new Map<string, { body: Uint8Array; media_type: string }>();
  /** Calls of `read` (a route that streams should not make any). */
  reads = 0;

  constructor(private readonly chunkBytes = 64 * 1024) {}

  async put(key: string, body: Uint8Array, mediaType: string): Promise<void> {
    this.items.set(key, { body: Uint8Array.from(body), media_type: mediaType });
  }

  async head(key: string): Promise<{ bytes: number; media_type: string } | null> {
    const item = this.items.get(key);
    return item ? { bytes: item.body.length, media_type: item.media_type } : null;
  }

  async read(key: string, maxBytes?: number): Promise<Uint8Array | null> {
    this.reads += 1;
    const item = this.items.get(key);
    if (!item) return null;
    return maxBytes === undefined ? Uint8Array.from(item.body) : item.body.slice(0, maxBytes);
  }

  async open(key: string, range?: ByteRange): Promise<OpenedObject | null> {
    const item = this.items.get(key);
    if (!item) return null;
    if (range && (range.start < 0 || range.end >= item.body.length || range.end < range.start)) throw new Error('range outside the object');
    const from = range?.start ?? 0;
    const to = range ? range.end + 1 : item.body.length;
    const chunk = this.chunkBytes;
    const source = item.body;
    async function* body(): AsyncIterable<Uint8Array> {
      for (let at = from; at < to; at += chunk) yield source.slice(at, Math.min(to, at + chunk));
    }
    return { bytes: item.body.length, media_type: item.media_type, body: body() };
  }

  async remove(keys: readonly string[]): Promise<void> {
    for (const k of keys) this.items.delete(k);
  }

  async removePrefix(prefix: string): Promise<number> {
    let n = 0;
    for (const k of [...this.items.keys()]) if (k.startsWith(prefix)) n += Number(this.items.delete(k));
    return n;
  }

  presignUpload(): Promise<PresignedUpload> {
    return Promise.reject(new Error('not supported by the in-memory store'));
  }

  presignDownload(): Promise<PresignedDownload> {
    return Promise.reject(new Error('not supported by the in-memory store'));
  }
}

/** The same store without `open`: the asset route's fallback to whole reads. */
export function withoutStreams(store: MemoryObjects): ObjectStorePort {
  return {
    put: (...a) => store.put(...a),
    head: (...a) => store.head(...a),
    read: (...a) => store.read(...a),
    remove: (...a) => store.remove(...a),
    removePrefix: (...a) => store.removePrefix(...a),
    presignUpload: () => store.presignUpload(),
    presignDownload: () => store.presignDownload(),
  };
}
