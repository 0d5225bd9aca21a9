/**
 * Counts what pipegate asks of AWS, by wrapping the adapters the runtime hands to every
 * handler (the runtime's `wrapDeps`). DynamoDB is counted at the document client, one count
 * per request actually sent, with the capacity units dynalite reports for it (item size,
 * consistent or eventual); index copies are added from the table definition, since dynalite
 * does not charge them. Secrets go through the real SecretsManagerKeyMaterial cache over a reader
 * answered in memory, so API calls are counted exactly as a Lambda container would make them.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeploymentsStore } from '../functions/adapters/deployments.store';
import type { Deps } from '../functions/adapters/deps';
import { createDocumentClient } from '../functions/adapters/dynamo';
import { executionStores } from '../functions/adapters/execution-stores';
import { PipelinesStore } from '../functions/adapters/pipelines.store';
import { StepsStore } from '../functions/adapters/steps.store';
import { SecretsManagerKeyMaterial } from '../functions/adapters/key-material';
import type { Execution } from '../functions/core/types';
import { isTerminal } from '../functions/core/transitions';
import { MAIN_TABLE, type TableDefinition } from '../lib/tables';

export interface Counts {
  /** DynamoDB requests by operation (GetItem, PutItem, UpdateItem, Query, …). */
  dynamo: Record<string, number>;
  /** Read request units (0.5 per eventually consistent read of ≤ 4 KB). */
  readUnits: number;
  /** Write request units on the table, failed conditional writes included (they are billed). */
  writeUnits: number;
  /** Write request units on index copies. */
  indexWriteUnits: number;
  sqsSend: Record<string, number>;
  sfnStart: number;
  sfnStop: number;
  /** secrets.material() lookups by handlers (served from the per-container cache). */
  secretsLookups: number;
  /** GetSecretValue calls that reached the service. */
  secretsApiCalls: number;
  http: number;
  /** `Prefer: wait` waits begun (completions.watch). */
  waits: number;
  /** Wakes of those waits; each is followed by one strongly consistent re-read of the execution. */
  waitWakes: number;
  /** Store method calls, e.g. "executions.transition". */
  storeMethods: Record<string, number>;
}

export const emptyCounts = (): Counts => ({
  dynamo: {},
  readUnits: 0,
  writeUnits: 0,
  indexWriteUnits: 0,
  sqsSend: {},
  sfnStart: 0,
  sfnStop: 0,
  secretsLookups: 0,
  secretsApiCalls: 0,
  http: 0,
  waits: 0,
  waitWakes: 0,
  storeMethods: {},
});

const bump = (m: Record<string, number>, k: string, by = 1): void => {
  m[k] = (m[k] ?? 0) + by;
};

export function cloneCounts(c: Counts): Counts {
  return { ...c, dynamo: { ...c.dynamo }, sqsSend: { ...c.sqsSend }, storeMethods: { ...c.storeMethods } };
}

function diffMap(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const d = (b[k] ?? 0) - (a[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

/** The counts that are maps by name; every other count is one number. */
const MAPS = ['dynamo', 'sqsSend', 'storeMethods'] as const;
type MapCount = (typeof MAPS)[number];
type ScalarCount = Exclude<keyof Counts, MapCount>;
/** Every scalar count, checked complete by its type: a count added to Counts must be listed here. */
const SCALARS = Object.keys({
  readUnits: true,
  writeUnits: true,
  indexWriteUnits: true,
  sfnStart: true,
  sfnStop: true,
  secretsLookups: true,
  secretsApiCalls: true,
  http: true,
  waits: true,
  waitWakes: true,
} satisfies Record<ScalarCount, true>) as ScalarCount[];

/** What happened between two snapshots. */
export function diffCounts(before: Counts, after: Counts): Counts {
  const out = cloneCounts(after);
  for (const k of SCALARS) out[k] = after[k] - before[k];
  for (const m of MAPS) out[m] = diffMap(before[m], after[m]);
  return out;
}

/** The mean of each count over samples (a name missing from a sample counts 0 there). */
export function meanCounts(list: readonly Counts[]): Counts {
  const first = list[0];
  if (!first) throw new Error('no samples');
  const n = list.length;
  const out = cloneCounts(first);
  for (const k of SCALARS) out[k] = list.reduce((s, c) => s + c[k], 0) / n;
  for (const m of MAPS) {
    const names = new Set(list.flatMap((c) => Object.keys(c[m])));
    out[m] = Object.fromEntries([...names].map((name) => [name, list.reduce((s, c) => s + (c[m][name] ?? 0), 0) / n]));
  }
  return out;
}

/** Every count multiplied by `factor` (e.g. 1 / executions, for figures per execution). */
export function scaleCounts(c: Counts, factor: number): Counts {
  const out = cloneCounts(c);
  for (const k of SCALARS) out[k] = c[k] * factor;
  for (const m of MAPS) out[m] = Object.fromEntries(Object.entries(c[m]).map(([k, x]) => [k, x * factor]));
  return out;
}

const sum = (m: Record<string, number>): number => Object.values(m).reduce((s, x) => s + x, 0);

export const DYNAMO_READS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem']);

export function dynamoReads(c: Counts): number {
  return sum(Object.fromEntries(Object.entries(c.dynamo).filter(([k]) => DYNAMO_READS.has(k))));
}
export function dynamoWrites(c: Counts): number {
  return sum(c.dynamo) - dynamoReads(c);
}

/** Every request to an AWS service that pipegate code makes (the event source mapping's own receives and deletes excluded). */
export function awsCalls(c: Counts): number {
  return sum(c.dynamo) + sum(c.sqsSend) + c.sfnStart + c.sfnStop + c.secretsApiCalls;
}

/**
 * Which indexes hold each item, followed from the writes themselves: an index holds an item
 * while its partition-key attribute is set. With ALL projection every write to an item that
 * is (or becomes, or stops being) in an index writes the index copy too; with KEYS_ONLY only
 * entering or leaving it does; changing the index key is a delete plus a put.
 */
export class IndexTracker {
  private readonly members = new Map<string, Set<string>>();
  private readonly keyAttrs: Map<string, string>;
  private readonly keysOnly: Set<string>;

  constructor(private readonly def: TableDefinition = MAIN_TABLE) {
    this.keyAttrs = new Map(def.indexes.map((i) => [i.partitionKey, i.name]));
    this.keysOnly = new Set(def.indexes.filter((i) => i.projection === 'KEYS_ONLY').map((i) => i.name));
  }

  private id(key: Record<string, unknown>): string {
    return `${String(key[this.def.partitionKey])}\u0000${String(key[this.def.sortKey])}`;
  }

  /**
   * Write units of one index copy: a keys-only entry is under 1 KB whatever the item, an ALL
   * copy is the item itself (`itemUnits`).
   */
  private unitsOf(index: string, itemUnits: number): number {
    return this.keysOnly.has(index) ? 1 : itemUnits;
  }

  /** Index write units of a successful Put of `item` (index copies, when `itemUnits` is 1). */
  put(item: Record<string, unknown>, itemUnits = 1): number {
    const id = this.id(item);
    const before = this.members.get(id) ?? new Set<string>();
    const after = new Set<string>();
    for (const [attr, index] of this.keyAttrs) if (item[attr] !== undefined) after.add(index);
    this.members.set(id, after);
    let units = 0;
    for (const index of new Set([...before, ...after]))
      units += (before.has(index) && after.has(index) ? 2 : 1) * this.unitsOf(index, itemUnits);
    return units;
  }

  /** Index write units of a successful UpdateItem (index copies, when `itemUnits` is 1). */
  update(key: Record<string, unknown>, expression: string, names: Record<string, string> = {}, itemUnits = 1): number {
    const id = this.id(key);
    const before = this.members.get(id) ?? new Set<string>();
    const { set, remove } = updatedAttributes(expression, names);
    const after = new Set(before);
    const rekeyed = new Set<string>();
    for (const [attr, index] of this.keyAttrs) {
      if (set.has(attr)) {
        if (before.has(index)) rekeyed.add(index);
        after.add(index);
      }
      if (remove.has(attr)) after.delete(index);
    }
    this.members.set(id, after);
    let units = 0;
    for (const index of new Set([...before, ...after])) {
      if (rekeyed.has(index)) units += 2 * this.unitsOf(index, itemUnits);
      // A keys-only index is written only when the item enters or leaves it.
      else if (!this.keysOnly.has(index) || before.has(index) !== after.has(index)) units += this.unitsOf(index, itemUnits);
    }
    return units;
  }

  delete(key: Record<string, unknown>, itemUnits = 1): number {
    const id = this.id(key);
    const before = this.members.get(id) ?? new Set<string>();
    this.members.delete(id);
    return [...before].reduce((s, index) => s + this.unitsOf(index, itemUnits), 0);
  }
}

/** Attribute names an UpdateExpression SETs and REMOVEs (top-level names only). */
export function updatedAttributes(expression: string, names: Record<string, string> = {}): { set: Set<string>; remove: Set<string> } {
  const set = new Set<string>();
  const remove = new Set<string>();
  const clauses = expression.split(/\b(SET|REMOVE|ADD|DELETE)\b/i);
  for (let i = 1; i < clauses.length; i += 2) {
    const verb = (clauses[i] ?? '').toUpperCase();
    const body = clauses[i + 1] ?? '';
    for (const part of splitTopLevel(body)) {
      const target = (verb === 'SET' ? part.split('=')[0] : part.trim().split(/\s+/)[0]) ?? '';
      const first = target.trim().split(/[.[]/)[0] ?? '';
      if (!first) continue;
      const name = first.startsWith('#') ? (names[first] ?? first) : first;
      (verb === 'REMOVE' ? remove : set).add(name);
    }
  }
  return { set, remove };
}

/** Splits on commas outside parentheses (if_not_exists(a, b) stays whole). */
function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) out.push(cur);
  return out;
}

const capacityOf = (output: unknown): number => {
  const cc = (output as { ConsumedCapacity?: { CapacityUnits?: number } } | undefined)?.ConsumedCapacity;
  return typeof cc?.CapacityUnits === 'number' ? cc.CapacityUnits : 0;
};

/**
 * Adds counting to a document client: one count per request, and while `units()` is true the
 * capacity units from the answer (asking for them costs the server a little, so load phases
 * leave it off).
 */
export function countDynamo(db: DynamoDBDocumentClient, counts: Counts, units: () => boolean, tracker = new IndexTracker()): void {
  db.middlewareStack.add(
    (next, context) => async (args) => {
      const op = (context.commandName ?? 'Unknown').replace(/Command$/, '');
      bump(counts.dynamo, op);
      if (!units()) return next(args);
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      const isRead = DYNAMO_READS.has(op);
      try {
        const out = await next(args);
        const units = capacityOf(out.output);
        if (isRead) counts.readUnits += units;
        else {
          counts.writeUnits += units;
          const itemUnits = Math.max(1, units);
          if (op === 'PutItem') counts.indexWriteUnits += tracker.put(input.Item as Record<string, unknown>, itemUnits);
          if (op === 'UpdateItem') {
            counts.indexWriteUnits += tracker.update(
              input.Key as Record<string, unknown>,
              String(input.UpdateExpression ?? ''),
              input.ExpressionAttributeNames as Record<string, string> | undefined,
              itemUnits,
            );
          }
          if (op === 'DeleteItem') counts.indexWriteUnits += tracker.delete(input.Key as Record<string, unknown>, itemUnits);
        }
        return out;
      } catch (err) {
        // A failed conditional write is still billed (1 WRU for an item ≤ 1 KB).
        if (!isRead && (err as { name?: string }).name === 'ConditionalCheckFailedException') counts.writeUnits += 1;
        throw err;
      }
    },
    { step: 'initialize', name: 'pipegateBenchCount' },
  );
}

/** Wraps every method of a store so each call is counted under `<label>.<method>`. */
export function countMethods<T extends object>(target: T, label: string, counts: Counts): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value: unknown = Reflect.get(obj, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return (...args: unknown[]) => {
        bump(counts.storeMethods, `${label}.${prop}`);
        return (value as (...a: unknown[]) => unknown).apply(receiver, args);
      };
    },
  });
}

export interface Instrumentation {
  counts: Counts;
  /** Whether DynamoDB capacity units are being measured (on while counting executions). */
  units: boolean;
  /** Called after every terminal status write that won. */
  onTerminal: (e: Execution) => void;
  wrap: (d: Deps) => Deps;
}

export function instrumentation(onTerminal: (e: Execution) => void = () => undefined): Instrumentation {
  const counts = emptyCounts();
  const inst: Instrumentation = {
    counts,
    units: false,
    onTerminal,
    wrap(d) {
      const db = createDocumentClient({ region: d.config.region, endpoint: d.config.dynamodbEndpoint });
      countDynamo(db, counts, () => inst.units);
      const stores = executionStores(db, d.config.table, { trackOpen: d.config.trackOpen });
      const store = stores.executions;
      const originalTransition = store.transition.bind(store);
      store.transition = async (id, to, set) => {
        const out = await originalTransition(id, to, set);
        if (out.ok && isTerminal(to)) inst.onTerminal(out.execution);
        return out;
      };
      const executions = countMethods(store, 'executions', counts);

      // Each read is one GetSecretValue call on AWS.
      const readSecret = async (secretId: string): Promise<string> => {
        if (secretId !== 'pipegate-bench') throw new Error('unexpected Secrets Manager call');
        counts.secretsApiCalls++;
        const m = await d.keyMaterial.material();
        return JSON.stringify({ pepper: m.pepper.toString('utf8'), master_key: m.masterKey.toString('base64') });
      };
      const cached = new SecretsManagerKeyMaterial(readSecret, 'pipegate-bench');

      return {
        ...d,
        executions,
        deliveries: countMethods(stores.deliveries, 'deliveries', counts),
        sweep: countMethods(stores.sweep, 'sweep', counts),
        executionLists: countMethods(stores.executionLists, 'executionLists', counts),
        usage: countMethods(stores.usage, 'usage', counts),
        idempotency: countMethods(stores.idempotency, 'idempotency', counts),
        pipelines: countMethods(new PipelinesStore(db, d.config.table), 'pipelines', counts),
        // Node records (checkpointed steps: calls, waits, a map's items), in the same counted client.
        steps: countMethods(new StepsStore(db, d.config.table, () => d.objects), 'steps', counts),
        deployments: countMethods(new DeploymentsStore(db, d.config.table), 'deployments', counts),
        queue: {
          send: (queue, body, opts) => {
            bump(counts.sqsSend, queue);
            return d.queue.send(queue, body, opts);
          },
        },
        workflow: {
          start: (workflow, name, input) => {
            counts.sfnStart++;
            return d.workflow.start(workflow, name, input);
          },
          stop: (workflow, name, cause) => {
            counts.sfnStop++;
            return d.workflow.stop(workflow, name, cause);
          },
        },
        keyMaterial: {
          material: () => {
            counts.secretsLookups++;
            return cached.material();
          },
        },
        http: (req) => {
          counts.http++;
          return d.http(req);
        },
        completions: {
          watch: (id) => {
            counts.waits++;
            const w = d.completions.watch(id);
            return {
              next: async (ms) => {
                const woken = await w.next(ms);
                if (woken) counts.waitWakes++;
                return woken;
              },
              close: () => w.close(),
            };
          },
          notify: (id) => d.completions.notify(id),
        },
      };
    },
  };
  return inst;
}
