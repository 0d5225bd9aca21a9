/**
 * The `consumers` block of a pipeline file for `pipegate apply`: each caller of the deployment
 * named, with the limits, expiry and metadata it should have. Consumers are matched by name.
 * apply creates those the deployment lacks (their keys go only to `--secrets-out`), changes those
 * whose settings differ, and leaves alone those the file does not name: revoking a key is never
 * a side effect of a file (`pipegate consumers revoke` does it).
 *
 * An entry is checked with the service's own create schema (functions/core/shapes.ts), so a file
 * that passes here is a request the service accepts.
 */
import * as v from 'valibot';
import { ConsumerCreate } from '../../functions/core/shapes';
import { isPlainObject } from '../../functions/core/values';
import type { Consumer, ConsumerFields } from './client';

export interface FileProblemLike {
  path: string;
  reason: string;
}

/** What a file asks of one consumer: every field given, so absent means "none". */
export interface DeclaredConsumer {
  name: string;
  fields: Required<Pick<ConsumerFields, 'rate_limit' | 'quota' | 'expires_at' | 'metadata'>>;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const at = (base: string, key: string): string => (IDENTIFIER.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`);

/** `consumers: {<name>: {rate_limit?, quota?, expires_at?, metadata?}}`, every problem listed. */
export function checkConsumers(block: unknown, problems: FileProblemLike[]): DeclaredConsumer[] {
  if (block === undefined || block === null) return [];
  if (!isPlainObject(block)) {
    problems.push({ path: 'consumers', reason: 'must be an object of consumer name → { rate_limit?, quota?, expires_at?, metadata? }' });
    return [];
  }
  const declared: DeclaredConsumer[] = [];
  for (const [name, entry] of Object.entries(block)) {
    const here = at('consumers', name);
    if (entry !== null && !isPlainObject(entry)) {
      problems.push({ path: here, reason: 'must be an object with rate_limit, quota, expires_at and/or metadata (or {} for none)' });
      continue;
    }
    const given = entry ?? {};
    if (Object.hasOwn(given, 'name')) {
      problems.push({ path: at(here, 'name'), reason: 'the key of the entry is the name; remove this field' });
      continue;
    }
    const parsed = v.safeParse(ConsumerCreate, { ...given, name });
    if (!parsed.success) {
      for (const issue of parsed.issues) {
        const keys = (issue.path ?? []).map((p) => String(p.key));
        const path = keys[0] === 'name' ? here : keys.reduce(at, here);
        problems.push({ path, reason: issue.message });
      }
      continue;
    }
    const c = parsed.output;
    declared.push({ name, fields: { rate_limit: c.rate_limit, quota: c.quota, expires_at: c.expires_at, metadata: c.metadata } });
  }
  return declared;
}

export interface ConsumerUpdate {
  name: string;
  consumer_id: string;
  /** The fields that differ, as the PATCH sends them. */
  body: ConsumerFields;
}

export interface ConsumersPlan {
  create: DeclaredConsumer[];
  update: ConsumerUpdate[];
  unchanged: string[];
  /** Consumers of the deployment the files do not name (revoked ones not counted): left as they are. */
  not_in_file: string[];
  /** Names the service holds more than once among consumers not revoked: apply cannot tell them apart. */
  ambiguous: string[];
}

const sameTime = (a: string | null, b: string | null): boolean => (a === null || b === null ? a === b : Date.parse(a) === Date.parse(b));
const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
const sortedEntries = (m: Record<string, string>): [string, string][] => Object.entries(m).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));

/** What to change so the live consumers match the file. `existing` null: no deployment yet. */
export function planConsumers(declared: readonly DeclaredConsumer[], existing: readonly Consumer[] | null): ConsumersPlan {
  const plan: ConsumersPlan = { create: [], update: [], unchanged: [], not_in_file: [], ambiguous: [] };
  const live = (existing ?? []).filter((c) => c.status !== 'revoked');
  const byName = new Map<string, Consumer[]>();
  for (const c of live) byName.set(c.name, [...(byName.get(c.name) ?? []), c]);
  const names = new Set(declared.map((d) => d.name));
  for (const d of declared) {
    const found = byName.get(d.name) ?? [];
    if (found.length > 1) {
      plan.ambiguous.push(d.name);
      continue;
    }
    const c = found[0];
    if (c === undefined) {
      plan.create.push(d);
      continue;
    }
    const body: ConsumerFields = {};
    const f = d.fields;
    if (!sameJson(c.rate_limit && { requests: c.rate_limit.requests, per_seconds: c.rate_limit.per_seconds }, f.rate_limit))
      body.rate_limit = f.rate_limit;
    if (!sameJson(c.quota && { executions: c.quota.executions, per: c.quota.per }, f.quota)) body.quota = f.quota;
    if (!sameTime(c.expires_at, f.expires_at)) body.expires_at = f.expires_at;
    if (!sameJson(sortedEntries(c.metadata), sortedEntries(f.metadata))) body.metadata = f.metadata;
    if (Object.keys(body).length === 0) plan.unchanged.push(d.name);
    else plan.update.push({ name: d.name, consumer_id: c.consumer_id, body });
  }
  plan.not_in_file = [...new Set(live.map((c) => c.name).filter((n) => !names.has(n)))];
  return plan;
}

/** One line for the plan and the result: `create free, update paid (quota), 1 not in the file left as it is`. */
export function describeConsumers(plan: ConsumersPlan): string {
  const parts: string[] = [];
  if (plan.create.length > 0) parts.push(`create ${plan.create.map((c) => c.name).join(', ')}`);
  if (plan.update.length > 0) parts.push(`update ${plan.update.map((u) => `${u.name} (${Object.keys(u.body).join(', ')})`).join(', ')}`);
  if (plan.unchanged.length > 0) parts.push(`unchanged ${plan.unchanged.join(', ')}`);
  if (plan.ambiguous.length > 0) parts.push(`cannot match ${plan.ambiguous.join(', ')} (more than one consumer has that name)`);
  if (plan.not_in_file.length > 0)
    parts.push(`${plan.not_in_file.length} not in the file left as ${plan.not_in_file.length === 1 ? 'it is' : 'they are'}`);
  return parts.join(' · ');
}
