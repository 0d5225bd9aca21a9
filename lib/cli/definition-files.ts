/**
 * `@path` values in pipeline files: an asset input whose `value` is `@relative/path` takes that
 * file (relative to the pipeline file) as its current value, sent as a base64 data URI. The
 * service keeps an asset input's value in the definition, so the file must fit
 * DEFINITION_ASSET_MAX_BYTES; larger files go with each execution instead.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { DEFINITION_ASSET_MAX_BYTES, sizeText } from '../../functions/core/assets';
import { isPlainObject } from '../../functions/core/values';
import { fileProblem, isFileReference } from './asset-files';
import { mediaTypeForName } from './media-types';

/** One file a definition took, for plans and messages (never its bytes). */
export interface DefinitionFile {
  input: string;
  /** The path as written after `@`. */
  shown: string;
  bytes: number;
  mediaType: string;
}

export interface ResolvedFiles {
  /** The document with every `@path` replaced by its data URI (the same object when there were none). */
  doc: unknown;
  files: DefinitionFile[];
  problems: { path: string; reason: string }[];
}

/** Reads every asset input's `@path` value of `doc` (a parsed pipeline file in `baseDir`). */
export function resolveDefinitionFiles(doc: unknown, baseDir: string): ResolvedFiles {
  const files: DefinitionFile[] = [];
  const problems: ResolvedFiles['problems'] = [];
  if (!isPlainObject(doc) || !isPlainObject(doc.nodes)) return { doc, files, problems };
  let nodes: Record<string, unknown> | null = null;
  for (const [id, node] of Object.entries(doc.nodes)) {
    if (
      !isPlainObject(node) ||
      node.type !== 'input' ||
      node.value_type !== 'asset' ||
      typeof node.value !== 'string' ||
      !isFileReference(node.value)
    )
      continue;
    const shown = node.value.slice(1);
    const where = `nodes.${id}.value`;
    const read = readDefinitionFile(resolve(baseDir, shown), shown);
    if (typeof read === 'string') {
      problems.push({ path: where, reason: read });
      continue;
    }
    const mediaType = mediaTypeForName(shown);
    nodes ??= { ...doc.nodes };
    nodes[id] = { ...node, value: `data:${mediaType};base64,${read.toString('base64')}` };
    files.push({ input: id, shown, bytes: read.length, mediaType });
  }
  return { doc: nodes === null ? doc : { ...doc, nodes }, files, problems };
}

/** The file's bytes, or why it cannot be an asset input's value. */
function readDefinitionFile(path: string, shown: string): Buffer | string {
  if (shown === '') return 'give a file after @, e.g. "@photos/cat.png" (relative to the pipeline file)';
  try {
    const st = statSync(path);
    if (st.isDirectory()) return `@${shown} is a directory; give a file`;
    // Checked before reading, so a large file is never read whole.
    if (st.size > DEFINITION_ASSET_MAX_BYTES) {
      return `@${shown} is ${st.size} bytes; an asset input's value in a definition holds at most ${DEFINITION_ASSET_MAX_BYTES} bytes (${sizeText(DEFINITION_ASSET_MAX_BYTES)}); send larger files with each execution (pipegate execute <deployment> --input <id>=@<file>)`;
    }
    const bytes = readFileSync(path);
    if (bytes.length === 0) return `@${shown} is empty; an asset needs at least one byte`;
    if (bytes.length > DEFINITION_ASSET_MAX_BYTES) return `@${shown} grew past ${DEFINITION_ASSET_MAX_BYTES} bytes while being read`;
    return bytes;
  } catch (e) {
    return `@${shown}: ${fileProblem(e, shown)}`;
  }
}
