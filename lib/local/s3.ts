/**
 * S3 on one machine, for the calls pipegate makes (PutObject, HeadObject, GetObject with Range
 * and response overrides, DeleteObject, DeleteObjects, ListObjectsV2, and a multipart upload's
 * Create, UploadPart, Complete and Abort) and the presigned URLs it
 * hands out: path-style, objects as files under a directory, every request's SigV4 verified
 * (header-signed or presigned, expiry and the signed Content-Length enforced, so a presigned PUT
 * of more or fewer bytes is refused as S3 refuses it). Anything else answers NotImplemented
 * rather than being half-emulated. The local runtime serves it on its own port; start:synth's
 * AWS endpoint hands S3 requests to the same handler with IAM in `authorize`.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { crc32 } from 'node:zlib';
import {
  MAX_PARTS,
  parseAddress,
  parseAuthorization,
  parseCompleteBody,
  parseDeleteBody,
  parseRange,
  queryValue,
  S3Error,
  verifySignature,
  xmlEscape,
  xmlUnescape,
  type Authorization,
  type S3Address,
} from './s3-request';
import { corsHeaders, preflight } from './s3-cors';
import type { BucketCorsRule } from '../storage-cors';

export { S3Error };

/** One authorization S3 makes before acting (IAM actions on object or bucket ARNs). */
export interface S3Check {
  accessKeyId: string;
  sessionToken?: string;
  /** e.g. s3:GetObject */
  action: string;
  /** arn:aws:s3:::bucket/key, or arn:aws:s3:::bucket for bucket actions. */
  resource: string;
}

export interface S3EmulationOptions {
  /** Objects live under `<dir>/<bucket>/`. */
  dir: string;
  buckets: readonly string[];
  /** The region credentials must be scoped to. */
  region: string;
  /** The secret access key of an access key id; undefined for a key S3 would not know. */
  secretOf(accessKeyId: string): string | undefined;
  /** IAM, when the caller's permissions matter (start:synth): a denial's message, or undefined when allowed. */
  authorize?(check: S3Check): Promise<string | undefined>;
  /** The endpoint's own path before `/<bucket>` ('' at the root). */
  basePath?: string;
  /** A bucket's lifecycle rule: its objects expire this many days after they were written (see expire). */
  expirationDays?: Readonly<Record<string, number>>;
  /** A bucket's CORS rules (none: CORS not enabled), asked per request so a rule may follow a URL known only later. */
  cors?(bucket: string): readonly BucketCorsRule[];
  now?: () => number;
}

export type S3Handler = ((req: IncomingMessage, res: ServerResponse) => Promise<void>) & {
  /**
   * One pass of the buckets' lifecycle expiry, as S3 runs it: an object written at T expires
   * at the first midnight UTC after T + days. Answers how many objects it removed.
   */
  expire(): Promise<number>;
};

const DAY_MS = 24 * 3600 * 1000;

/** When S3's lifecycle rule of `days` expires an object written at `writtenMs`: rounded up to the next midnight UTC. */
export function lifecycleExpiryMs(writtenMs: number, days: number): number {
  return Math.ceil((writtenMs + days * DAY_MS) / DAY_MS) * DAY_MS;
}

/** A local limit, not S3's: one encoded path segment of a key must fit a file name. */
export const MAX_SEGMENT_CHARS = 240;
/** Local limit on one object, far above what pipegate stores (S3 allows 5 GB per PUT). */
export const MAX_OBJECT_BYTES = 5 * 1024 * 1024 * 1024;
/** S3's largest part of a multipart upload (5 GiB). */
const MAX_PART_BYTES = 5 * 1024 * 1024 * 1024;
const MAX_XML_BYTES = 2 * 1024 * 1024;
/** S3's smallest part of a multipart upload, the last one excepted. */
const MIN_PART_BYTES = 5 * 1024 * 1024;
/** The bucket's lifecycle rule removes an upload neither completed nor aborted a day after it began (lib/stacks/stateful-stack.ts). */
const ABORT_INCOMPLETE_UPLOAD_MS = 24 * 3600 * 1000;

interface UploadMeta {
  bucket: string;
  key: string;
  content_type: string;
  initiated_ms: number;
}
const MAX_LIST_KEYS = 1000;

interface Meta {
  key: string;
  content_type: string;
  size: number;
  etag: string;
  last_modified: string;
}

const arn = (bucket: string, key?: string): string => (key === undefined ? `arn:aws:s3:::${bucket}` : `arn:aws:s3:::${bucket}/${key}`);

/** Key segments as file names: nothing a key holds can name `.`, `..` or leave the directory. */
const encodeSegment = (s: string): string =>
  encodeURIComponent(s).replace(/[.!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export function createS3Handler(opts: S3EmulationOptions): S3Handler {
  const now = opts.now ?? Date.now;
  const buckets = new Set(opts.buckets);
  const tmpDir = path.join(opts.dir, '.tmp');
  const uploadsDir = path.join(opts.dir, '.uploads');
  // Per bucket: the configuration set through the API (null: none set yet), read once from disk.
  const corsSet = new Map<string, BucketCorsRule[] | null>();

  function objectPath(bucket: string, key: string): string {
    const segs = key.split('/').map(encodeSegment);
    if (segs.some((s) => s.length > MAX_SEGMENT_CHARS))
      throw new S3Error(
        400,
        'KeyTooLongError',
        `Your key is too long (locally, each '/'-separated part of a key is limited to ${MAX_SEGMENT_CHARS} encoded characters)`,
      );
    const last = segs.pop() as string;
    return path.join(opts.dir, bucket, ...segs.map((s) => `d${s}`), `o${last}`);
  }

  async function readMeta(file: string): Promise<{ meta: Meta; offset: number } | null> {
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

  async function check(auth: Authorization, action: string, resource: string): Promise<string | undefined> {
    return opts.authorize?.({ accessKeyId: auth.accessKeyId, sessionToken: auth.sessionToken, action, resource });
  }

  async function authorizeOrThrow(auth: Authorization, action: string, resource: string): Promise<void> {
    const denied = await check(auth, action, resource);
    if (denied !== undefined) throw new S3Error(403, 'AccessDenied', denied);
  }

  async function expire(): Promise<number> {
    let removed = 0;
    for (const [bucket, days] of Object.entries(opts.expirationDays ?? {})) {
      if (!buckets.has(bucket)) continue;
      for (const key of await keysUnder(bucket, '')) {
        const found = await readMeta(objectPath(bucket, key));
        if (!found || now() < lifecycleExpiryMs(Date.parse(found.meta.last_modified), days)) continue;
        await removeObject(bucket, key);
        removed++;
      }
    }
    // Uploads neither completed nor aborted: their parts go, as the bucket's rule removes them (not counted as objects).
    for (const id of await readdir(uploadsDir).catch(() => [] as string[])) {
      const meta = await readUpload(id).catch(() => null);
      if (meta === null || now() - meta.initiated_ms > ABORT_INCOMPLETE_UPLOAD_MS)
        await rm(path.join(uploadsDir, id), { recursive: true, force: true });
    }
    return removed;
  }

  return Object.assign(handle, { expire });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    try {
      const a = parseAddress(req.url ?? '/', opts.basePath ?? '');
      // A browser's preflight carries no credentials; S3 answers it from the bucket's CORS rules.
      const rules = buckets.has(a.bucket) ? corsRulesOf(a.bucket) : [];
      if (method === 'OPTIONS') {
        if (!buckets.has(a.bucket)) throw new S3Error(404, 'NoSuchBucket', 'The specified bucket does not exist', { BucketName: a.bucket });
        res.writeHead(200, { ...preflight(rules, req.headers), 'Content-Length': '0', 'x-amz-request-id': randomUUID() }).end();
        return;
      }
      for (const [k, v] of Object.entries(corsHeaders(rules, req.headers, method))) res.setHeader(k, v);
      const auth = parseAuthorization(a, req.headers);
      if (!auth) throw new S3Error(403, 'AccessDenied', 'Access Denied');
      const secret = opts.secretOf(auth.accessKeyId);
      if (secret === undefined)
        throw new S3Error(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.', {
          AWSAccessKeyId: auth.accessKeyId,
        });
      verifySignature(method, a, req.headers, auth, secret, opts.region, now());
      if (auth.payloadHash.startsWith('STREAMING-'))
        throw new S3Error(501, 'NotImplemented', 'Chunked (streaming) uploads are not emulated locally');
      if (!buckets.has(a.bucket)) throw new S3Error(404, 'NoSuchBucket', 'The specified bucket does not exist', { BucketName: a.bucket });
      for (const h of ['if-match', 'if-none-match', 'if-modified-since', 'if-unmodified-since', 'x-amz-copy-source']) {
        if (req.headers[h] !== undefined) throw new S3Error(501, 'NotImplemented', `The ${h} header is not emulated locally`);
      }
      const subresource = a.query.find(
        ([k]) =>
          !k.startsWith('X-Amz-') &&
          !k.startsWith('response-') &&
          ![
            'x-id',
            'delete',
            'list-type',
            'prefix',
            'max-keys',
            'continuation-token',
            'start-after',
            'fetch-owner',
            'uploads',
            'uploadId',
            'partNumber',
          ].includes(k) &&
          !(k === 'cors' && a.key === ''),
      );
      if (subresource) throw new S3Error(501, 'NotImplemented', `The ${subresource[0]} parameter is not emulated locally`);
      if (a.key === '') return await bucketRequest(method, a, auth, req, res);
      const uploadId = queryValue(a, 'uploadId');
      if (queryValue(a, 'uploads') !== undefined || uploadId !== undefined || queryValue(a, 'partNumber') !== undefined)
        return await multipartRequest(method, a, auth, req, res);
      switch (method) {
        case 'PUT':
          return await putObject(a, auth, req, res);
        case 'GET':
        case 'HEAD':
          return await getObject(method, a, auth, req, res);
        case 'DELETE':
          await authorizeOrThrow(auth, 's3:DeleteObject', arn(a.bucket, a.key));
          await removeObject(a.bucket, a.key);
          res.writeHead(204, { 'x-amz-request-id': randomUUID() }).end();
          return;
        default:
          throw new S3Error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
      }
    } catch (err) {
      const e = err instanceof S3Error ? err : new S3Error(500, 'InternalError', err instanceof Error ? err.message : String(err));
      sendError(res, method, e);
    }
  }

  async function bucketRequest(
    method: string,
    a: S3Address,
    auth: Authorization,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    if (method === 'POST' && queryValue(a, 'delete') !== undefined) return deleteObjects(a, auth, req, res);
    if (method === 'GET' && queryValue(a, 'list-type') === '2') return listObjects(a, auth, res);
    if (queryValue(a, 'cors') !== undefined) return bucketCors(method, a, auth, req, res);
    throw new S3Error(
      501,
      'NotImplemented',
      `${method} on a bucket is not emulated locally (only ListObjectsV2, DeleteObjects and the CORS configuration)`,
    );
  }

  /**
   * A bucket's CORS configuration as set through the API (PutBucketCors, DeleteBucketCors), kept
   * in the data dir as S3 keeps it; until one is set, the rules the emulation was given (`cors`).
   */
  function corsFile(bucket: string): string {
    return path.join(opts.dir, '.cors', `${encodeSegment(bucket)}.json`);
  }

  function corsRulesOf(bucket: string): readonly BucketCorsRule[] {
    let set = corsSet.get(bucket);
    if (set === undefined) {
      try {
        set = JSON.parse(readFileSync(corsFile(bucket), 'utf8')) as BucketCorsRule[];
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        set = null;
      }
      corsSet.set(bucket, set);
    }
    return set ?? opts.cors?.(bucket) ?? [];
  }

  async function setCorsRules(bucket: string, rules: BucketCorsRule[]): Promise<void> {
    await mkdir(path.dirname(corsFile(bucket)), { recursive: true, mode: 0o700 });
    await writeFile(corsFile(bucket), JSON.stringify(rules), { mode: 0o600 });
    corsSet.set(bucket, rules);
  }

  /** GetBucketCors, PutBucketCors and DeleteBucketCors; S3 authorizes the delete as s3:PutBucketCORS. */
  async function bucketCors(method: string, a: S3Address, auth: Authorization, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const id = { 'x-amz-request-id': randomUUID() };
    if (method === 'GET') {
      await authorizeOrThrow(auth, 's3:GetBucketCORS', arn(a.bucket));
      const rules = corsRulesOf(a.bucket);
      if (rules.length === 0)
        throw new S3Error(404, 'NoSuchCORSConfiguration', 'The CORS configuration does not exist', { BucketName: a.bucket });
      const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${rules.map(corsRuleXml).join('')}</CORSConfiguration>`;
      res.writeHead(200, { ...id, 'Content-Type': 'application/xml', 'Content-Length': String(Buffer.byteLength(xml)) }).end(xml);
      return;
    }
    if (method === 'DELETE') {
      await authorizeOrThrow(auth, 's3:PutBucketCORS', arn(a.bucket));
      await setCorsRules(a.bucket, []);
      res.writeHead(204, id).end();
      return;
    }
    if (method !== 'PUT') throw new S3Error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
    const body = await readSmallBody(req);
    if (/^[0-9a-f]{64}$/.test(auth.payloadHash) && createHash('sha256').update(body).digest('hex') !== auth.payloadHash) {
      throw new S3Error(400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.");
    }
    await authorizeOrThrow(auth, 's3:PutBucketCORS', arn(a.bucket));
    await setCorsRules(a.bucket, parseCorsConfiguration(body.toString('utf8')));
    res.writeHead(200, { ...id, 'Content-Length': '0' }).end();
  }

  async function putObject(a: S3Address, auth: Authorization, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const length = req.headers['content-length'];
    if (length === undefined) throw new S3Error(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
    const size = Number(length);
    if (size > MAX_OBJECT_BYTES)
      throw new S3Error(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size', {
        MaxSizeAllowed: String(MAX_OBJECT_BYTES),
      });
    const target = objectPath(a.bucket, a.key);
    await authorizeOrThrow(auth, 's3:PutObject', arn(a.bucket, a.key));
    await mkdir(tmpDir, { recursive: true, mode: 0o700 });
    const tmp = path.join(tmpDir, randomUUID());
    const meta: Meta = {
      key: a.key,
      content_type: typeof req.headers['content-type'] === 'string' ? req.headers['content-type'] : 'binary/octet-stream',
      size,
      etag: '',
      last_modified: new Date(now()).toUTCString(),
    };
    // The metadata's length is fixed before the body is seen: the ETag is padded in place after.
    const placeholder = { ...meta, etag: '"' + '0'.repeat(32) + '"' };
    const head = Buffer.from(JSON.stringify(placeholder), 'utf8');
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(head.length, 0);
    try {
      const out = createWriteStream(tmp, { mode: 0o600 });
      out.write(prefix);
      out.write(head);
      const etag = `"${await receiveBody(req, auth, out, size)}"`;
      const fh = await open(tmp, 'r+');
      try {
        await fh.write(Buffer.from(JSON.stringify({ ...meta, etag }), 'utf8'), 0, head.length, 4);
      } finally {
        await fh.close();
      }
      await place(tmp, target);
      res.writeHead(200, { ETag: etag, 'x-amz-server-side-encryption': 'AES256', 'x-amz-request-id': randomUUID() }).end();
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /** A multipart upload's calls: Create (POST ?uploads), UploadPart (PUT ?partNumber&uploadId), Complete (POST ?uploadId), Abort (DELETE ?uploadId). */
  async function multipartRequest(
    method: string,
    a: S3Address,
    auth: Authorization,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const uploadId = queryValue(a, 'uploadId');
    const partNumber = queryValue(a, 'partNumber');
    if (method === 'POST' && queryValue(a, 'uploads') !== undefined && uploadId === undefined && partNumber === undefined)
      return createUpload(a, auth, req, res);
    if (uploadId !== undefined && queryValue(a, 'uploads') === undefined) {
      if (method === 'PUT' && partNumber !== undefined) return uploadPart(a, auth, uploadId, partNumber, req, res);
      if (method === 'POST' && partNumber === undefined) return completeUpload(a, auth, uploadId, req, res);
      if (method === 'DELETE' && partNumber === undefined) return abortUpload(a, auth, uploadId, res);
    }
    throw new S3Error(
      501,
      'NotImplemented',
      `${method} with these multipart parameters is not emulated locally (only Create, UploadPart, Complete and Abort)`,
    );
  }

  async function readUpload(id: string): Promise<UploadMeta | null> {
    if (!/^[0-9a-f]{32}$/.test(id)) return null;
    try {
      return JSON.parse(await readFile(path.join(uploadsDir, id, 'upload.json'), 'utf8')) as UploadMeta;
    } catch {
      return null;
    }
  }

  /** The upload `id` of this very bucket and key, or NoSuchUpload. */
  async function uploadOf(a: S3Address, id: string): Promise<UploadMeta> {
    const meta = await readUpload(id);
    if (meta === null || meta.bucket !== a.bucket || meta.key !== a.key) {
      throw new S3Error(
        404,
        'NoSuchUpload',
        'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.',
        { UploadId: id },
      );
    }
    return meta;
  }

  async function createUpload(a: S3Address, auth: Authorization, req: IncomingMessage, res: ServerResponse): Promise<void> {
    await authorizeOrThrow(auth, 's3:PutObject', arn(a.bucket, a.key));
    objectPath(a.bucket, a.key); // the key's length is checked now, not at completion
    await readSmallBody(req);
    const id = randomUUID().replace(/-/g, '');
    const meta: UploadMeta = {
      bucket: a.bucket,
      key: a.key,
      content_type: typeof req.headers['content-type'] === 'string' ? req.headers['content-type'] : 'binary/octet-stream',
      initiated_ms: now(),
    };
    await mkdir(path.join(uploadsDir, id), { recursive: true, mode: 0o700 });
    await writeFile(path.join(uploadsDir, id, 'upload.json'), JSON.stringify(meta), { mode: 0o600 });
    sendXml(
      res,
      200,
      `<?xml version="1.0" encoding="UTF-8"?>\n<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${xmlEscape(a.bucket)}</Bucket><Key>${xmlEscape(a.key)}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`,
    );
  }

  async function uploadPart(
    a: S3Address,
    auth: Authorization,
    id: string,
    partNumber: string,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    await authorizeOrThrow(auth, 's3:PutObject', arn(a.bucket, a.key));
    if (!/^\d{1,5}$/.test(partNumber) || Number(partNumber) < 1 || Number(partNumber) > MAX_PARTS) {
      throw new S3Error(400, 'InvalidArgument', `Part number must be an integer between 1 and ${MAX_PARTS}, inclusive`);
    }
    await uploadOf(a, id);
    const length = req.headers['content-length'];
    if (length === undefined) throw new S3Error(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
    const size = Number(length);
    if (size > MAX_PART_BYTES)
      throw new S3Error(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size', {
        MaxSizeAllowed: String(MAX_PART_BYTES),
      });
    await mkdir(tmpDir, { recursive: true, mode: 0o700 });
    const tmp = path.join(tmpDir, randomUUID());
    try {
      const md5 = await receiveBody(req, auth, createWriteStream(tmp, { mode: 0o600 }), size);
      const dir = path.join(uploadsDir, id);
      // An upload aborted meanwhile has no directory: the part is refused, not resurrected.
      if ((await readUpload(id)) === null) throw new S3Error(404, 'NoSuchUpload', 'The specified upload does not exist.', { UploadId: id });
      await rename(tmp, path.join(dir, `part-${Number(partNumber)}-${md5}`));
      // A part sent again under the same number replaces the earlier one.
      for (const f of await readdir(dir)) {
        if (f.startsWith(`part-${Number(partNumber)}-`) && f !== `part-${Number(partNumber)}-${md5}`)
          await rm(path.join(dir, f), { force: true });
      }
      res.writeHead(200, { ETag: `"${md5}"`, 'x-amz-server-side-encryption': 'AES256', 'x-amz-request-id': randomUUID() }).end();
    } finally {
      await rm(tmp, { force: true });
    }
  }

  async function completeUpload(a: S3Address, auth: Authorization, id: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    await authorizeOrThrow(auth, 's3:PutObject', arn(a.bucket, a.key));
    const upload = await uploadOf(a, id);
    const body = await readSmallBody(req);
    if (/^[0-9a-f]{64}$/.test(auth.payloadHash) && createHash('sha256').update(body).digest('hex') !== auth.payloadHash) {
      throw new S3Error(400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.");
    }
    const listed = parseCompleteBody(body.toString('utf8'));
    const dir = path.join(uploadsDir, id);
    const files = await readdir(dir);
    const parts: { file: string; md5: string; size: number }[] = [];
    for (const [i, p] of listed.entries()) {
      const md5 = /^"?([0-9a-f]{32})"?$/.exec(p.etag)?.[1];
      const file = md5 === undefined ? undefined : files.find((f) => f === `part-${p.partNumber}-${md5}`);
      if (file === undefined || md5 === undefined) {
        throw new S3Error(
          400,
          'InvalidPart',
          "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
          { UploadId: id, PartNumber: String(p.partNumber), ETag: p.etag },
        );
      }
      const { size } = await stat(path.join(dir, file));
      if (size < MIN_PART_BYTES && i < listed.length - 1) {
        throw new S3Error(400, 'EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed object size.', {
          ProposedSize: String(size),
          MinSizeAllowed: String(MIN_PART_BYTES),
          PartNumber: String(p.partNumber),
          ETag: p.etag,
        });
      }
      parts.push({ file, md5, size });
    }
    const size = parts.reduce((n, p) => n + p.size, 0);
    const etag = `"${createHash('md5')
      .update(Buffer.concat(parts.map((p) => Buffer.from(p.md5, 'hex'))))
      .digest('hex')}-${parts.length}"`;
    const meta: Meta = { key: a.key, content_type: upload.content_type, size, etag, last_modified: new Date(now()).toUTCString() };
    const head = Buffer.from(JSON.stringify(meta), 'utf8');
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(head.length, 0);
    await mkdir(tmpDir, { recursive: true, mode: 0o700 });
    const tmp = path.join(tmpDir, randomUUID());
    try {
      const out = createWriteStream(tmp, { mode: 0o600 });
      out.write(prefix);
      out.write(head);
      // One write stream for every part (a pipeline per part would leave its listeners on it).
      const all = async function* (): AsyncGenerator<Buffer> {
        for (const p of parts) yield* createReadStream(path.join(dir, p.file)) as AsyncIterable<Buffer>;
      };
      await pipeline(all(), out);
      await place(tmp, objectPath(a.bucket, a.key));
    } finally {
      await rm(tmp, { force: true });
    }
    await rm(dir, { recursive: true, force: true });
    sendXml(
      res,
      200,
      `<?xml version="1.0" encoding="UTF-8"?>\n<CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${xmlEscape(a.bucket)}</Bucket><Key>${xmlEscape(a.key)}</Key><ETag>${xmlEscape(etag)}</ETag></CompleteMultipartUploadResult>`,
    );
  }

  async function abortUpload(a: S3Address, auth: Authorization, id: string, res: ServerResponse): Promise<void> {
    await authorizeOrThrow(auth, 's3:AbortMultipartUpload', arn(a.bucket, a.key));
    await uploadOf(a, id);
    await rm(path.join(uploadsDir, id), { recursive: true, force: true });
    res.writeHead(204, { 'x-amz-request-id': randomUUID() }).end();
  }

  /** Writes a request's body to `out`, checking its length and signed SHA-256; answers its MD5 (hex). */
  async function receiveBody(req: IncomingMessage, auth: Authorization, out: NodeJS.WritableStream, size: number): Promise<string> {
    const sha = createHash('sha256');
    const md5 = createHash('md5');
    let received = 0;
    await pipeline(
      req,
      new Transform({
        transform(chunk: Buffer, _enc, done) {
          received += chunk.length;
          sha.update(chunk);
          md5.update(chunk);
          done(null, chunk);
        },
      }),
      out,
    );
    if (received !== size)
      throw new S3Error(400, 'IncompleteBody', 'You did not provide the number of bytes specified by the Content-Length HTTP header');
    if (/^[0-9a-f]{64}$/.test(auth.payloadHash) && auth.payloadHash !== sha.digest('hex')) {
      throw new S3Error(400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.");
    }
    return md5.digest('hex');
  }

  /** Renames into place, creating the key's directories (again, should a delete have removed them meanwhile). */
  async function place(tmp: string, target: string): Promise<void> {
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

  async function getObject(
    method: 'GET' | 'HEAD',
    a: S3Address,
    auth: Authorization,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    await authorizeOrThrow(auth, 's3:GetObject', arn(a.bucket, a.key));
    const file = objectPath(a.bucket, a.key);
    const found = await readMeta(file);
    if (!found) {
      // S3 tells a missing key from a forbidden one only to callers who may list the bucket.
      const denied = await check(auth, 's3:ListBucket', arn(a.bucket));
      if (denied !== undefined) throw new S3Error(403, 'AccessDenied', 'Access Denied');
      throw new S3Error(404, 'NoSuchKey', 'The specified key does not exist.', { Key: a.key });
    }
    const { meta, offset } = found;
    const range = method === 'GET' ? parseRange(typeof req.headers.range === 'string' ? req.headers.range : undefined, meta.size) : null;
    const headers: Record<string, string> = {
      'Content-Type': meta.content_type,
      ETag: meta.etag,
      'Last-Modified': meta.last_modified,
      'Accept-Ranges': 'bytes',
      'x-amz-server-side-encryption': 'AES256',
      'x-amz-request-id': randomUUID(),
    };
    for (const [k, v] of a.query) {
      const name = {
        'response-content-type': 'Content-Type',
        'response-content-disposition': 'Content-Disposition',
        'response-content-language': 'Content-Language',
        'response-content-encoding': 'Content-Encoding',
        'response-cache-control': 'Cache-Control',
        'response-expires': 'Expires',
      }[k];
      if (name) headers[name] = v;
    }
    const start = range?.start ?? 0;
    const end = range?.end ?? meta.size - 1;
    headers['Content-Length'] = String(end - start + 1);
    if (range) headers['Content-Range'] = `bytes ${start}-${end}/${meta.size}`;
    res.writeHead(range ? 206 : 200, headers);
    if (method === 'HEAD' || end < start) {
      res.end();
      return;
    }
    await pipeline(createReadStream(file, { start: offset + start, end: offset + end }), res);
  }

  async function removeObject(bucket: string, key: string): Promise<void> {
    const file = objectPath(bucket, key);
    await rm(file, { force: true });
    // Empty directories go too, so listing stays proportional to what exists.
    const root = path.join(opts.dir, bucket);
    for (let dir = path.dirname(file); dir.startsWith(root + path.sep); dir = path.dirname(dir)) {
      try {
        await rmdir(dir);
      } catch {
        return;
      }
    }
  }

  async function deleteObjects(a: S3Address, auth: Authorization, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readSmallBody(req);
    if (/^[0-9a-f]{64}$/.test(auth.payloadHash) && createHash('sha256').update(body).digest('hex') !== auth.payloadHash) {
      throw new S3Error(400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.");
    }
    const md5 = req.headers['content-md5'];
    const crc = req.headers['x-amz-checksum-crc32'];
    if (md5 === undefined && crc === undefined)
      throw new S3Error(400, 'InvalidRequest', 'Missing required header for this request: Content-MD5 OR x-amz-checksum-*');
    if (typeof md5 === 'string' && createHash('md5').update(body).digest('base64') !== md5)
      throw new S3Error(400, 'BadDigest', 'The Content-MD5 you specified did not match what we received.');
    if (typeof crc === 'string') {
      const want = Buffer.alloc(4);
      want.writeUInt32BE(crc32(body) >>> 0, 0);
      if (want.toString('base64') !== crc)
        throw new S3Error(400, 'BadDigest', 'The CRC32 you specified did not match the calculated checksum.');
    }
    const { keys, quiet } = parseDeleteBody(body.toString('utf8'));
    let xml = '<?xml version="1.0" encoding="UTF-8"?>\n<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">';
    for (const key of keys) {
      // Each key is authorized on its own; a refusal is that key's error, not the request's.
      const denied = await check(auth, 's3:DeleteObject', arn(a.bucket, key));
      if (denied !== undefined) {
        xml += `<Error><Key>${xmlEscape(key)}</Key><Code>AccessDenied</Code><Message>${xmlEscape(denied)}</Message></Error>`;
        continue;
      }
      try {
        await removeObject(a.bucket, key);
        if (!quiet) xml += `<Deleted><Key>${xmlEscape(key)}</Key></Deleted>`;
      } catch (err) {
        const e = err instanceof S3Error ? err : new S3Error(500, 'InternalError', String(err));
        xml += `<Error><Key>${xmlEscape(key)}</Key><Code>${e.code}</Code><Message>${xmlEscape(e.message)}</Message></Error>`;
      }
    }
    sendXml(res, 200, `${xml}</DeleteResult>`);
  }

  async function listObjects(a: S3Address, auth: Authorization, res: ServerResponse): Promise<void> {
    await authorizeOrThrow(auth, 's3:ListBucket', arn(a.bucket));
    if (queryValue(a, 'delimiter') !== undefined || queryValue(a, 'encoding-type') !== undefined)
      throw new S3Error(501, 'NotImplemented', 'delimiter and encoding-type are not emulated locally');
    const prefix = queryValue(a, 'prefix') ?? '';
    const maxRaw = queryValue(a, 'max-keys');
    if (maxRaw !== undefined && !/^\d{1,9}$/.test(maxRaw))
      throw new S3Error(400, 'InvalidArgument', 'Provided max-keys not an integer or within integer range');
    const maxKeys = Math.min(MAX_LIST_KEYS, maxRaw === undefined ? MAX_LIST_KEYS : Number(maxRaw));
    const token = queryValue(a, 'continuation-token');
    let after = queryValue(a, 'start-after') ?? '';
    if (token !== undefined) {
      const decoded = Buffer.from(token, 'base64url').toString('utf8');
      if (token === '' || Buffer.from(decoded, 'utf8').toString('base64url') !== token)
        throw new S3Error(400, 'InvalidArgument', 'The continuation token provided is incorrect');
      after = decoded;
    }
    const keys = (await keysUnder(a.bucket, prefix)).filter((k) => Buffer.compare(Buffer.from(k), Buffer.from(after)) > 0);
    const page = keys.slice(0, maxKeys);
    const truncated = keys.length > page.length;
    let xml = '<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">';
    xml += `<Name>${xmlEscape(a.bucket)}</Name><Prefix>${xmlEscape(prefix)}</Prefix><KeyCount>${page.length}</KeyCount><MaxKeys>${maxKeys}</MaxKeys><IsTruncated>${truncated}</IsTruncated>`;
    for (const key of page) {
      const found = await readMeta(objectPath(a.bucket, key));
      if (!found) continue;
      const { meta } = found;
      xml += `<Contents><Key>${xmlEscape(key)}</Key><LastModified>${new Date(meta.last_modified).toISOString()}</LastModified><ETag>${xmlEscape(meta.etag)}</ETag><Size>${meta.size}</Size><StorageClass>STANDARD</StorageClass></Contents>`;
    }
    if (token !== undefined) xml += `<ContinuationToken>${xmlEscape(token)}</ContinuationToken>`;
    if (truncated)
      xml += `<NextContinuationToken>${Buffer.from(page[page.length - 1] as string, 'utf8').toString('base64url')}</NextContinuationToken>`;
    const startAfter = queryValue(a, 'start-after');
    if (startAfter !== undefined) xml += `<StartAfter>${xmlEscape(startAfter)}</StartAfter>`;
    sendXml(res, 200, `${xml}</ListBucketResult>`);
  }

  /** Every key starting with `prefix`, in S3's order (UTF-8 bytes), walking only the directories the prefix allows. */
  async function keysUnder(bucket: string, prefix: string): Promise<string[]> {
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
    const base = path.join(opts.dir, bucket, ...parts.map((p) => `d${encodeSegment(p)}`));
    if (parts.some((p) => encodeSegment(p).length > MAX_SEGMENT_CHARS)) return [];
    await walk(base, parts.map((p) => `${p}/`).join(''));
    return found.filter((k) => k.startsWith(prefix)).sort((x, y) => Buffer.compare(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8')));
  }
}

async function readSmallBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_XML_BYTES) throw new S3Error(400, 'MaxMessageLengthExceeded', 'Your request was too big.');
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

function sendXml(res: ServerResponse, status: number, xml: string): void {
  res.writeHead(status, {
    'Content-Type': 'application/xml',
    'Content-Length': String(Buffer.byteLength(xml)),
    'x-amz-request-id': randomUUID(),
  });
  res.end(xml);
}

/** S3's XML error (no body on HEAD, where the SDK goes by the status alone). */
export function sendError(res: ServerResponse, method: string, e: S3Error): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const requestId = randomUUID();
  if (method === 'HEAD') {
    res.writeHead(e.status, { 'x-amz-request-id': requestId }).end();
    return;
  }
  const extra = Object.entries(e.extra)
    .map(([k, v]) => `<${k}>${xmlEscape(v)}</${k}>`)
    .join('');
  // Not every refused request was read whole; the connection is not reused after one.
  res.setHeader('Connection', 'close');
  sendXml(
    res,
    e.status,
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${e.code}</Code><Message>${xmlEscape(e.message)}</Message>${extra}<RequestId>${requestId}</RequestId></Error>`,
  );
}

export interface LocalS3 {
  /** The endpoint URL clients are configured with (path-style). */
  url: string;
  /** One lifecycle expiry pass (S3Handler.expire). */
  expire(): Promise<number>;
  stop(): Promise<void>;
}

/** Serves the emulation on its own listener (the local runtime's S3 endpoint). */
export async function startLocalS3(opts: S3EmulationOptions & { host?: string; port?: number }): Promise<LocalS3> {
  const handle = createS3Handler(opts);
  const server = createServer((req, res) => void handle(req, res));
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    expire: () => handle.expire(),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const CORS_METHODS = new Set(['GET', 'PUT', 'HEAD', 'POST', 'DELETE']);
/** S3's limit on a bucket's CORS rules. */
const MAX_CORS_RULES = 100;

const malformed = (detail: string) =>
  new S3Error(400, 'MalformedXML', `The XML you provided was not well-formed or did not validate against our published schema (${detail})`);

/** A PutBucketCors body, checked as S3 checks it (1 to 100 rules, each with origins and known methods). */
export function parseCorsConfiguration(xml: string): BucketCorsRule[] {
  const values = (block: string, tag: string): string[] =>
    [...block.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, 'g'))].map((m) => xmlUnescape(m[1] ?? ''));
  if (!/<CORSConfiguration[\s>]/.test(xml)) throw malformed('no CORSConfiguration');
  const blocks = [...xml.matchAll(/<CORSRule>([\s\S]*?)<\/CORSRule>/g)].map((m) => m[1] ?? '');
  if (blocks.length === 0 || blocks.length > MAX_CORS_RULES) throw malformed(`${blocks.length} CORSRule elements`);
  return blocks.map((b) => {
    const methods = values(b, 'AllowedMethod');
    const origins = values(b, 'AllowedOrigin');
    if (methods.length === 0 || origins.length === 0) throw malformed('a CORSRule needs AllowedMethod and AllowedOrigin');
    const unknown = methods.find((m) => !CORS_METHODS.has(m));
    if (unknown !== undefined)
      throw new S3Error(400, 'InvalidRequest', `Found unsupported HTTP method in CORS config. Unsupported method is ${unknown}`);
    const id = values(b, 'ID')[0];
    const maxAge = values(b, 'MaxAgeSeconds')[0];
    return {
      ...(id !== undefined ? { id } : {}),
      allowedMethods: methods,
      allowedOrigins: origins,
      allowedHeaders: values(b, 'AllowedHeader'),
      exposedHeaders: values(b, 'ExposeHeader'),
      maxAgeSeconds: maxAge === undefined ? 0 : Number(maxAge),
    };
  });
}

function corsRuleXml(r: BucketCorsRule): string {
  const each = (tag: string, list: readonly string[]) => list.map((v) => `<${tag}>${xmlEscape(v)}</${tag}>`).join('');
  return `<CORSRule>${r.id !== undefined ? `<ID>${xmlEscape(r.id)}</ID>` : ''}${each('AllowedHeader', r.allowedHeaders)}${each('AllowedMethod', r.allowedMethods)}${each('AllowedOrigin', r.allowedOrigins)}${each('ExposeHeader', r.exposedHeaders)}${r.maxAgeSeconds > 0 ? `<MaxAgeSeconds>${r.maxAgeSeconds}</MaxAgeSeconds>` : ''}</CORSRule>`;
}
