/**
 * The map node: one http or transform node run for each item of a list, up to `concurrency` at
 * once, each item a checkpointed step of its own (recorded as `<map id>.<index>`), so a crash
 * resumes the unfinished items only and no finished item's upstream is called again. Its value
 * is the list of the items' values, in item order. Items that wait (a job between polls) keep
 * their place among those under way; the map waits in the state machine until the first is due.
 */
import * as v from 'valibot';
import { http } from './http';
import {
  defineNode,
  description,
  expression,
  FLOW_FIELDS,
  integerIn,
  InterruptedCallError,
  listReferences,
  nodeRefs,
  objectMessage,
  reasonOf,
  Waiting,
  type FieldProblem,
  type ItemError,
  type NodeOf,
  type Outcome,
} from './kind';
import { scope, type ItemNode, type RunContext } from './run-context';
import { transform } from './transform';

/** Most items one map takes (`items` giving more fails the node, naming the limit). */
export const MAP_MAX_ITEMS = 1000;
/** Most items of one map under way at once. */
export const MAP_MAX_CONCURRENCY = 32;
export const DEFAULT_MAP_CONCURRENCY = 4;
/** What an item's node sees beside the map's inputs. */
export const ITEM_NAMES = ['item', 'index'] as const;

/** Fields a map's node does not take: it reads the map's inputs, `item` and `index`, and runs for every item. */
const NOT_IN_ITEM_NODE = ['inputs', 'if', 'join'] as const;
const ITEM_KINDS = { http, transform } as const;
type ItemType = keyof typeof ITEM_KINDS;
const isItemType = (t: unknown): t is ItemType => t === 'http' || t === 'transform';

const NESTING =
  "maps nest one level at most: a map's node is one http or transform node (to map over a map's items, give the outer map's value as a later map's items)";

const ItemNodeSchema = v.pipe(
  v.variant('type', [v.omit(transform.object, NOT_IN_ITEM_NODE), v.omit(http.object, NOT_IN_ITEM_NODE)], (issue) => {
    if (typeof issue.input !== 'object' || issue.input === null) {
      if (issue.input === 'map') return `cannot be a map node: ${NESTING}`;
      if (typeof issue.input === 'string') return `must be an http or transform node, got a ${issue.input} node`;
      if (issue.input === undefined) return 'must say its type: http or transform';
    }
    return 'must be an http or transform node (an object)';
  }),
  v.description(
    "The node each item runs: an http node (a job with `poll` too) or a transform, without `inputs`: it reads the map's inputs by id, `item` (this item) and `index` (its position, from 0).",
  ),
);

const MapObject = v.strictObject(
  {
    type: v.literal('map'),
    inputs: nodeRefs,
    items: expression(
      `JSONata over the map's inputs giving the list of items (at most ${MAP_MAX_ITEMS}). A single value is a list of one (JSONata gives a sequence of one as its value: wrap it in [ ] to keep a list), no value is no item.`,
    ),
    concurrency: v.optional(
      v.pipe(
        integerIn(1, MAP_MAX_CONCURRENCY),
        v.metadata({ default: DEFAULT_MAP_CONCURRENCY }),
        v.description('How many items may be under way at once (a job between polls counts).'),
      ),
    ),
    on_item_error: v.optional(
      v.pipe(
        v.picklist(['fail', 'skip'], 'must be "fail" or "skip"'),
        v.metadata({ default: 'fail' }),
        v.description(
          '"fail": the first item that fails fails the map, and the items under way are stopped. "skip": a failed item\'s place holds null, and the owner\'s trace says why.',
        ),
      ),
    ),
    node: ItemNodeSchema,
    ...FLOW_FIELDS,
    description,
  },
  objectMessage('an object'),
);

type MapFields = NodeOf<typeof MapObject>;

/** An item of a map failed under `on_item_error: "fail"`: the map fails with it. */
export class MapItemFailure extends Error {
  override readonly name = 'MapItemFailure';
  constructor(
    readonly index: number,
    readonly itemReason: string,
    readonly itemCallerReason: string,
  ) {
    super(`the item at index ${index} failed: ${itemReason}`);
  }
}

/** `items` gave more than a map takes. */
export class TooManyItemsError extends Error {
  override readonly name = 'TooManyItemsError';
  constructor(count: number) {
    super(`items gave ${count} items; a map takes at most ${MAP_MAX_ITEMS} (the map items limit)`);
  }
}

/** The items an `items` expression gave: a list as it is, one value as a list of one, nothing as none. */
function itemsOf(result: unknown): unknown[] {
  const items = result === undefined ? [] : Array.isArray(result) ? [...(result as unknown[])] : [result];
  if (items.length > MAP_MAX_ITEMS) throw new TooManyItemsError(items.length);
  return items;
}

/** The map's node as each item runs it: reading the map's inputs, then `item` and `index`. */
const itemNode = (node: MapFields): ItemNode => ({ ...node.node, inputs: [...node.inputs, ...ITEM_NAMES] }) as ItemNode;

/**
 * One step of a map: every item it can advance now, in item order, at most `concurrency` under
 * way (items waiting since an earlier step keep their places). Its value once every item ended;
 * else a wait until the first waiting item is due (at once when items were left for lack of time).
 */
async function mapStep(node: MapFields, values: readonly unknown[], ctx: RunContext, id: string, items: unknown[]): Promise<Outcome> {
  const runner = ctx.items(id);
  const inner = itemNode(node);
  const total = items.length;
  const skip = node.on_item_error === 'skip';
  const results: unknown[] = new Array<unknown>(total).fill(null);
  const errors: ItemError[] = [];
  let ended = 0;
  for (let i = 0; i < total; i++) if (runner.ended(i)) ended += 1;
  let next = 0;
  let stopped = false;
  const waits: number[] = [];
  let later = false;
  let fail: (e: MapItemFailure) => void = () => undefined;
  const failed = new Promise<never>((_, reject) => {
    fail = reject;
  });
  // Settled by the race below or never: a rejection nobody awaits must not be reported.
  failed.catch(() => undefined);

  const worker = async (): Promise<void> => {
    while (!stopped && next < total) {
      const i = next;
      next += 1;
      const wasEnded = runner.ended(i);
      const out = await runner.run(i, inner, [...values, items[i], i], skip);
      if ('waiting' in out) {
        // It keeps its place among the items under way until a later step.
        waits.push(out.waiting);
        return;
      }
      if ('later' in out) {
        later = true;
        return;
      }
      if ('failed' in out) {
        stopped = true;
        const callerWords =
          out.failed instanceof InterruptedCallError
            ? 'it was interrupted in the middle of its call'
            : ITEM_KINDS[inner.type].callerReason(out.failed);
        fail(new MapItemFailure(i, reasonOf(out.failed), callerWords));
        return;
      }
      results[i] = out.value;
      if (out.error !== undefined) errors.push({ index: i, error: out.error });
      if (!wasEnded) {
        ended += 1;
        runner.progress(ended, total);
      }
    }
  };
  const concurrency = node.concurrency ?? DEFAULT_MAP_CONCURRENCY;
  await Promise.race([Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker)), failed]);
  if (later || waits.length > 0) return new Waiting(later ? ctx.now() : Math.min(...waits), { items }, { status: `${ended} of ${total}` });
  errors.sort((a, b) => a.index - b.index);
  return { value: results, ...(errors.length > 0 ? { itemErrors: errors } : {}) };
}

export const map = defineNode({
  object: MapObject,
  description:
    "Fan-out: `node` (one http or transform node) runs for each item of `items`, up to `concurrency` at once, each item a checkpointed step of its own. Its value is the list of the items' values, in item order.",
  code: 'm',
  role: null,
  feeds: true,
  nested: 'node',
  references: (raw) => listReferences(raw),
  dependencies: (node) => node.inputs,
  example: {
    type: 'map',
    inputs: ['a', 'b'],
    items: '[a, b]',
    if: 'a != b',
    concurrency: 2,
    on_item_error: 'skip',
    node: { type: 'transform', expression: "item & ' (' & $string(index) & ')'" },
  },
  // The nested node's own expressions and secrets are its kind's, checked and read there (pipeline.ts, secrets.ts).
  expressions: ['items', 'if'],
  secrets: { templates: [], bindings: [] },
  checks(raw) {
    const problems: FieldProblem[] = [];
    const inputs = Array.isArray(raw.inputs) ? raw.inputs : [];
    inputs.forEach((name: unknown, i) => {
      if (typeof name === 'string' && (ITEM_NAMES as readonly string[]).includes(name)) {
        problems.push({
          at: ['inputs', i],
          reason: `a map's node sees \`item\` and \`index\` beside the map's inputs: an input named '${name}' would be hidden; rename that node`,
        });
      }
    });
    const inner = raw.node;
    if (typeof inner !== 'object' || inner === null || Array.isArray(inner)) return problems;
    const n = inner as Record<string, unknown>;
    if (!isItemType(n.type)) return problems;
    const kind = ITEM_KINDS[n.type];
    const allowed = Object.keys(kind.object.entries).filter((k) => !(NOT_IN_ITEM_NODE as readonly string[]).includes(k));
    for (const key of Object.keys(n)) {
      if (allowed.includes(key)) continue;
      const reason =
        key === 'inputs'
          ? "a map's node reads the map's inputs by id, `item` and `index`: leave `inputs` out"
          : key === 'if' || key === 'join'
            ? `a map's node runs for every item: choose the items in \`items\` instead of \`${key}\``
            : `unknown field for ${n.type === 'http' ? 'an http' : 'a transform'} node; allowed: ${allowed.join(', ')}`;
      problems.push({ at: ['node', key], reason });
    }
    const withInputs = { ...n, inputs: [...inputs.filter((x: unknown) => typeof x === 'string'), ...ITEM_NAMES] };
    for (const p of kind.checks?.(withInputs) ?? []) problems.push({ at: ['node', ...p.at], reason: p.reason });
    return problems;
  },
  durability: 'recorded',
  // The map calls nothing itself: each item is recorded (and leased) on its own.
  repeatable: () => true,
  waits: (node) => (node.node.type === 'http' ? http.waits(node.node as NodeOf<typeof http.object>) : false),
  longestMs: (node) => {
    const inner = node.node.type === 'http' ? http.longestMs(node.node as NodeOf<typeof http.object>) : 0;
    return Math.ceil(MAP_MAX_ITEMS / (node.concurrency ?? DEFAULT_MAP_CONCURRENCY)) * inner;
  },
  async run(node, values, ctx, id) {
    const items = itemsOf(await ctx.evaluate(node.items, scope(node.inputs, values)));
    return mapStep(node, values, ctx, id, items);
  },
  resume(node, values, ctx, id, memo) {
    return mapStep(node, values, ctx, id, Array.isArray(memo.items) ? (memo.items as unknown[]) : []);
  },
  callerReason(e) {
    if (e instanceof MapItemFailure) return `the item at index ${e.index} failed: ${e.itemCallerReason}`;
    if (e instanceof TooManyItemsError) return `its items were more than a map takes (${MAP_MAX_ITEMS})`;
    return 'its expression failed';
  },
});
