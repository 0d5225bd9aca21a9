import { randomBytes } from 'node:crypto';
import { DeleteCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { openSecret } from '../core/api-key';
import { isEnvelope, openEnvelope, ownerSecretContext, parseEnvelope, sealEnvelope } from '../core/envelope';
import type { DataKeysPort, KeyMaterialPort, OwnerSecretSummary, OwnerSecretsPort } from '../core/ports';
import { allItems, keys, OWNER_SECRETS_PK } from './dynamo';

const SEAL_IV_BYTES = 12;
/**
 * A name the cached read lacks may have been set since (a deploy pipeline sets secrets, then
 * runs its tests at once): read again, but no more often than this.
 */
const MISSING_REREAD_MS = 5_000;

/**
 * The earlier format (v1, sealed under the master key): its plaintext carries the name, so a
 * sealed value copied onto another secret's item does not open as that secret.
 */
function unwrap(name: string, plaintext: string): string {
  const parsed = JSON.parse(plaintext) as { name?: unknown; value?: unknown };
  if (parsed.name !== name || typeof parsed.value !== 'string') throw new Error(`owner secret ${name} was sealed for another name`);
  return parsed.value;
}

/**
 * Owner secrets in the main table, one item each (OWNERSECRETS / SECRET#<name>), the value
 * sealed under its own data key from the KMS key, with the secret's name in the encryption
 * context (functions/core/envelope.ts). Values sealed earlier under the master key (v1) still
 * open, with the key material; setting a secret again seals it the new way. Reads for runs go
 * through a per-process cache that one Query refills at most once per TTL; data keys already
 * opened are kept by the KMS adapter, so a refill asks KMS only for secrets set since.
 */
export class OwnerSecretsStore implements OwnerSecretsPort {
  private cache: { at: number; values: Promise<Map<string, string>> } | null = null;

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly keyMaterial: KeyMaterialPort,
    private readonly dataKeys: DataKeysPort,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async put(name: string, value: string, updatedAt: string): Promise<OwnerSecretSummary> {
    const context = ownerSecretContext(name);
    const dataKey = await this.dataKeys.generate(context);
    let sealed: string;
    try {
      sealed = sealEnvelope(value, dataKey.plaintext, dataKey.encrypted, randomBytes(SEAL_IV_BYTES), context);
    } finally {
      dataKey.plaintext.fill(0);
    }
    await this.db.send(new PutCommand({ TableName: this.table, Item: { ...keys.ownerSecret(name), name, sealed, updated_at: updatedAt } }));
    this.cache = null;
    return { name, updated_at: updatedAt };
  }

  async list(): Promise<OwnerSecretSummary[]> {
    const items = await this.query(false);
    return items
      .map((i) => ({ name: String(i.name), updated_at: String(i.updated_at) }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async remove(name: string): Promise<boolean> {
    const out = await this.db.send(new DeleteCommand({ TableName: this.table, Key: keys.ownerSecret(name), ReturnValues: 'ALL_OLD' }));
    this.cache = null;
    return out.Attributes !== undefined;
  }

  async values(names: readonly string[]): Promise<Map<string, string>> {
    if (names.length === 0) return new Map();
    const at = this.now();
    if (!this.cache || at - this.cache.at >= this.ttlMs) this.refill(at);
    else if (at - this.cache.at >= MISSING_REREAD_MS) {
      const cached = await this.cache.values.catch(() => null);
      if (cached === null || names.some((n) => !cached.has(n))) this.refill(at);
    }
    const all = await (this.cache as NonNullable<typeof this.cache>).values;
    return new Map(names.flatMap((n) => (all.has(n) ? [[n, all.get(n) ?? '']] : [])));
  }

  private refill(at: number): void {
    const values = this.readAll();
    // A failed read is not kept: the next run tries again.
    values.catch(() => {
      if (this.cache?.values === values) this.cache = null;
    });
    this.cache = { at, values };
  }

  private async readAll(): Promise<Map<string, string>> {
    const items = await this.query(true);
    return new Map(
      await Promise.all(
        items.map(async (i): Promise<[string, string]> => [String(i.name), await this.open(String(i.name), String(i.sealed))]),
      ),
    );
  }

  private async open(name: string, sealed: string): Promise<string> {
    if (isEnvelope(sealed)) {
      const envelope = parseEnvelope(sealed);
      const context = ownerSecretContext(name);
      return openEnvelope(envelope, await this.dataKeys.decrypt(envelope.encryptedDataKey, context), context);
    }
    // Read only when a value of the earlier format is met.
    const { masterKey } = await this.keyMaterial.material();
    return unwrap(name, openSecret(sealed, masterKey));
  }

  private query(withValues: boolean): Promise<Record<string, unknown>[]> {
    return allItems((start) =>
      this.db.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': OWNER_SECRETS_PK },
          ExpressionAttributeNames: { '#name': 'name', '#updated': 'updated_at', ...(withValues ? { '#sealed': 'sealed' } : {}) },
          ProjectionExpression: withValues ? '#name, #updated, #sealed' : '#name, #updated',
          ExclusiveStartKey: start,
        }),
      ),
    );
  }
}
