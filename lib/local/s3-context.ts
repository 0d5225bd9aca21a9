/**
 * What every part of the S3 emulation shares (lib/local/s3.ts serves the requests, one file per
 * kind of resource: s3-objects.ts, s3-multipart.ts, s3-cors-config.ts): its options, the objects
 * on disk, the authorization S3 makes before acting, and the request and answer bodies.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BucketCorsRule } from '../storage-cors';
import type { ObjectFiles } from './s3-files';
import { S3Error, type Authorization } from './s3-request';

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

export interface S3Context {
  opts: S3EmulationOptions;
  now: () => number;
  files: ObjectFiles;
  /** IAM's answer for an action: a denial's message, or undefined when allowed (always, without IAM). */
  check(auth: Authorization, action: string, resource: string): Promise<string | undefined>;
  /** The same, a denial thrown as S3's AccessDenied. */
  authorizeOrThrow(auth: Authorization, action: string, resource: string): Promise<void>;
}

/** Local limit on an XML request body (S3's own are lower for every call pipegate makes). */
const MAX_XML_BYTES = 2 * 1024 * 1024;

export function createContext(opts: S3EmulationOptions, files: ObjectFiles): S3Context {
  const check = async (auth: Authorization, action: string, resource: string): Promise<string | undefined> =>
    opts.authorize?.({ accessKeyId: auth.accessKeyId, sessionToken: auth.sessionToken, action, resource });
  return {
    opts,
    now: opts.now ?? Date.now,
    files,
    check,
    async authorizeOrThrow(auth, action, resource) {
      const denied = await check(auth, action, resource);
      if (denied !== undefined) throw new S3Error(403, 'AccessDenied', denied);
    },
  };
}

export async function readSmallBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_XML_BYTES) throw new S3Error(400, 'MaxMessageLengthExceeded', 'Your request was too big.');
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

/** A whole body against the SHA-256 its signature names (when it names one rather than UNSIGNED-PAYLOAD). */
export function checkPayloadHash(auth: Authorization, body: Buffer): void {
  if (/^[0-9a-f]{64}$/.test(auth.payloadHash) && createHash('sha256').update(body).digest('hex') !== auth.payloadHash) {
    throw new S3Error(400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.");
  }
}

/** Writes a request's body to `out`, checking its length and signed SHA-256; answers its MD5 (hex). */
export async function receiveBody(req: IncomingMessage, auth: Authorization, out: NodeJS.WritableStream, size: number): Promise<string> {
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

export function sendXml(res: ServerResponse, status: number, xml: string): void {
  res.writeHead(status, {
    'Content-Type': 'application/xml',
    'Content-Length': String(Buffer.byteLength(xml)),
    'x-amz-request-id': randomUUID(),
  });
  res.end(xml);
}
