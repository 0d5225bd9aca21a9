import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KmsDataKeys } from '../../../functions/adapters/kms';
import { LocalKms, localKmsTransport } from '../../../lib/local/kms';

const KEY = 'arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-4333-8444-555555555555';
const OTHER = 'arn:aws:kms:eu-west-1:123456789012:key/99999999-2222-4333-8444-555555555555';
const context = { purpose: 'pipegate-owner-secret', secret_name: 'A' };

describe('the local KMS', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'kms-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('generates a data key whose blob decrypts under the same context only, as InvalidCiphertextException otherwise', () => {
    // Prepare
    const kms = new LocalKms();
    kms.define(KEY);

    // Act
    const out = kms.call('GenerateDataKey', { KeyId: KEY, KeySpec: 'AES_256', EncryptionContext: context });
    const opened = kms.call('Decrypt', {
      CiphertextBlob: out.CiphertextBlob,
      EncryptionContext: { secret_name: 'A', purpose: 'pipegate-owner-secret' },
    });

    // Assess
    expect(Buffer.from(String(out.Plaintext), 'base64')).toHaveLength(32);
    expect(opened.Plaintext).toBe(out.Plaintext);
    expect(opened.KeyId).toBe(KEY);
    expect(() => kms.call('Decrypt', { CiphertextBlob: out.CiphertextBlob, EncryptionContext: { ...context, secret_name: 'B' } })).toThrow(
      expect.objectContaining({ code: 'InvalidCiphertextException' }),
    );
    expect(() => kms.call('Decrypt', { CiphertextBlob: out.CiphertextBlob })).toThrow(
      expect.objectContaining({ code: 'InvalidCiphertextException' }),
    );
    expect(() => kms.call('Decrypt', { CiphertextBlob: Buffer.from('junk').toString('base64'), EncryptionContext: context })).toThrow(
      expect.objectContaining({ code: 'InvalidCiphertextException' }),
    );
  });

  it('answers as KMS does for an unknown key, another key named in Decrypt, and calls it does not serve', () => {
    const kms = new LocalKms();
    kms.define(KEY);
    kms.define(OTHER);
    const out = kms.call('Encrypt', { KeyId: KEY, Plaintext: Buffer.from('x').toString('base64'), EncryptionContext: context });
    expect(() => kms.call('GenerateDataKey', { KeyId: 'arn:aws:kms:eu-west-1:123456789012:key/none', KeySpec: 'AES_256' })).toThrow(
      expect.objectContaining({ code: 'NotFoundException' }),
    );
    expect(() => kms.call('Decrypt', { CiphertextBlob: out.CiphertextBlob, EncryptionContext: context, KeyId: OTHER })).toThrow(
      expect.objectContaining({ code: 'IncorrectKeyException' }),
    );
    expect(
      kms.call('Decrypt', { CiphertextBlob: out.CiphertextBlob, EncryptionContext: context, KeyId: KEY.split('/')[1] }).Plaintext,
    ).toBe(Buffer.from('x').toString('base64'));
    expect(() => kms.call('ScheduleKeyDeletion', { KeyId: KEY })).toThrow(expect.objectContaining({ code: 'UnknownOperationException' }));
  });

  it('keeps its key material in one file of mode 0600, so blobs made before a restart still decrypt', async () => {
    // Prepare
    const file = join(dir, 'kms.json');
    const before = new LocalKms(file);
    before.define(KEY);
    const keys = new KmsDataKeys(localKmsTransport(before), KEY);
    const made = await keys.generate(context);

    // Act
    const after = new LocalKms(file);
    after.define(KEY);
    const reopened = await new KmsDataKeys(localKmsTransport(after), KEY).decrypt(made.encrypted, context);

    // Assess
    expect(reopened.equals(made.plaintext)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).not.toContain(made.plaintext.toString('base64'));
  });

  it('the adapter refuses to run without a configured key', async () => {
    const keys = new KmsDataKeys(localKmsTransport(new LocalKms()), '');
    await expect(keys.generate(context)).rejects.toThrow('PIPEGATE_OWNER_SECRETS_KEY');
  });
});
