/**
 * ASSET values as callers send them: inline base64 or a data URI (small files), or a reference
 * to an upload made beforehand (large files). Everything here is pure; the media type of a
 * value is decided by sniffing its bytes (functions/core/sniff.ts), never by what a caller says.
 */
import { createHash } from 'node:crypto';
import { isUuid } from './ids';
import { acceptsMediaType } from './media-types';

export { acceptsMediaType };

/**
 * The largest execution request body that may carry inline assets. API Gateway accepts 10 MB,
 * but a synchronous Lambda invocation takes at most 6 MB of event (the body plus headers and
 * request context, and base64 grows bytes by a third), so 4 MiB leaves about 2 MB of margin.
 * That is about 3 MiB of decoded bytes; larger files go through an upload.
 */
export const INLINE_ASSET_BODY_MAX_BYTES = 4 * 1024 * 1024;

/**
 * An asset input lists at most this many accepted media types. Here, not in pipeline.ts, so the
 * request and answer shapes (shapes.ts) can name it without pulling JSONata into every bundle.
 */
export const MAX_MEDIA_TYPES = 32;

/** An asset input's current value in a definition (a data URI) decodes to at most this many bytes. */
export const DEFINITION_ASSET_MAX_BYTES = 64 * 1024;

/**
 * The largest upload (bytes). Using an upload reads it once, as a stream, to count, hash and
 * sniff it (digestStream): the function holds its head, never the file.
 */
export const UPLOAD_MAX_BYTES = 100 * 1024 * 1024;

/** Bytes whose format is not recognised are served and checked as this (functions/core/sniff.ts). */
export const UNKNOWN_MEDIA_TYPE = 'application/octet-stream';
/** How long an upload URL accepts the PUT (seconds). */
export const UPLOAD_URL_TTL_SECONDS = 3600;
/** How long an upload may be used in an execution after it was created (seconds): a day. */
export const UPLOAD_USE_SECONDS = 24 * 3600;

/** The route a caller uses for files too large to send inline (as a caller writes it). */
export const UPLOADS_ROUTE = 'POST /v1/deployments/{deployment_id}/uploads/';
/** The route an owner uses for a run's files larger than a definition's data URI may hold. */
export const PIPELINE_UPLOADS_ROUTE = 'POST /v1/pipelines/{pipeline_id}/uploads';

/** The asset value an upload answers with, to be put in `workflow_input` as it is. */
export const UPLOAD_VALUE_PREFIX = 'upload:';
export const uploadValue = (uploadId: string): string => `${UPLOAD_VALUE_PREFIX}${uploadId}`;
/** An upload's asset value, well formed (whether the upload exists is checked on use). */
export const isUploadValue = (x: unknown): x is string =>
  typeof x === 'string' && x.startsWith(UPLOAD_VALUE_PREFIX) && isUuid(x.slice(UPLOAD_VALUE_PREFIX.length));

// A media type essence as RFC 6838 spells it (type/subtype, restricted names), lowercase.
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;
export const isMediaType = (s: string): boolean => MEDIA_TYPE.test(s);
/** The same in any case: what a request may send (it is lower-cased before isMediaType), for the documents. */
export const MEDIA_TYPE_ANY_CASE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;
/** A pattern an input accepts: a media type, or a whole top-level type such as `image/*`. */
export const isMediaTypePattern = (s: string): boolean => isMediaType(s) || /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/\*$/.test(s);

const BASE64_ALPHABET = /^[A-Za-z0-9+/]*$/;

/**
 * Standard base64 with its padding, or without it; no whitespace, no URL-safe alphabet. Checked
 * with one character-class scan and arithmetic: a regex of repeated groups overflows V8's stack
 * on a few MB.
 */
function isBase64(s: string): boolean {
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  const body = s.slice(0, s.length - pad);
  if (!BASE64_ALPHABET.test(body)) return false;
  const rest = body.length % 4;
  return pad === 0 ? rest !== 1 : rest === 4 - pad;
}
const DATA_URI = /^data:([^,;]*)((?:;[^,;]*)*),(.*)$/s;

export type AssetValueForm = { kind: 'inline'; bytes: Uint8Array } | { kind: 'upload'; uploadId: string };

/**
 * What an ASSET value says, or a reason fit to show after "input 'x' ": inline bytes from
 * base64 or a base64 data URI, or an upload's id. The media type a data URI names is ignored:
 * the bytes decide it.
 */
export function parseAssetValue(value: string): { ok: true; form: AssetValueForm } | { ok: false; reason: string } {
  if (value.startsWith(UPLOAD_VALUE_PREFIX)) {
    const id = value.slice(UPLOAD_VALUE_PREFIX.length);
    return isUuid(id)
      ? { ok: true, form: { kind: 'upload', uploadId: id } }
      : { ok: false, reason: `names no upload: an upload value is "${UPLOAD_VALUE_PREFIX}<upload id>" as ${UPLOADS_ROUTE} answers it` };
  }
  let payload = value;
  if (value.startsWith('data:')) {
    const m = DATA_URI.exec(value);
    if (m === null) return { ok: false, reason: 'is not a valid data URI (data:<media type>;base64,<base64>)' };
    const params = (m[2] ?? '').split(';').map((p) => p.trim().toLowerCase());
    if (!params.includes('base64')) return { ok: false, reason: 'is a data URI without ;base64: only base64 data URIs are accepted' };
    payload = m[3] ?? '';
  }
  if (payload === '') return { ok: false, reason: 'is empty: an asset needs at least one byte' };
  if (!isBase64(payload))
    return { ok: false, reason: 'is not valid base64 (standard alphabet A-Z a-z 0-9 + /, optional = padding, no whitespace)' };
  const bytes = new Uint8Array(Buffer.from(payload, 'base64'));
  return { ok: true, form: { kind: 'inline', bytes } };
}

/** Lowercase hex SHA-256 of the bytes. */
export const sha256Hex = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** What a stream of bytes is, read once: its size, SHA-256 and its first `keep` bytes (for sniffing). */
export interface StreamDigest {
  bytes: number;
  sha256: string;
  head: Uint8Array;
}

/**
 * Reads a stream to its end holding at most `keep` bytes of it: the size, the SHA-256 and the
 * head, so a file of any size is checked in bounded memory (an upload of 100 MiB in a 256 MB
 * function).
 */
export async function digestStream(body: AsyncIterable<Uint8Array>, keep: number): Promise<StreamDigest> {
  const hash = createHash('sha256');
  const head = new Uint8Array(keep);
  let bytes = 0;
  for await (const chunk of body) {
    hash.update(chunk);
    if (bytes < keep) head.set(chunk.subarray(0, keep - bytes), bytes);
    bytes += chunk.length;
  }
  return { bytes, sha256: hash.digest('hex'), head: head.subarray(0, Math.min(bytes, keep)) };
}

/** "3 MiB", "64 KiB" or "1000 bytes": a size as a person reads it. */
export function sizeText(bytes: number): string {
  if (bytes % 1_073_741_824 === 0) return `${bytes / 1_073_741_824} GiB`;
  if (bytes % 1_048_576 === 0) return `${bytes / 1_048_576} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/** What an asset input accepts, for messages: "image/png or image/jpeg, at most 1 MiB". */
export function acceptsText(restrictions: { media_types?: readonly string[]; max_bytes?: number }): string {
  const types = restrictions.media_types?.length ? restrictions.media_types.join(' or ') : 'any media type';
  return restrictions.max_bytes === undefined ? types : `${types}, at most ${restrictions.max_bytes} bytes`;
}

/**
 * Null when a sniffed asset fits what its input accepts, else the reason (for "input 'x' ").
 * Bytes whose type cannot be sniffed are application/octet-stream.
 */
export function assetRestrictionProblem(
  restrictions: { media_types?: readonly string[]; max_bytes?: number },
  asset: { media_type: string; bytes: number },
): string | null {
  const accepts = acceptsText(restrictions);
  if (!acceptsMediaType(restrictions.media_types, asset.media_type))
    return `is ${asset.media_type} (sniffed from its bytes) but accepts ${accepts}`;
  if (restrictions.max_bytes !== undefined && asset.bytes > restrictions.max_bytes) return `is ${asset.bytes} bytes but accepts ${accepts}`;
  return null;
}
