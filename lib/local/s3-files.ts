/**
 * The S3 emulation's objects on disk (lib/local/s3.ts): each object one file under
 * `<dir>/<bucket>/`, its key's segments as directory and file names that nothing a key holds
 * can turn into `.`, `..` or a way out, its metadata (content type, size, ETag, time) in a
 * length-prefixed JSON header before the bytes. Writes go to a temporary file first and are
 * renamed into place, so a reader sees a whole object or none.
 */
import { randomUUID } from 'node:crypto';
import { open, mkdir, readdir, rename, rm, rmdir } from 'node:fs/promises';
import * as path from 'node:path';
import { S3Error } from './s3-request';

/** A local limit, not S3's: one encoded path segment of a key must fit a file name. */
export const MAX_SEGMENT_CHARS = 240;

const DAY_MS = 24 * 3600 * 1000;

/** When S3's lifecycle rule of `days` expires an object written at `writtenMs`: rounded up to the next midnight UTC. */
export function lifecycleExpiryMs(writtenMs: number, days: number): number {
  return Math.ceil((writtenMs + days * DAY_MS) / DAY_MS) * DAY_MS;
}

export interface Meta {
  key: string;
  content_type: string;
  size: number;
  etag: string;
  last_modified: string;
}

/** Key segments as file names: nothing a key holds can name `.`, `..` or leave the directory. */
export const encodeSegment = (s: string): string =>
  encodeURIComponent(s).replace(/[.!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** The IAM resource S3 authorizes an action on: the object's ARN, or the bucket's. */
export const arn = (bucket: string, key?: string): string =>
  key === undefined ? `arn:aws:s3:::${bucket}` : `arn:aws:s3:::${bucket}/${key}`;

export class ObjectFiles {
  /** Where writes are put together before they are renamed into place. */
  readonly tmpDir: string;

  constructor(readonly dir: string) {
    this.tmpDir = path.join(dir, '.tmp');
  }

  objectPath(bucket: string, key: string): string {
    const segs = key.split('/').map(encodeSegment);
    if (segs.some((s) => s.length > MAX_SEGMENT_CHARS))
      throw new S3Error(
        400,
        'KeyTooLongError',
        `Your key is too long (locally, each '/'-separated part of a key is limited to ${MAX_SEGMENT_CHARS} encoded characters)`,
      );
    const last = segs.pop() as string;
    return path.join(this.dir, bucket, ...segs.map((s) => `d${s}`), `o${last}`);
  }

  /** A fresh temporary file name (its directory made). */
  async tmpFile(): Promise<string> {
    await mkdir(this.tmpDir, { recursive: true, mode: 0o700 });
    return path.join(this.tmpDir, randomUUID());
  }

  /** The object's metadata and where its bytes begin in the file, or null when there is no such object. */
  async readMeta(file: string): Promise<{ meta: Meta; offset: number } | null> {
    let fh;
    try {
      fh = await open(file, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
      throw e;
    }
    try {
      const len = Buffer.alloc(4);
      await fh.read(len, 0, 4, 0);
      const n = len.readUInt32BE(0);
      const buf = Buffer.alloc(n);
      await fh.read(buf, 0, n, 4);
      return { meta: JSON.parse(buf.toString('utf8')) as Meta, offset: 4 + n };
    } finally {
      await fh.close();
    }
  }

  /** Renames into place, creating the key's directories (again, should a delete have removed them meanwhile). */
  async place(tmp: string, target: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      try {
        await rename(tmp, target);
        return;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 3) throw e;
      }
    }
  }

  async removeObject(bucket: string, key: string): Promise<void> {
    const file = this.objectPath(bucket, key);
    await rm(file, { force: true });
    // Empty directories go too, so listing stays proportional to what exists.
    const root = path.join(this.dir, bucket);
    for (let dir = path.dirname(file); dir.startsWith(root + path.sep); dir = path.dirname(dir)) {
      try {
        await rmdir(dir);
      } catch {
        return;
      }
    }
  }

  /** Every key starting with `prefix`, in S3's order (UTF-8 bytes), walking only the directories the prefix allows. */
  async keysUnder(bucket: string, prefix: string): Promise<string[]> {
    const parts = prefix.split('/');
    parts.pop(); // the last part may be partial: its directory's siblings are filtered below
    const found: string[] = [];
    const walk = async (dir: string, keyPrefix: string): Promise<void> => {
      let entries: string[];
      try {
        entries = await readdir(dir);
      } catch {
        return;
      }
      for (const name of entries) {
        let seg: string;
        try {
          seg = decodeURIComponent(name.slice(1));
        } catch {
          continue; // not a name this emulation wrote
        }
        if (name.startsWith('o')) found.push(keyPrefix + seg);
        else if (name.startsWith('d')) await walk(path.join(dir, name), `${keyPrefix}${seg}/`);
      }
    };
    const base = path.join(this.dir, bucket, ...parts.map((p) => `d${encodeSegment(p)}`));
    if (parts.some((p) => encodeSegment(p).length > MAX_SEGMENT_CHARS)) return [];
    await walk(base, parts.map((p) => `${p}/`).join(''));
    return found.filter((k) => k.startsWith(prefix)).sort((x, y) => Buffer.compare(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8')));
  }
}
