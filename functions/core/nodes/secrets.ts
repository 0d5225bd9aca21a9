/** A definition's owner secret references, found where each node type says its fields may hold them. */
import { nodeSecretReferences, type SecretReference } from '../owner-secrets';
import type { PipelineDefinition } from '../types';
import { isNodeType, kindOf, kindOfType } from '.';

/** Every secret reference of a definition, in node order, with where it sits (a map's node's too). */
export function secretReferences(def: PipelineDefinition): SecretReference[] {
  return Object.entries(def.nodes).flatMap(([id, node]) => {
    const kind = kindOf(node);
    const own = nodeSecretReferences({ type: node.type, ...kind.secrets, expressions: kind.expressions }, `nodes.${id}`, node);
    const inner = kind.nested === undefined ? undefined : (node as unknown as Record<string, unknown>)[kind.nested];
    if (kind.nested === undefined || typeof inner !== 'object' || inner === null) return own;
    const type = (inner as { type?: unknown }).type;
    if (!isNodeType(type)) return own;
    const innerKind = kindOfType(type);
    const fields = { type, ...innerKind.secrets, expressions: innerKind.expressions };
    return [...own, ...nodeSecretReferences(fields, `nodes.${id}.${kind.nested}`, inner as Record<string, unknown>)];
  });
}

/** The distinct secret names a definition needs to run, sorted. */
export function referencedSecretNames(def: PipelineDefinition): string[] {
  return [...new Set(secretReferences(def).map((r) => r.name))].sort();
}
