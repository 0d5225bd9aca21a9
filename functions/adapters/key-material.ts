import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import * as v from 'valibot';

import type { KeyMaterial, KeyMaterialPort } from '../core/ports';

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
    private readonly client: SecretsManagerClient,
    private readonly secretId: string,
    private readonly ttlMs = 15 * 60_000,
  ) {}

  material(): Promise<KeyMaterial> {
    const now = Date.now();
    if (!this.cached || now - this.cached.at > this.ttlMs) {
      const value = this.client
        .send(new GetSecretValueCommand({ SecretId: this.secretId }))
        .then((out) => parseKeyMaterial(out.SecretString ?? ''));
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
