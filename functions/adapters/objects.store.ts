/**
 * The one bucket's writes through the S3 client: PutObject, deletes, listings and presigned
 * PUTs. Its reads are signed fetches (./object-reads.ts), which keeps the S3 client out of the
 * functions that only read; `createObjectStore` joins the two into one ObjectStorePort.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { ObjectStorePort, PartedWrite, PresignedUpload } from '../core/ports';
import { S3ObjectReads, splitObjectStore, type ObjectWritesPort, type S3Settings } from './object-reads';
import type { CredentialSource } from './sigv4';

export { presignedOrigin, type S3Settings } from './object-reads';

/** S3 deletes at most this many keys per DeleteObjects and lists at most this many per page. */
const S3_BATCH = 1000;

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
 * The writes of ObjectStorePort on one S3 bucket. Presigned URLs are signed with this client's
 * credentials: in Lambda those are the role's temporary credentials, and a URL dies with them
 * whatever its own expiry says, so callers get short lifetimes (see docs/aws.md).
 */
export class S3ObjectStore implements ObjectWritesPort {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async put(key: string, body: Uint8Array, mediaType: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: mediaType, ContentLength: body.byteLength }),
    );
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
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token, MaxKeys: pageSize }),
      );
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
    const url = await getSignedUrl(
      this.client,
      new PutObjectCommand({ Bucket: this.bucket, Key: key, ContentType: mediaType, ContentLength: bytes }),
      {
        expiresIn: ttlSeconds,
        signingDate: issued,
        signableHeaders: new Set(['content-type', 'content-length']),
      },
    );
    return {
      url,
      method: 'PUT',
      headers: { 'Content-Type': mediaType, 'Content-Length': String(bytes) },
      expires_at: new Date(issued.getTime() + ttlSeconds * 1000).toISOString(),
    };
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
      throw new Error(
        `S3 could not delete ${failed.length} of ${keys.length} objects (first: ${first?.Key ?? '?'}: ${first?.Code ?? '?'} ${first?.Message ?? ''})`,
      );
    }
  }
}

/**
 * The store for `bucket`: reads signed with `credentials` (on Lambda the DynamoDB client's
 * provider, see deps.ts; locally the runtime's own), writes through an S3 client built with
 * the same credentials on the first write.
 */
export function createObjectStore(settings: S3Settings, bucket: string, credentials: CredentialSource): ObjectStorePort {
  return splitObjectStore(new S3ObjectReads(settings, bucket, credentials), () => createObjectWrites(settings, bucket, credentials));
}

/** The writes for `bucket`, their client built from the settings (default credentials: the SDK's chain). */
export function createObjectWrites(settings: S3Settings, bucket: string, credentials?: S3ClientConfig['credentials']): S3ObjectStore {
  return new S3ObjectStore(new S3Client(s3ClientConfig(settings, credentials)), bucket);
}
