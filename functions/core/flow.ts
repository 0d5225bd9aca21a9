/**
 * Which nodes of a pipeline may be skipped (contract §2, conditions): a node with an `if`, a
 * node reading one that may be (any one of them; every one, for a node that joins any). A push
 * refuses a `join: "any"` that no input could make matter, and a deployment's documents mark an
 * output that may be skipped as one that may be absent. No evaluator here: shapes and contracts
 * read it.
 */
import { kindOf, type PipelineNode } from './nodes';

/** What the walk needs of a node: the nodes it reads, whether it has an `if`, whether it joins any. */
export interface FlowFacts {
  deps: readonly string[];
  conditional: boolean;
  joinsAny: boolean;
}

/**
 * The nodes that may be skipped, from the facts of every node. A least fixpoint: a node is added
 * once what makes it skippable is known, so a node on a cycle (refused elsewhere) is never
 * added through it.
 */
export function skippableIds(facts: ReadonlyMap<string, FlowFacts>): Set<string> {
  const out = new Set<string>();
  let changed = true;
  while (changed) {
    changed = false;
    for (const [id, f] of facts) {
      if (out.has(id)) continue;
      const deps = f.deps.filter((d) => facts.has(d));
      const reads = f.joinsAny ? deps.length > 0 && deps.every((d) => out.has(d)) : deps.some((d) => out.has(d));
      if (f.conditional || reads) {
        out.add(id);
        changed = true;
      }
    }
  }
  return out;
}

/** A validated node's flow facts. */
export function nodeFlow(node: PipelineNode): FlowFacts {
  const kind = kindOf(node);
  return {
    deps: kind.dependencies(node),
    conditional: node.type !== 'input' && node.if !== undefined,
    joinsAny: kind.joinsAny?.(node) ?? ('join' in node && node.join === 'any'),
  };
}

/** The nodes of a validated definition that may be skipped. */
export function skippableNodes(nodes: Readonly<Record<string, PipelineNode>>): Set<string> {
  return skippableIds(new Map(Object.entries(nodes).map(([id, node]) => [id, nodeFlow(node)])));
}
