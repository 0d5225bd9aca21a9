/**
 * Assets a run produces or passes on: when an http node's answer is a file, what media type it
 * is stored as, how big it may be, and how an ASSET output looks to callers. Pure.
 *
 * An asset travels through a run as the view nodes see, `{url, media_type, bytes, sha256}`; the
 * engine keeps, beside it, the ObjectRef it stands for (functions/core/engine.ts). An output (or
 * an http node's `body_asset`) is an asset only when its value's `url` is that of an asset this
 * very run holds: a transform can pass an asset on, or rebuild the object, but a URL it makes
 * up, or one of another execution, is never turned into a reference, so no link can be minted
 * to an object the run does not own.
 */
import { servedAsAttachment } from './asset-links';
import { isMediaType, UNKNOWN_MEDIA_TYPE, UPLOAD_MAX_BYTES } from './assets';
import type { ObjectRef, OutputAssetRef, PresignedDownload } from './ports';

/**
 * The largest binary answer an http node takes, and the largest asset it sends as its body
 * (bytes): the largest upload (assets.ts UPLOAD_MAX_BYTES), so any asset a caller can hand in
 * can be sent on. Neither is held in memory (an answer streams to the bucket a part at a time,
 * services/object-writer.ts; a body streams from it), so the limit is set by time, not memory:
 * 100 MiB within the http node's longest time-out (30 s) takes about 3.5 MB/s.
 */
export const HTTP_ASSET_MAX_BYTES = UPLOAD_MAX_BYTES;

/** The media type without parameters, lowercase; '' when there is none. */
export const mediaTypeEssence = (contentType: string | undefined): string => (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';

const TEXT_APPLICATION = new Set([
  'application/json',
  'application/xml',
  'application/javascript',
  'application/ecmascript',
  'application/x-www-form-urlencoded',
  'application/x-ndjson',
  'application/graphql',
]);

/**
 * Whether an http answer with this Content-Type is a file (an asset) rather than JSON or text:
 * image/*, audio/*, video/*, font/*, application/octet-stream, application/pdf, archives...
 * Text (text/*), JSON and XML (including `+json` and `+xml` suffixes, except image/svg+xml,
 * which is an image) and answers without a usable Content-Type stay values as before.
 */
export function isBinaryMediaType(contentType: string | undefined): boolean {
  const essence = mediaTypeEssence(contentType);
  if (!isMediaType(essence)) return false;
  const [top = ''] = essence.split('/');
  if (top === 'text' || top === 'multipart' || top === 'message') return false;
  if (top === 'image' || top === 'audio' || top === 'video' || top === 'font' || top === 'model') return true;
  if (TEXT_APPLICATION.has(essence) || essence.endsWith('+json') || essence.endsWith('+xml')) return false;
  return true;
}

/**
 * The media type an http node's binary answer is stored (and served) as: what the bytes sniff
 * as; when no known format matches, the upstream's declared type only if it is one served as an
 * attachment anyway (SVG, HTML, PDF...), since a type a browser shows inline must be proven by
 * the bytes; otherwise application/octet-stream.
 */
export function answerMediaType(sniffed: string, declared: string | undefined): string {
  if (sniffed !== UNKNOWN_MEDIA_TYPE) return sniffed;
  const essence = mediaTypeEssence(declared);
  return isMediaType(essence) && servedAsAttachment(essence) ? essence : UNKNOWN_MEDIA_TYPE;
}

/** An ASSET output as callers read it in `response_data`. */
export interface AssetOutputValue {
  value: string;
  value_type: 'ASSET';
  media_type: string;
  bytes: number;
  expires_at: string;
}

export const assetOutputValue = (ref: ObjectRef, link: PresignedDownload): AssetOutputValue => ({
  value: link.url,
  value_type: 'ASSET',
  media_type: ref.media_type,
  bytes: ref.bytes,
  expires_at: link.expires_at,
});

/**
 * A list of files as callers read it (a map's renders): the single file's fields, each a list in
 * the files' order; null in every list where an item failed under `on_item_error: "skip"`.
 * `expires_at` is the links' (the earliest), null when the list holds no file.
 */
export interface AssetListOutputValue {
  value: (string | null)[];
  value_type: 'ASSET';
  media_type: (string | null)[];
  bytes: (number | null)[];
  expires_at: string | null;
}

/** Fresh links to one ASSET output: one link, or one per file of a list (null where it has none). */
export type OutputLink = PresignedDownload | readonly (PresignedDownload | null)[];

/** An ASSET output with its link(s); null when the links do not match what it refers to. */
export function assetOutputOf(ref: OutputAssetRef, link: OutputLink): AssetOutputValue | AssetListOutputValue | null {
  if (!Array.isArray(ref)) return Array.isArray(link) ? null : assetOutputValue(ref, link as PresignedDownload);
  const links = link as readonly (PresignedDownload | null)[];
  if (!Array.isArray(link) || links.length !== ref.length) return null;
  const expiries = links.flatMap((l) => (l === null ? [] : [l.expires_at])).sort();
  return {
    value: links.map((l) => l?.url ?? null),
    value_type: 'ASSET',
    media_type: ref.map((r) => r?.media_type ?? null),
    bytes: ref.map((r) => r?.bytes ?? null),
    expires_at: expiries[0] ?? null,
  };
}

/** The files an ASSET output refers to, each with its place in a list (undefined: a single file). */
export function outputFiles(ref: OutputAssetRef): { ref: ObjectRef; index: number | undefined }[] {
  if (!Array.isArray(ref)) return [{ ref, index: undefined }];
  return ref.flatMap((r, index) => (r === null ? [] : [{ ref: r, index }]));
}

/** The object name an http node's binary answer is stored under, beside the execution's other objects. */
export const answerObjectName = (nodeId: string): string => `node.${nodeId}`;
