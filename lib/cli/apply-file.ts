/**
 * Pipeline files for `pipegate apply` (contract §10, pipelines as code): which files a set
 * of paths names, and what each holds beyond the definition: the `publish` block (which inputs
 * and outputs callers may see) and the `tests` block (runs whose outputs must match). Every
 * problem of every file is listed with its path, before anything reaches the service.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, extname, isAbsolute, join, relative, resolve } from 'node:path';
import * as v from 'valibot';
import { PublishRequest, type EventsRequest, type FormRequest } from '../../functions/core/contract';
import { OWNER_SECRET_NAME_PATTERN } from '../../functions/core/owner-secrets';
import { TOP_LEVEL_FIELDS } from '../../functions/core/definition-schema';
import { validateDefinition } from '../../functions/core/pipeline';
import type { InputValueType, PipelineDefinition, RawValue } from '../../functions/core/types';
import { expectedValue, isInputValueType, isPlainObject, isRawValue, matchesValueType } from '../../functions/core/values';
import { checkConsumers, type DeclaredConsumer } from './apply-consumers';
import { resolveDefinitionFiles, type DefinitionFile } from './definition-files';
import { UsageError } from './errors';
import { idFromPath, parsePipelineText } from './files';

export interface FileProblem {
  path: string;
  reason: string;
}

export interface ApplyTest {
  name: string;
  inputs: Record<string, RawValue>;
  expect: Record<string, RawValue>;
}

/** A pipeline file ready to apply: its definition checked, its publish and tests blocks read. */
export interface ApplyFile {
  /** Absolute path. */
  path: string;
  /** The path as a person reads it (relative to where the command runs). */
  shown: string;
  id: string;
  /** Only the definition's own top-level fields (TOP_LEVEL_FIELDS): what the service receives. */
  definition: PipelineDefinition;
  /** Input nodes in declaration order, with their current values. */
  inputs: { id: string; value_type: InputValueType; value: RawValue }[];
  /** Output node ids in declaration order. */
  outputs: string[];
  /** Wait node ids in declaration order. */
  waits: string[];
  /** What the file asks for each input, output and wait node (unmentioned ones are visible). */
  visibility: { inputs: Record<string, boolean>; outputs: Record<string, boolean>; waits: Record<string, boolean> };
  /** `publish.form`: the web form the file asks for; absent leaves the live form as it is. */
  form?: FormRequest;
  /** `publish.events`: what callers' event streams show; absent leaves it as it is. */
  events?: EventsRequest;
  tests: ApplyTest[];
  /** Owner secrets to set before pushing, each from an environment variable (never a value in the file). */
  secrets: { name: string; fromEnv: string }[];
  /** Files that asset inputs' `@path` values named, now data URIs in `definition`. */
  files: DefinitionFile[];
  /** `consumers`: the deployment's consumers the file names, matched by name (lib/cli/apply-consumers.ts). */
  consumers: DeclaredConsumer[];
}

export type CheckedFile = { ok: true; file: ApplyFile } | { ok: false; problems: FileProblem[] };

/** A pipeline file: the definition's own fields, then what only the CLI reads. */
const TOP_LEVEL = [...TOP_LEVEL_FIELDS, 'publish', 'tests', 'secrets', 'consumers'] as const;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PUBLISH_KEYS = ['inputs', 'outputs', 'waits'] as const;
const TEST_KEYS = ['name', 'inputs', 'expect'] as const;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const PIPELINE_FILE_EXTENSIONS = ['.json', '.yaml', '.yml'] as const;

/** Same path notation as the service's validation: `tests[0].inputs.name`, `nodes["a-b"]`. */
export function joinPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  if (IDENTIFIER.test(key)) return base === '' ? key : `${base}.${key}`;
  return `${base}[${JSON.stringify(key)}]`;
}

const describe = (x: unknown): string =>
  x === null
    ? 'null'
    : Array.isArray(x)
      ? 'a list'
      : typeof x === 'string'
        ? `the string ${JSON.stringify(x)}`
        : typeof x === 'object'
          ? 'an object'
          : `${typeof x} ${String(x)}`;

const list = (xs: readonly string[]): string => (xs.length === 0 ? '(none)' : xs.join(', '));

/** Input and output nodes as far as they can be read, even from a definition with problems. */
function nodesOf(nodes: unknown): {
  inputs: Map<string, InputValueType | null>;
  outputs: Set<string>;
  waits: Set<string>;
  all: Set<string>;
} {
  const inputs = new Map<string, InputValueType | null>();
  const outputs = new Set<string>();
  const waits = new Set<string>();
  const all = new Set<string>();
  if (!isPlainObject(nodes)) return { inputs, outputs, waits, all };
  for (const [id, node] of Object.entries(nodes)) {
    all.add(id);
    if (!isPlainObject(node)) continue;
    if (node.type === 'input') inputs.set(id, isInputValueType(node.value_type) ? node.value_type : null);
    else if (node.type === 'output') outputs.add(id);
    else if (node.type === 'wait') waits.add(id);
  }
  return { inputs, outputs, waits, all };
}

/**
 * `publish`: the body of the service's publish request (`PublishRequest`, contract.ts),
 * checked with the service's own schema, so the file takes exactly what a publish takes
 * (`inputs`, `outputs`, `form`, `events`) with the same limits and words; beyond it, every
 * entry must name an input or output node of this file.
 */
function checkPublish(
  block: unknown,
  nodes: ReturnType<typeof nodesOf>,
  problems: FileProblem[],
): Pick<ApplyFile, 'visibility' | 'form' | 'events'> {
  const visibility: ApplyFile['visibility'] = { inputs: {}, outputs: {}, waits: {} };
  if (block === undefined || block === null) return { visibility };
  const parsed = v.safeParse(PublishRequest, block);
  if (!parsed.success) {
    for (const issue of parsed.issues)
      problems.push({ path: (issue.path ?? []).map((p) => String(p.key)).reduce(joinPath, 'publish'), reason: issue.message });
  }
  if (isPlainObject(block)) {
    for (const section of PUBLISH_KEYS) {
      const map = block[section];
      if (!isPlainObject(map)) continue;
      const kind = section === 'inputs' ? 'input' : section === 'outputs' ? 'output' : 'wait';
      const known = section === 'inputs' ? [...nodes.inputs.keys()] : section === 'outputs' ? [...nodes.outputs] : [...nodes.waits];
      for (const id of Object.keys(map)) {
        if (known.includes(id)) continue;
        problems.push({
          path: joinPath(joinPath('publish', section), id),
          reason: nodes.all.has(id)
            ? `node ${id} is not ${kind === 'wait' ? 'a' : 'an'} ${kind} node`
            : `no ${kind} node "${id}" (${kind}s: ${list(known)})`,
        });
      }
    }
  }
  if (!parsed.success) return { visibility };
  const { inputs, outputs, waits, form, events } = parsed.output;
  for (const [id, entry] of Object.entries(inputs ?? {})) visibility.inputs[id] = entry.visible;
  for (const [id, entry] of Object.entries(outputs ?? {})) visibility.outputs[id] = entry.visible;
  for (const [id, entry] of Object.entries(waits ?? {})) visibility.waits[id] = entry.visible;
  return { visibility, ...(form ? { form } : {}), ...(events ? { events } : {}) };
}

function checkSecrets(block: unknown, problems: FileProblem[]): ApplyFile['secrets'] {
  if (block === undefined || block === null) return [];
  if (!isPlainObject(block)) {
    problems.push({ path: 'secrets', reason: `must be an object of secret name → { from_env: "ENV_VAR" }, got ${describe(block)}` });
    return [];
  }
  const secrets: ApplyFile['secrets'] = [];
  for (const [name, entry] of Object.entries(block)) {
    const at = joinPath('secrets', name);
    if (!OWNER_SECRET_NAME_PATTERN.test(name)) {
      problems.push({
        path: at,
        reason: 'is not a secret name: start with a letter or an underscore, then letters, digits and underscores (at most 64)',
      });
      continue;
    }
    if (!isPlainObject(entry)) {
      problems.push({ path: at, reason: `must be { from_env: "ENV_VAR" }, got ${describe(entry)}` });
      continue;
    }
    const before = problems.length;
    for (const key of Object.keys(entry)) {
      if (key === 'from_env') continue;
      // Not even a hint of the value goes into the report: only that it must not be here.
      problems.push({
        path: joinPath(at, key),
        reason:
          key === 'value'
            ? 'secret values never go in a pipeline file; name an environment variable with from_env'
            : 'unknown key; an entry holds only from_env',
      });
    }
    const env = entry.from_env;
    if (typeof env !== 'string' || !ENV_NAME.test(env)) {
      problems.push({
        path: joinPath(at, 'from_env'),
        reason:
          env === undefined
            ? 'is required: the environment variable holding the value'
            : 'must be an environment variable name, e.g. RATES_TOKEN',
      });
    }
    if (problems.length === before && typeof env === 'string') secrets.push({ name, fromEnv: env });
  }
  return secrets;
}

function checkTests(block: unknown, nodes: ReturnType<typeof nodesOf>, problems: FileProblem[]): ApplyTest[] {
  if (block === undefined || block === null) return [];
  if (!Array.isArray(block)) {
    problems.push({ path: 'tests', reason: `must be a list of tests ({ name, inputs, expect }), got ${describe(block)}` });
    return [];
  }
  const tests: ApplyTest[] = [];
  const names = new Map<string, number>();
  block.forEach((test: unknown, i) => {
    const at = joinPath('tests', i);
    if (!isPlainObject(test)) {
      problems.push({ path: at, reason: `must be an object { name, inputs, expect }, got ${describe(test)}` });
      return;
    }
    const before = problems.length;
    for (const key of Object.keys(test)) {
      if (!(TEST_KEYS as readonly string[]).includes(key))
        problems.push({ path: joinPath(at, key), reason: 'unknown key; a test holds only name, inputs and expect' });
    }
    const name = test.name;
    if (typeof name !== 'string' || name.trim() === '') {
      problems.push({
        path: joinPath(at, 'name'),
        reason: name === undefined ? 'is required: what the test checks, in words' : `must be a non-empty string, got ${describe(name)}`,
      });
    } else if (names.has(name)) {
      problems.push({
        path: joinPath(at, 'name'),
        reason: `repeats the name of tests[${names.get(name) ?? 0}]; names tell tests apart in the report`,
      });
    } else names.set(name, i);

    const inputs: Record<string, RawValue> = {};
    if (test.inputs !== undefined && test.inputs !== null) {
      const here = joinPath(at, 'inputs');
      if (!isPlainObject(test.inputs))
        problems.push({ path: here, reason: `must be an object of input id → value, got ${describe(test.inputs)}` });
      else {
        for (const [id, value] of Object.entries(test.inputs)) {
          const p = joinPath(here, id);
          const type = nodes.inputs.get(id);
          if (!nodes.inputs.has(id)) {
            problems.push({
              path: p,
              reason: nodes.all.has(id)
                ? `node ${id} is not an input node`
                : `no input node "${id}" (inputs: ${list([...nodes.inputs.keys()])})`,
            });
          } else if (type === null || type === undefined) {
            // The node's own problem is listed under nodes; its type is unknown.
            if (!isRawValue(value)) problems.push({ path: p, reason: `must be a string, number or boolean, got ${describe(value)}` });
          } else if (!matchesValueType(type, value)) {
            problems.push({ path: p, reason: `must be ${expectedValue(type)} (input ${id} is ${type}), got ${describe(value)}` });
          } else inputs[id] = value;
        }
      }
    }

    const expect: Record<string, RawValue> = {};
    const here = joinPath(at, 'expect');
    if (test.expect === undefined || test.expect === null) {
      problems.push({ path: here, reason: 'is required: an object of output id → expected value' });
    } else if (!isPlainObject(test.expect)) {
      problems.push({ path: here, reason: `must be an object of output id → expected value, got ${describe(test.expect)}` });
    } else {
      for (const [id, value] of Object.entries(test.expect)) {
        const p = joinPath(here, id);
        if (!nodes.outputs.has(id)) {
          problems.push({
            path: p,
            reason: nodes.all.has(id)
              ? `node ${id} is not an output node`
              : `no output node "${id}" (outputs: ${list([...nodes.outputs])})`,
          });
        } else if (!isRawValue(value)) {
          problems.push({
            path: p,
            reason: `must be a string, a finite number or a boolean (outputs are RAW values), got ${describe(value)}`,
          });
        } else expect[id] = value;
      }
    }
    if (problems.length === before && typeof name === 'string') tests.push({ name, inputs, expect });
  });
  return tests;
}

/**
 * Checks a parsed pipeline file: the definition as the service would (locally, so a dry run
 * can report it too), unknown top-level keys, and the publish and tests blocks against the
 * file's own nodes.
 */
export function checkApplyDocument(doc: unknown, where: { path: string; shown: string; id: string }): CheckedFile {
  if (!isPlainObject(doc))
    return { ok: false, problems: [{ path: '(file)', reason: `must hold an object with "nodes", got ${describe(doc)}` }] };
  const problems: FileProblem[] = [];
  for (const key of Object.keys(doc)) {
    if (!(TOP_LEVEL as readonly string[]).includes(key))
      problems.push({ path: joinPath('', key), reason: `unknown key; a pipeline file holds only ${TOP_LEVEL.join(', ')}` });
  }
  const sent: Record<string, unknown> = {};
  for (const key of TOP_LEVEL_FIELDS) if (Object.hasOwn(doc, key)) sent[key] = doc[key];
  // The service applies its own node limit at push; here only the shape and references matter.
  const checked = validateDefinition(sent, { maxNodes: Number.MAX_SAFE_INTEGER });
  if (!checked.ok) problems.push(...checked.problems);
  const nodes = nodesOf(doc.nodes);
  const publish = checkPublish(doc.publish, nodes, problems);
  const tests = checkTests(doc.tests, nodes, problems);
  const secrets = checkSecrets(doc.secrets, problems);
  const consumers = checkConsumers(doc.consumers, problems);
  if (!checked.ok || problems.length > 0) return { ok: false, problems };
  const definition = checked.definition;
  const inputs: ApplyFile['inputs'] = [];
  const outputs: string[] = [];
  const waits: string[] = [];
  for (const [id, node] of Object.entries(definition.nodes)) {
    if (node.type === 'input') inputs.push({ id, value_type: node.value_type, value: node.value });
    else if (node.type === 'output') outputs.push(id);
    else if (node.type === 'wait') waits.push(id);
  }
  return { ok: true, file: { ...where, definition, inputs, outputs, waits, ...publish, tests, secrets, files: [], consumers } };
}

export interface Targets {
  files: ApplyFile[];
  /** Files that cannot be applied, each with every problem found. */
  invalid: { shown: string; problems: FileProblem[] }[];
}

/**
 * The pipeline files that `paths` name: a file as it is, a directory as every *.json, *.yaml
 * and *.yml file directly in it. A path that does not exist or a directory without pipeline
 * files is a UsageError; a file that does not hold a valid pipeline is listed in `invalid`.
 */
export function readTargets(paths: readonly string[], cwd: string): Targets {
  if (paths.length === 0) throw new UsageError('apply needs at least one pipeline file or directory', 'e.g. pipegate apply pipelines/');
  const chosen: string[] = [];
  for (const p of paths) {
    const abs = resolve(cwd, p);
    let isDir: boolean;
    try {
      isDir = statSync(abs).isDirectory();
    } catch (e) {
      const code = (e as { code?: string }).code;
      throw new UsageError(code === 'ENOENT' ? `no such file or directory: ${p}` : `cannot read ${p}: ${(e as Error).message}`);
    }
    if (!isDir) {
      chosen.push(abs);
      continue;
    }
    const inDir = readdirSync(abs, { withFileTypes: true })
      .filter(
        (d) =>
          (d.isFile() || d.isSymbolicLink()) && (PIPELINE_FILE_EXTENSIONS as readonly string[]).includes(extname(d.name).toLowerCase()),
      )
      .map((d) => join(abs, d.name))
      .filter((f) => statSync(f, { throwIfNoEntry: false })?.isFile() === true)
      .sort();
    if (inDir.length === 0)
      throw new UsageError(
        `${p} holds no pipeline files`,
        `apply reads the *.json, *.yaml and *.yml files directly in a directory (not its subdirectories)`,
      );
    chosen.push(...inDir);
  }

  const files: ApplyFile[] = [];
  const invalid: Targets['invalid'] = [];
  const seen = new Map<string, string>();
  for (const abs of [...new Set(chosen)]) {
    const rel = relative(cwd, abs);
    const shown = rel === '' || rel.startsWith('..') || isAbsolute(rel) ? abs : rel;
    let id: string;
    try {
      id = idFromPath(abs);
    } catch {
      invalid.push({
        shown,
        problems: [
          {
            path: '(file)',
            reason: `the file name ${basename(abs)} does not make a pipeline id; rename it (ids are 1-63 lower-case letters, digits or dashes)`,
          },
        ],
      });
      continue;
    }
    try {
      const resolved = resolveDefinitionFiles(parsePipelineText(readFileSync(abs, 'utf8'), basename(abs)), dirname(abs));
      const checked = checkApplyDocument(resolved.doc, { path: abs, shown, id });
      if (!checked.ok || resolved.problems.length > 0) {
        invalid.push({ shown, problems: [...resolved.problems, ...(checked.ok ? [] : checked.problems)] });
        continue;
      }
      checked.file.files = resolved.files;
      const other = seen.get(id);
      if (other !== undefined) {
        invalid.push({
          shown,
          problems: [{ path: '(file)', reason: `${other} is pipeline ${id} too; each pipeline comes from one file` }],
        });
        continue;
      }
      seen.set(id, shown);
      files.push(checked.file);
    } catch (e) {
      if (!(e instanceof UsageError)) throw e;
      invalid.push({ shown, problems: [{ path: '(file)', reason: e.message + (e.hint ? ` (${e.hint})` : '') }] });
    }
  }
  return { files, invalid };
}
