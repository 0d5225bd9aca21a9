/**
 * CloudFormation custom resource that completes the key-material secret. CloudFormation can
 * generate one random value per secret (the pepper); this adds the 32-byte master key. It only
 * ever adds what is missing: an existing pepper or master key is never replaced, because every
 * API-key hash and sealed signing secret depends on them. Values never leave this function.
 */
import { randomBytes } from 'node:crypto';
import { GetSecretValueCommand, PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { respond, type CustomResourceEvent } from './cfn-response';

export type { CustomResourceEvent } from './cfn-response';

const client = new SecretsManagerClient({});

/** The secret's new content, or null when it already holds both values. */
export function completeMaterial(current: string, random: (bytes: number) => Buffer): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(current);
  } catch {
    parsed = {};
  }
  const value: Record<string, unknown> = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? { ...parsed } : {};
  let changed = false;
  if (typeof value.pepper !== 'string' || value.pepper.length < 16) {
    value.pepper = random(32).toString('base64url');
    changed = true;
  }
  const key = typeof value.master_key === 'string' ? Buffer.from(value.master_key, 'base64') : Buffer.alloc(0);
  if (key.length !== 32) {
    value.master_key = random(32).toString('base64');
    changed = true;
  }
  return changed ? JSON.stringify(value) : null;
}

/**
 * The pepper-only secret's new content: the source's pepper, or null when it already holds a
 * pepper (never replaced, as above). Nothing else of the source is copied.
 */
export function pepperOnly(source: string, current: string): string | null {
  const read = (text: string): Record<string, unknown> => {
    try {
      const v: unknown = JSON.parse(text);
      return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  };
  const have = read(current).pepper;
  if (typeof have === 'string' && have.length >= 16) return null;
  const pepper = read(source).pepper;
  if (typeof pepper !== 'string' || pepper.length < 16) throw new Error('the key material holds no pepper to copy');
  return JSON.stringify({ pepper });
}

export async function handler(event: CustomResourceEvent): Promise<void> {
  const secretId = typeof event.ResourceProperties.SecretId === 'string' ? event.ResourceProperties.SecretId : '';
  const physicalId = event.PhysicalResourceId ?? `secret-init-${secretId}`;
  if (event.RequestType === 'Delete') return respond(event, 'SUCCESS', physicalId);
  try {
    if (!secretId) throw new Error('SecretId property missing');
    const current = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
    const from = event.ResourceProperties.CopyPepperFrom;
    const next =
      typeof from === 'string'
        ? pepperOnly((await client.send(new GetSecretValueCommand({ SecretId: from }))).SecretString ?? '', current.SecretString ?? '')
        : completeMaterial(current.SecretString ?? '', randomBytes);
    if (next !== null) await client.send(new PutSecretValueCommand({ SecretId: secretId, SecretString: next }));
    await respond(event, 'SUCCESS', physicalId);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    console.error(JSON.stringify({ level: 'error', message: 'secret init failed', error_message: message }));
    await respond(event, 'FAILED', physicalId, message);
  }
}
