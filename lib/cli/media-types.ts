/**
 * File extensions and media types, both ways, for the CLI's files: the extension a downloaded
 * output gets from its media type, and the media type a definition's `@path` data URI names
 * (cosmetic there: the service sniffs the bytes and ignores what a data URI says).
 */
import { extname } from 'node:path';

const TABLE: readonly (readonly [string, string, ...string[]])[] = [
  ['image/png', '.png'],
  ['image/jpeg', '.jpg', '.jpeg'],
  ['image/gif', '.gif'],
  ['image/webp', '.webp'],
  ['image/avif', '.avif'],
  ['image/heic', '.heic'],
  ['image/tiff', '.tif', '.tiff'],
  ['image/bmp', '.bmp'],
  ['image/svg+xml', '.svg'],
  ['image/x-icon', '.ico'],
  ['video/mp4', '.mp4'],
  ['video/webm', '.webm'],
  ['video/quicktime', '.mov'],
  ['audio/mpeg', '.mp3'],
  ['audio/wav', '.wav'],
  ['audio/ogg', '.ogg'],
  ['audio/flac', '.flac'],
  ['application/pdf', '.pdf'],
  ['application/json', '.json'],
  ['application/zip', '.zip'],
  ['application/gzip', '.gz'],
  ['text/plain', '.txt'],
  ['text/csv', '.csv'],
  ['application/octet-stream', '.bin'],
];

const EXTENSION_OF = new Map(TABLE.map(([type, ext]) => [type, ext]));
const TYPE_OF = new Map(TABLE.flatMap(([type, ...exts]) => exts.map((e) => [e, type] as const)));

/** The extension (with its dot) for a media type; `.bin` for one this table does not know. */
export function extensionFor(mediaType: string): string {
  const essence = mediaType.split(';')[0]?.trim().toLowerCase() ?? '';
  return EXTENSION_OF.get(essence) ?? '.bin';
}

/** The media type a file name suggests; application/octet-stream when its extension is unknown. */
export function mediaTypeForName(name: string): string {
  return TYPE_OF.get(extname(name).toLowerCase()) ?? 'application/octet-stream';
}
