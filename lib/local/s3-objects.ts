/**
 * The S3 emulation's object calls (lib/local/s3.ts routes to them): PutObject, GetObject and
 * HeadObject (Range and response overrides), DeleteObject, and the bucket's DeleteObjects and
 * ListObjectsV2, each authorized as S3 authorizes it; and the lifecycle expiry of objects.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { crc32 } from 'node:zlib';
import { checkPayloadHash, readSmallBody, receiveBody, sendXml, type S3Context } from './s3-context';
import { arn, lifecycleExpiryMs, type Meta } from './s3-files';
import { parseDeleteBody, parseRange, queryValue, S3Error, xmlEscape, type Authorization, type S3Address } from './s3-request';

/** Local limit on one object, far above what pipegate stores (S3 allows 5 GB per PUT). */
export const MAX_OBJECT_BYTES = 5 * 1024 * 1024 * 1024;
const MAX_LIST_KEYS = 1000;

export async function putObject(c: S3Context, a: S3Address, auth: Authorization, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const length = req.headers['content-length'];
  if (length === undefined) throw new S3Error(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
  const size = Number(length);
  if (size > MAX_OBJECT_BYTES)
    throw new S3Error(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size', {
      MaxSizeAllowed: String(MAX_OBJECT_BYTES),
    });
  const target = c.files.objectPath(a.bucket, a.key);
  await c.authorizeOrThrow(auth, 's3:PutObject', arn(a.bucket, a.key));
  const tmp = await c.files.tmpFile();
  const meta: Meta = {
    key: a.key,
    content_type: typeof req.headers['content-type'] === 'string' ? req.headers['content-type'] : 'binary/octet-stream',
    size,
    etag: '',
    last_modified: new Date(c.now()).toUTCString(),
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
    await c.files.place(tmp, target);
    res.writeHead(200, { ETag: etag, 'x-amz-server-side-encryption': 'AES256', 'x-amz-request-id': randomUUID() }).end();
  } finally {
    await rm(tmp, { force: true });
  }
}

export async function getObject(
  c: S3Context,
  method: 'GET' | 'HEAD',
  a: S3Address,
  auth: Authorization,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  await c.authorizeOrThrow(auth, 's3:GetObject', arn(a.bucket, a.key));
  const file = c.files.objectPath(a.bucket, a.key);
  const found = await c.files.readMeta(file);
  if (!found) {
    // S3 tells a missing key from a forbidden one only to callers who may list the bucket.
    const denied = await c.check(auth, 's3:ListBucket', arn(a.bucket));
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

export async function deleteObject(c: S3Context, a: S3Address, auth: Authorization, res: ServerResponse): Promise<void> {
  await c.authorizeOrThrow(auth, 's3:DeleteObject', arn(a.bucket, a.key));
  await c.files.removeObject(a.bucket, a.key);
  res.writeHead(204, { 'x-amz-request-id': randomUUID() }).end();
}

export async function deleteObjects(
  c: S3Context,
  a: S3Address,
  auth: Authorization,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const body = await readSmallBody(req);
  checkPayloadHash(auth, body);
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
    const denied = await c.check(auth, 's3:DeleteObject', arn(a.bucket, key));
    if (denied !== undefined) {
      xml += `<Error><Key>${xmlEscape(key)}</Key><Code>AccessDenied</Code><Message>${xmlEscape(denied)}</Message></Error>`;
      continue;
    }
    try {
      await c.files.removeObject(a.bucket, key);
      if (!quiet) xml += `<Deleted><Key>${xmlEscape(key)}</Key></Deleted>`;
    } catch (err) {
      const e = err instanceof S3Error ? err : new S3Error(500, 'InternalError', String(err));
      xml += `<Error><Key>${xmlEscape(key)}</Key><Code>${e.code}</Code><Message>${xmlEscape(e.message)}</Message></Error>`;
    }
  }
  sendXml(res, 200, `${xml}</DeleteResult>`);
}

export async function listObjects(c: S3Context, a: S3Address, auth: Authorization, res: ServerResponse): Promise<void> {
  await c.authorizeOrThrow(auth, 's3:ListBucket', arn(a.bucket));
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
  const keys = (await c.files.keysUnder(a.bucket, prefix)).filter((k) => Buffer.compare(Buffer.from(k), Buffer.from(after)) > 0);
  const page = keys.slice(0, maxKeys);
  const truncated = keys.length > page.length;
  let xml = '<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">';
  xml += `<Name>${xmlEscape(a.bucket)}</Name><Prefix>${xmlEscape(prefix)}</Prefix><KeyCount>${page.length}</KeyCount><MaxKeys>${maxKeys}</MaxKeys><IsTruncated>${truncated}</IsTruncated>`;
  for (const key of page) {
    const found = await c.files.readMeta(c.files.objectPath(a.bucket, key));
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

/** One pass of the buckets' lifecycle expiry over their objects: how many it removed. */
export async function expireObjects(c: S3Context, buckets: ReadonlySet<string>): Promise<number> {
  let removed = 0;
  for (const [bucket, days] of Object.entries(c.opts.expirationDays ?? {})) {
    if (!buckets.has(bucket)) continue;
    for (const key of await c.files.keysUnder(bucket, '')) {
      const found = await c.files.readMeta(c.files.objectPath(bucket, key));
      if (!found || c.now() < lifecycleExpiryMs(Date.parse(found.meta.last_modified), days)) continue;
      await c.files.removeObject(bucket, key);
      removed++;
    }
  }
  return removed;
}
