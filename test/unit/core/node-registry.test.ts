/**
 * The node registry (functions/core/nodes/): every node type declared once, and every table,
 * walk and codec derived from it. These tests hold each kind to what the push, the engine and
 * the stored records need, through the example each kind declares, so a new kind that forgets
 * a reference or an expression check fails here by name.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as v from 'valibot';
import { defineNode, fieldAt, type NodeKindSpec } from '../../../functions/core/nodes/kind';
import {
  Node,
  NODE_CODES,
  NODE_KINDS,
  NODE_SCHEMAS,
  NODE_TYPE_OF_CODE,
  NODE_TYPES,
  nodeSchemaName,
  type NodeType,
} from '../../../functions/core/nodes';
import { validateDefinition } from '../../../functions/core/pipeline';
import { packProgress, unpackProgress } from '../../../functions/core/progress';
import { packTrace, unpackTrace } from '../../../functions/core/trace-codec';
import { SHAPES } from '../../../functions/core/shapes';

const given = {
  a: { type: 'input', value_type: 'string', value: 'x' },
  b: { type: 'input', value_type: 'string', value: 'y' },
};

/** A definition holding the kind's example as node `n`, beside the inputs it reads. */
const definitionWith = (node: unknown) => ({ nodes: { ...given, n: node } });

const pathOf = (at: readonly (string | number)[]): string =>
  at.reduce<string>((p, k) => (typeof k === 'number' ? `${p}[${k}]` : `${p}.${k}`), 'nodes.n');

/** A copy of `node` with the value at `at` replaced. */
function withField(node: unknown, at: readonly (string | number)[], value: unknown): unknown {
  const copy = structuredClone(node) as Record<string | number, unknown>;
  let cur: Record<string | number, unknown> = copy;
  at.slice(0, -1).forEach((k) => {
    cur = cur[k] as Record<string | number, unknown>;
  });
  const last = at[at.length - 1];
  if (last !== undefined) cur[last] = value;
  return copy;
}

describe('the node registry', () => {
  it('holds each kind under its own type, with one code each that no other kind uses', () => {
    for (const type of NODE_TYPES) expect(NODE_KINDS[type].type).toBe(type);
    const codes = NODE_TYPES.map((t) => NODE_CODES[t]);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) expect(code).toMatch(/^[a-z]$/);
    for (const type of NODE_TYPES) expect(NODE_TYPE_OF_CODE[NODE_CODES[type]]).toBe(type);
  });

  it.each(NODE_TYPES)("reads a %s node's type back from a stored trace and from stored progress", (type) => {
    const at = '2026-11-27T10:00:00.000Z';
    const trace = unpackTrace(
      packTrace([
        {
          node: 'n',
          type,
          outcome: 'completed',
          started_at: at,
          completed_at: at,
          duration_ms: 0,
          error: null,
          http_status: null,
          preview: null,
        },
      ]),
    );
    expect(trace?.[0]?.type).toBe(type);
    const progress = unpackProgress(packProgress([{ node: 'n', type, state: 'started', at: Date.parse(at) }]));
    expect(progress).toEqual([{ node: 'n', type, state: 'started', at: Date.parse(at) }]);
  });

  it('holds every kind declared under functions/core/nodes/: a kind file left out of NODE_KINDS is named here', () => {
    const dir = join(__dirname, '../../../functions/core/nodes');
    const declared = readdirSync(dir)
      .filter((f) => f.endsWith('.ts') && f !== 'kind.ts' && readFileSync(join(dir, f), 'utf8').includes('defineNode('))
      .map((f) => f.replace(/\.ts$/, ''))
      .sort();
    expect(declared).toEqual([...NODE_TYPES].sort());
  });

  it('explains every kind to people: a row of the README node table and a bullet of docs/contract.md (section 2) each', () => {
    const root = join(__dirname, '../../..');
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const contract = readFileSync(join(root, 'docs/contract.md'), 'utf8');
    const missing = NODE_TYPES.flatMap((t) => [
      ...(readme.includes(`\n| \`${t}\` |`) ? [] : [`README.md: no row | \`${t}\` | in the node table`]),
      ...(contract.includes(`\n  - \`${t}\`:`) ? [] : [`docs/contract.md: no bullet - \`${t}\`: under "Node types"`]),
    ]);
    expect(missing).toEqual([]);
  });

  it('documents every kind: its schema under <Type>Node, and in the node variant', () => {
    for (const type of NODE_TYPES) {
      const name = nodeSchemaName(type);
      expect(NODE_SCHEMAS[name as keyof typeof NODE_SCHEMAS]).toBe(NODE_KINDS[type].schema);
      expect(SHAPES[name as keyof typeof SHAPES]).toBe(NODE_KINDS[type].schema);
      expect(v.is(Node, NODE_KINDS[type].example)).toBe(true);
    }
  });

  describe.each(NODE_TYPES)('the %s kind, through its example', (type: NodeType) => {
    const kind = NODE_KINDS[type];

    it('is a valid node, stored as written', () => {
      const r = validateDefinition(definitionWith(kind.example));
      expect(r).toEqual({ ok: true, definition: definitionWith(kind.example) });
    });

    it('reads exactly the nodes its dependencies name', () => {
      const refs = kind.references(kind.example as unknown as Record<string, unknown>).map((r) => r.target);
      expect(refs).toEqual([...(kind.dependencies as (n: unknown) => readonly string[])(kind.example)]);
    });

    it('refuses each reference to a node that does not exist, and to itself', () => {
      for (const ref of kind.references(kind.example as unknown as Record<string, unknown>)) {
        const missing = validateDefinition(definitionWith(withField(kind.example, ref.at, 'nowhere')));
        expect(missing.ok ? [] : missing.problems).toContainEqual({
          path: pathOf(ref.at),
          reason: "refers to node 'nowhere', which does not exist",
        });
        const self = validateDefinition(definitionWith(withField(kind.example, ref.at, 'n')));
        expect(self.ok ? [] : self.problems).toContainEqual({ path: pathOf(ref.at), reason: "a node cannot take its own value ('n')" });
      }
    });

    it('uses every expression field in its example', () => {
      for (const field of kind.expressions) expect(typeof fieldAt(kind.example as Record<string, unknown>, field)).toBe('string');
    });

    it('refuses each expression with a syntax error, naming the field', () => {
      for (const field of kind.expressions) {
        const r = validateDefinition(definitionWith(withField(kind.example, field.split('.'), '(')));
        expect(r.ok ? [] : r.problems.map((p) => p.path)).toContain(`nodes.n.${field}`);
      }
    });

    it('names an unknown field', () => {
      const r = validateDefinition(definitionWith({ ...kind.example, colour: 'blue' }));
      expect(r.ok ? [] : r.problems.map((p) => p.path)).toEqual(['nodes.n.colour']);
    });
  });

  it('cannot be given a kind that lacks a piece, or one keyed under another type (compile errors)', () => {
    const spec = {
      object: v.strictObject({ type: v.literal('echo'), inputs: v.array(v.string()) }),
      code: 'e',
      role: null,
      feeds: true,
      references: () => [],
      dependencies: (n: { inputs: string[] }) => n.inputs,
      example: { type: 'echo' as const, inputs: ['a'] },
      expressions: [],
      secrets: { templates: [], bindings: [] },
      durability: 'pure',
      repeatable: () => true,
      waits: () => false,
      longestMs: () => 0,
      run: async (_n: unknown, [value]: readonly unknown[]) => ({ value }),
      callerReason: () => 'it failed',
    } satisfies NodeKindSpec<
      v.StrictObjectSchema<
        { type: v.LiteralSchema<'echo', undefined>; inputs: v.ArraySchema<v.StringSchema<undefined>, undefined> },
        undefined
      >
    >;
    expect(defineNode(spec).type).toBe('echo');
    const { code: _code, ...withoutCode } = spec;
    // @ts-expect-error -- a kind without its code does not compile
    expect(() => defineNode(withoutCode)).not.toThrow();
    const { run: _run, ...withoutRun } = spec;
    // @ts-expect-error -- nor one without its run
    expect(() => defineNode(withoutRun)).not.toThrow();
    const echo = defineNode(spec);
    type KeyedByType<R> = { [K in keyof R]: R[K] extends { type: K } ? R[K] : never };
    const wrong = { delay: echo };
    // @ts-expect-error -- a registry entry under another type's name does not compile
    wrong satisfies KeyedByType<typeof wrong>;
  });
});
