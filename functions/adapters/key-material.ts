import * as v from 'valibot';

import type { KeyMaterial, KeyMaterialPort } from '../core/ports';
import { jsonServiceCall, serviceEndpoint, type CredentialSource, type RetryPolicy } from './sigv4';

/** A secret's SecretString by id. */
export type SecretReader = (secretId: string) => Promise<string>;

export interface SecretsManagerOptions {
  region: string;
  credentials: CredentialSource;
  /** Secrets Manager's endpoint; default from AWS_ENDPOINT_URL_SECRETS_MANAGER, AWS_ENDPOINT_URL, then the region's. */
  endpoint?: string;
  env?: Record<string, string | undefined>;
  retry?: RetryPolicy;
}

/**
 * GetSecretValue as one signed call of Secrets Manager's JSON protocol (./sigv4.ts), without the
 * Secrets Manager client: its errors thrown as the service names them (ResourceNotFoundException,
 * AccessDeniedException, ...), throttles and 5xx tried again as the SDK would.
 */
export function secretsManagerReader(opts: SecretsManagerOptions): SecretReader {
  const call = jsonServiceCall({
    region: opts.region,
    service: 'secretsmanager',
    targetPrefix: 'secretsmanager',
    endpoint: opts.endpoint ?? serviceEndpoint(opts.env ?? process.env, 'SECRETS_MANAGER', `secretsmanager.${opts.region}.amazonaws.com`),
    credentials: opts.credentials,
    label: 'Secrets Manager',
    ...(opts.retry ? { retry: opts.retry } : {}),
  });
  return async (secretId) => {
    const out = await call('GetSecretValue', { SecretId: secretId });
    if (typeof out.SecretString !== 'string') throw new Error(`Secrets Manager GetSecretValue: ${secretId} has no SecretString`);
    return out.SecretString;
  };
}

const SecretJson = v.object({
  pepper: v.pipe(v.string(), v.minLength(16)),
  master_key: v.optional(v.pipe(v.string(), v.base64())),
});

/**
 * The secret's values. The authorizer's secret holds the pepper alone: its master key reads as
 * zero bytes, which every use of a master key refuses (functions/core/api-key.ts), so it fails
 * closed rather than falling back on anything.
 */
export function parseKeyMaterial(text: string): KeyMaterial {
  const parsed = v.parse(SecretJson, JSON.parse(text));
  if (parsed.master_key === undefined) return { pepper: Buffer.from(parsed.pepper, 'utf8'), masterKey: Buffer.alloc(0) };
  const masterKey = Buffer.from(parsed.master_key, 'base64');
  if (masterKey.length !== 32) throw new Error('master_key must be 32 bytes');
  return { pepper: Buffer.from(parsed.pepper, 'utf8'), masterKey };
}

/** Reads the secret once per cold start and keeps it for a while: one API call per container, not per request. */
export class SecretsManagerKeyMaterial implements KeyMaterialPort {
  private cached: { at: number; value: Promise<KeyMaterial> } | null = null;

  constructor(
    private readonly readSecret: SecretReader,
    private readonly secretId: string,
    private readonly ttlMs = 15 * 60_000,
  ) {}

  material(): Promise<KeyMaterial> {
    const now = Date.now();
    if (!this.cached || now - this.cached.at > this.ttlMs) {
      const value = this.readSecret(this.secretId).then(parseKeyMaterial);
      value.catch(() => (this.cached = null));
      this.cached = { at: now, value };
    }
    return this.cached.value;
  }
}

export class StaticKeyMaterial implements KeyMaterialPort {
  constructor(private readonly value: KeyMaterial) {}
  material(): Promise<KeyMaterial> {
    return Promise.resolve(this.value);
  }
}
