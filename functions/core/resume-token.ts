/**
 * A wait node's resume URL, `POST {base}/v1/resume/{token}` (functions/core/nodes/wait.ts). The
 * token is a capability: an HMAC under a key derived from the service's master key binds it to
 * one execution and one node, so it cannot be guessed, altered or moved to another (256-bit
 * tag). Nothing is stored: it is derived again wherever it is shown (the pipeline's
 * `$resume_url`, the execution's `waiting` list), and checked, in constant time, when it is
 * used; what it may still do (single use, gone once the node or execution ends) is the node's
 * record's to say (functions/services/resume.service.ts).
 *
 *   w1.<execution id>.<node id>.<base64url(HMAC-SHA-256)>
 *
 * The token is signed, not encrypted: it shows the execution and node ids, which its holder
 * knows already (an http node sends `Idempotency-Key: <execution id>.<node id>` with every
 * call) and which grant nothing without a key.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { isUuid, NODE_ID_PATTERN } from './ids';

export const RESUME_TOKEN_VERSION = 'w1';
/** The resume route's path (lib/routes.ts), token appended. */
export const RESUME_ROUTE_PREFIX = '/v1/resume/';
/** Longer tokens are refused before any work: a real one is under 160 characters. */
export const MAX_RESUME_TOKEN_CHARS = 256;
const TAG_BYTES = 32;
const B64URL = /^[A-Za-z0-9_-]+$/;

/** Whose wait a token resumes. */
export interface ResumeClaims {
  execution_id: string;
  node_id: string;
}

/**
 * The tokens' own key: HKDF of the master key, so no key serves two purposes and rotating the
 * key material retires every resume URL.
 */
export function resumeKey(masterKey: Buffer): Buffer {
  // HKDF takes any key, the authorizer's empty one too (functions/adapters/key-material.ts): refused here.
  if (masterKey.length !== 32) throw new Error('the master key must be 32 bytes');
  return Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'pipegate resume urls v1', 32));
}

const tag = (executionId: string, nodeId: string, key: Buffer): Buffer =>
  createHmac('sha256', key).update(`${RESUME_TOKEN_VERSION}\0${executionId}\0${nodeId}`, 'utf8').digest();

export function signResumeToken(claims: ResumeClaims, key: Buffer): string {
  if (!isUuid(claims.execution_id)) throw new Error('invalid execution id');
  if (!NODE_ID_PATTERN.test(claims.node_id)) throw new Error('invalid node id');
  return `${RESUME_TOKEN_VERSION}.${claims.execution_id}.${claims.node_id}.${tag(claims.execution_id, claims.node_id, key).toString('base64url')}`;
}

/** The claims of a token this service issued, or null for anything else (malformed, altered, foreign): the answer never says which. */
export function verifyResumeToken(token: string, key: Buffer): ResumeClaims | null {
  if (token.length > MAX_RESUME_TOKEN_CHARS) return null;
  const parts = token.split('.');
  const [version, executionId, nodeId, sig] = parts;
  if (parts.length !== 4 || version !== RESUME_TOKEN_VERSION || executionId === undefined || nodeId === undefined || sig === undefined)
    return null;
  if (!isUuid(executionId) || !NODE_ID_PATTERN.test(nodeId) || !B64URL.test(sig)) return null;
  const given = Buffer.from(sig, 'base64url');
  // Re-encoding refuses non-canonical spellings of the same tag.
  if (given.length !== TAG_BYTES || given.toString('base64url') !== sig) return null;
  if (!timingSafeEqual(given, tag(executionId, nodeId, key))) return null;
  return { execution_id: executionId, node_id: nodeId };
}

/** The URL of a token under a base URL (no trailing slash needed). */
export const resumeUrlOf = (baseUrl: string, token: string): string => `${baseUrl.replace(/\/+$/, '')}${RESUME_ROUTE_PREFIX}${token}`;

/** The token at the end of a resume URL (what the engine redacts from what it keeps). */
export const tokenOfResumeUrl = (url: string): string => url.slice(url.lastIndexOf('/') + 1);
