/**
 * Pipeline files: JSON or YAML, holding `description` and `nodes` (sent to the service) and
 * optionally `publish` and `tests` (pipelines as code, contract §10; kept on the client).
 */
import { readFileSync, statSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { TOP_LEVEL_FIELDS } from '../../functions/core/definition-schema';
import { PIPELINE_ID_PATTERN } from '../../functions/core/ids';
import { resolveDefinitionFiles, type DefinitionFile } from './definition-files';
import { UsageError } from './errors';
import { JsonSyntaxError, parseJsonWithPosition } from './json-position';

export interface PipelineFile {
  /** Absolute path of the file read. */
  path: string;
  /** The pipeline id: `--id`, else the file name without its extension. */
  id: string;
  /** What the service receives: the definition's own top-level fields (TOP_LEVEL_FIELDS), when present. */
  definition: { nodes: unknown } & Record<string, unknown>;
  /** The file's `publish` block, as written (undefined when absent). */
  publish: unknown;
  /** The file's `tests` block, as written (undefined when absent). */
  tests: unknown;
  /** Files that asset inputs' `@path` values named, now data URIs in `definition`. */
  files: DefinitionFile[];
}

export function checkPipelineId(id: string, from: string): string {
  if (!PIPELINE_ID_PATTERN.test(id)) {
    throw new UsageError(
      `${from} "${id}" is not a valid pipeline id`,
      'pipeline ids are 1-63 lower-case letters, digits or dashes, starting with a letter or digit',
    );
  }
  return id;
}

/** The id a file gets when none is given: its name without the last extension. */
export function idFromPath(path: string): string {
  const name = basename(path);
  const ext = extname(name);
  const stem = ext ? name.slice(0, -ext.length) : name;
  if (!PIPELINE_ID_PATTERN.test(stem)) {
    throw new UsageError(`cannot use "${stem}" (from the file name ${name}) as a pipeline id`, 'pass one with --id, e.g. --id my-pipeline');
  }
  return stem;
}

/** Parses file text as JSON (.json) or YAML (anything else; YAML also reads JSON). */
export function parsePipelineText(text: string, fileName: string): unknown {
  if (extname(fileName).toLowerCase() === '.json') {
    try {
      return parseJsonWithPosition(text);
    } catch (e) {
      if (e instanceof JsonSyntaxError)
        throw new UsageError(`${fileName} is not valid JSON (line ${e.line}, column ${e.column}): ${e.reason}`);
      throw e;
    }
  }
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const first = doc.errors[0];
    const where = first?.linePos?.[0] ? ` (line ${first.linePos[0].line}, column ${first.linePos[0].col})` : '';
    // yaml's pretty messages end with their own position and a code excerpt; keep the sentence.
    const reason = (first?.message.split('\n')[0] ?? 'parse error').replace(/ at line \d+, column \d+:?$/, '');
    throw new UsageError(`${fileName} is not valid YAML${where}: ${reason}`);
  }
  return doc.toJS() as unknown;
}

/** Reads a pipeline file; every local problem (missing, unreadable, not an object) is a UsageError. */
export function loadPipelineFile(path: string, opts: { id?: string; cwd?: string } = {}): PipelineFile {
  const abs = resolve(opts.cwd ?? process.cwd(), path);
  let text: string;
  try {
    if (statSync(abs).isDirectory()) throw new UsageError(`${path} is a directory; give a pipeline file (.json, .yaml or .yml)`);
    text = readFileSync(abs, 'utf8');
  } catch (e) {
    if (e instanceof UsageError) throw e;
    const code = (e as { code?: string }).code;
    throw new UsageError(code === 'ENOENT' ? `no such file: ${path}` : `cannot read ${path}: ${(e as Error).message}`);
  }
  const id = opts.id !== undefined ? checkPipelineId(opts.id, '--id') : idFromPath(abs);
  const doc = parsePipelineText(text, basename(abs));
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new UsageError(`${path} must hold an object with "nodes" (and optionally "description")`);
  }
  const resolved = resolveDefinitionFiles(doc, dirname(abs));
  if (resolved.problems.length > 0) {
    throw new UsageError(`${path}: ${resolved.problems.map((p) => `${p.path}: ${p.reason}`).join('\n  ')}`);
  }
  const o = resolved.doc as Record<string, unknown>;
  const fields: Record<string, unknown> = {};
  for (const key of TOP_LEVEL_FIELDS) if (key !== 'nodes' && o[key] !== undefined) fields[key] = o[key];
  const definition: PipelineFile['definition'] = { ...fields, nodes: o.nodes };
  return { path: abs, id, definition, publish: o.publish, tests: o.tests, files: resolved.files };
}
