import { extractApiKey, keyMatches, parseApiKey } from '../core/api-key';
import { AppError } from '../core/errors';
import type { Deps } from '../adapters/deps';
import { epochSeconds } from '../core/time';

export interface Authorized {
  deploymentId: string;
  revision: number;
  deleted: boolean;
}

/**
 * Checks a caller's API key: format and checksum first (a malformed key costs no read), then
 * one read of the deployment it names and a constant-time comparison of keyed hashes.
 * A deleted deployment's key still authenticates, so its requests get 404, not 401.
 */
export async function authorize(d: Deps, headers: Record<string, string | undefined>): Promise<Authorized> {
  const key = extractApiKey(headers);
  const parsed = key === null ? null : parseApiKey(key);
  if (key === null || parsed === null) throw new AppError('Unauthorized');
  // A strongly consistent read: a rotated-out key or a deleted deployment must stop at once,
  // not after replication catches up.
  const [rec, material] = await Promise.all([d.deployments.get(parsed.deploymentId, true), d.keyMaterial.material()]);
  if (!rec) throw new AppError('Unauthorized');
  const now = epochSeconds(d.clock.now());
  const hashes = rec.key_hashes.filter((k) => k.expires_at === null || k.expires_at > now).map((k) => k.hash);
  if (!keyMatches(key, material.pepper, hashes)) throw new AppError('Unauthorized');
  return { deploymentId: rec.deployment_id, revision: rec.revision, deleted: rec.status === 'deleted' };
}
