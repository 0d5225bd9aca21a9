/**
 * Reads of the one bucket without the S3 client: HeadObject, GetObject (whole, a Range, or as a
 * stream) and presigned GET URLs, as SigV4-signed HTTP (./sigv4.ts) to the endpoint the S3
 * client would use. Every function that reads execution values reads objects, and most never
 * write one: this keeps the S3 client (with the part of @smithy/core only it uses, ≈ 280 KB
 * minified) out of their bundles. Writes stay with the SDK (./objects.store.ts), loaded on a
 * function's first write only.
 */
import type { ByteRange, ObjectStorePort, OpenedObject, PresignedDownload } from '../core/ports';
import {
  AwsCallError,
  awsUriEncode,
  presignUrl,
  readBody,
  signedRequest,
  withRetries,
  type AwsAnswer,
  type CredentialSource,
  type RetryPolicy,
} from './sigv4';

/** Where the bucket is reached: AWS itself, or a local endpoint addressed by path. */
export interface S3Settings {
  region: string;
  s3Endpoint?: string;
  s3ForcePathStyle?: boolean;
}

/**
 * The origin object URLs for `bucket` have (what a page's CSP must let it connect to): the
 * endpoint's, by path, or S3's regional virtual-hosted one, as the SDK builds them.
 */
export function presignedOrigin(s: S3Settings, bucket: string): string {
  if (s.s3Endpoint) {
    const u = new URL(s.s3Endpoint);
    return s.s3ForcePathStyle ? u.origin : `${u.protocol}//${bucket}.${u.host}`;
  }
  return `https://${bucket}.s3.${s.region}.amazonaws.com`;
}

/**
 * Where the object is: the URL of its bucket (endpoint and bucket) and the path to send and
 * sign, each key segment escaped once as S3 signs it. The path is kept apart from the URL, which
 * would resolve `.` and `..` segments that are part of a key.
 */
export function s3ObjectAddress(s: S3Settings, bucket: string, key: string): { url: URL; path: string } {
  const escaped = key.split('/').map(awsUriEncode).join('/');
  if (s.s3Endpoint && s.s3ForcePathStyle) {
    const url = new URL(s.s3Endpoint);
    return { url, path: `${url.pathname.replace(/\/+$/, '')}/${awsUriEncode(bucket)}/${escaped}` };
  }
  return { url: new URL(presignedOrigin(s, bucket)), path: `/${escaped}` };
}

/** The reads of ObjectStorePort. */
export type ObjectReadsPort = Pick<ObjectStorePort, 'head' | 'read' | 'presignDownload'> & Required<Pick<ObjectStorePort, 'open'>>;
/** Everything else: what the SDK's store does (./objects.store.ts). */
export type ObjectWritesPort = Omit<ObjectStorePort, keyof ObjectReadsPort>;

/** S3's error document: `<Error><Code>NoSuchKey</Code><Message>...</Message>...</Error>`. */
function s3Error(status: number, xml: string, what: string): AwsCallError {
  const code = /<Code>([^<]*)<\/Code>/.exec(xml)?.[1];
  const message = /<Message>([^<]*)<\/Message>/.exec(xml)?.[1] ?? '';
  // A HEAD answer has no body: the SDK names its failure by the status alone.
  const name =
    code ??
    ({ 400: 'BadRequest', 403: 'Forbidden', 404: 'NotFound', 416: 'InvalidRange' } as Record<number, string>)[status] ??
    `S3${status}`;
  return new AwsCallError(name, `S3 ${what}: ${name}${message ? `: ${message}` : ''}`, status);
}

const isMissing = (e: unknown): boolean =>
  e instanceof AwsCallError && (e.name === 'NoSuchKey' || e.name === 'NotFound' || e.status === 404);

export class S3ObjectReads implements ObjectReadsPort {
  constructor(
    private readonly settings: S3Settings,
    private readonly bucket: string,
    private readonly credentials: CredentialSource,
    private readonly now: () => Date = () => new Date(),
    private readonly retry?: RetryPolicy,
  ) {}

  /** One signed request; an error answer thrown as S3 named it, throttles and 5xx tried again. */
  private call(method: 'GET' | 'HEAD', key: string, what: string, headers: Record<string, string> = {}): Promise<AwsAnswer> {
    return withRetries(async () => {
      const { url, path } = s3ObjectAddress(this.settings, this.bucket, key);
      const res = await signedRequest(
        { method, url, path, headers },
        { region: this.settings.region, service: 's3', credentials: this.credentials },
      );
      if (res.status >= 200 && res.status < 300) return res;
      throw s3Error(res.status, (await readBody(res.body)).toString('utf8'), `${what} ${key}`);
    }, this.retry);
  }

  async head(key: string): Promise<{ bytes: number; media_type: string } | null> {
    try {
      const h = await this.call('HEAD', key, 'HeadObject');
      h.body.resume();
      return { bytes: Number(h.headers['content-length'] ?? 0), media_type: h.headers['content-type'] ?? 'application/octet-stream' };
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
  }

  async read(key: string, maxBytes?: number): Promise<Uint8Array | null> {
    if (maxBytes !== undefined && maxBytes <= 0) return (await this.head(key)) ? new Uint8Array(0) : null;
    try {
      const got = await this.call('GET', key, 'GetObject', maxBytes === undefined ? {} : { range: `bytes=0-${maxBytes - 1}` });
      return new Uint8Array(await readBody(got.body));
    } catch (e) {
      if (isMissing(e)) return null;
      // S3 refuses any range of an empty object (416 InvalidRange) instead of answering nothing.
      if (maxBytes !== undefined && e instanceof AwsCallError && (e.name === 'InvalidRange' || e.status === 416))
        return (await this.head(key)) ? new Uint8Array(0) : null;
      throw e;
    }
  }

  /**
   * The object as a stream (bytes `range.start`..`range.end` inclusive when given, which must
   * lie within it), with its whole size and media type; null when there is no such object. The
   * body is the answer's own stream, so an answer is never held whole in memory.
   */
  async open(key: string, range?: ByteRange): Promise<OpenedObject | null> {
    let got: AwsAnswer;
    try {
      got = await this.call('GET', key, 'GetObject', range ? { range: `bytes=${range.start}-${range.end}` } : {});
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
    // Content-Range is `bytes <first>-<last>/<size>` on a ranged answer; otherwise the length is the size.
    const total = Number(range ? /\/(\d+)$/.exec(got.headers['content-range'] ?? '')?.[1] : got.headers['content-length']);
    if (!Number.isSafeInteger(total)) {
      got.body.destroy();
      throw new Error(`S3 answered GetObject of ${key} without a size`);
    }
    return { bytes: total, media_type: got.headers['content-type'] ?? 'application/octet-stream', body: got.body };
  }

  /**
   * A GET URL answering with `mediaType` and `attachment` or `inline`, signed as S3's presigner
   * signs it (query signing, UNSIGNED-PAYLOAD). Signed with this store's credentials: in Lambda
   * the role's temporary ones, and the URL dies with them whatever its own expiry says.
   */
  async presignDownload(key: string, mediaType: string, ttlSeconds: number, attachment: boolean): Promise<PresignedDownload> {
    const issued = this.now();
    const { url, path } = s3ObjectAddress(this.settings, this.bucket, key);
    url.searchParams.set('response-content-disposition', attachment ? 'attachment' : 'inline');
    url.searchParams.set('response-content-type', mediaType);
    url.searchParams.set('x-id', 'GetObject');
    const signed = await presignUrl(
      { method: 'GET', url, path, headers: {} },
      { region: this.settings.region, service: 's3', credentials: this.credentials, now: issued, expiresIn: ttlSeconds },
    );
    return { url: signed, expires_at: new Date(issued.getTime() + ttlSeconds * 1000).toISOString() };
  }
}

const READS: ReadonlySet<PropertyKey> = new Set<keyof ObjectReadsPort>(['head', 'read', 'open', 'presignDownload']);

/**
 * One ObjectStorePort: reads by `reads`, everything else by the store `writes()` builds, on its
 * first use only (so a function that never writes never loads the S3 client). Every other member
 * is forwarded as it is, so what the SDK store gains (new write paths) needs no change here.
 */
export function splitObjectStore(reads: ObjectReadsPort, writes: () => ObjectWritesPort): ObjectStorePort {
  let writer: ObjectWritesPort | undefined;
  const bound = (owner: object, value: unknown): unknown =>
    typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(owner) : value;
  return new Proxy(reads as unknown as ObjectStorePort, {
    get(target, prop) {
      // Symbols and `then` (asked by anything that awaits or inspects the store) are not writes.
      if (READS.has(prop) || typeof prop === 'symbol' || prop === 'then') return bound(target, Reflect.get(target, prop));
      writer ??= writes();
      return bound(writer, Reflect.get(writer, prop));
    },
    has: (target, prop) => READS.has(prop) || prop in (writer ??= writes()),
  });
}
