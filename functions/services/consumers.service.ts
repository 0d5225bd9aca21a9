/**
 * The owner's consumers of a live deployment: create (the key shown once), list, change limits,
 * revoke at once, rotate a key with a grace period as the deployment key rotates.
 */
import { randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { generateConsumerKey, hashApiKey, keyHint } from '../core/api-key';
import { consumerView, MAX_CONSUMERS_PER_DEPLOYMENT, type ConsumerRecord } from '../core/consumers';
import { AppError } from '../core/errors';
import type { ConsumerChanges } from '../core/ports';
import { ConsumerCreate, ConsumerPatch, ConsumerRotate, KeyLimits } from '../core/shapes';
import { epochSeconds } from '../core/time';
import type { DeploymentRecord } from '../core/types';
import { isPlainObject } from '../core/values';
import type { Deps } from '../adapters/deps';
import { retiredKeys } from './owner.service';
import { ownerRequestBody as parseJson } from '../core/json-body';
import { liveDeploymentOf } from './owner-executions.service';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function parse<S extends v.GenericSchema>(schema: S, body: string | null): v.InferOutput<S> {
  const given = parseJson(body);
  const raw = given === undefined ? {} : given;
  // valibot's record takes a list as an object (and would store `[]` as `{}`); JSON Schema's
  // `type: object`, which the documents say, does not.
  if (isPlainObject(raw) && Array.isArray(raw.metadata))
    throw new AppError('InvalidRequest', [{ path: 'metadata', reason: 'metadata must be an object of string values, not a list' }]);
  const parsed = v.safeParse(schema, raw);
  if (!parsed.success)
    throw new AppError(
      'InvalidRequest',
      parsed.issues.map((i) => ({ path: v.getDotPath(i) ?? '(body)', reason: i.message })),
    );
  return parsed.output;
}

/** Normalised to the house's timestamp form; a date past `now` only where `future` is asked. */
function expiry(at: string | null | undefined, now: Date, future: boolean): string | null | undefined {
  if (at === undefined || at === null) return at;
  const ms = Date.parse(at);
  if (future && ms <= now.getTime())
    throw new AppError('InvalidRequest', [{ path: 'expires_at', reason: 'expires_at must be in the future' }]);
  return new Date(ms).toISOString();
}

async function consumerOf(d: Deps, dep: DeploymentRecord, consumerId: string): Promise<ConsumerRecord> {
  const c = UUID.test(consumerId) ? await d.consumers.get(dep.deployment_id, consumerId, true) : null;
  if (!c) throw new AppError('ConsumerNotFound');
  return c;
}

async function newKey(d: Deps, deploymentId: string, consumerId: string) {
  const { pepper } = await d.keyMaterial.material();
  const apiKey = generateConsumerKey(deploymentId, consumerId, randomBytes(24));
  return { apiKey, hash: hashApiKey(apiKey, pepper), hint: keyHint(apiKey) };
}

/** POST …/deployment/consumers → 201, the consumer and its key (shown this once). */
export async function createConsumer(d: Deps, pipelineId: string, body: string | null) {
  const dep = await liveDeploymentOf(d, pipelineId);
  const req = parse(ConsumerCreate, body);
  const now = d.clock.now();
  const expiresAt = expiry(req.expires_at, now, true) ?? null;
  if ((await d.consumers.list(dep.deployment_id)).length >= MAX_CONSUMERS_PER_DEPLOYMENT) {
    throw new AppError('InvalidRequest', [
      { path: '(body)', reason: `a deployment has at most ${MAX_CONSUMERS_PER_DEPLOYMENT} consumers (revoked ones included)` },
    ]);
  }
  const consumerId = d.ids.uuid();
  const key = await newKey(d, dep.deployment_id, consumerId);
  const record: ConsumerRecord = {
    consumer_id: consumerId,
    deployment_id: dep.deployment_id,
    name: req.name,
    rate_limit: req.rate_limit,
    quota: req.quota,
    expires_at: expiresAt,
    metadata: req.metadata,
    key_hashes: [{ hash: key.hash, expires_at: null }],
    key_prefix: key.hint,
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
    last_used_at: null,
    revoked_at: null,
    revision: 1,
  };
  if (!(await d.consumers.create(record))) throw new AppError('Conflict', 'a consumer with this id exists; try again');
  return { ...consumerView(record, now), api_key: key.apiKey };
}

/** GET …/deployment/consumers: every consumer, oldest first, never key material. */
export async function listConsumers(d: Deps, pipelineId: string) {
  const dep = await liveDeploymentOf(d, pipelineId);
  const now = d.clock.now();
  const all = await d.consumers.list(dep.deployment_id);
  all.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.consumer_id.localeCompare(b.consumer_id));
  return { consumers: all.map((c) => consumerView(c, now)) };
}

/** PATCH …/consumers/{consumer_id}: what is given changes (null removes a limit or the expiry). */
export async function updateConsumer(d: Deps, pipelineId: string, consumerId: string, body: string | null) {
  const dep = await liveDeploymentOf(d, pipelineId);
  const req = parse(ConsumerPatch, body);
  const c = await consumerOf(d, dep, consumerId);
  if (c.revoked_at !== null) throw new AppError('Conflict', 'this consumer is revoked; create a new one');
  const now = d.clock.now();
  const changes: ConsumerChanges = {
    name: req.name,
    rate_limit: req.rate_limit,
    quota: req.quota,
    expires_at: expiry(req.expires_at, now, false),
    metadata: req.metadata,
    updated_at: now.toISOString(),
  };
  const updated = await d.consumers.update(dep.deployment_id, c.consumer_id, c.revision, changes);
  if (!updated) throw new AppError('Conflict', 'the consumer changed meanwhile; try again');
  return consumerView(updated, now);
}

/** DELETE …/consumers/{consumer_id}: the key is refused from the next request on. */
export async function revokeConsumer(d: Deps, pipelineId: string, consumerId: string) {
  const dep = await liveDeploymentOf(d, pipelineId);
  const c = await consumerOf(d, dep, consumerId);
  if (c.revoked_at !== null) return;
  const now = d.clock.now().toISOString();
  const updated = await d.consumers.update(dep.deployment_id, c.consumer_id, c.revision, { revoked_at: now, updated_at: now });
  if (!updated) throw new AppError('Conflict', 'the consumer changed meanwhile; try again');
}

/** POST …/consumers/{consumer_id}/keys: a new key; the old one works on for `grace_seconds`. */
export async function rotateConsumerKey(d: Deps, pipelineId: string, consumerId: string, body: string | null) {
  const dep = await liveDeploymentOf(d, pipelineId);
  const { grace_seconds: grace } = parse(ConsumerRotate, body);
  const c = await consumerOf(d, dep, consumerId);
  if (c.revoked_at !== null) throw new AppError('Conflict', 'this consumer is revoked; create a new one');
  const now = d.clock.now();
  const nowSeconds = epochSeconds(now);
  // Rounded up, so a grace period is never shorter than asked.
  const until = Math.ceil(now.getTime() / 1000) + grace;
  const alive =
    grace === 0
      ? []
      : c.key_hashes
          .filter((k) => k.expires_at === null || k.expires_at > nowSeconds)
          .map((k) => ({ ...k, expires_at: k.expires_at ?? until }));
  const key = await newKey(d, dep.deployment_id, c.consumer_id);
  const updated = await d.consumers.update(dep.deployment_id, c.consumer_id, c.revision, {
    key_hashes: [{ hash: key.hash, expires_at: null }, ...alive, ...retiredKeys(c.key_hashes, grace, nowSeconds)],
    key_prefix: key.hint,
    updated_at: now.toISOString(),
  });
  if (!updated) throw new AppError('Conflict', 'the consumer changed meanwhile; try again');
  return { consumer_id: c.consumer_id, api_key: key.apiKey };
}

/**
 * PUT …/deployment/limits: the limits of the deployment's own key, which it keeps beside its
 * consumers' (null or absent: none). Enforced exactly as a consumer's.
 */
export async function setDeploymentKeyLimits(d: Deps, pipelineId: string, body: string | null) {
  const dep = await liveDeploymentOf(d, pipelineId);
  const req = parse(KeyLimits, body);
  const limits = { rate_limit: req.rate_limit, quota: req.quota };
  const updated = await d.deployments.setKeyLimits(
    dep.deployment_id,
    dep.revision,
    limits.rate_limit === null && limits.quota === null ? null : limits,
  );
  if (!updated) throw new AppError('Conflict', 'the deployment changed meanwhile; try again');
  return { deployment_id: dep.deployment_id, ...limits };
}
