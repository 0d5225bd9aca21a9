/**
 * The S3 emulation's multipart uploads (lib/local/s3.ts routes to them): Create (POST
 * ?uploads), UploadPart (PUT ?partNumber&uploadId), Complete (POST ?uploadId) and Abort (DELETE
 * ?uploadId), each part a file under `<dir>/.uploads/<id>/` until the upload completes into one
 * object; and the lifecycle rule's removal of uploads left neither completed nor aborted.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { checkPayloadHash, readSmallBody, receiveBody, sendXml, type S3Context } from './s3-context';
import { arn, type Meta } from './s3-files';
import { MAX_PARTS, parseCompleteBody, queryValue, S3Error, xmlEscape, type Authorization, type S3Address } from './s3-request';

/** S3's largest part of a multipart upload (5 GiB). */
const MAX_PART_BYTES = 5 * 1024 * 1024 * 1024;
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

const uploadsDir = (c: S3Context): string => path.join(c.opts.dir, '.uploads');

/** A multipart upload's calls: Create (POST ?uploads), UploadPart (PUT ?partNumber&uploadId), Complete (POST ?uploadId), Abort (DELETE ?uploadId). */
export async function multipartRequest(
  c: S3Context,
  method: string,
  a: S3Address,
  auth: Authorization,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const uploadId = queryValue(a, 'uploadId');
  const partNumber = queryValue(a, 'partNumber');
  if (method === 'POST' && queryValue(a, 'uploads') !== undefined && uploadId === undefined && partNumber === undefined)
    return createUpload(c, a, auth, req, res);
  if (uploadId !== undefined && queryValue(a, 'uploads') === undefined) {
    if (method === 'PUT' && partNumber !== undefined) return uploadPart(c, a, auth, uploadId, partNumber, req, res);
    if (method === 'POST' && partNumber === undefined) return completeUpload(c, a, auth, uploadId, req, res);
    if (method === 'DELETE' && partNumber === undefined) return abortUpload(c, a, auth, uploadId, res);
  }
  throw new S3Error(
    501,
    'NotImplemented',
    `${method} with these multipart parameters is not emulated locally (only Create, UploadPart, Complete and Abort)`,
  );
}

async function readUpload(c: S3Context, id: string): Promise<UploadMeta | null> {
  if (!/^[0-9a-f]{32}$/.test(id)) return null;
  try {
    return JSON.parse(await readFile(path.join(uploadsDir(c), id, 'upload.json'), 'utf8')) as UploadMeta;
  } catch {
    return null;
  }
}

/** The upload `id` of this very bucket and key, or NoSuchUpload. */
async function uploadOf(c: S3Context, a: S3Address, id: string): Promise<UploadMeta> {
  const meta = await readUpload(c, id);
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

async function createUpload(c: S3Context, a: S3Address, auth: Authorization, req: IncomingMessage, res: ServerResponse): Promise<void> {
  await c.authorizeOrThrow(auth, 's3:PutObject', arn(a.bucket, a.key));
  c.files.objectPath(a.bucket, a.key); // the key's length is checked now, not at completion
  await readSmallBody(req);
  const id = randomUUID().replace(/-/g, '');
  const meta: UploadMeta = {
    bucket: a.bucket,
    key: a.key,
    content_type: typeof req.headers['content-type'] === 'string' ? req.headers['content-type'] : 'binary/octet-stream',
    initiated_ms: c.now(),
  };
  await mkdir(path.join(uploadsDir(c), id), { recursive: true, mode: 0o700 });
  await writeFile(path.join(uploadsDir(c), id, 'upload.json'), JSON.stringify(meta), { mode: 0o600 });
  sendXml(
    res,
    200,
    `<?xml version="1.0" encoding="UTF-8"?>\n<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${xmlEscape(a.bucket)}</Bucket><Key>${xmlEscape(a.key)}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`,
  );
}

async function uploadPart(
  c: S3Context,
  a: S3Address,
  auth: Authorization,
  id: string,
  partNumber: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  await c.authorizeOrThrow(auth, 's3:PutObject', arn(a.bucket, a.key));
  if (!/^\d{1,5}$/.test(partNumber) || Number(partNumber) < 1 || Number(partNumber) > MAX_PARTS) {
    throw new S3Error(400, 'InvalidArgument', `Part number must be an integer between 1 and ${MAX_PARTS}, inclusive`);
  }
  await uploadOf(c, a, id);
  const length = req.headers['content-length'];
  if (length === undefined) throw new S3Error(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
  const size = Number(length);
  if (size > MAX_PART_BYTES)
    throw new S3Error(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size', {
      MaxSizeAllowed: String(MAX_PART_BYTES),
    });
  const tmp = await c.files.tmpFile();
  try {
    const md5 = await receiveBody(req, auth, createWriteStream(tmp, { mode: 0o600 }), size);
    const dir = path.join(uploadsDir(c), id);
    // An upload aborted meanwhile has no directory: the part is refused, not resurrected.
    if ((await readUpload(c, id)) === null)
      throw new S3Error(404, 'NoSuchUpload', 'The specified upload does not exist.', { UploadId: id });
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

async function completeUpload(
  c: S3Context,
  a: S3Address,
  auth: Authorization,
  id: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  await c.authorizeOrThrow(auth, 's3:PutObject', arn(a.bucket, a.key));
  const upload = await uploadOf(c, a, id);
  const body = await readSmallBody(req);
  checkPayloadHash(auth, body);
  const listed = parseCompleteBody(body.toString('utf8'));
  const dir = path.join(uploadsDir(c), id);
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
  const meta: Meta = { key: a.key, content_type: upload.content_type, size, etag, last_modified: new Date(c.now()).toUTCString() };
  const head = Buffer.from(JSON.stringify(meta), 'utf8');
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(head.length, 0);
  const tmp = await c.files.tmpFile();
  try {
    const out = createWriteStream(tmp, { mode: 0o600 });
    out.write(prefix);
    out.write(head);
    // One write stream for every part (a pipeline per part would leave its listeners on it).
    const all = async function* (): AsyncGenerator<Buffer> {
      for (const p of parts) yield* createReadStream(path.join(dir, p.file)) as AsyncIterable<Buffer>;
    };
    await pipeline(all(), out);
    await c.files.place(tmp, c.files.objectPath(a.bucket, a.key));
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

async function abortUpload(c: S3Context, a: S3Address, auth: Authorization, id: string, res: ServerResponse): Promise<void> {
  await c.authorizeOrThrow(auth, 's3:AbortMultipartUpload', arn(a.bucket, a.key));
  await uploadOf(c, a, id);
  await rm(path.join(uploadsDir(c), id), { recursive: true, force: true });
  res.writeHead(204, { 'x-amz-request-id': randomUUID() }).end();
}

/** Uploads neither completed nor aborted a day after they began: their parts go, as the bucket's rule removes them. */
export async function expireUploads(c: S3Context): Promise<void> {
  for (const id of await readdir(uploadsDir(c)).catch(() => [] as string[])) {
    const meta = await readUpload(c, id).catch(() => null);
    if (meta === null || c.now() - meta.initiated_ms > ABORT_INCOMPLETE_UPLOAD_MS)
      await rm(path.join(uploadsDir(c), id), { recursive: true, force: true });
  }
}
