/**
 * API keys and secrets. A key is shown once and stored only as a keyed hash; it names its own
 * deployment and carries a checksum, so a mistyped or made-up key is refused before any lookup
 * and a leaked one is recognisable by its prefix. Signing secrets are stored sealed.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { KeyHash } from './types';

export const API_KEY_PREFIX = 'pgk_';
const KEY_RANDOM_BYTES = 24;
const CHECKSUM_CHARS = 6;
const UUID = /^([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})$/;
// 24 random bytes are exactly 32 base64url characters, so every key has the same length.
const API_KEY = /^pgk_([0-9a-f]{32})([A-Za-z0-9_-]{32})([A-Za-z0-9_-]{6})$/;
// A consumer's key also names its consumer (32 more hex characters), so the authorizer reads
// that one consumer by key, not a list: 106 characters against the deployment key's 74.
const CONSUMER_KEY = /^pgk_([0-9a-f]{32})([0-9a-f]{32})([A-Za-z0-9_-]{32})([A-Za-z0-9_-]{6})$/;

const checksum = (body: string): string => createHash('sha256').update(body).digest('base64url').slice(0, CHECKSUM_CHARS);

/** A new key for a deployment: prefix, the deployment id's hex, random part, checksum. */
export function generateApiKey(deploymentId: string, random: Buffer): string {
  const match = UUID.exec(deploymentId.toLowerCase());
  if (match === null) throw new Error(`deployment id ${deploymentId} is not a UUID`);
  if (random.length < KEY_RANDOM_BYTES) throw new Error(`an API key needs ${KEY_RANDOM_BYTES} random bytes`);
  const body = `${API_KEY_PREFIX}${match.slice(1).join('')}${random.subarray(0, KEY_RANDOM_BYTES).toString('base64url')}`;
  return body + checksum(body);
}

const uuidHex = (id: string, what: string): string => {
  const match = UUID.exec(id.toLowerCase());
  if (match === null) throw new Error(`${what} id ${id} is not a UUID`);
  return match.slice(1).join('');
};
const hexUuid = (hex: string): string => [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join('-');

/** A new key for one consumer of a deployment: prefix, both ids' hex, random part, checksum. */
export function generateConsumerKey(deploymentId: string, consumerId: string, random: Buffer): string {
  if (random.length < KEY_RANDOM_BYTES) throw new Error(`an API key needs ${KEY_RANDOM_BYTES} random bytes`);
  const body = `${API_KEY_PREFIX}${uuidHex(deploymentId, 'deployment')}${uuidHex(consumerId, 'consumer')}${random.subarray(0, KEY_RANDOM_BYTES).toString('base64url')}`;
  return body + checksum(body);
}

/**
 * The deployment a well-formed key names (and its consumer, for a consumer's key), or null for
 * anything malformed.
 */
export function parseApiKey(key: string): { deploymentId: string; consumerId?: string } | null {
  const consumer = CONSUMER_KEY.exec(key);
  const match = consumer ?? API_KEY.exec(key);
  if (match === null) return null;
  if (match.at(-1) !== checksum(key.slice(0, -CHECKSUM_CHARS))) return null;
  const deploymentId = hexUuid(match[1] ?? '');
  return consumer === null ? { deploymentId } : { deploymentId, consumerId: hexUuid(consumer[2] ?? '') };
}

/**
 * What a listing shows of a key: its first 12 characters (prefix and the deployment's) and its
 * last 4 (checksum), enough to tell keys apart and never enough to use one.
 */
export const keyHint = (key: string): string => `${key.slice(0, 12)}…${key.slice(-4)}`;

/** The stored form of a key: HMAC-SHA-256 under the service's pepper, hex. */
export function hashApiKey(key: string, pepper: Buffer): string {
  return createHmac('sha256', pepper).update(key).digest('hex');
}

/** Whether a key matches any stored hash; every hash is compared, in constant time each. */
export function keyMatches(key: string, pepper: Buffer, storedHashes: string[]): boolean {
  const candidate = Buffer.from(hashApiKey(key, pepper), 'utf8');
  let matched = false;
  for (const stored of storedHashes) {
    const expected = Buffer.from(stored, 'utf8');
    if (expected.length === candidate.length && timingSafeEqual(expected, candidate)) matched = true;
  }
  return matched;
}

// Whatever follows the scheme is the key: one with a space in it is then refused as malformed.
const API_KEY_SCHEME = /^api-key(?:[ \t]+(.+))?$/is;
const BEARER_SCHEME = /^bearer(?:[ \t]+(.+))?$/is;

/** What a request presents as its API key, or why it presents none. */
export type PresentedKey = { key: string } | { refused: 'missing' | 'wrong_scheme' | 'two_keys' };

/**
 * The key from `X-API-Key` or `Authorization: Api-Key <key>`, and with `bearer` (the MCP route,
 * where clients send `Authorization: Bearer <token>`) from `Authorization: Bearer <key>` too. A
 * header may come with several values (API Gateway's `multiValueHeaders`: a header sent twice);
 * more than one key in one request, or two different Authorization headers, is refused rather
 * than choosing between them (API Gateway's `headers` keeps only the last). An Authorization
 * header of another scheme (Bearer elsewhere, Basic, a bare key) is named as such when no key
 * came with the request.
 */
export function readApiKey(
  headers: Readonly<Record<string, string | readonly string[] | undefined>>,
  opts: { bearer?: boolean } = {},
): PresentedKey {
  const keys = new Set<string>();
  const authorizations = new Set<string>();
  let otherScheme = false;
  for (const [name, given] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    for (const value of given === undefined ? [] : typeof given === 'string' ? [given] : given) {
      if (lower === 'x-api-key') {
        const key = value.trim();
        if (key !== '') keys.add(key);
      } else if (lower === 'authorization' && value.trim() !== '') {
        authorizations.add(value.trim());
        const match = API_KEY_SCHEME.exec(value.trim()) ?? (opts.bearer ? BEARER_SCHEME.exec(value.trim()) : null);
        if (match === null) otherScheme = true;
        else if (match[1] !== undefined) keys.add(match[1].trim());
      }
    }
  }
  const [key] = keys;
  if (keys.size > 1 || authorizations.size > 1) return { refused: 'two_keys' };
  if (key !== undefined) return { key };
  return { refused: otherScheme ? 'wrong_scheme' : 'missing' };
}

/** The key from `X-API-Key` or `Authorization: Api-Key <key>`, or null (see readApiKey). */
export function extractApiKey(headers: Record<string, string | undefined>): string | null {
  const presented = readApiKey(headers);
  return 'key' in presented ? presented.key : null;
}

/**
 * What a key is to its deployment: `valid`, `revoked` (replaced without grace), `expired`
 * (its grace period ended) or `unknown`. Every stored hash is compared, in constant time each.
 */
export function keyStatus(
  key: string,
  pepper: Buffer,
  stored: readonly KeyHash[],
  nowSeconds: number,
): 'valid' | 'revoked' | 'expired' | 'unknown' {
  const candidate = Buffer.from(hashApiKey(key, pepper), 'utf8');
  let status: 'valid' | 'revoked' | 'expired' | 'unknown' = 'unknown';
  for (const k of stored) {
    const expected = Buffer.from(k.hash, 'utf8');
    if (expected.length !== candidate.length || !timingSafeEqual(expected, candidate)) continue;
    if (k.expires_at === null || k.expires_at > nowSeconds) status = 'valid';
    else if (status !== 'valid') status = k.revoked_at !== undefined ? 'revoked' : 'expired';
  }
  return status;
}

/** Compares two secrets without revealing, by timing, where or whether their lengths differ. */
export function constantTimeEquals(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(a), digest(b));
}

const SIGNING_SECRET_BYTES = 32;

/** A callback signing secret in the Standard Webhooks format: `whsec_` + base64 of 32 bytes. */
export function generateSigningSecret(random: Buffer): string {
  if (random.length < SIGNING_SECRET_BYTES) throw new Error(`a signing secret needs ${SIGNING_SECRET_BYTES} random bytes`);
  return `whsec_${random.subarray(0, SIGNING_SECRET_BYTES).toString('base64')}`;
}

const SEAL_VERSION = 'v1';
const GCM_IV_BYTES = 12;
const GCM_TAG_BYTES = 16;
const B64URL = /^[A-Za-z0-9_-]*$/;

function checkMasterKey(masterKey: Buffer): void {
  if (masterKey.length !== 32) throw new Error('the master key must be 32 bytes');
}

/** Seals a secret with AES-256-GCM as `v1.<iv>.<tag>.<ciphertext>` (base64url parts). */
export function sealSecret(plaintext: string, masterKey: Buffer, iv: Buffer): string {
  checkMasterKey(masterKey);
  if (iv.length !== GCM_IV_BYTES) throw new Error(`the IV must be ${GCM_IV_BYTES} bytes`);
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv, { authTagLength: GCM_TAG_BYTES });
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [SEAL_VERSION, iv, tag, ciphertext].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

/** Opens a sealed secret; anything malformed, tampered with or sealed under another key throws. */
export function openSecret(sealed: string, masterKey: Buffer): string {
  checkMasterKey(masterKey);
  const parts = sealed.split('.');
  const [version, ivText, tagText, ciphertextText] = parts;
  if (
    parts.length !== 4 ||
    version !== SEAL_VERSION ||
    ivText === undefined ||
    tagText === undefined ||
    ciphertextText === undefined ||
    ![ivText, tagText, ciphertextText].every((p) => B64URL.test(p))
  ) {
    throw new Error('sealed secret is malformed');
  }
  const iv = Buffer.from(ivText, 'base64url');
  const tag = Buffer.from(tagText, 'base64url');
  // Re-encoding catches non-canonical base64url that would otherwise decode to the same bytes.
  if (
    iv.length !== GCM_IV_BYTES ||
    tag.length !== GCM_TAG_BYTES ||
    iv.toString('base64url') !== ivText ||
    tag.toString('base64url') !== tagText
  ) {
    throw new Error('sealed secret is malformed');
  }
  const ciphertext = Buffer.from(ciphertextText, 'base64url');
  if (ciphertext.toString('base64url') !== ciphertextText) throw new Error('sealed secret is malformed');
  // The tag length is pinned: GCM would otherwise accept a truncated tag.
  const decipher = createDecipheriv('aes-256-gcm', masterKey, iv, { authTagLength: GCM_TAG_BYTES });
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  } catch (e) {
    throw new Error('sealed secret failed authentication (tampered with, or sealed under another key)', { cause: e });
  }
}
