import { parseKeyMaterial, SecretsManagerKeyMaterial, secretsManagerReader } from '../../../functions/adapters/key-material';
import { openSecret, sealSecret } from '../../../functions/core/api-key';
import { assetLinkKey } from '../../../functions/core/asset-links';
import { startScriptedServer, type ScriptedServer } from '../../support/http-server';

const secret = JSON.stringify({ pepper: 'p'.repeat(32), master_key: Buffer.alloc(32, 9).toString('base64') });

/** A reader answering from a list, recording the ids asked for. */
function fakeReader(answers: (string | Error)[]) {
  const asked: string[] = [];
  const read = (id: string): Promise<string> => {
    asked.push(id);
    const next = answers.length > 1 ? answers.shift() : answers[0];
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next ?? '');
  };
  return { asked, read };
}

describe('Secrets Manager adapter', () => {
  it('reads the secret once and serves it from memory afterwards', async () => {
    const r = fakeReader([secret]);
    const secrets = new SecretsManagerKeyMaterial(r.read, 'arn:secret');

    const [a, b] = await Promise.all([secrets.material(), secrets.material()]);
    const c = await secrets.material();

    expect(r.asked).toEqual(['arn:secret']);
    expect(a.masterKey).toEqual(Buffer.alloc(32, 9));
    expect(b).toBe(a);
    expect(c.pepper.toString()).toBe('p'.repeat(32));
  });

  it('does not keep a failed read: the next call tries again', async () => {
    const r = fakeReader([new Error('throttled'), secret]);
    const secrets = new SecretsManagerKeyMaterial(r.read, 'arn:secret');

    await expect(secrets.material()).rejects.toThrow('throttled');
    await expect(secrets.material()).resolves.toMatchObject({ masterKey: Buffer.alloc(32, 9) });
    expect(r.asked).toHaveLength(2);
  });

  it('reads again once the cached value is older than its time to live', async () => {
    const r = fakeReader([secret]);
    const secrets = new SecretsManagerKeyMaterial(r.read, 'arn:secret', 0);
    await secrets.material();
    await new Promise((ok) => setTimeout(ok, 2));
    await secrets.material();
    expect(r.asked).toHaveLength(2);
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

describe('GetSecretValue as a signed call', () => {
  let fake: ScriptedServer;
  beforeAll(async () => {
    fake = await startScriptedServer([500, {}]);
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());
  const reader = () =>
    secretsManagerReader({
      region: 'eu-west-1',
      endpoint: fake.origin,
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
      retry: { maxAttempts: 3, baseMs: 1, capMs: 1, sleep: () => Promise.resolve() },
    });

  it("asks Secrets Manager's JSON protocol for the secret string, signed for secretsmanager", async () => {
    fake.answers = [[200, { ARN: 'arn:s', Name: 's', SecretString: secret, VersionId: 'v' }]];

    const material = await new SecretsManagerKeyMaterial(reader(), 'arn:s').material();

    expect(material.masterKey).toEqual(Buffer.alloc(32, 9));
    expect(fake.seen[0]?.headers['x-amz-target']).toBe('secretsmanager.GetSecretValue');
    expect(JSON.parse(fake.seen[0]?.body ?? '')).toEqual({ SecretId: 'arn:s' });
    expect(fake.seen[0]?.headers.authorization).toContain('/eu-west-1/secretsmanager/aws4_request');
  });

  it('throws a refusal by its name, tries a throttle again, and refuses a secret without a string', async () => {
    fake.answers = [
      [400, { __type: 'AccessDeniedException', Message: 'not yours' }],
      [400, { __type: 'ThrottlingException', message: 'Rate exceeded' }],
      [200, { SecretString: secret }],
      [200, { SecretBinary: 'AAAA' }],
    ];

    await expect(reader()('arn:s')).rejects.toMatchObject({ name: 'AccessDeniedException', status: 400 });
    await expect(reader()('arn:s')).resolves.toBe(secret);
    await expect(reader()('arn:s')).rejects.toThrow('has no SecretString');
    expect(fake.seen).toHaveLength(4);
  });

  it('reads the endpoint override the runtimes set, as the SDK does', async () => {
    fake.answers = [[200, { SecretString: secret }]];

    await secretsManagerReader({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      env: { AWS_ENDPOINT_URL: fake.origin },
    })('arn:s');

    expect(fake.seen).toHaveLength(1);
  });
});
