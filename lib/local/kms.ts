/**
 * KMS for the local runtimes: symmetric keys whose material stays in one file of the data dir
 * (mode 0600), answering GenerateDataKey, Encrypt and Decrypt in KMS's own JSON shapes and with
 * its errors. `npm start` calls it in the process; start:synth serves it over its AWS endpoint
 * after checking the caller's IAM (lib/synth/aws-endpoint.ts). A ciphertext blob carries the
 * key's ARN, as KMS's does, so Decrypt needs no KeyId; the encryption context is the GCM
 * additional data, so a blob decrypted under any other context is refused with
 * InvalidCiphertextException, as KMS refuses it.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readSavedJson, writeSavedJson } from './saved-json';
import type { KmsTransport } from '../../functions/adapters/kms';
import { canonicalContext } from '../../functions/core/envelope';
import { isPlainObject } from '../../functions/core/values';

/** The one key of `npm start` (its material in the data dir's kms.json). */
export const LOCAL_OWNER_SECRETS_KEY = 'arn:aws:kms:local:000000000000:key/pipegate-owner-secrets';

export class KmsError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = code;
  }
}

const MAGIC = Buffer.from('pgkms1', 'utf8');
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** KMS's own limit on Encrypt's plaintext. */
const MAX_PLAINTEXT_BYTES = 4096;

const notFound = (id: string) => new KmsError('NotFoundException', `Key '${id}' does not exist`);
const invalidCiphertext = () => new KmsError('InvalidCiphertextException', '');

export class LocalKms {
  private readonly keys = new Map<string, Buffer>();

  constructor(private readonly file?: string) {
    if (!file) return;
    const saved = readSavedJson(file);
    for (const [arn, material] of Object.entries(isPlainObject(saved) ? saved : {})) {
      if (typeof material === 'string') this.keys.set(arn, Buffer.from(material, 'base64'));
    }
  }

  /** Creates the key (new material) unless it exists, as CloudFormation creates it once. */
  define(keyArn: string): void {
    if (this.keys.has(keyArn)) return;
    this.keys.set(keyArn, randomBytes(32));
    if (this.file) writeSavedJson(this.file, Object.fromEntries([...this.keys].map(([k, v]) => [k, v.toString('base64')])));
  }

  /** The key's ARN for a KeyId (its ARN or its id), or undefined. */
  keyArnOf(keyId: string): string | undefined {
    if (this.keys.has(keyId)) return keyId;
    return [...this.keys.keys()].find((arn) => arn.endsWith(`:key/${keyId}`));
  }

  /** The ARN of the key a ciphertext blob was made under (what Decrypt is authorized on), or undefined. */
  keyArnOfBlob(blob: Buffer): string | undefined {
    if (blob.length < MAGIC.length + 1 || !blob.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
    const length = blob[MAGIC.length] ?? 0;
    return blob.subarray(MAGIC.length + 1, MAGIC.length + 1 + length).toString('utf8');
  }

  /** One KMS operation, body and answer as KMS's JSON protocol has them (blobs in base64). */
  call(operation: string, body: Record<string, unknown>): Record<string, unknown> {
    const context = contextOf(body.EncryptionContext);
    switch (operation) {
      case 'GenerateDataKey': {
        const arn = this.resolve(body.KeyId);
        const bytes =
          body.NumberOfBytes !== undefined
            ? Number(body.NumberOfBytes)
            : body.KeySpec === 'AES_128'
              ? 16
              : body.KeySpec === 'AES_256'
                ? 32
                : NaN;
        if (!Number.isInteger(bytes) || bytes < 1 || bytes > 1024)
          throw new KmsError('ValidationException', 'Please specify either number of bytes or key spec.');
        const plaintext = randomBytes(bytes);
        return {
          KeyId: arn,
          Plaintext: plaintext.toString('base64'),
          CiphertextBlob: this.encrypt(arn, plaintext, context).toString('base64'),
        };
      }
      case 'Encrypt': {
        const arn = this.resolve(body.KeyId);
        const plaintext = blobOf(body.Plaintext, 'Plaintext');
        if (plaintext.length === 0 || plaintext.length > MAX_PLAINTEXT_BYTES)
          throw new KmsError('ValidationException', `Plaintext must be between 1 and ${MAX_PLAINTEXT_BYTES} bytes`);
        return {
          KeyId: arn,
          CiphertextBlob: this.encrypt(arn, plaintext, context).toString('base64'),
          EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
        };
      }
      case 'Decrypt': {
        const blob = blobOf(body.CiphertextBlob, 'CiphertextBlob');
        const arn = this.keyArnOfBlob(blob);
        if (arn === undefined || !this.keys.has(arn)) throw invalidCiphertext();
        if (body.KeyId !== undefined && this.resolve(body.KeyId) !== arn) {
          throw new KmsError('IncorrectKeyException', 'The key ID in the request does not identify a CMK that can perform this operation.');
        }
        return { KeyId: arn, Plaintext: this.decrypt(arn, blob, context).toString('base64'), EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
      }
      default:
        throw new KmsError('UnknownOperationException', `kms:${operation} is not emulated locally (pipegate's functions do not call it)`);
    }
  }

  private resolve(keyId: unknown): string {
    if (typeof keyId !== 'string' || keyId === '') throw new KmsError('ValidationException', 'KeyId is required');
    const arn = this.keyArnOf(keyId);
    if (arn === undefined) throw notFound(keyId);
    return arn;
  }

  private encrypt(arn: string, plaintext: Buffer, context: Record<string, string>): Buffer {
    const key = this.keys.get(arn) as Buffer;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(canonicalContext(context));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const id = Buffer.from(arn, 'utf8');
    return Buffer.concat([MAGIC, Buffer.from([id.length]), id, iv, cipher.getAuthTag(), ciphertext]);
  }

  private decrypt(arn: string, blob: Buffer, context: Record<string, string>): Buffer {
    const key = this.keys.get(arn) as Buffer;
    const start = MAGIC.length + 1 + Buffer.byteLength(arn, 'utf8');
    if (blob.length < start + IV_BYTES + TAG_BYTES) throw invalidCiphertext();
    const iv = blob.subarray(start, start + IV_BYTES);
    const tag = blob.subarray(start + IV_BYTES, start + IV_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(canonicalContext(context));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(blob.subarray(start + IV_BYTES + TAG_BYTES)), decipher.final()]);
    } catch {
      // KMS says no more than this, whether the context, the blob or the key was wrong.
      throw invalidCiphertext();
    }
  }
}

/** The request's EncryptionContext (none: empty), string values only, as KMS requires. */
export function contextOf(raw: unknown): Record<string, string> {
  if (raw === undefined) return {};
  if (!isPlainObject(raw) || !Object.values(raw).every((v) => typeof v === 'string')) {
    throw new KmsError('ValidationException', 'EncryptionContext must map strings to strings');
  }
  return raw as Record<string, string>;
}

function blobOf(raw: unknown, field: string): Buffer {
  if (typeof raw !== 'string' || raw === '') throw new KmsError('ValidationException', `${field} is required`);
  return Buffer.from(raw, 'base64');
}

/** The KMS adapter's transport for `npm start` and tests: this emulation, in the process. */
export function localKmsTransport(kms: LocalKms): KmsTransport {
  return (operation, body) => {
    try {
      return Promise.resolve(kms.call(operation, body));
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  };
}
