/**
 * Envelope encryption of owner secrets, pure: each value is sealed with AES-256-GCM under its
 * own data key, which KMS generated and which is stored beside the ciphertext only encrypted
 * under the KMS key. The encryption context names what the value is (an owner secret, and
 * which); KMS refuses to decrypt the data key under any other context, and the same context is
 * the GCM additional data, so a sealed value moved onto another name opens under neither.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';

/** `v2.<encrypted data key>.<iv>.<tag>.<ciphertext>`, base64url parts (v1: sealed under the master key). */
export const ENVELOPE_VERSION = 'v2';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const DATA_KEY_BYTES = 32;
/** KMS ciphertext blobs of a symmetric key are well under this; anything larger is not one. */
const MAX_ENCRYPTED_KEY_BYTES = 6144;
const B64URL = /^[A-Za-z0-9_-]*$/;

/** KMS's encryption context: string to string, compared exactly (key order aside). */
export type EncryptionContext = Readonly<Record<string, string>>;

/** What every owner secret's context says it is, whatever its name (the key policy requires it). */
export const OWNER_SECRET_PURPOSE = 'pipegate-owner-secret';

/** The context an owner secret is sealed and opened under: its purpose and its name. */
export function ownerSecretContext(name: string): EncryptionContext {
  return { purpose: OWNER_SECRET_PURPOSE, secret_name: name };
}

/** The context as bytes, keys sorted, for the GCM additional data. */
export function canonicalContext(context: EncryptionContext): Buffer {
  const sorted = Object.keys(context)
    .sort()
    .map((k) => [k, context[k]]);
  return Buffer.from(JSON.stringify(sorted), 'utf8');
}

export interface Envelope {
  encryptedDataKey: Buffer;
  iv: Buffer;
  tag: Buffer;
  ciphertext: Buffer;
}

/** Whether a stored value is in this format (else the master-key format, v1). */
export function isEnvelope(sealed: string): boolean {
  return sealed.startsWith(`${ENVELOPE_VERSION}.`);
}

function checkDataKey(dataKey: Buffer): void {
  if (dataKey.length !== DATA_KEY_BYTES) throw new Error(`the data key must be ${DATA_KEY_BYTES} bytes`);
}

/** Seals `plaintext` under a data key; the encrypted data key is carried along as it is. */
export function sealEnvelope(plaintext: string, dataKey: Buffer, encryptedDataKey: Buffer, iv: Buffer, context: EncryptionContext): string {
  checkDataKey(dataKey);
  if (iv.length !== IV_BYTES) throw new Error(`the IV must be ${IV_BYTES} bytes`);
  if (encryptedDataKey.length === 0 || encryptedDataKey.length > MAX_ENCRYPTED_KEY_BYTES)
    throw new Error('the encrypted data key is empty or too large');
  const cipher = createCipheriv('aes-256-gcm', dataKey, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(canonicalContext(context));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [ENVELOPE_VERSION, ...[encryptedDataKey, iv, cipher.getAuthTag(), ciphertext].map((p) => p.toString('base64url'))].join('.');
}

/** The parts of a sealed value; anything malformed throws (before any call to KMS). */
export function parseEnvelope(sealed: string): Envelope {
  const parts = sealed.split('.');
  const malformed = () => new Error('sealed secret is malformed');
  if (parts.length !== 5 || parts[0] !== ENVELOPE_VERSION) throw malformed();
  const texts = parts.slice(1);
  if (!texts.every((p) => B64URL.test(p))) throw malformed();
  const [edk, iv, tag, ciphertext] = texts.map((p) => Buffer.from(p, 'base64url')) as [Buffer, Buffer, Buffer, Buffer];
  // Re-encoding catches non-canonical base64url that would otherwise decode to the same bytes.
  if ([edk, iv, tag, ciphertext].some((b, i) => b.toString('base64url') !== texts[i])) throw malformed();
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES || edk.length === 0 || edk.length > MAX_ENCRYPTED_KEY_BYTES) throw malformed();
  return { encryptedDataKey: edk, iv, tag, ciphertext };
}

/** Opens an envelope with its (decrypted) data key; a wrong key, context or any tampering throws. */
export function openEnvelope(envelope: Envelope, dataKey: Buffer, context: EncryptionContext): string {
  checkDataKey(dataKey);
  // The tag length is pinned: GCM would otherwise accept a truncated tag.
  const decipher = createDecipheriv('aes-256-gcm', dataKey, envelope.iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(canonicalContext(context));
  decipher.setAuthTag(envelope.tag);
  try {
    return Buffer.concat([decipher.update(envelope.ciphertext), decipher.final()]).toString('utf8');
  } catch (e) {
    throw new Error('sealed secret failed authentication (tampered with, or sealed for another name)', { cause: e });
  }
}
