/**
 * In-memory stores with the same conditional semantics as the DynamoDB adapters, so the
 * services' rules can be unit-tested in milliseconds with no network. The integration suites
 * (test/integration/stores.test.ts and others) keep checking the DynamoDB adapters themselves.
 */
import {
  EXECUTION_HEAD_FIELDS,
  InvalidCursorError,
  type CallerTally,
  type ConsumerChanges,
  type ConsumersPort,
  type DeploymentsPort,
  type ExecutionHead,
  type DeliveriesPort,
  type ExecutionListsPort,
  type ExecutionsPort,
  type IdempotencyPort,
  type SweepPort,
  type UsagePort,
  type PipelinesPort,
  type SweepKind,
  type TransitionFields,
  type TransitionResult,
} from '../../functions/core/ports';
import { epochSeconds } from '../../functions/core/time';
import { allowedFrom, isTerminal, type ExecutionStatus } from '../../functions/core/transitions';
import type {
  CallbackDelivery,
  DeploymentRecord,
  FormSettings,
  Execution,
  IdempotencyRecord,
  KeyHash,
  NodeTrace,
  PipelineDefinition,
  PipelineMeta,
  PipelineListing,
  PipelineVersion,
  RunPointer,
  SealedSecret,
  WorkflowType,
} from '../../functions/core/types';
import {
  addUsageAttribute,
  bucketOf,
  callerAttribute,
  usageAttributes,
  usageIncrement,
  type UsageBucket,
} from '../../functions/core/usage';
import { listingOf } from '../../functions/core/views';
import type { StoreSet } from './fakes';
import { MemoryJournal, type NodeRecord, type NodeRecordState } from '../../functions/core/engine';
import type { Resumed } from '../../functions/core/nodes/kind';
import type { KeptEvent, Republished, StepOwner, StepsPort } from '../../functions/core/ports';
import type { ConsumerRecord, Limits } from '../../functions/core/consumers';

const copy = <T>(x: T): T => structuredClone(x);

export class MemoryExecutions implements ExecutionsPort, DeliveriesPort, SweepPort, ExecutionListsPort, UsagePort, IdempotencyPort {
  readonly items = new Map<string, Execution & { sweep?: SweepKind; sweep_at?: string }>();
  private readonly idempotency = new Map<string, IdempotencyRecord & { expires_at: number }>();

  constructor(
    private readonly trackOpen = true,
    /** Usage counters, shared with MemoryConsumers' tallies as the table's usage items are. */
    readonly usage = new MemoryUsage(),
  ) {}

  async create(e: Execution): Promise<boolean> {
    if (this.items.has(e.execution_id)) return false;
    this.items.set(e.execution_id, { ...copy(e), ...(this.trackOpen ? { sweep: 'open' as const, sweep_at: e.created_at } : {}) });
    return true;
  }

  async get(id: string, now: Date): Promise<Execution | null> {
    const e = this.items.get(id);
    if (!e || (e.expires_at !== null && e.expires_at <= epochSeconds(now))) return null;
    return strip(e);
  }

  async getHead(id: string, now: Date): Promise<ExecutionHead | null> {
    const e = this.items.get(id);
    if (!e || (e.expires_at !== null && e.expires_at <= epochSeconds(now))) return null;
    return Object.fromEntries(EXECUTION_HEAD_FIELDS.map((f) => [f, structuredClone(e[f])])) as ExecutionHead;
  }

  async transition(id: string, to: ExecutionStatus, set: TransitionFields): Promise<TransitionResult> {
    const e = this.items.get(id);
    if (!e || !allowedFrom(to).includes(e.status)) return { ok: false, current: e ? strip(e) : null };
    Object.assign(e, copy(set), { status: to });
    if (isTerminal(to)) {
      if (set.callback_delivery) Object.assign(e, { sweep: 'callback', sweep_at: set.completed_at ?? new Date().toISOString() });
      else {
        delete e.sweep;
        delete e.sweep_at;
      }
    }
    return { ok: true, execution: strip(e) };
  }

  async withdrawPending(id: string): Promise<boolean> {
    if (this.items.get(id)?.status !== 'pending') return false;
    this.items.delete(id);
    return true;
  }

  async recordDelivery(id: string, previousAttempts: number, delivery: CallbackDelivery): Promise<boolean> {
    const e = this.items.get(id);
    if (!e?.callback_delivery || e.callback_delivery.attempts !== previousAttempts || e.callback_delivery.outcome !== 'pending')
      return false;
    e.callback_delivery = copy(delivery);
    if (delivery.outcome !== 'pending') {
      delete e.sweep;
      delete e.sweep_at;
    }
    return true;
  }

  /** Claims by execution id, kept apart from the items as the DynamoDB store keeps them out of reads. */
  private readonly claims = new Map<string, { attempt: number; by: string; until_ms: number }>();

  async claimDelivery(id: string, attempts: number, by: string, untilMs: number, nowMs: number): Promise<boolean> {
    const d = this.items.get(id)?.callback_delivery;
    if (!d || d.attempts !== attempts || d.outcome !== 'pending') return false;
    const held = this.claims.get(id);
    if (held && held.attempt === attempts && held.until_ms >= nowMs && held.by !== by) return false;
    this.claims.set(id, { attempt: attempts, by, until_ms: untilMs });
    return true;
  }

  async listSweep(kind: SweepKind, limit = 100): Promise<Execution[]> {
    return [...this.items.values()]
      .filter((e) => e.sweep === kind)
      .sort((a, b) => (a.sweep_at ?? '').localeCompare(b.sweep_at ?? ''))
      .slice(0, limit)
      .map(strip);
  }

  async sweepPage(
    kind: SweepKind,
    before: string,
    limit: number,
    cursor?: Record<string, unknown>,
  ): Promise<{ ids: string[]; next: Record<string, unknown> | undefined }> {
    const after = typeof cursor?.after === 'string' ? cursor.after : '';
    const key = (e: { sweep_at?: string; execution_id: string }) => `${e.sweep_at ?? ''}#${e.execution_id}`;
    const all = [...this.items.values()]
      .filter((e) => e.sweep === kind && (e.sweep_at ?? '') < before && key(e) > after)
      .sort((a, b) => key(a).localeCompare(key(b)));
    const page = all.slice(0, limit);
    const last = page[page.length - 1];
    return { ids: page.map((e) => e.execution_id), next: all.length > limit && last ? { after: key(last) } : undefined };
  }

  async markRequeued(
    id: string,
    seen: { status: 'pending' } | { attempts: number },
    at: string,
    opts: { releaseClaim?: boolean } = {},
  ): Promise<boolean> {
    const e = this.items.get(id);
    if (!e) return false;
    const ok =
      'status' in seen
        ? e.status === 'pending'
        : e.callback_delivery?.attempts === seen.attempts && e.callback_delivery.outcome === 'pending';
    if (ok) e.requeued_at = at;
    if (ok && opts.releaseClaim) this.claims.delete(id);
    return ok;
  }

  async markRerun(id: string, seenReruns: number, at: string): Promise<boolean> {
    const e = this.items.get(id);
    if (e?.status !== 'running' || (e.reruns ?? 0) !== seenReruns) return false;
    Object.assign(e, { reruns: seenReruns + 1, rerun_at: at, requeued_at: at });
    delete e.run_by;
    return true;
  }

  async claimRerun(id: string, runBy: string): Promise<boolean> {
    const e = this.items.get(id);
    if (e?.status !== 'running' || !e.rerun_at) return false;
    e.run_by = runBy;
    delete e.rerun_at;
    return true;
  }

  async clearSweep(id: string): Promise<boolean> {
    const e = this.items.get(id);
    if (!e || !isTerminal(e.status) || e.callback_delivery?.outcome === 'pending') return false;
    delete e.sweep;
    delete e.sweep_at;
    e.requeued_at = null;
    return true;
  }

  async listRuns(pipelineId: string, opts: { limit: number; cursor?: string }): Promise<{ runs: Execution[]; next: string | null }> {
    const sortKey = (e: Execution) => `${e.created_at}#${e.execution_id}`;
    const runs = [...this.items.values()]
      .filter((e) => e.kind === 'run' && e.pipeline_id === pipelineId)
      .sort((a, b) => sortKey(b).localeCompare(sortKey(a)));
    let from = 0;
    if (opts.cursor) {
      const [p, after] = Buffer.from(opts.cursor, 'base64url').toString('utf8').split('|');
      if (p !== pipelineId || after === undefined) throw new InvalidCursorError('not a cursor this list returned');
      from = runs.findIndex((e) => sortKey(e) < after);
      if (from < 0) from = runs.length;
    }
    const page = runs.slice(from, from + opts.limit);
    const last = page[page.length - 1];
    const next = from + opts.limit < runs.length && last ? Buffer.from(`${pipelineId}|${sortKey(last)}`).toString('base64url') : null;
    return { runs: page.map(strip), next };
  }

  async recordProgress(id: string, progress: string, waiting?: string | null): Promise<boolean> {
    const e = this.items.get(id);
    if (!e || e.status !== 'running') return false;
    e.progress = progress;
    if (waiting !== undefined) {
      e.waiting = waiting;
      delete e.reruns;
    }
    return true;
  }

  async replaceWaiting(id: string, before: string, after: string | null): Promise<boolean> {
    const e = this.items.get(id);
    if (!e || e.status !== 'running' || e.waiting !== before) return false;
    e.waiting = after;
    return true;
  }

  async bumpGeneration(id: string, seen: number): Promise<boolean> {
    const e = this.items.get(id);
    if (!e || e.status !== 'running' || (e.gen ?? 0) !== seen) return false;
    e.gen = seen + 1;
    return true;
  }

  async recordTrace(id: string, set: { trace: NodeTrace[]; trace_truncated: boolean }): Promise<boolean> {
    const e = this.items.get(id);
    if (!e || e.status !== 'cancelled' || e.trace) return false;
    Object.assign(e, copy(set));
    return true;
  }

  async listByDeployment(
    deploymentId: string,
    opts: { limit: number; since?: string; status?: ExecutionStatus; cursor?: string; now: Date },
  ): Promise<{ executions: Execution[]; next: string | null }> {
    const sortKey = (e: Execution) => `${e.created_at}#${e.execution_id}`;
    let all = [...this.items.values()]
      .filter((e) => e.kind === 'api' && e.deployment_id === deploymentId && (opts.since === undefined || sortKey(e) >= opts.since))
      .sort((a, b) => sortKey(b).localeCompare(sortKey(a)));
    if (opts.cursor) {
      const [d, after] = Buffer.from(opts.cursor, 'base64url').toString('utf8').split('|');
      if (d !== deploymentId || after === undefined) throw new InvalidCursorError('not a cursor this list returned');
      all = all.filter((e) => sortKey(e) < after);
    }
    const found: Execution[] = [];
    let looked = 0;
    const budget = opts.status ? opts.limit * 5 : opts.limit;
    let last: Execution | undefined;
    for (const e of all) {
      if (looked >= budget || found.length === opts.limit) break;
      looked++;
      last = e;
      if (e.expires_at !== null && e.expires_at <= epochSeconds(opts.now)) continue;
      if (!opts.status || e.status === opts.status) found.push(strip(e));
    }
    const more = last !== undefined && all.indexOf(last) < all.length - 1;
    return { executions: found, next: more && last ? Buffer.from(`${deploymentId}|${sortKey(last)}`).toString('base64url') : null };
  }

  async redeliver(id: string, previous: CallbackDelivery, at: string): Promise<Execution | null> {
    const e = this.items.get(id);
    const c = e?.callback_delivery;
    if (!e || !c || c.attempts !== previous.attempts || c.outcome !== previous.outcome) return null;
    e.callback_delivery = { ...c, outcome: 'pending', redelivery: true, next_attempt_at: null };
    Object.assign(e, { sweep: 'callback', sweep_at: at });
    return strip(e);
  }

  async attemptNow(id: string, previous: CallbackDelivery, at: string): Promise<Execution | null> {
    const e = this.items.get(id);
    const c = e?.callback_delivery;
    if (!e || !c || c.attempts !== previous.attempts || c.outcome !== 'pending' || c.next_attempt_at !== previous.next_attempt_at)
      return null;
    e.callback_delivery = { ...c, next_attempt_at: at };
    Object.assign(e, { sweep: 'callback', sweep_at: at });
    return strip(e);
  }

  async countFinished(e: Execution): Promise<void> {
    const inc = usageIncrement(e);
    if (inc === null) return;
    for (const name of usageAttributes(inc)) this.usage.add(inc.deploymentId, inc.bucket, name);
  }

  async usageSince(deploymentId: string, from: Date): Promise<UsageBucket[]> {
    return this.usage.since(deploymentId, from);
  }

  async claimIdempotency(
    deploymentId: string,
    keyHash: string,
    record: IdempotencyRecord,
    expiresAt: number,
    now: Date,
  ): Promise<{ claimed: true } | { claimed: false; existing: IdempotencyRecord }> {
    const key = `${deploymentId}#${keyHash}`;
    const found = this.idempotency.get(key);
    if (!found || found.expires_at <= epochSeconds(now)) {
      this.idempotency.set(key, { ...record, expires_at: expiresAt });
      return { claimed: true };
    }
    const { expires_at: _expires, ...existing } = found;
    return { claimed: false, existing };
  }
}

function strip(e: Execution & { sweep?: SweepKind; sweep_at?: string }): Execution {
  const { sweep: _sweep, sweep_at: _at, ...rest } = e;
  return copy(rest);
}

export class MemoryPipelines implements PipelinesPort {
  readonly metas = new Map<string, PipelineMeta>();
  readonly versions = new Map<string, PipelineVersion>();

  async getMeta(id: string): Promise<PipelineMeta | null> {
    const m = this.metas.get(id);
    return m ? copy(m) : null;
  }

  async getVersion(id: string, version: number): Promise<PipelineVersion | null> {
    const v = this.versions.get(`${id}#${version}`);
    return v ? copy(v) : null;
  }

  async list(): Promise<PipelineListing[]> {
    return [...this.metas.values()].map(listingOf);
  }

  async push(
    id: string,
    definition: PipelineDefinition,
    hash: string,
    now: string,
    workflow?: WorkflowType,
  ): Promise<{ version: number; created: boolean }> {
    const meta = this.metas.get(id);
    if (meta && meta.latest_hash === hash) return { version: meta.version, created: false };
    const version = (meta?.version ?? 0) + 1;
    this.versions.set(`${id}#${version}`, {
      pipeline_id: id,
      version,
      definition: copy(definition),
      hash,
      created_at: now,
      ...(workflow === undefined ? {} : { workflow }),
    });
    this.metas.set(id, {
      pipeline_id: id,
      version,
      description: definition.description ?? null,
      created_at: meta?.created_at ?? now,
      updated_at: now,
      latest_hash: hash,
      deployment_id: meta?.deployment_id ?? null,
      latest_finished: meta?.latest_finished ?? null,
      last_success: meta?.last_success ?? null,
    });
    return { version, created: true };
  }

  async recordRunFinished(id: string, run: RunPointer): Promise<void> {
    const m = this.metas.get(id);
    if (!m) return;
    const key = (r: RunPointer | null) => (r ? `${r.created_at}#${r.run_id}` : '');
    if (run.status === 'completed' && key(m.last_success) <= key(run)) m.last_success = copy(run);
    if (key(m.latest_finished) <= key(run)) m.latest_finished = copy(run);
  }

  async claimDeployment(id: string, expected: string | null, next: string | null): Promise<boolean> {
    const m = this.metas.get(id);
    if (!m || m.deployment_id !== expected) return false;
    m.deployment_id = next;
    return true;
  }
}

export class MemoryDeployments implements DeploymentsPort {
  readonly records = new Map<string, DeploymentRecord>();

  async get(id: string): Promise<DeploymentRecord | null> {
    const r = this.records.get(id);
    return r ? copy(r) : null;
  }

  async create(r: DeploymentRecord): Promise<boolean> {
    if (this.records.has(r.deployment_id)) return false;
    this.records.set(r.deployment_id, copy(r));
    return true;
  }

  async republish(id: string, revision: number, next: Republished): Promise<DeploymentRecord | null> {
    return this.update(id, revision, next);
  }

  async replaceKeys(id: string, revision: number, keyHashes: KeyHash[]): Promise<DeploymentRecord | null> {
    return this.update(id, revision, { key_hashes: keyHashes });
  }

  async setKeyLimits(id: string, revision: number, limits: Limits | null): Promise<DeploymentRecord | null> {
    return this.update(id, revision, { key_limits: limits });
  }

  async replaceSigningSecrets(id: string, revision: number, secrets: SealedSecret[]): Promise<DeploymentRecord | null> {
    return this.update(id, revision, { signing_secrets: secrets });
  }

  async markDeleted(id: string, at: string): Promise<boolean> {
    return (await this.update(id, null, { deleted_at: at }, 'deleted')) !== null;
  }

  async setForm(id: string, revision: number, form: FormSettings): Promise<DeploymentRecord | null> {
    return this.update(id, revision, { form });
  }

  private async update(
    id: string,
    revision: number | null,
    set: Partial<DeploymentRecord>,
    status: DeploymentRecord['status'] = 'live',
  ): Promise<DeploymentRecord | null> {
    const r = this.records.get(id);
    if (!r || r.status !== 'live' || (revision !== null && r.revision !== revision)) return null;
    Object.assign(r, copy(set), { revision: r.revision + 1, status });
    return copy(r);
  }
}

/**
 * The usage items of the table: attribute counters per deployment and five-minute bucket,
 * written with the stores' own attribute names and read back by the same reader
 * (addUsageAttribute), so usage splits by consumer here as in DynamoDB.
 */
export class MemoryUsage {
  private readonly buckets = new Map<string, { deploymentId: string; bucket: string; attributes: Map<string, number> }>();
  add(deploymentId: string, bucket: string, name: string): void {
    const key = `${deploymentId}#${bucket}`;
    const b = this.buckets.get(key) ?? { deploymentId, bucket, attributes: new Map<string, number>() };
    b.attributes.set(name, (b.attributes.get(name) ?? 0) + 1);
    this.buckets.set(key, b);
  }
  since(deploymentId: string, from: Date): UsageBucket[] {
    const start = bucketOf(from);
    return [...this.buckets.values()]
      .filter((b) => b.deploymentId === deploymentId && b.bucket >= start)
      .sort((x, y) => (x.bucket < y.bucket ? -1 : 1))
      .map((b) => {
        const out: UsageBucket = { bucket: b.bucket, counts: {}, bins: {} };
        for (const [name, n] of b.attributes) addUsageAttribute(out, name, n);
        return out;
      });
  }
}

/** Consumers and limit counters, with the DynamoDB adapter's conditions. */
export class MemoryConsumers implements ConsumersPort {
  readonly items = new Map<string, ConsumerRecord>();
  readonly counters = new Map<string, number>();
  readonly tallies: { deploymentId: string; subject: string; what: CallerTally }[] = [];
  constructor(readonly usage = new MemoryUsage()) {}
  async get(deploymentId: string, consumerId: string): Promise<ConsumerRecord | null> {
    const c = this.items.get(`${deploymentId}/${consumerId}`);
    return c ? copy(c) : null;
  }
  async list(deploymentId: string): Promise<ConsumerRecord[]> {
    return [...this.items.values()].filter((c) => c.deployment_id === deploymentId).map(copy);
  }
  async create(c: ConsumerRecord): Promise<boolean> {
    const k = `${c.deployment_id}/${c.consumer_id}`;
    if (this.items.has(k)) return false;
    this.items.set(k, copy(c));
    return true;
  }
  async update(deploymentId: string, consumerId: string, revision: number, changes: ConsumerChanges): Promise<ConsumerRecord | null> {
    const c = this.items.get(`${deploymentId}/${consumerId}`);
    if (!c || c.revision !== revision || c.revoked_at !== null) return null;
    const defined = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
    Object.assign(c, copy(defined), { revision: c.revision + 1 });
    return copy(c);
  }
  async touch(deploymentId: string, consumerId: string, at: string, olderThan: string): Promise<void> {
    const c = this.items.get(`${deploymentId}/${consumerId}`);
    if (c && (c.last_used_at === null || c.last_used_at < olderThan)) c.last_used_at = at;
  }
  async take(deploymentId: string, subject: string, counter: string, limit: number): Promise<number | null> {
    const k = `${deploymentId}/${subject}/${counter}`;
    const n = this.counters.get(k) ?? 0;
    if (n >= limit) return null;
    this.counters.set(k, n + 1);
    return n + 1;
  }
  async giveBack(deploymentId: string, subject: string, counter: string): Promise<void> {
    const k = `${deploymentId}/${subject}/${counter}`;
    const n = this.counters.get(k) ?? 0;
    if (n > 0) this.counters.set(k, n - 1);
  }
  async tally(deploymentId: string, subject: string, what: CallerTally, at: Date): Promise<void> {
    this.tallies.push({ deploymentId, subject, what });
    this.usage.add(deploymentId, bucketOf(at), callerAttribute(subject, what));
  }
}

/** Node records by execution, with the store's conditional writes (functions/adapters/steps.store.ts). */
export class MemorySteps implements StepsPort {
  readonly journals = new Map<string, MemoryJournal>();
  private journal(e: StepOwner): MemoryJournal {
    let j = this.journals.get(e.execution_id);
    if (!j) {
      j = new MemoryJournal();
      this.journals.set(e.execution_id, j);
    }
    return j;
  }
  async load(e: StepOwner): Promise<Map<string, NodeRecord>> {
    return new Map(structuredClone([...this.journal(e).nodes]));
  }
  save(e: StepOwner, node: string, rec: NodeRecord, prev: number | undefined, sawEvent: boolean): Promise<boolean> {
    return this.journal(e).save(node, structuredClone(rec), prev, sawEvent);
  }
  async keepEvent(e: StepOwner, node: string, event: Resumed): Promise<KeptEvent> {
    const before = this.journal(e).nodes.get(node);
    if (before?.event !== undefined) return { kept: false, why: 'used' };
    if (before?.state === 'done') return { kept: false, why: 'ended' };
    if (before?.state === 'skipped') return { kept: false, why: 'skipped' };
    this.journal(e).resume(node, structuredClone(event));
    return { kept: true, state: before?.state };
  }
  async peek(e: StepOwner, node: string): Promise<{ state: NodeRecordState | undefined; evented: boolean }> {
    const rec = this.journal(e).nodes.get(node);
    return { state: rec?.state, evented: rec?.event !== undefined };
  }
}

/** Fresh in-memory stores: `testDeps(memoryStores())` gives a service everything it needs. */
export function memoryStores(opts: { trackOpen?: boolean } = {}): StoreSet & {
  pipelines: MemoryPipelines;
  executions: MemoryExecutions;
  steps: MemorySteps;
  deployments: MemoryDeployments;
  consumers: MemoryConsumers;
} {
  const usage = new MemoryUsage();
  // One map of execution items serves every port of them, as one table item does.
  const executions = new MemoryExecutions(opts.trackOpen, usage);
  return {
    pipelines: new MemoryPipelines(),
    executions,
    deliveries: executions,
    sweep: executions,
    executionLists: executions,
    usage: executions,
    idempotency: executions,
    steps: new MemorySteps(),
    deployments: new MemoryDeployments(),
    consumers: new MemoryConsumers(usage),
  };
}
