/**
 * In-memory object storage and uploads for tests that need no S3 (or S3 emulation): the same
 * ports, the same rules (a presigned PUT must carry exactly the signed size), no network.
 */
import { randomBytes } from 'node:crypto';
import type {
  ObjectStorePort,
  PartedWrite,
  PresignedDownload,
  PresignedUpload,
  UploadRecord,
  UploadsPort,
} from '../../functions/core/ports';
import { sameOwner, type ObjectOwner } from '../../functions/core/object-keys';
import { epochSeconds } from '../../functions/core/time';

export class MemoryObjects implements ObjectStorePort {
  readonly objects = new Map<string, { body: Uint8Array; media_type: string }>();
  /** Presigned PUTs handed out, by token: what `completeUpload` may write. */
  readonly presigned = new Map<string, { key: string; mediaType: string; bytes: number; expiresMs: number }>();
  puts = 0;
  /** When set, the next put fails with this error (a store going away mid-request). */
  failNextPut: Error | null = null;

  constructor(private readonly nowMs: () => number = Date.now) {}

  async put(key: string, body: Uint8Array, mediaType: string): Promise<void> {
    if (this.failNextPut) {
      const e = this.failNextPut;
      this.failNextPut = null;
      throw e;
    }
    this.puts++;
    this.objects.set(key, { body: new Uint8Array(body), media_type: mediaType });
  }
  /** Multipart writes begun and not yet completed or aborted, by id: their parts so far. */
  readonly uploads = new Map<number, { key: string; mediaType: string; parts: Uint8Array[] }>();
  /** Every part sent to a multipart write, by size (what a streamed write held at once). */
  readonly partSizes: number[] = [];
  private nextUpload = 1;

  async begin(key: string, mediaType: string): Promise<PartedWrite> {
    const id = this.nextUpload++;
    const upload = { key, mediaType, parts: [] as Uint8Array[] };
    this.uploads.set(id, upload);
    return {
      part: async (bytes) => {
        if (!this.uploads.has(id)) throw new Error('NoSuchUpload');
        const previous = upload.parts[upload.parts.length - 1];
        // As S3 refuses it at completion: every part but the last at least 5 MiB (here: the first part's size).
        if (previous !== undefined && upload.parts[0] !== undefined && previous.length < upload.parts[0].length)
          throw new Error('EntityTooSmall');
        this.partSizes.push(bytes.length);
        upload.parts.push(Uint8Array.from(bytes));
      },
      complete: async () => {
        if (!this.uploads.delete(id)) throw new Error('NoSuchUpload');
        this.objects.set(key, { body: Buffer.concat(upload.parts), media_type: mediaType });
      },
      abort: async () => {
        this.uploads.delete(id);
      },
    };
  }

  async head(key: string): Promise<{ bytes: number; media_type: string } | null> {
    const o = this.objects.get(key);
    return o ? { bytes: o.body.length, media_type: o.media_type } : null;
  }
  async read(key: string, maxBytes?: number): Promise<Uint8Array | null> {
    const o = this.objects.get(key);
    if (!o) return null;
    return maxBytes === undefined ? o.body : o.body.subarray(0, maxBytes);
  }
  async remove(keys: readonly string[]): Promise<void> {
    for (const k of keys) this.objects.delete(k);
  }
  async removePrefix(prefix: string): Promise<number> {
    let n = 0;
    for (const k of [...this.objects.keys()]) if (k.startsWith(prefix) && this.objects.delete(k)) n++;
    return n;
  }
  async presignUpload(key: string, mediaType: string, bytes: number, ttlSeconds: number): Promise<PresignedUpload> {
    const token = randomBytes(16).toString('hex');
    const expiresMs = this.nowMs() + ttlSeconds * 1000;
    this.presigned.set(token, { key, mediaType, bytes, expiresMs });
    return {
      url: `http://127.0.0.1:9/memory-objects/${token}`,
      method: 'PUT',
      headers: { 'content-type': mediaType, 'content-length': String(bytes) },
      expires_at: new Date(expiresMs).toISOString(),
    };
  }
  async presignDownload(key: string, _mediaType: string, ttlSeconds: number): Promise<PresignedDownload> {
    return {
      url: `http://127.0.0.1:9/memory-objects/get/${encodeURIComponent(key)}`,
      expires_at: new Date(this.nowMs() + ttlSeconds * 1000).toISOString(),
    };
  }

  /** What a client's PUT to a presigned URL does: refused unless in time and of exactly the signed size. */
  completeUpload(url: string, body: Uint8Array): 'ok' | 'expired' | 'wrong_size' | 'unknown' {
    const token = url.split('/').pop() ?? '';
    const p = this.presigned.get(token);
    if (!p) return 'unknown';
    if (this.nowMs() > p.expiresMs) return 'expired';
    if (body.length !== p.bytes) return 'wrong_size';
    this.objects.set(p.key, { body: new Uint8Array(body), media_type: p.mediaType });
    return 'ok';
  }
}

export class MemoryUploads implements UploadsPort {
  readonly records = new Map<string, UploadRecord>();
  async create(u: UploadRecord): Promise<void> {
    if (this.records.has(u.upload_id)) throw new Error('upload exists');
    this.records.set(u.upload_id, { ...u });
  }
  async get(id: string, now: Date): Promise<UploadRecord | null> {
    const r = this.records.get(id);
    return r && r.expires_at > epochSeconds(now) ? { ...r } : null;
  }
  async consume(id: string, owner: ObjectOwner, executionId: string, now: Date): Promise<boolean> {
    const r = this.records.get(id);
    if (!r || !sameOwner(r.owner, owner) || r.expires_at <= epochSeconds(now)) return false;
    if (r.used_by !== null && r.used_by !== executionId) return false;
    r.used_by = executionId;
    return true;
  }
}
