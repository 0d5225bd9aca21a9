import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { ByteRange, ObjectStorePort, OpenedObject, PartedWrite, PresignedDownload, PresignedUpload } from '../core/ports';

/** S3 deletes at most this many keys per DeleteObjects and lists at most this many per page. */
const S3_BATCH = 1000;

/** Where the S3 client sends its calls: AWS itself, or a local endpoint addressed by path. */
export interface S3Settings {
  region: string;
  s3Endpoint?: string;
  s3ForcePathStyle?: boolean;
}

/**
 * Client settings for the one bucket. Checksums are computed only where S3 requires them
 * (DeleteObjects): with the SDK's default (WHEN_SUPPORTED) a presigned PutObject URL carries the
 * CRC32 of an empty body in its query, and S3 then refuses the caller's real bytes.
 */
export function s3ClientConfig(s: S3Settings, credentials?: S3ClientConfig['credentials']): S3ClientConfig {
  return {
    region: s.region,
    maxAttempts: 3,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...(s.s3Endpoint ? { endpoint: s.s3Endpoint } : {}),
    ...(s.s3ForcePathStyle ? { forcePathStyle: true } : {}),
    ...(credentials ? { credentials } : {}),
  };
}

/**
 * The origin presigned URLs for `bucket` point at (what a page's CSP must let it connect to):
 * the endpoint's, by path, or S3's regional virtual-hosted one, as the SDK builds them.
 */
export function presignedOrigin(s: S3Settings, bucket: string): string {
  if (s.s3Endpoint) {
    const u = new URL(s.s3Endpoint);
    return s.s3ForcePathStyle ? u.origin : `${u.protocol}//${bucket}.${u.host}`;
  }
  return `https://${bucket}.s3.${s.region}.amazonaws.com`;
}

const errorName = (e: unknown): string => (typeof e === 'object' && e !== null ? String((e as { name?: unknown }).name) : '');
const statusOf = (e: unknown): number | undefined =>
  typeof e === 'object' && e !== null ? (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode : undefined;
/** HEAD answers carry no body, so the SDK names a missing key NotFound there and NoSuchKey on GET. */
const isMissing = (e: unknown): boolean => errorName(e) === 'NoSuchKey' || errorName(e) === 'NotFound' || statusOf(e) === 404;

const isAsyncIterable = (x: unknown): x is AsyncIterable<Uint8Array> =>
  typeof x === 'object' && x !== null && typeof (x as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';

/**
 * ObjectStorePort on one S3 bucket. Presigned URLs are signed with this client's credentials:
 * in Lambda those are the role's temporary credentials, and a URL dies with them whatever its
 * own expiry says, so callers get short lifetimes (see docs/aws.md).
 */
export class S3ObjectStore implements ObjectStorePort {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async put(key: string, body: Uint8Array, mediaType: string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: mediaType, ContentLength: body.byteLength }));
  }

  async head(key: string): Promise<{ bytes: number; media_type: string } | null> {
    try {
      const h = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { bytes: h.ContentLength ?? 0, media_type: h.ContentType ?? 'application/octet-stream' };
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
  }

  async read(key: string, maxBytes?: number): Promise<Uint8Array | null> {
    if (maxBytes !== undefined && maxBytes <= 0) return (await this.head(key)) ? new Uint8Array(0) : null;
    try {
      const got = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key, ...(maxBytes === undefined ? {} : { Range: `bytes=0-${maxBytes - 1}` }) }),
      );
      return got.Body ? await got.Body.transformToByteArray() : new Uint8Array(0);
    } catch (e) {
      if (isMissing(e)) return null;
      // S3 refuses any range of an empty object (416 InvalidRange) instead of answering nothing.
      if (maxBytes !== undefined && (errorName(e) === 'InvalidRange' || statusOf(e) === 416)) return (await this.head(key)) ? new Uint8Array(0) : null;
      throw e;
    }
  }

  /**
   * The object as a stream (bytes `range.start`..`range.end` inclusive when given, which must
   * lie within it), with its whole size and media type; null when there is no such object. The
   * body is S3's own response stream, so an answer is never held whole in memory.
   */
  async open(key: string, range?: ByteRange): Promise<OpenedObject | null> {
    try {
      const got = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }),
      );
      // Content-Range is `bytes <first>-<last>/<size>` on a ranged answer; otherwise the length is the size.
      const total = range ? Number(/\/(\d+)$/.exec(got.ContentRange ?? '')?.[1]) : got.ContentLength;
      const body = got.Body as unknown;
      if (total === undefined || !Number.isSafeInteger(total) || !isAsyncIterable(body)) throw new Error(`S3 answered GetObject of ${key} without a size or a stream`);
      return { bytes: total, media_type: got.ContentType ?? 'application/octet-stream', body };
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
  }

  async remove(keys: readonly string[]): Promise<void> {
    const unique = [...new Set(keys)];
    if (unique.length === 1) {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: unique[0] }));
      return;
    }
    for (let i = 0; i < unique.length; i += S3_BATCH) await this.deleteBatch(unique.slice(i, i + S3_BATCH));
  }

  async removePrefix(prefix: string, opts: { maxKeys?: number } = {}): Promise<number> {
    // An empty prefix would empty the whole bucket: never what a caller of this port means.
    if (prefix === '') throw new Error('removePrefix needs a non-empty prefix');
    const limit = opts.maxKeys ?? Infinity;
    let removed = 0;
    let token: string | undefined;
    do {
      const pageSize = Math.min(S3_BATCH, limit - removed);
      if (pageSize <= 0) break;
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token, MaxKeys: pageSize }));
      const keys = (page.Contents ?? []).flatMap((o) => (o.Key === undefined ? [] : [o.Key]));
      if (keys.length > 0) await this.deleteBatch(keys);
      removed += keys.length;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return removed;
  }

  async presignUpload(key: string, mediaType: string, bytes: number, ttlSeconds: number): Promise<PresignedUpload> {
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new Error(`invalid upload size ${bytes}`);
    const issued = this.now();
    // Content-Type and Content-Length are signed (the presigner leaves Content-Type unsigned by
    // default): S3 then refuses a PUT of any other size or type with SignatureDoesNotMatch.
    const url = await getSignedUrl(this.client, new PutObjectCommand({ Bucket: this.bucket, Key: key, ContentType: mediaType, ContentLength: bytes }), {
      expiresIn: ttlSeconds,
      signingDate: issued,
      signableHeaders: new Set(['content-type', 'content-length']),
    });
    return {
      url,
      method: 'PUT',
      headers: { 'Content-Type': mediaType, 'Content-Length': String(bytes) },
      expires_at: new Date(issued.getTime() + ttlSeconds * 1000).toISOString(),
    };
  }

  async presignDownload(key: string, mediaType: string, ttlSeconds: number, attachment: boolean): Promise<PresignedDownload> {
    const issued = this.now();
    const url = await getSignedUrl(
      this.client,
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: key,
        ResponseContentType: mediaType,
        ResponseContentDisposition: attachment ? 'attachment' : 'inline',
      }),
      { expiresIn: ttlSeconds, signingDate: issued },
    );
    return { url, expires_at: new Date(issued.getTime() + ttlSeconds * 1000).toISOString() };
  }

  /**
   * A multipart upload (CreateMultipartUpload, UploadPart, CompleteMultipartUpload, or
   * AbortMultipartUpload). IAM authorizes the first three as s3:PutObject and the abort as
   * s3:AbortMultipartUpload; an upload neither completed nor aborted (a function that died
   * mid-write) is removed by the bucket's lifecycle rule a day after it began.
   */
  async begin(key: string, mediaType: string): Promise<PartedWrite> {
    const created = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: mediaType }));
    const uploadId = created.UploadId;
    if (uploadId === undefined) throw new Error(`S3 answered CreateMultipartUpload of ${key} without an upload id`);
    const parts: { ETag: string; PartNumber: number }[] = [];
    const target = { Bucket: this.bucket, Key: key, UploadId: uploadId };
    return {
      part: async (bytes) => {
        const PartNumber = parts.length + 1;
        const out = await this.client.send(new UploadPartCommand({ ...target, PartNumber, Body: bytes, ContentLength: bytes.byteLength }));
        if (out.ETag === undefined) throw new Error(`S3 answered UploadPart ${PartNumber} of ${key} without an ETag`);
        parts.push({ ETag: out.ETag, PartNumber });
      },
      complete: async () => {
        await this.client.send(new CompleteMultipartUploadCommand({ ...target, MultipartUpload: { Parts: parts } }));
      },
      abort: async () => {
        await this.client.send(new AbortMultipartUploadCommand(target));
      },
    };
  }

  private async deleteBatch(keys: readonly string[]): Promise<void> {
    const out = await this.client.send(
      new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }),
    );
    // Quiet answers list only the failures; a key that was already gone is not one.
    const failed = out.Errors ?? [];
    if (failed.length > 0) {
      const first = failed[0];
      throw new Error(`S3 could not delete ${failed.length} of ${keys.length} objects (first: ${first?.Key ?? '?'}: ${first?.Code ?? '?'} ${first?.Message ?? ''})`);
    }
  }
}


/** The store for `bucket`, its client built from the settings (and, locally, explicit credentials). */
export function createObjectStore(settings: S3Settings, bucket: string, credentials?: S3ClientConfig['credentials']): S3ObjectStore {
  return new S3ObjectStore(new S3Client(s3ClientConfig(settings, credentials)), bucket);
}
