/** Links to an execution's ASSET outputs, minted afresh every time a result is read or a callback sent. */
import { downloadName } from '../core/form-text';
import { isLinkFileName } from '../core/asset-links';
import type { OutputLink } from '../core/output-assets';
import type { ObjectRef, PresignedDownload } from '../core/ports';
import type { Execution } from '../core/types';
import type { Deps } from '../adapters/deps';

const fileNameFor = (id: string, mediaType: string, index?: number): string | undefined => {
  const name = downloadName(id, mediaType, index);
  return isLinkFileName(name) ? name : undefined;
};

/**
 * A fresh capability link (Deps.assetLinks) for each ASSET output of a completed execution
 * among `ids` (callers: the visible outputs only, so no link to a hidden output is ever made;
 * owners: all), one per file of a list output. Nothing is minted, and the key material is not
 * read, when there are none.
 */
export async function outputLinks(
  d: Deps,
  e: Pick<Execution, 'status' | 'output_assets'>,
  baseUrl: string,
  ids: readonly string[] | null,
): Promise<Record<string, OutputLink>> {
  const refs = e.status === 'completed' ? (e.output_assets ?? {}) : {};
  const links: Record<string, OutputLink> = {};
  const now = d.clock.now();
  // Saved by a browser as `<output id>.<extension of its media type>` (thumbnail.png), a list's files as `<output id>-<n>.<extension>`.
  const link = (id: string, ref: ObjectRef, index?: number): Promise<PresignedDownload> =>
    d.assetLinks.link(ref, baseUrl, now, undefined, fileNameFor(id, ref.media_type, index));
  for (const id of ids ?? Object.keys(refs)) {
    const ref = Object.hasOwn(refs, id) ? refs[id] : undefined;
    if (ref === undefined) continue;
    const value: OutputLink = Array.isArray(ref)
      ? await Promise.all(ref.map((r, i) => (r === null ? null : link(id, r, i))))
      : await link(id, ref as ObjectRef);
    Object.defineProperty(links, id, { value, enumerable: true, writable: true, configurable: true });
  }
  return links;
}

/** The outputs a caller may see: the visible ones (every one for records that do not say). */
export const callerOutputIds = (e: Pick<Execution, 'visible_outputs' | 'outputs' | 'output_assets'>): string[] =>
  e.visible_outputs ?? [...Object.keys(e.outputs ?? {}), ...Object.keys(e.output_assets ?? {})];
