/**
 * The media type of bytes, sniffed from their content with `file-type` (a maintained detector
 * of magic numbers and container formats), never taken from a caller's word. Pure: no I/O.
 */
import { fileTypeFromBuffer } from 'file-type';
import { UNKNOWN_MEDIA_TYPE } from './assets';

export { UNKNOWN_MEDIA_TYPE };

/** How many leading bytes sniffing needs (file-type's own figure): read no more of a stored object. */
export const SNIFF_BYTES = 4100;

/** The media type the bytes are, or application/octet-stream when no known format matches. */
export async function sniffMediaType(bytes: Uint8Array): Promise<string> {
  if (bytes.length === 0) return UNKNOWN_MEDIA_TYPE;
  try {
    const found = await fileTypeFromBuffer(bytes.subarray(0, SNIFF_BYTES));
    return found?.mime ?? UNKNOWN_MEDIA_TYPE;
  } catch {
    // A truncated or malformed container is not a format we can vouch for.
    return UNKNOWN_MEDIA_TYPE;
  }
}
