/** A deployment's credentials: new ones at publish, and rotation of the API key, the signing secret or the form link (contract §7). */
import { randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { generateApiKey, generateSigningSecret, hashApiKey, sealSecret } from '../core/api-key';
import { AppError } from '../core/errors';
import { RotateRequest } from '../core/shapes';
import type { KeyHash } from '../core/types';
import type { Deps } from '../adapters/deps';
import { epochSeconds } from '../core/time';
import { currentDeployment, pipelineMeta } from './pipelines.service';
import { ownerRequestBody as parseJson } from '../core/json-body';
import { rotateFormLink } from './form-links.service';

export async function newCredentials(d: Deps, deploymentId: string) {
  const { pepper, masterKey } = await d.keyMaterial.material();
  const apiKey = generateApiKey(deploymentId, randomBytes(24));
  const signingSecret = generateSigningSecret(randomBytes(32));
  return {
    apiKey,
    signingSecret,
    keyHash: hashApiKey(apiKey, pepper),
    sealed: sealSecret(signingSecret, masterKey, randomBytes(12)),
  };
}

/**
 * The retired key hashes a rotation keeps, newest first and at most RETIRED_KEYS_KEPT, only so
 * that a caller still sending one is told it was revoked or its grace period ended rather than
 * that it is unknown. Without a grace period the keys that worked until now are revoked.
 */
const RETIRED_KEYS_KEPT = 4;

export function retiredKeys(keys: readonly KeyHash[], grace: number, now: number): KeyHash[] {
  const revoked =
    grace === 0
      ? keys.filter((k) => k.expires_at === null || k.expires_at > now).map((k) => ({ hash: k.hash, expires_at: now, revoked_at: now }))
      : [];
  const past = keys.filter((k) => k.expires_at !== null && k.expires_at <= now);
  return [...revoked, ...past.sort((a, b) => (b.expires_at ?? 0) - (a.expires_at ?? 0))].slice(0, RETIRED_KEYS_KEPT);
}

/**
 * Rotates the API key (or the callback signing secret). Without a grace period the old one
 * stops at once; with one, both work until it ends, and callbacks carry both signatures.
 */
export async function rotate(d: Deps, id: string, body: string | null, baseUrl = '') {
  const m = await pipelineMeta(d, id);
  const given = parseJson(body);
  const parsed = v.safeParse(RotateRequest, given === undefined ? {} : given);
  if (!parsed.success) {
    throw new AppError(
      'InvalidRequest',
      parsed.issues.map((i) => ({ path: v.getDotPath(i) ?? '(body)', reason: i.message })),
    );
  }
  const dep = await currentDeployment(d, m);
  if (!dep) throw new AppError('DeploymentNotFound');
  const now = d.clock.now();
  const grace = parsed.output.grace_seconds;
  // Rounded up, so a grace period is never shorter than asked.
  const until = Math.ceil(now.getTime() / 1000) + grace;
  const alive = <T extends { expires_at: number | null }>(xs: T[]): T[] =>
    grace === 0
      ? []
      : xs
          .filter((x) => x.expires_at === null || x.expires_at > epochSeconds(now))
          .map((x) => ({ ...x, expires_at: x.expires_at ?? until }));
  if (parsed.output.credential === 'form_link') return { form_url: await rotateFormLink(d, dep, baseUrl) };
  const creds = await newCredentials(d, dep.deployment_id);
  if (parsed.output.credential === 'signing_secret') {
    const ok = await d.deployments.replaceSigningSecrets(dep.deployment_id, dep.revision, [
      { sealed: creds.sealed, expires_at: null },
      ...alive(dep.signing_secrets),
    ]);
    if (!ok) throw new AppError('Conflict', 'the deployment changed while rotating; try again');
    return { signing_secret: creds.signingSecret };
  }
  const ok = await d.deployments.replaceKeys(dep.deployment_id, dep.revision, [
    { hash: creds.keyHash, expires_at: null },
    ...alive(dep.key_hashes),
    ...retiredKeys(dep.key_hashes, grace, epochSeconds(now)),
  ]);
  if (!ok) throw new AppError('Conflict', 'the deployment changed while rotating; try again');
  return { api_key: creds.apiKey };
}
