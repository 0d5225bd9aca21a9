import { keyStatus, parseApiKey, readApiKey } from '../core/api-key';
import type { KeyRefusal } from '../core/errors';
import type { Deps } from '../adapters/deps';
import { epochSeconds } from '../core/time';

export interface Authorized {
  deploymentId: string;
  revision: number;
  deleted: boolean;
}

export type AuthAnswer = ({ ok: true } & Authorized) | { ok: false; reason: KeyRefusal };

/**
 * Checks a caller's API key: how it was sent, its format and checksum first (a malformed key
 * costs no read), then one read of the deployment it names and a constant-time comparison of
 * keyed hashes. A refusal says which case it is (errors.ts KEY_REFUSALS); a well-formed key of
 * a deployment that does not exist is `unknown`, like any key that never matched.
 * A deleted deployment's key still authenticates, so its requests get 404, not 401.
 * `pathDeploymentId` is the deployment the route names, if it names one: a key of another
 * deployment is refused there rather than passed on.
 */
export async function authorize(d: Deps, headers: Record<string, string | undefined>, pathDeploymentId?: string): Promise<AuthAnswer> {
  const presented = readApiKey(headers);
  if (!('key' in presented)) return { ok: false, reason: presented.refused };
  const parsed = parseApiKey(presented.key);
  if (parsed === null) return { ok: false, reason: 'malformed' };
  // A strongly consistent read: a rotated-out key or a deleted deployment must stop at once,
  // not after replication catches up.
  const [rec, material] = await Promise.all([d.deployments.get(parsed.deploymentId, true), d.keyMaterial.material()]);
  if (!rec) return { ok: false, reason: 'unknown' };
  const status = keyStatus(presented.key, material.pepper, rec.key_hashes, epochSeconds(d.clock.now()));
  if (status !== 'valid') return { ok: false, reason: status };
  if (pathDeploymentId !== undefined && pathDeploymentId !== rec.deployment_id) return { ok: false, reason: 'other_deployment' };
  return { ok: true, deploymentId: rec.deployment_id, revision: rec.revision, deleted: rec.status === 'deleted' };
}
