/**
 * A deployment's web-form link, `<base>/v1/forms/<token>`: the link is the capability (its routes
 * take no key). The token is 256 bits of HMAC over a random per-link salt under the master key,
 * so the service can show the owner the same link again while storing neither the token nor
 * anything that gives it without the master key; requests are looked up by the token's HMAC
 * under the pepper and compared in constant time. Pure.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { hashApiKey } from './api-key';

export const FORM_TOKEN_PREFIX = 'pgf_';
/** `pgf_` and 43 base64url characters (32 bytes). */
export const FORM_TOKEN_PATTERN = /^pgf_[A-Za-z0-9_-]{43}$/;
/** Bytes of randomness in a link's salt (the token's own entropy is the HMAC's 256 bits over it). */
export const FORM_SALT_BYTES = 24;

export const FORM_TITLE_MAX_CHARS = 120;
export const FORM_DESCRIPTION_MAX_CHARS = 2000;

export function formToken(salt: string, masterKey: Buffer): string {
  return FORM_TOKEN_PREFIX + createHmac('sha256', masterKey).update(`pipegate form link\0${salt}`).digest('base64url');
}

export const formTokenHash = (token: string, pepper: Buffer): string => hashApiKey(token, pepper);

/** Whether a token's hash is the one a form stores, in constant time. */
export function formHashMatches(candidate: string, stored: string): boolean {
  const a = Buffer.from(candidate, 'utf8');
  const b = Buffer.from(stored, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

export const formUrl = (baseUrl: string, token: string): string => `${baseUrl}/v1/forms/${token}`;

/** The form's own URL for one of its executions: readable through this link only (and with the deployment key). */
export const formExecutionUrl = (baseUrl: string, token: string, executionId: string): string =>
  `${formUrl(baseUrl, token)}/executions/${executionId}`;

/** The page's script and style sheet, under the form's link (…/files/<name>), so every form route shares one prefix. */
export const FORM_SCRIPT_NAME = 'pipegate-form.js';
export const FORM_STYLE_NAME = 'pipegate-form.css';
export const formFileUrl = (baseUrl: string, token: string, name: string): string => `${formUrl(baseUrl, token)}/files/${name}`;
