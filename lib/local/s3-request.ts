/**
 * Reading an S3 request as S3 reads it, without I/O: the path-style address, the query, the
 * SigV4 authorization (header or presigned query) and its verification, a Range header, and
 * DeleteObjects' XML. The emulation (./s3.ts) builds on these; they are fuzzed on their own.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** More elements of the XML error (e.g. the resource, the expiry). */
    readonly extra: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export type Headers = Readonly<Record<string, string | string[] | undefined>>;

export interface S3Address {
  /** The path exactly as sent, before '?': SigV4 signs it as is (S3 does not normalize it). */
  rawPath: string;
  bucket: string;
  /** '' for a request on the bucket itself. */
  key: string;
  /** Query pairs in order, decoded. */
  query: [string, string][];
}

/** S3's limit on a key's UTF-8 length. */
export const MAX_KEY_BYTES = 1024;

const decode = (s: string, what: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new S3Error(400, 'InvalidURI', `Couldn't parse the specified URI (${what}).`);
  }
};

/** A path-style request target (`/<bucket>/<key>?<query>`), relative to the endpoint's own path `base`. */
export function parseAddress(target: string, base = ''): S3Address {
  const q = target.indexOf('?');
  const rawPath = q < 0 ? target : target.slice(0, q);
  const rawQuery = q < 0 ? '' : target.slice(q + 1);
  if (!rawPath.startsWith(`${base}/`)) throw new S3Error(400, 'InvalidURI', "Couldn't parse the specified URI.");
  const rest = rawPath.slice(base.length + 1);
  const slash = rest.indexOf('/');
  const bucket = decode(slash < 0 ? rest : rest.slice(0, slash), 'bucket');
  const key = slash < 0 ? '' : decode(rest.slice(slash + 1), 'key');
  if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) throw new S3Error(400, 'KeyTooLongError', 'Your key is too long');
  const query: [string, string][] = [];
  for (const part of rawQuery.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    // A bare `?delete` is a key with an empty value, as SigV4 canonicalizes it.
    query.push(eq < 0 ? [decode(part, 'query'), ''] : [decode(part.slice(0, eq), 'query'), decode(part.slice(eq + 1), 'query')]);
  }
  return { rawPath, bucket, key, query };
}

export const queryValue = (a: S3Address, name: string): string | undefined => a.query.find(([k]) => k === name)?.[1];

/** RFC 3986 unreserved characters stay, everything else is %XX: SigV4's URI encoding. */
export function sigv4Encode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export interface Authorization {
  kind: 'header' | 'presigned';
  accessKeyId: string;
  /** yyyymmdd of the credential scope. */
  date: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
  /** X-Amz-Date: yyyymmddThhmmssZ. */
  amzDate: string;
  /** Presigned URLs only: seconds the URL is valid after amzDate. */
  expiresSeconds?: number;
  sessionToken?: string;
  /** The payload hash the signature covers: a hex SHA-256, UNSIGNED-PAYLOAD, or a streaming mode. */
  payloadHash: string;
}

const header = (h: Headers, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v.join(',') : v;
};

const CREDENTIAL = /^([A-Za-z0-9]{1,128})\/(\d{8})\/([a-z0-9-]{1,32})\/([a-z0-9-]{1,32})\/aws4_request$/;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
const SIGNED_HEADERS = /^[a-z0-9-]+(;[a-z0-9-]+)*$/;

/** Milliseconds since the epoch of an X-Amz-Date, or NaN. */
export function amzDateMs(s: string): number {
  const m = AMZ_DATE.exec(s);
  if (!m) return NaN;
  const [, y, mo, d, h, mi, se] = m.map(Number) as [number, number, number, number, number, number, number];
  const t = Date.UTC(y, mo - 1, d, h, mi, se);
  const back = new Date(t);
  return back.getUTCDate() === d && back.getUTCMonth() === mo - 1 ? t : NaN;
}

/** The request's SigV4 authorization, from its Authorization header or its presigned query; null when anonymous. */
export function parseAuthorization(a: S3Address, h: Headers): Authorization | null {
  const auth = header(h, 'authorization');
  const presigned = queryValue(a, 'X-Amz-Algorithm') !== undefined || queryValue(a, 'X-Amz-Signature') !== undefined;
  if (auth !== undefined && presigned)
    throw new S3Error(
      400,
      'InvalidArgument',
      'Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified',
    );
  if (auth !== undefined) {
    const m = /^AWS4-HMAC-SHA256 +Credential=([^,\s]+), *SignedHeaders=([^,\s]+), *Signature=([0-9a-f]{64})$/.exec(auth.trim());
    if (!m) throw new S3Error(400, 'AuthorizationHeaderMalformed', 'The authorization header is malformed.');
    const cred = CREDENTIAL.exec(m[1] as string);
    if (!cred || !SIGNED_HEADERS.test(m[2] as string))
      throw new S3Error(
        400,
        'AuthorizationHeaderMalformed',
        'The authorization header is malformed; the Credential or SignedHeaders are mal-formed.',
      );
    const amzDate = header(h, 'x-amz-date') ?? '';
    if (Number.isNaN(amzDateMs(amzDate)))
      throw new S3Error(403, 'AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
    const payloadHash = header(h, 'x-amz-content-sha256');
    if (payloadHash === undefined)
      throw new S3Error(400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
    return {
      kind: 'header',
      accessKeyId: cred[1] as string,
      date: cred[2] as string,
      region: cred[3] as string,
      service: cred[4] as string,
      signedHeaders: (m[2] as string).split(';'),
      signature: m[3] as string,
      amzDate,
      sessionToken: header(h, 'x-amz-security-token'),
      payloadHash,
    };
  }
  if (!presigned) return null;
  const bad = (what: string) => new S3Error(400, 'AuthorizationQueryParametersError', `Error parsing the X-Amz-${what} parameter.`);
  if (queryValue(a, 'X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256')
    throw new S3Error(400, 'AuthorizationQueryParametersError', 'X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
  const cred = CREDENTIAL.exec(queryValue(a, 'X-Amz-Credential') ?? '');
  if (!cred) throw bad('Credential');
  const amzDate = queryValue(a, 'X-Amz-Date') ?? '';
  if (Number.isNaN(amzDateMs(amzDate))) throw bad('Date');
  const expires = queryValue(a, 'X-Amz-Expires') ?? '';
  if (!/^\d{1,7}$/.test(expires)) throw bad('Expires');
  const expiresSeconds = Number(expires);
  if (expiresSeconds > 604_800)
    throw new S3Error(400, 'AuthorizationQueryParametersError', 'X-Amz-Expires must be less than a week (in seconds) that is 604800');
  const signedHeaders = queryValue(a, 'X-Amz-SignedHeaders') ?? '';
  if (!SIGNED_HEADERS.test(signedHeaders)) throw bad('SignedHeaders');
  const signature = queryValue(a, 'X-Amz-Signature') ?? '';
  if (!/^[0-9a-f]{64}$/.test(signature)) throw bad('Signature');
  return {
    kind: 'presigned',
    accessKeyId: cred[1] as string,
    date: cred[2] as string,
    region: cred[3] as string,
    service: cred[4] as string,
    signedHeaders: signedHeaders.split(';'),
    signature,
    amzDate,
    expiresSeconds,
    sessionToken: queryValue(a, 'X-Amz-Security-Token'),
    // A presigned URL never signs its body.
    payloadHash: queryValue(a, 'X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD',
  };
}

/** SigV4's canonical request for what arrived (the presigned signature itself left out). */
export function canonicalRequest(method: string, a: S3Address, h: Headers, auth: Authorization): string {
  const query = a.query
    .filter(([k]) => !(auth.kind === 'presigned' && k === 'X-Amz-Signature'))
    .map(([k, v]) => [sigv4Encode(k), sigv4Encode(v)] as const)
    .sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const headers = auth.signedHeaders.map((name) => `${name}:${(header(h, name) ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  return [method, a.rawPath, query, headers, auth.signedHeaders.join(';'), auth.payloadHash].join('\n');
}

const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

/** The signature a holder of `secret` computes for this request. */
export function expectedSignature(method: string, a: S3Address, h: Headers, auth: Authorization, secret: string): string {
  const scope = `${auth.date}/${auth.region}/${auth.service}/aws4_request`;
  const toSign = [
    'AWS4-HMAC-SHA256',
    auth.amzDate,
    scope,
    createHash('sha256')
      .update(canonicalRequest(method, a, h, auth), 'utf8')
      .digest('hex'),
  ].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, auth.date), auth.region), auth.service), 'aws4_request');
  return hmac(key, toSign).toString('hex');
}

/** How far a header-signed request's clock may be from ours, as S3 allows. */
export const MAX_SKEW_MS = 15 * 60 * 1000;

/**
 * Checks a request's SigV4 as S3 does: scope, required signed headers, the signature, then the
 * time (a header-signed request within 15 minutes, a presigned URL before its expiry).
 */
export function verifySignature(
  method: string,
  a: S3Address,
  h: Headers,
  auth: Authorization,
  secret: string,
  region: string,
  nowMs: number,
): void {
  if (auth.service !== 's3' || auth.region !== region || auth.amzDate.slice(0, 8) !== auth.date) {
    const e = auth.kind === 'header' ? 'AuthorizationHeaderMalformed' : 'AuthorizationQueryParametersError';
    throw new S3Error(
      400,
      e,
      `The authorization is malformed; the region '${auth.region}' or service '${auth.service}' is wrong, or the date does not match; expecting '${region}' and 's3'`,
    );
  }
  if (!auth.signedHeaders.includes('host'))
    throw new S3Error(400, 'AccessDenied', 'There were headers present in the request which were not signed: host');
  if (auth.kind === 'header' && !auth.signedHeaders.includes('x-amz-date'))
    throw new S3Error(403, 'AccessDenied', 'x-amz-date must be signed');
  const want = Buffer.from(expectedSignature(method, a, h, auth, secret), 'hex');
  const got = Buffer.from(auth.signature, 'hex');
  if (want.length !== got.length || !timingSafeEqual(want, got)) {
    throw new S3Error(
      403,
      'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
      {
        AWSAccessKeyId: auth.accessKeyId,
      },
    );
  }
  const signedAt = amzDateMs(auth.amzDate);
  if (auth.kind === 'header') {
    if (Math.abs(nowMs - signedAt) > MAX_SKEW_MS)
      throw new S3Error(403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.');
    return;
  }
  if (signedAt > nowMs + MAX_SKEW_MS) throw new S3Error(403, 'AccessDenied', 'Request is not valid yet');
  const expires = signedAt + (auth.expiresSeconds ?? 0) * 1000;
  if (nowMs > expires) {
    throw new S3Error(403, 'AccessDenied', 'Request has expired', {
      Expires: new Date(expires).toISOString(),
      ServerTime: new Date(nowMs).toISOString(),
    });
  }
}

/**
 * A Range header against an object of `size` bytes, as S3 reads it: one `bytes=` range (first-last,
 * first-, or -suffix); anything else is ignored (the whole object); a range past the end is 416.
 */
export function parseRange(value: string | undefined, size: number): { start: number; end: number } | null {
  if (value === undefined) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(value.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  const invalid = () =>
    new S3Error(416, 'InvalidRange', 'The requested range is not satisfiable', { RangeRequested: value, ActualObjectSize: String(size) });
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) throw invalid();
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return null;
  if (start >= size) throw invalid();
  return { start, end };
}

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

export function xmlUnescape(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]{1,6}|#\d{1,7}|[a-z]{2,4});/g, (all, e: string) => {
    if (e.startsWith('#')) {
      const n = e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return n <= 0x10ffff && !(n >= 0xd800 && n <= 0xdfff) ? String.fromCodePoint(n) : all;
    }
    return ENTITIES[e] ?? all;
  });
}

export function xmlEscape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&${Object.entries(ENTITIES).find(([, v]) => v === c)?.[0] ?? 'amp'};`);
}

/** S3's limit on keys in one DeleteObjects. */
export const MAX_DELETE_KEYS = 1000;

/** DeleteObjects' body: `<Delete><Object><Key>k</Key></Object>…<Quiet>true</Quiet></Delete>`. */
export function parseDeleteBody(xml: string): { keys: string[]; quiet: boolean } {
  const malformed = () =>
    new S3Error(400, 'MalformedXML', 'The XML you provided was not well-formed or did not validate against our published schema');
  const body = /^\s*(?:<\?xml[^>]*\?>\s*)?<Delete(?:\s+xmlns="[^"]*")?\s*>([\s\S]*)<\/Delete>\s*$/.exec(xml);
  if (!body) throw malformed();
  let rest = body[1] as string;
  const keys: string[] = [];
  let quiet = false;
  for (;;) {
    rest = rest.replace(/^\s+/, '');
    if (rest === '') break;
    const obj = /^<Object>\s*<Key>([^<]*)<\/Key>\s*(?:<VersionId>[^<]*<\/VersionId>\s*)?<\/Object>/.exec(rest);
    if (obj) {
      keys.push(xmlUnescape(obj[1] as string));
      rest = rest.slice(obj[0].length);
      continue;
    }
    const q = /^<Quiet>(true|false)<\/Quiet>/.exec(rest);
    if (q) {
      quiet = q[1] === 'true';
      rest = rest.slice(q[0].length);
      continue;
    }
    throw malformed();
  }
  if (keys.length === 0 || keys.length > MAX_DELETE_KEYS) throw malformed();
  return { keys, quiet };
}

/** S3's most parts in one multipart upload. */
export const MAX_PARTS = 10_000;

/** CompleteMultipartUpload's body: `<CompleteMultipartUpload><Part><ETag>"…"</ETag><PartNumber>n</PartNumber></Part>…`, parts in order. */
export function parseCompleteBody(xml: string): { partNumber: number; etag: string }[] {
  const malformed = () =>
    new S3Error(400, 'MalformedXML', 'The XML you provided was not well-formed or did not validate against our published schema');
  const body = /^\s*(?:<\?xml[^>]*\?>\s*)?<CompleteMultipartUpload(?:\s+xmlns="[^"]*")?\s*>([\s\S]*)<\/CompleteMultipartUpload>\s*$/.exec(
    xml,
  );
  if (!body) throw malformed();
  let rest = body[1] as string;
  const parts: { partNumber: number; etag: string }[] = [];
  for (;;) {
    rest = rest.replace(/^\s+/, '');
    if (rest === '') break;
    const part = /^<Part>([\s\S]*?)<\/Part>/.exec(rest);
    if (!part) throw malformed();
    const inner = part[1] as string;
    const n = /<PartNumber>\s*(\d{1,5})\s*<\/PartNumber>/.exec(inner);
    const etag = /<ETag>([^<]*)<\/ETag>/.exec(inner);
    if (!n || !etag) throw malformed();
    parts.push({ partNumber: Number(n[1]), etag: xmlUnescape(etag[1] as string).trim() });
    rest = rest.slice(part[0].length);
  }
  if (parts.length === 0) throw malformed();
  if (parts.length > MAX_PARTS)
    throw new S3Error(400, 'InvalidArgument', `Part number must be an integer between 1 and ${MAX_PARTS}, inclusive`);
  for (let i = 1; i < parts.length; i++) {
    if ((parts[i]?.partNumber ?? 0) <= (parts[i - 1]?.partNumber ?? 0))
      throw new S3Error(400, 'InvalidPartOrder', 'The list of parts was not in ascending order. Parts must be ordered by part number.');
  }
  return parts;
}
