/**
 * Capability links to stored objects. A link's token names one object key, the media type it
 * is served with, whether it is served as an attachment, and when it expires; an HMAC under a
 * key derived from the service's master key binds them, so a token cannot be altered, listed
 * or guessed (256-bit tag). The token is signed, not encrypted: it shows the object's key
 * (deployment and execution ids), which its holder knows already and which grant nothing.
 *
 *   v1.<base64url(JSON [key, media_type, attachment 0|1, expires epoch seconds(, file name)])>.<base64url(HMAC-SHA-256)>
 *
 * The file name, when there is one, is what a browser saves the download as (an output's
 * `<output id>.<extension>`); links without it name the file after the object key.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

export const ASSET_TOKEN_VERSION = 'v1';
/** Longer tokens are refused before any work: keys are at most a few hundred characters. */
export const MAX_ASSET_TOKEN_CHARS = 2048;
const TAG_BYTES = 32;
const B64URL = /^[A-Za-z0-9_-]+$/;
// A media type, with parameters such as `; charset=utf-8`: nothing that could end a header.
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(?:; ?[a-z0-9_-]{1,32}=[A-Za-z0-9_.-]{1,64}){0,4}$/;

export interface AssetClaims {
  key: string;
  media_type: string;
  attachment: boolean;
  /** Expiry, whole seconds since the epoch. */
  exp: number;
  /** The name a browser saves it as (Content-Disposition's filename); else the key's last segment. */
  name?: string;
}

/** A file name a link may carry: the characters object keys allow, so it needs no quoting in a header. */
export const isLinkFileName = (s: unknown): s is string => typeof s === 'string' && /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$/.test(s);

export type AssetTokenCheck =
  | { ok: true; claims: AssetClaims }
  /** `invalid` covers malformed, altered and foreign tokens alike: the answer never says which. */
  | { ok: false; reason: 'invalid' }
  | { ok: false; reason: 'expired'; expired_at: string };

/**
 * The links' own key: HKDF of the master key (which seals secrets with AES-GCM), so no key
 * serves two purposes and rotating the key material retires every link.
 */
export function assetLinkKey(masterKey: Buffer): Buffer {
  // HKDF takes any key, the authorizer's empty one too (functions/adapters/key-material.ts): refused here.
  if (masterKey.length !== 32) throw new Error('the master key must be 32 bytes');
  return Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'pipegate asset links v1', 32));
}

const tag = (signed: string, key: Buffer): Buffer => createHmac('sha256', key).update(signed, 'utf8').digest();

export function signAssetToken(claims: AssetClaims, key: Buffer): string {
  if (!Number.isInteger(claims.exp) || claims.exp <= 0) throw new Error('asset link expiry must be whole epoch seconds');
  if (!MEDIA_TYPE.test(claims.media_type)) throw new Error(`invalid media type '${claims.media_type}'`);
  if (claims.name !== undefined && !isLinkFileName(claims.name)) throw new Error(`invalid file name '${claims.name}'`);
  const fields = [
    claims.key,
    claims.media_type,
    claims.attachment ? 1 : 0,
    claims.exp,
    ...(claims.name === undefined ? [] : [claims.name]),
  ];
  const payload = Buffer.from(JSON.stringify(fields), 'utf8').toString('base64url');
  const signed = `${ASSET_TOKEN_VERSION}.${payload}`;
  const token = `${signed}.${tag(signed, key).toString('base64url')}`;
  if (token.length > MAX_ASSET_TOKEN_CHARS) throw new Error('asset link token too long');
  return token;
}

/**
 * Checks a token: its tag first (in constant time), and only then its expiry, so that an
 * expired answer is given for genuine links alone.
 */
export function verifyAssetToken(token: string, key: Buffer, now: Date): AssetTokenCheck {
  const invalid = { ok: false, reason: 'invalid' } as const;
  if (token.length > MAX_ASSET_TOKEN_CHARS) return invalid;
  const parts = token.split('.');
  const [version, payload, sig] = parts;
  if (parts.length !== 3 || version !== ASSET_TOKEN_VERSION || payload === undefined || sig === undefined) return invalid;
  if (!B64URL.test(payload) || !B64URL.test(sig)) return invalid;
  const given = Buffer.from(sig, 'base64url');
  // Re-encoding refuses non-canonical spellings of the same tag.
  if (given.length !== TAG_BYTES || given.toString('base64url') !== sig) return invalid;
  if (!timingSafeEqual(given, tag(`${version}.${payload}`, key))) return invalid;

  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return invalid;
  }
  if (!Array.isArray(decoded) || (decoded.length !== 4 && decoded.length !== 5)) return invalid;
  const [objectKey, mediaType, attachment, exp, name] = decoded as unknown[];
  if (
    typeof objectKey !== 'string' ||
    typeof mediaType !== 'string' ||
    !MEDIA_TYPE.test(mediaType) ||
    (attachment !== 0 && attachment !== 1) ||
    typeof exp !== 'number' ||
    !Number.isInteger(exp) ||
    (decoded.length === 5 && !isLinkFileName(name))
  ) {
    return invalid;
  }
  if (exp * 1000 <= now.getTime()) return { ok: false, reason: 'expired', expired_at: new Date(exp * 1000).toISOString() };
  const claims: AssetClaims = { key: objectKey, media_type: mediaType, attachment: attachment === 1, exp };
  return { ok: true, claims: isLinkFileName(name) ? { ...claims, name } : claims };
}

/**
 * Media types a browser shows without running anything: served inline. Everything else
 * (SVG, HTML, XML, JavaScript, PDF, unknown types) is served as an attachment, so that a link
 * opened in a browser can never run script in the service's origin. An allow-list, because a
 * type nobody thought of must fall on the safe side.
 */
const INLINE_EXACT = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/bmp',
  'image/x-icon',
  'image/vnd.microsoft.icon',
  'text/plain',
  'text/csv',
  'application/json',
]);
const INLINE_FAMILY = /^(audio|video)\/[a-z0-9][a-z0-9!#$&^_.+-]*$/;

export function servedAsAttachment(mediaType: string): boolean {
  const bare = mediaType.split(';')[0]?.trim().toLowerCase() ?? '';
  return !(INLINE_EXACT.has(bare) || INLINE_FAMILY.test(bare));
}

/** The last segment of a key, a safe file name (object-keys.ts allows only [A-Za-z0-9_.-]). */
export function fileNameOf(key: string): string {
  const last = key.split('/').pop() ?? '';
  return /^[A-Za-z0-9_.-]{1,128}$/.test(last) ? last : 'asset';
}

/**
 * How long past a run's time-out the links its nodes are handed keep working: a service a node
 * passes a link to may fetch the file after it has answered (a job it queued, a retry).
 */
export const NODE_LINK_MARGIN_SECONDS = 3600;

/**
 * The lifetime of a link minted for a node when its run starts: the run's whole budget (its
 * time-out) plus the margin, so the link outlives every node of the run that could hand it on.
 */
export const nodeLinkTtlSeconds = (executionTimeoutMs: number): number => Math.ceil(executionTimeoutMs / 1000) + NODE_LINK_MARGIN_SECONDS;

/** How long a browser may keep what a link served: never past the link's own expiry, at most an hour. */
export const MAX_ASSET_CACHE_SECONDS = 3600;

/** The headers every asset answer carries, whatever the bytes. */
export function assetHeaders(claims: AssetClaims, bytes: number, now: Date): Record<string, string> {
  const remaining = Math.max(0, Math.min(MAX_ASSET_CACHE_SECONDS, claims.exp - Math.ceil(now.getTime() / 1000)));
  const name = claims.name ?? fileNameOf(claims.key);
  return {
    'content-type': claims.media_type,
    'content-length': String(bytes),
    'x-content-type-options': 'nosniff',
    'content-disposition': `${claims.attachment ? 'attachment' : 'inline'}; filename="${name}"`,
    'cache-control': `private, max-age=${remaining}`,
    // A capability URL must not leak through the Referer of anything the page links to.
    'referrer-policy': 'no-referrer',
    'x-robots-tag': 'noindex',
  };
}

export type RangeRequest = { kind: 'whole' } | { kind: 'range'; start: number; end: number } | { kind: 'unsatisfiable' };

/**
 * A `Range` header against an object of `size` bytes (RFC 9110 §14): one `bytes=` range, or
 * the whole object. Several ranges, other units and anything malformed are answered with the
 * whole object, as the RFC allows a server that ignores Range.
 */
export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (header === undefined) return { kind: 'whole' };
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m) return { kind: 'whole' };
  const [, first = '', last = ''] = m;
  if (first === '' && last === '') return { kind: 'whole' };
  if (first === '') {
    // A suffix: the last N bytes.
    const n = Number(last);
    if (n === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'range', start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(first);
  if (!Number.isSafeInteger(start)) return { kind: 'whole' };
  if (start >= size) return { kind: 'unsatisfiable' };
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (!Number.isSafeInteger(end) || end < start) return { kind: 'whole' };
  return { kind: 'range', start, end };
}
