/**
 * Data keys from a KMS key (GenerateDataKey, Decrypt), over KMS's JSON protocol. One adapter
 * for every runtime; only the transport differs: SigV4-signed HTTP to KMS on AWS and to
 * start:synth's AWS endpoint (./sigv4.ts), a call into lib/local/kms.ts in `npm start`. Written
 * against the wire protocol because @aws-sdk/client-kms is not among the project's packages;
 * the two operations need no more than this.
 */
import type { DataKeysPort } from '../core/ports';
import { AwsCallError, environmentCredentials, jsonServiceCall, serviceEndpoint, type RetryPolicy } from './sigv4';

export type KmsOperation = 'GenerateDataKey' | 'Decrypt';
/** One KMS call: the request's JSON body in, the answer's JSON body out; KMS's errors thrown with their names. */
export type KmsTransport = (operation: KmsOperation, body: Record<string, unknown>) => Promise<Record<string, unknown>>;

/** An error KMS answered, named as KMS names it (InvalidCiphertextException, AccessDeniedException, ...). */
export class KmsCallError extends AwsCallError {}

/**
 * How many decrypted data keys a container keeps. Each owner secret has its own data key, and
 * a key already opened is not asked of KMS again while the container lives: Decrypts are then
 * one per secret per container (and per change of it), not per run.
 */
const DATA_KEY_CACHE = 512;

export class KmsDataKeys implements DataKeysPort {
  private readonly opened = new Map<string, Buffer>();

  constructor(
    private readonly transport: KmsTransport,
    private readonly keyId: string,
  ) {}

  async generate(context: Readonly<Record<string, string>>): Promise<{ plaintext: Buffer; encrypted: Buffer }> {
    if (this.keyId === '') throw new Error('no KMS key is configured for owner secrets (PIPEGATE_OWNER_SECRETS_KEY)');
    const out = await this.transport('GenerateDataKey', { KeyId: this.keyId, KeySpec: 'AES_256', EncryptionContext: context });
    return { plaintext: blob(out.Plaintext, 'Plaintext'), encrypted: blob(out.CiphertextBlob, 'CiphertextBlob') };
  }

  async decrypt(encrypted: Buffer, context: Readonly<Record<string, string>>): Promise<Buffer> {
    if (this.keyId === '') throw new Error('no KMS key is configured for owner secrets (PIPEGATE_OWNER_SECRETS_KEY)');
    // The cache is keyed by blob and context together: a blob asked for under another context goes to KMS, which refuses it.
    const cacheKey = `${encrypted.toString('base64')}\0${JSON.stringify(Object.entries(context).sort())}`;
    const cached = this.opened.get(cacheKey);
    if (cached) return cached;
    // KeyId pins the key: a blob made under any other key is refused rather than opened.
    const out = await this.transport('Decrypt', {
      CiphertextBlob: encrypted.toString('base64'),
      EncryptionContext: context,
      KeyId: this.keyId,
    });
    const plaintext = blob(out.Plaintext, 'Plaintext');
    if (this.opened.size >= DATA_KEY_CACHE) this.opened.delete(this.opened.keys().next().value as string);
    this.opened.set(cacheKey, plaintext);
    return plaintext;
  }
}

function blob(raw: unknown, field: string): Buffer {
  if (typeof raw !== 'string' || raw === '') throw new Error(`KMS answered without ${field}`);
  return Buffer.from(raw, 'base64');
}

export interface AwsKmsOptions {
  region: string;
  /** KMS's endpoint; default from AWS_ENDPOINT_URL_KMS, AWS_ENDPOINT_URL, then the region's. */
  endpoint?: string;
  /** Where the credentials are read (Lambda hands them to the function in its environment). */
  env?: Record<string, string | undefined>;
  /** Tests shorten the waits. */
  retry?: RetryPolicy;
}

/**
 * KMS throttles per account and Region (shared by every function opening owner secrets at once):
 * a ThrottlingException is tried again after a random wait (full jitter), at most five attempts
 * and about 3 s of waiting in all, then thrown.
 */
export const KMS_RETRY: RetryPolicy = { maxAttempts: 5, baseMs: 100, capMs: 1_600 };

/** KMS over HTTPS (or start:synth's endpoint), signed with the environment's credentials. */
export function awsKmsTransport(opts: AwsKmsOptions): KmsTransport {
  const env = opts.env ?? process.env;
  const call = jsonServiceCall({
    region: opts.region,
    service: 'kms',
    targetPrefix: 'TrentService',
    endpoint: opts.endpoint ?? serviceEndpoint(env, 'KMS', `kms.${opts.region}.amazonaws.com`),
    // Read at each call, as before: the environment is the one place Lambda puts them.
    credentials: () => Promise.resolve(environmentCredentials(env)),
    label: 'KMS',
    error: (name, message, status) => new KmsCallError(name, message, status),
    retry: opts.retry ?? KMS_RETRY,
  });
  return (operation, body) => call(operation, body);
}
