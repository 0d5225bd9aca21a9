import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { parseKeyMaterial, SecretsManagerKeyMaterial } from '../../../functions/adapters/key-material';
import { openSecret, sealSecret } from '../../../functions/core/api-key';
import { assetLinkKey } from '../../../functions/core/asset-links';

const sm = mockClient(SecretsManagerClient);
const secret = JSON.stringify({ pepper: 'p'.repeat(32), master_key: Buffer.alloc(32, 9).toString('base64') });

beforeEach(() => sm.reset());

describe('Secrets Manager adapter', () => {
  it('reads the secret once and serves it from memory afterwards', async () => {
    sm.on(GetSecretValueCommand).resolves({ SecretString: secret });
    const secrets = new SecretsManagerKeyMaterial(new SecretsManagerClient({ region: 'eu-west-1' }), 'arn:secret');

    const [a, b] = await Promise.all([secrets.material(), secrets.material()]);
    const c = await secrets.material();

    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
    expect(sm.commandCalls(GetSecretValueCommand)[0]?.args[0].input).toEqual({ SecretId: 'arn:secret' });
    expect(a.masterKey).toEqual(Buffer.alloc(32, 9));
    expect(b).toBe(a);
    expect(c.pepper.toString()).toBe('p'.repeat(32));
  });

  it('does not keep a failed read: the next call tries again', async () => {
    sm.on(GetSecretValueCommand).rejectsOnce(new Error('throttled')).resolves({ SecretString: secret });
    const secrets = new SecretsManagerKeyMaterial(new SecretsManagerClient({ region: 'eu-west-1' }), 'arn:secret');

    await expect(secrets.material()).rejects.toThrow('throttled');
    await expect(secrets.material()).resolves.toMatchObject({ masterKey: Buffer.alloc(32, 9) });
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });

  it('reads again once the cached value is older than its time to live', async () => {
    sm.on(GetSecretValueCommand).resolves({ SecretString: secret });
    const secrets = new SecretsManagerKeyMaterial(new SecretsManagerClient({ region: 'eu-west-1' }), 'arn:secret', 0);
    await secrets.material();
    await new Promise((r) => setTimeout(r, 2));
    await secrets.material();
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });

  it.each([
    ['not JSON', 'nope'],
    ['a short pepper', JSON.stringify({ pepper: 'x', master_key: Buffer.alloc(32).toString('base64') })],
    ['a master key of the wrong size', JSON.stringify({ pepper: 'p'.repeat(32), master_key: Buffer.alloc(16).toString('base64') })],
  ])('refuses %s', (_what, text) => {
    expect(() => parseKeyMaterial(text)).toThrow();
  });

  it("reads the authorizer's pepper-only secret with a master key of zero bytes, which sealing and opening refuse", () => {
    // Act
    const m = parseKeyMaterial(JSON.stringify({ pepper: 'p'.repeat(32) }));
    // Assess
    expect(m.pepper.toString()).toBe('p'.repeat(32));
    expect(m.masterKey).toHaveLength(0);
    expect(() => sealSecret('x', m.masterKey, Buffer.alloc(12))).toThrow(/32 bytes/);
    expect(() => openSecret('x', m.masterKey)).toThrow(/32 bytes/);
    expect(() => assetLinkKey(m.masterKey)).toThrow(/32 bytes/);
  });
});
