import { keyStatus, parseApiKey, readApiKey } from '../core/api-key';
import type { KeyRefusal } from '../core/errors';
import type { Deps } from '../adapters/deps';
import { epochSeconds } from '../core/time';
import { LAST_USE_RESOLUTION_SECONDS, type Limits } from '../core/consumers';
import { errorFields } from '../adapters/logger';

export interface Authorized {
  deploymentId: string;
  revision: number;
  deleted: boolean;
  /** The consumer whose key this is; absent for the deployment's own key. */
  consumerId?: string;
  limits: Limits;
}

const NO_LIMITS: Limits = { rate_limit: null, quota: null };

export type AuthAnswer = ({ ok: true } & Authorized) | { ok: false; reason: KeyRefusal };

/**
 * Checks a caller's API key: how it was sent, its format and checksum first (a malformed key
 * costs no read), then one read of the deployment it names and a constant-time comparison of
 * keyed hashes. A refusal says which case it is (errors.ts KEY_REFUSALS); a well-formed key of
 * a deployment that does not exist is `unknown`, like any key that never matched.
 * A deleted deployment's key still authenticates, so its requests get 404, not 401.
 * `pathDeploymentId` is the deployment the route names, if it names one: a key of another
 * deployment is refused there rather than passed on. `bearer`: the route also takes
 * `Authorization: Bearer <key>` (the MCP route).
 */
export async function authorize(
  d: Deps,
  headers: Readonly<Record<string, string | readonly string[] | undefined>>,
  pathDeploymentId?: string,
  opts: { bearer?: boolean } = {},
): Promise<AuthAnswer> {
  const presented = readApiKey(headers, opts);
  if (!('key' in presented)) return { ok: false, reason: presented.refused };
  const parsed = parseApiKey(presented.key);
  if (parsed === null) return { ok: false, reason: 'malformed' };
  // Strongly consistent reads: a rotated-out or revoked key or a deleted deployment must stop
  // at once, not after replication catches up. A consumer's key costs a second read, in parallel.
  const { consumerId } = parsed;
  const [rec, consumer, material] = await Promise.all([
    d.deployments.get(parsed.deploymentId, true),
    consumerId === undefined ? null : d.consumers.get(parsed.deploymentId, consumerId, true),
    d.keyMaterial.material(),
  ]);
  if (!rec) return { ok: false, reason: 'unknown' };
  const now = d.clock.now();
  if (consumerId !== undefined) {
    if (!consumer) return { ok: false, reason: 'unknown' };
    const status = keyStatus(presented.key, material.pepper, consumer.key_hashes, epochSeconds(now));
    if (status !== 'valid') return { ok: false, reason: status };
    // Only the holder of a valid key learns these: it tells them nothing about other keys.
    if (consumer.revoked_at !== null) return { ok: false, reason: 'consumer_revoked' };
    if (consumer.expires_at !== null && Date.parse(consumer.expires_at) <= now.getTime()) return { ok: false, reason: 'key_expired' };
  } else {
    const status = keyStatus(presented.key, material.pepper, rec.key_hashes, epochSeconds(now));
    if (status !== 'valid') return { ok: false, reason: status };
  }
  if (pathDeploymentId !== undefined && pathDeploymentId !== rec.deployment_id) return { ok: false, reason: 'other_deployment' };
  if (consumer) await touch(d, consumer.deployment_id, consumer.consumer_id, consumer.last_used_at, now);
  return {
    ok: true,
    deploymentId: rec.deployment_id,
    revision: rec.revision,
    deleted: rec.status === 'deleted',
    ...(consumer
      ? { consumerId: consumer.consumer_id, limits: { rate_limit: consumer.rate_limit, quota: consumer.quota } }
      : { limits: rec.key_limits ?? NO_LIMITS }),
  };
}

/**
 * A consumer's last use, written at most once a minute (the read above says whether it is due,
 * the condition settles races). Bookkeeping: a failure is logged, never a refusal.
 */
async function touch(d: Deps, deploymentId: string, consumerId: string, last: string | null, now: Date): Promise<void> {
  const older = new Date(now.getTime() - LAST_USE_RESOLUTION_SECONDS * 1000).toISOString();
  if (last !== null && last >= older) return;
  try {
    await d.consumers.touch(deploymentId, consumerId, now.toISOString(), older);
  } catch (e) {
    d.log.warn('consumer last use not recorded', { consumer_id: consumerId, ...errorFields(e) });
  }
}
