/**
 * The node registry: every node type, declared once in its own file (./kind.ts says what a
 * declaration holds). Everything that varies by node type is read from here: the definition's
 * schema and its documents, the push's walk, the engine's dispatch, the trace and progress
 * codecs, owner secrets, the contract. A new node type is its file and one line below; the
 * compiler then asks for whatever it lacks.
 */
import * as v from 'valibot';
import { delay } from './delay';
import { http } from './http';
import { input } from './input';
import { map } from './map';
import type { NodeKind, NodeObjectSchema, Outcome, Resumed } from './kind';
import type { RunContext } from './run-context';
import { output } from './output';
import { transform } from './transform';
import { wait } from './wait';

export const NODE_KINDS = { input, output, transform, http, delay, wait, map } as const;

/** Each key names its own kind: `{ foo: bar }` does not compile. */
type KeyedByType<R> = { [K in keyof R]: R[K] extends { type: K } ? R[K] : never };
NODE_KINDS satisfies KeyedByType<typeof NODE_KINDS>;

export type NodeType = keyof typeof NODE_KINDS;
/** A validated node of type K. */
export type NodeOfType<K extends NodeType> = v.InferOutput<(typeof NODE_KINDS)[K]['object']>;
export type PipelineNode = { [K in NodeType]: NodeOfType<K> }[NodeType];

export const NODE_TYPES = Object.keys(NODE_KINDS) as NodeType[];

/**
 * Any kind, as the walks and the engine use it: they hand each kind nodes of its own type only
 * (`kindOf`), which is what makes the widening below safe.
 */
export type AnyNodeKind = Omit<
  NodeKind<NodeObjectSchema>,
  'dependencies' | 'joinsAny' | 'run' | 'resume' | 'repeatable' | 'waits' | 'longestMs'
> & {
  dependencies(node: PipelineNode): readonly string[];
  joinsAny?(node: PipelineNode): boolean;
  repeatable(node: PipelineNode): boolean;
  waits(node: PipelineNode): boolean;
  longestMs(node: PipelineNode): number;
  run(node: PipelineNode, values: readonly unknown[], ctx: RunContext, id: string): Promise<Outcome>;
  resume?(
    node: PipelineNode,
    values: readonly unknown[],
    ctx: RunContext,
    id: string,
    memo: Readonly<Record<string, unknown>>,
    event: Resumed | undefined,
  ): Promise<Outcome>;
};

export const isNodeType = (x: unknown): x is NodeType => typeof x === 'string' && Object.hasOwn(NODE_KINDS, x);

export const kindOfType = (type: NodeType): AnyNodeKind => NODE_KINDS[type] as unknown as AnyNodeKind;

/** The kind of a validated node. */
export const kindOf = (node: PipelineNode): AnyNodeKind => kindOfType(node.type);

/** The ids a node reads, in the order it lists them. */
export const nodeDependencies = (node: PipelineNode): string[] => [...kindOf(node).dependencies(node)];

/** Node type → its one-letter code in stored traces and progress, and back. */
export const NODE_CODES = Object.fromEntries(NODE_TYPES.map((t) => [t, NODE_KINDS[t].code])) as Record<NodeType, string>;
export const NODE_TYPE_OF_CODE: Readonly<Record<string, NodeType>> = Object.fromEntries(NODE_TYPES.map((t) => [NODE_KINDS[t].code, t]));

/** A node type's schema name in the documents: `InputNode`, `HttpNode`, … */
export type NodeSchemaName = `${Capitalize<NodeType>}Node`;
export const nodeSchemaName = (type: NodeType): NodeSchemaName => `${type[0]?.toUpperCase() ?? ''}${type.slice(1)}Node` as NodeSchemaName;

/** Every node type's schema by its document name (its description included). */
export const NODE_SCHEMAS = Object.fromEntries(NODE_TYPES.map((t) => [nodeSchemaName(t), NODE_KINDS[t].schema])) as {
  [K in NodeType as `${Capitalize<K>}Node`]: (typeof NODE_KINDS)[K]['schema'];
};

/** A node of any type, told apart by `type`. */
export const Node = v.variant('type', NODE_TYPES.map((t) => NODE_KINDS[t].schema) as unknown as [(typeof NODE_KINDS)[NodeType]['schema']]);

/** Node ids of one contract role, in declaration order. */
export function nodeIdsOfRole(nodes: Readonly<Record<string, PipelineNode>>, role: NonNullable<NodeKind['role']>): string[] {
  return Object.keys(nodes).filter((id) => {
    const node = nodes[id];
    return node !== undefined && kindOf(node).role === role;
  });
}

export { input, output, transform, http, delay, wait, map };
export type { NodeKind } from './kind';
