import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { sortedJson } from './canonical';
import { nodeDependencies } from './nodes';
import { DEFAULT_MAX_NODES, DEFINITION_ENTRIES, describeType, NodeKey, TOP_LEVEL_FIELDS } from './definition-schema';
import { expressionProblem } from './jsonata-limits';
import { isNodeType, kindOf, kindOfType, NODE_TYPES, nodeIdsOfRole, type NodeType, type PipelineNode } from './nodes';
import { fieldAt, type FieldPath } from './nodes/kind';
import { secretSyntaxProblems } from './owner-secrets';
import { NO_RESUME_URLS, resumeReferences } from './resume-refs';
import { skippableIds, type FlowFacts } from './flow';
import type { PipelineDefinition, Problem } from './types';
import { isPlainObject } from './values';

export {
  ASSET_RESTRICTIONS,
  DEFAULT_HTTP_TIMEOUT_MS,
  DEFAULT_MAX_NODES,
  DELAY_MAX_MS,
  HTTP_METHODS,
  HTTP_TIMEOUT_MAX_MS,
  MAX_DESCRIPTION_LENGTH,
  MAX_MEDIA_TYPES,
  Node,
  PipelineDefinitionSchema,
  TOP_LEVEL_FIELDS,
} from './definition-schema';
export { NODE_ID_PATTERN, PIPELINE_ID_PATTERN, RESERVED_NODE_IDS } from './ids';
export { NODE_TYPES, nodeDependencies } from './nodes';

export type ValidationResult = { ok: true; definition: PipelineDefinition } | { ok: false; problems: Problem[] };
/* ------------------------------------------------------------------ paths */

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

function joinPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  if (IDENTIFIER.test(key)) return base === '' ? key : `${base}.${key}`;
  return `${base}[${JSON.stringify(key)}]`;
}

function fieldPath(base: string, at: FieldPath): string {
  return at.reduce<string>((path, key) => joinPath(path, key), base);
}

function issuePath(base: string, issue: v.BaseIssue<unknown>): string {
  let path = base;
  for (const item of issue.path ?? []) {
    const key = item.key;
    path = joinPath(path, typeof key === 'number' ? key : String(key));
  }
  return path;
}

function quoteList(items: readonly string[]): string {
  return items.join(', ');
}

/* ------------------------------------------------------------------ validation */

interface NodeFacts {
  id: string;
  type: NodeType | null;
  /** References by field path, only those that are strings. */
  refs: { path: string; target: string }[];
  /** Wait nodes whose resume URL it names (`$resume_url`), by field path: not a dependency. */
  resumeRefs: { path: string; target: string }[];
  /** Its `if` (a string) and `join` as written, and whether it runs on any one of its inputs (`join: "any"`, an output's list of `from`). */
  conditional: boolean;
  join: unknown;
  joinsAny: boolean;
}

/** Why a control-flow field cannot be on a node of this type (the schema would only say "unknown field"). */
const FLOW_FIELD_REFUSALS: Partial<Record<NodeType, Record<string, string>>> = {
  input: {
    if: 'an input cannot carry `if`: its value is always there (put the condition on the nodes that read it)',
    join: 'an input reads no node: `join` is for nodes that read others',
  },
  output: { join: 'an output takes the first of its `from` that ran (list several to merge branches): leave `join` out' },
};

/**
 * Checks a pipeline definition and lists every problem found, each with a dotted path and a
 * reason. Never throws, whatever the input.
 */
export function validateDefinition(input: unknown, limits: { maxNodes: number } = { maxNodes: DEFAULT_MAX_NODES }): ValidationResult {
  try {
    return validate(input, limits.maxNodes);
  } catch (e) {
    // Plain JSON never gets here; exotic values (throwing getters, proxies) might.
    return {
      ok: false,
      problems: [{ path: '', reason: `the definition could not be read: ${e instanceof Error ? e.message : String(e)}` }],
    };
  }
}

function validate(input: unknown, maxNodes: number): ValidationResult {
  const problems: Problem[] = [];
  if (!isPlainObject(input)) {
    return {
      ok: false,
      problems: [{ path: '', reason: `a definition must be an object with a "nodes" field, got ${describeType(input)}` }],
    };
  }
  for (const key of Object.keys(input)) {
    if (!Object.hasOwn(DEFINITION_ENTRIES, key)) {
      problems.push({ path: joinPath('', key), reason: `unknown field; a definition holds only ${quoteList(TOP_LEVEL_FIELDS)}` });
    }
  }
  // Every field but the nodes, checked by its own schema; the nodes are walked below.
  const fields: Record<string, unknown> = {};
  for (const key of TOP_LEVEL_FIELDS) {
    if (key === 'nodes' || !Object.hasOwn(input, key)) continue;
    const parsed = v.safeParse(DEFINITION_ENTRIES[key], input[key], { abortPipeEarly: true });
    if (parsed.success) fields[key] = parsed.output;
    else for (const issue of parsed.issues) problems.push({ path: issuePath(key, issue), reason: issue.message });
  }

  const rawNodes = input.nodes;
  if (!Object.hasOwn(input, 'nodes')) {
    problems.push({ path: 'nodes', reason: 'is required: an object of nodes keyed by node id' });
    return { ok: false, problems };
  }
  if (!isPlainObject(rawNodes)) {
    problems.push({ path: 'nodes', reason: `must be an object of nodes keyed by node id, got ${describeType(rawNodes)}` });
    return { ok: false, problems };
  }
  const ids = Object.keys(rawNodes);
  if (ids.length === 0) problems.push({ path: 'nodes', reason: 'must hold at least one node' });
  if (ids.length > maxNodes) problems.push({ path: 'nodes', reason: `holds ${ids.length} nodes; at most ${maxNodes} are allowed` });

  const facts = new Map<string, NodeFacts>();
  const nodes: Record<string, PipelineNode> = {};
  for (const id of ids) {
    const nodePath = joinPath('nodes', id);
    const fact: NodeFacts = { id, type: null, refs: [], resumeRefs: [], conditional: false, join: undefined, joinsAny: false };
    facts.set(id, fact);
    const key = v.safeParse(NodeKey, id, { abortPipeEarly: true });
    if (!key.success) problems.push(...key.issues.map((issue) => ({ path: nodePath, reason: issue.message })));
    const node = validateNode(rawNodes[id], nodePath, fact, problems);
    if (node) Object.defineProperty(nodes, id, { value: node, enumerable: true, writable: true, configurable: true });
  }

  checkReferences(facts, problems);
  problems.push(...findCycles(ids, facts));
  problems.push(...joinProblems(facts));

  if (problems.length > 0) return { ok: false, problems };
  // Each field was checked by its schema above; the nodes first, as definitions are stored.
  return { ok: true, definition: { nodes, ...fields } as PipelineDefinition };
}

function validateNode(raw: unknown, nodePath: string, fact: NodeFacts, problems: Problem[]): PipelineNode | null {
  if (!isPlainObject(raw)) {
    problems.push({ path: nodePath, reason: `must be an object describing the node, got ${describeType(raw)}` });
    return null;
  }
  const type = raw.type;
  if (!Object.hasOwn(raw, 'type')) {
    problems.push({ path: joinPath(nodePath, 'type'), reason: `is required: one of ${quoteList(NODE_TYPES)}` });
    return null;
  }
  if (!isNodeType(type)) {
    const shown = typeof type === 'string' ? `'${type}'` : describeType(type);
    problems.push({ path: joinPath(nodePath, 'type'), reason: `unknown node type ${shown}; expected one of ${quoteList(NODE_TYPES)}` });
    return null;
  }
  const kind = kindOfType(type);
  fact.type = type;
  fact.conditional = typeof raw.if === 'string';
  fact.join = raw.join;
  fact.joinsAny = raw.join === 'any' || (type === 'output' && Array.isArray(raw.from));
  const { entries } = kind.object;
  const before = problems.length;

  for (const key of Object.keys(raw)) {
    if (!Object.hasOwn(entries, key)) {
      const refused = FLOW_FIELD_REFUSALS[type]?.[key];
      problems.push({
        path: joinPath(nodePath, key),
        reason:
          refused ?? `unknown field for ${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type} node; allowed: ${quoteList(Object.keys(entries))}`,
      });
    }
  }
  const parsed = v.safeParse(kind.schema, raw, { abortPipeEarly: true });
  if (!parsed.success) {
    // Unknown fields are listed above, all of them; the strict object names only the first. A
    // nested node's (a map's `node`) are listed by the kind's checks.
    const unknownField = (issue: v.BaseIssue<unknown>) =>
      issue.expected === 'never' &&
      (issue.path?.length === 1 || (kind.nested !== undefined && issue.path?.length === 2 && issue.path[0]?.key === kind.nested));
    for (const issue of parsed.issues) if (!unknownField(issue)) problems.push({ path: issuePath(nodePath, issue), reason: issue.message });
  }

  for (const ref of kind.references(raw)) fact.refs.push({ path: fieldPath(nodePath, ref.at), target: ref.target });
  for (const field of kind.expressions) {
    const text = fieldAt(raw, field);
    // An empty one is the schema's to report; one of blanks is as empty.
    if (typeof text === 'string' && text !== '') {
      const problem = text.trim() === '' ? 'must not be empty' : expressionProblem(text);
      if (problem) problems.push({ path: fieldPath(nodePath, field.split('.')), reason: problem });
    }
  }
  for (const p of kind.checks?.(raw) ?? []) problems.push({ path: fieldPath(nodePath, p.at), reason: p.reason });
  problems.push(...secretSyntaxProblems({ type, ...kind.secrets, expressions: kind.expressions }, nodePath, raw));
  const resume = resumeReferences({ type, ...(kind.resumeUrls ?? NO_RESUME_URLS), expressions: kind.expressions }, nodePath, raw);
  fact.resumeRefs.push(...resume.refs);
  problems.push(...resume.problems);
  // A nested node (a map's): its expressions and secrets as its own kind declares them.
  const inner = kind.nested === undefined ? undefined : raw[kind.nested];
  if (kind.nested !== undefined && isPlainObject(inner) && isNodeType(inner.type)) {
    const innerKind = kindOfType(inner.type);
    const innerPath = joinPath(nodePath, kind.nested);
    for (const field of innerKind.expressions) {
      const text = fieldAt(inner, field);
      if (typeof text === 'string' && text !== '') {
        const problem = text.trim() === '' ? 'must not be empty' : expressionProblem(text);
        if (problem) problems.push({ path: fieldPath(innerPath, field.split('.')), reason: problem });
      }
    }
    problems.push(
      ...secretSyntaxProblems({ type: inner.type, ...innerKind.secrets, expressions: innerKind.expressions }, innerPath, inner),
    );
    // A wait node keeps one event, and a map runs its node once per item: an item cannot hand out a resume URL.
    const innerResume = resumeReferences(
      { type: inner.type, ...(innerKind.resumeUrls ?? NO_RESUME_URLS), expressions: innerKind.expressions },
      innerPath,
      inner,
    );
    problems.push(...innerResume.problems);
    for (const ref of innerResume.refs) {
      problems.push({
        path: ref.path,
        reason: `names the resume URL of '${ref.target}', but a map's node runs once per item and a wait node is resumed once; poll the job instead (poll) or wait after the map`,
      });
    }
  }

  if (!parsed.success || problems.length > before) return null;
  return parsed.output as PipelineNode;
}

function checkReferences(facts: Map<string, NodeFacts>, problems: Problem[]): void {
  for (const fact of facts.values()) {
    for (const { path, target } of fact.resumeRefs) {
      const type = facts.get(target)?.type;
      if (type === undefined) problems.push({ path, reason: `names the resume URL of '${target}', but no node has that id` });
      else if (type !== null && kindOfType(type).role !== 'wait')
        problems.push({
          path,
          reason: `names the resume URL of '${target}', ${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type} node; only wait nodes have one`,
        });
    }
    const seen = new Set<string>();
    for (const { path, target } of fact.refs) {
      const targetFact = facts.get(target);
      if (target === fact.id) {
        problems.push({ path, reason: `a node cannot take its own value ('${target}')` });
      } else if (!targetFact) {
        problems.push({ path, reason: `refers to node '${target}', which does not exist` });
      } else if (targetFact.type !== null && !kindOfType(targetFact.type).feeds) {
        const t = targetFact.type;
        problems.push({
          path,
          reason: `refers to '${target}', ${/^[aeiou]/.test(t) ? 'an' : 'a'} ${t} node; ${t} nodes cannot feed other nodes`,
        });
      } else if (seen.has(target)) {
        problems.push({ path, reason: `lists '${target}' more than once` });
      }
      seen.add(target);
    }
  }
}

/**
 * A `join: "any"` must be able to matter: at least one node it reads may be skipped (it has an
 * `if`, or reads one that may be). Otherwise the owner meant something else.
 */
function joinProblems(facts: Map<string, NodeFacts>): Problem[] {
  const flow = new Map<string, FlowFacts>();
  for (const [id, f] of facts) {
    const deps = [...new Set(f.refs.map((r) => r.target))].filter((t) => t !== id && facts.has(t));
    flow.set(id, { deps, conditional: f.conditional && f.type !== 'input', joinsAny: f.joinsAny });
  }
  const skippable = skippableIds(flow);
  const problems: Problem[] = [];
  for (const [id, f] of facts) {
    if (f.join !== 'any' || f.type === null || f.type === 'input' || f.type === 'output') continue;
    const deps = flow.get(id)?.deps ?? [];
    if (deps.some((d) => skippable.has(d))) continue;
    problems.push({
      path: joinPath(joinPath('nodes', id), 'join'),
      reason:
        deps.length === 0
          ? '`join: "any"` needs inputs, at least one of which may be skipped'
          : `\`join: "any"\` needs an input that may be skipped (one with \`if\`, or reading one), and none of ${deps.map((d) => `'${d}'`).join(', ')} may be: leave \`join\` out`,
    });
  }
  return problems;
}

/**
 * Finds cycles without recursion (any input size is safe): peel off nodes whose
 * dependencies are all settled; whatever remains sits on or behind a cycle. Walking
 * dependencies from a remaining node must come back to a node already visited, which spells
 * out one cycle; remove it and repeat.
 */
function findCycles(ids: string[], facts: Map<string, NodeFacts>): Problem[] {
  const deps = new Map<string, string[]>();
  for (const id of ids) {
    const fact = facts.get(id);
    const targets = (fact?.refs ?? [])
      .map((r) => r.target)
      .filter((t) => {
        const targetType = facts.get(t)?.type;
        return t !== id && targetType !== undefined && (targetType === null || kindOfType(targetType).feeds);
      });
    deps.set(id, [...new Set(targets)]);
  }
  const remaining = new Set(ids);
  const problems: Problem[] = [];
  const order = new Map(ids.map((id, i) => [id, i]));

  const peel = (): void => {
    let changed = true;
    while (changed) {
      changed = false;
      for (const id of remaining) {
        if (!(deps.get(id) ?? []).some((d) => remaining.has(d))) {
          remaining.delete(id);
          changed = true;
        }
      }
    }
  };

  peel();
  while (remaining.size > 0) {
    const [start] = remaining;
    if (start === undefined) break;
    const walk: string[] = [];
    const at = new Map<string, number>();
    let current: string = start;
    while (!at.has(current)) {
      at.set(current, walk.length);
      walk.push(current);
      const next = (deps.get(current) ?? []).find((d) => remaining.has(d));
      if (next === undefined) break;
      current = next;
    }
    const from = at.get(current) ?? 0;
    // The walk follows dependencies; reversed it follows the data.
    const cycle = walk.slice(from).reverse();
    let first = 0;
    cycle.forEach((id, i) => {
      const cur = cycle[first];
      if (cur !== undefined && (order.get(id) ?? 0) < (order.get(cur) ?? 0)) first = i;
    });
    const rotated = [...cycle.slice(first), ...cycle.slice(0, first)];
    const head = rotated[0] ?? start;
    problems.push({ path: joinPath('nodes', head), reason: `cycle: ${[...rotated, head].join(' → ')}` });
    for (const id of cycle) remaining.delete(id);
    peel();
  }
  return problems;
}

/* ------------------------------------------------------------------ canonical form */

/** The definition as JSON with every object's keys sorted: its top-level fields that are present, `nodes` always. */
export function canonicalDefinition(def: PipelineDefinition): string {
  const content: Record<string, unknown> = { nodes: def.nodes };
  for (const field of TOP_LEVEL_FIELDS) {
    const value = (def as Record<string, unknown>)[field];
    if (field !== 'nodes' && value !== undefined) content[field] = value;
  }
  return sortedJson(content);
}

/** sha256 (hex) of the canonical JSON: equal for definitions that differ only in key order. */
export function contentHash(def: PipelineDefinition): string {
  return createHash('sha256').update(canonicalDefinition(def), 'utf8').digest('hex');
}

/* ------------------------------------------------------------------ graph helpers */

/**
 * Every node id, each after all of its dependencies; among nodes that are ready together,
 * declaration order decides. Throws on a cycle or a missing reference (validate first).
 */
export function topologicalOrder(def: PipelineDefinition): string[] {
  const ids = Object.keys(def.nodes);
  const pending = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  for (const id of ids) {
    const node = def.nodes[id];
    const deps = node ? [...new Set(nodeDependencies(node))] : [];
    pending.set(id, deps.length);
    for (const d of deps) {
      if (!Object.hasOwn(def.nodes, d)) throw new Error(`node '${id}' refers to '${d}', which does not exist`);
      dependents.set(d, [...(dependents.get(d) ?? []), id]);
    }
  }
  const order: string[] = [];
  const done = new Set<string>();
  while (order.length < ids.length) {
    const next = ids.find((id) => !done.has(id) && pending.get(id) === 0);
    if (next === undefined) throw new Error('the definition has a cycle');
    done.add(next);
    order.push(next);
    for (const dependent of dependents.get(next) ?? []) pending.set(dependent, (pending.get(dependent) ?? 0) - 1);
  }
  return order;
}

/**
 * Wait nodes whose resume URL the pipeline hands to its own http nodes (`$resume_url`): a job
 * the pipeline submitted resumes them (a webhook), not a person.
 */
export function webhookWaits(def: PipelineDefinition): Set<string> {
  const out = new Set<string>();
  for (const [id, node] of Object.entries(def.nodes)) {
    const kind = kindOf(node);
    if (kind.resumeUrls === undefined) continue;
    const found = resumeReferences({ type: node.type, ...kind.resumeUrls, expressions: kind.expressions }, `nodes.${id}`, node);
    for (const ref of found.refs) out.add(ref.target);
  }
  return out;
}

/** Input node ids in declaration order. */
export function inputNodeIds(def: PipelineDefinition): string[] {
  return nodeIdsOfRole(def.nodes, 'input');
}

/** Output node ids in declaration order. */
export function outputNodeIds(def: PipelineDefinition): string[] {
  return nodeIdsOfRole(def.nodes, 'output');
}
