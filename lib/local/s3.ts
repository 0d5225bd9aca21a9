/**
 * S3 on one machine, for the calls pipegate makes (PutObject, HeadObject, GetObject with Range
 * and response overrides, DeleteObject, DeleteObjects, ListObjectsV2, and a multipart upload's
 * Create, UploadPart, Complete and Abort) and the presigned URLs it
 * hands out: path-style, objects as files under a directory, every request's SigV4 verified
 * (header-signed or presigned, expiry and the signed Content-Length enforced, so a presigned PUT
 * of more or fewer bytes is refused as S3 refuses it). Anything else answers NotImplemented
 * rather than being half-emulated. The local runtime serves it on its own port; start:synth's
 * AWS endpoint hands S3 requests to the same handler with IAM in `authorize`.
 *
 * This file authenticates a request and routes it by what it serves: objects (s3-objects.ts),
 * multipart uploads (s3-multipart.ts), a bucket's CORS configuration (s3-cors-config.ts); the
 * objects on disk are s3-files.ts, what they share s3-context.ts.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createContext, sendXml, type S3EmulationOptions } from './s3-context';
import { bucketCorsConfig } from './s3-cors-config';
import { ObjectFiles } from './s3-files';
import { multipartRequest, expireUploads } from './s3-multipart';
import { deleteObject, deleteObjects, expireObjects, getObject, listObjects, putObject } from './s3-objects';
import { parseAddress, parseAuthorization, queryValue, S3Error, verifySignature, xmlEscape } from './s3-request';
import { corsHeaders, preflight } from './s3-cors';
import { drainRest } from './drain';

export { S3Error };
export type { S3Check, S3EmulationOptions } from './s3-context';
export { lifecycleExpiryMs, MAX_SEGMENT_CHARS } from './s3-files';
export { MAX_OBJECT_BYTES } from './s3-objects';
export { parseCorsConfiguration } from './s3-cors-config';

export type S3Handler = ((req: IncomingMessage, res: ServerResponse) => Promise<void>) & {
  /**
   * One pass of the buckets' lifecycle expiry, as S3 runs it: an object written at T expires
   * at the first midnight UTC after T + days. Answers how many objects it removed.
   */
  expire(): Promise<number>;
};

export function createS3Handler(opts: S3EmulationOptions): S3Handler {
  const buckets = new Set(opts.buckets);
  const c = createContext(opts, new ObjectFiles(opts.dir));
  const cors = bucketCorsConfig(c);

  async function expire(): Promise<number> {
    const removed = await expireObjects(c, buckets);
    // Uploads neither completed nor aborted: their parts go, as the bucket's rule removes them (not counted as objects).
    await expireUploads(c);
    return removed;
  }

  return Object.assign(handle, { expire });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    try {
      const a = parseAddress(req.url ?? '/', opts.basePath ?? '');
      // A browser's preflight carries no credentials; S3 answers it from the bucket's CORS rules.
      const rules = buckets.has(a.bucket) ? cors.rulesOf(a.bucket) : [];
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
      verifySignature(method, a, req.headers, auth, secret, opts.region, c.now());
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
      if (a.key === '') {
        if (method === 'POST' && queryValue(a, 'delete') !== undefined) return await deleteObjects(c, a, auth, req, res);
        if (method === 'GET' && queryValue(a, 'list-type') === '2') return await listObjects(c, a, auth, res);
        if (queryValue(a, 'cors') !== undefined) return await cors.serve(method, a, auth, req, res);
        throw new S3Error(
          501,
          'NotImplemented',
          `${method} on a bucket is not emulated locally (only ListObjectsV2, DeleteObjects and the CORS configuration)`,
        );
      }
      const uploadId = queryValue(a, 'uploadId');
      if (queryValue(a, 'uploads') !== undefined || uploadId !== undefined || queryValue(a, 'partNumber') !== undefined)
        return await multipartRequest(c, method, a, auth, req, res);
      switch (method) {
        case 'PUT':
          return await putObject(c, a, auth, req, res);
        case 'GET':
        case 'HEAD':
          return await getObject(c, method, a, auth, req, res);
        case 'DELETE':
          return await deleteObject(c, a, auth, res);
        default:
          throw new S3Error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
      }
    } catch (err) {
      const e = err instanceof S3Error ? err : new S3Error(500, 'InternalError', err instanceof Error ? err.message : String(err));
      // A refused request's body may still be arriving (a PUT refused on its headers: a
      // signature over another length, no permission): S3 reads the rest before it answers, so
      // the client gets the error and not a reset (lib/local/drain.ts).
      const drained = await drainRest(req);
      if (!drained && !res.headersSent) res.setHeader('Connection', 'close');
      sendError(res, method, e);
    }
  }
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
