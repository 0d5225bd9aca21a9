import { GetSecretValueCommand, PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { parseKeyMaterial } from '../../functions/adapters/key-material';
import { completeMaterial, handler, type CustomResourceEvent } from '../../lib/stacks/secret-init.handler';

const sm = mockClient(SecretsManagerClient);
const counter = (): ((n: number) => Buffer) => {
  let i = 0;
  return (n) => Buffer.alloc(n, ++i);
};

describe('completeMaterial', () => {
  it('adds a 32-byte master key beside the generated pepper, in the shape the functions read', () => {
    // Prepare
    const generated = JSON.stringify({ pepper: 'p'.repeat(64) });
    // Act
    const next = completeMaterial(generated, counter());
    // Assess
    expect(next).not.toBeNull();
    const material = parseKeyMaterial(next ?? '');
    expect(material.pepper.toString()).toBe('p'.repeat(64));
    expect(material.masterKey).toHaveLength(32);
  });

  it('changes nothing once both values are present', () => {
    // Prepare
    const complete = completeMaterial('{}', counter()) ?? '';
    // Act / Assess
    expect(completeMaterial(complete, counter())).toBeNull();
  });

  it('fills in whatever is missing or unusable, and keeps other fields', () => {
    // Act
    const next = JSON.parse(completeMaterial('{"pepper":"short","master_key":"AAAA","note":"x"}', counter()) ?? '{}') as Record<string, string>;
    // Assess
    expect(next.note).toBe('x');
    expect(next.pepper).not.toBe('short');
    expect(Buffer.from(next.master_key ?? '', 'base64')).toHaveLength(32);
    expect(completeMaterial('not json', counter())).not.toBeNull();
  });
});

describe('secret-init custom resource', () => {
  const fetchMock = jest.fn<Promise<{ ok: boolean; status: number }>, [string, { body: string }]>();
  const event = (RequestType: CustomResourceEvent['RequestType']): CustomResourceEvent => ({
    RequestType,
    ResponseURL: 'https://cloudformation-response.example/signed',
    StackId: 'stack',
    RequestId: 'req',
    LogicalResourceId: 'SecretInitResource',
    ResourceProperties: { SecretId: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:km' },
  });
  const sentStatus = (): unknown => (JSON.parse(fetchMock.mock.calls[0]?.[1].body ?? '{}') as { Status?: string }).Status;

  beforeEach(() => {
    sm.reset();
    fetchMock.mockReset().mockResolvedValue({ ok: true, status: 200 });
    global.fetch = fetchMock as unknown as typeof fetch;
  });

  it('completes the secret on create and reports success', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ pepper: 'q'.repeat(64) }) });
    sm.on(PutSecretValueCommand).resolves({});
    // Act
    await handler(event('Create'));
    // Assess
    const put = sm.commandCalls(PutSecretValueCommand)[0]?.args[0].input;
    expect(parseKeyMaterial(put?.SecretString ?? '').masterKey).toHaveLength(32);
    expect(sentStatus()).toBe('SUCCESS');
  });

  it('leaves a complete secret alone on update', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolves({ SecretString: completeMaterial('{}', counter()) ?? '' });
    // Act
    await handler(event('Update'));
    // Assess
    expect(sm.commandCalls(PutSecretValueCommand)).toHaveLength(0);
    expect(sentStatus()).toBe('SUCCESS');
  });

  it('does nothing on delete (the secret is retained)', async () => {
    // Act
    await handler(event('Delete'));
    // Assess
    expect(sm.calls()).toHaveLength(0);
    expect(sentStatus()).toBe('SUCCESS');
  });

  it('reports failure when the secret cannot be read', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).rejects(new Error('AccessDenied'));
    jest.spyOn(console, 'error').mockImplementation(() => undefined);
    // Act
    await handler(event('Create'));
    // Assess
    expect(sentStatus()).toBe('FAILED');
  });
});
