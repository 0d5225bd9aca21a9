/** A definition's owner secret references, found where each node type says its fields may hold them. */
import { nodeSecretReferences, type SecretReference } from '../owner-secrets';
import type { PipelineDefinition } from '../types';
import { kindOf } from '.';

/** Every secret reference of a definition, in node order, with where it sits. */
export function secretReferences(def: PipelineDefinition): SecretReference[] {
  return Object.entries(def.nodes).flatMap(([id, node]) => {
    const kind = kindOf(node);
    return nodeSecretReferences({ type: node.type, ...kind.secrets, expressions: kind.expressions }, `nodes.${id}`, node);
  });
}

/** The distinct secret names a definition needs to run, sorted. */
export function referencedSecretNames(def: PipelineDefinition): string[] {
  return [...new Set(secretReferences(def).map((r) => r.name))].sort();
}
