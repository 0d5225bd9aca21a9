import { GetSecretValueCommand, PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { parseKeyMaterial } from '../../functions/adapters/key-material';
import { createHmac } from 'node:crypto';
import { completeMaterial, handler, pepperOnly, type CustomResourceEvent } from '../../lib/stacks/secret-init.handler';
import { startTestServer, type ReceivedRequest } from '../support/http-server';

const realFetch = global.fetch;

const sm = mockClient(SecretsManagerClient);
const counter = (): ((n: number) => Buffer) => {
  let i = 0;
  return (n) => Buffer.alloc(n, ++i);
};

describe('pepperOnly', () => {
  const material = JSON.stringify({ pepper: 'p'.repeat(64), master_key: Buffer.alloc(32, 7).toString('base64') });

  it("copies the key material's pepper alone, which the functions read as a pepper with no master key", () => {
    // Act
    const next = pepperOnly(material, 'a generated password, not JSON');
    // Assess
    expect(JSON.parse(next ?? '')).toEqual({ pepper: 'p'.repeat(64) });
    const read = parseKeyMaterial(next ?? '');
    expect(read.pepper.toString()).toBe('p'.repeat(64));
    expect(read.masterKey).toHaveLength(0);
  });

  it('keeps a pepper already there, and refuses a source without one', () => {
    // Act / Assess
    expect(pepperOnly(material, JSON.stringify({ pepper: 'q'.repeat(64) }))).toBeNull();
    expect(() => pepperOnly('{}', '')).toThrow(/no pepper/);
  });
});

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
    const next = JSON.parse(completeMaterial('{"pepper":"short","master_key":"AAAA","note":"x"}', counter()) ?? '{}') as Record<
      string,
      string
    >;
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

describe('secret-init answers a presigned S3 URL the way S3 checks it', () => {
  // CloudFormation's response URL is presigned with Signature Version 2: the string to sign is
  // verb, Content-MD5, Content-Type, Expires and the resource, so the Content-Type the request
  // carries must be the one signed (none). Checked here as S3 checks it, over real HTTP.
  const SECRET = 'test-signing-secret';
  const EXPIRES = '4102444800';
  const sign = (contentType: string, resource: string) =>
    createHmac('sha1', SECRET).update(`PUT\n\n${contentType}\n${EXPIRES}\n${resource}`).digest('base64');

  beforeEach(() => {
    global.fetch = realFetch;
    sm.reset();
  });

  it('sends its answer with the content type the URL was signed with, and S3 accepts it', async () => {
    // Prepare
    const received: ReceivedRequest[] = [];
    const server = await startTestServer((req, res) => {
      received.push(req);
      const url = new URL(req.path, 'http://s3.local');
      const ok = url.searchParams.get('Signature') === sign(req.headers['content-type'] ?? '', url.pathname);
      res.writeHead(ok ? 200 : 403).end(ok ? '' : '<Error><Code>SignatureDoesNotMatch</Code></Error>');
    });
    const resource = '/cloudformation-custom-resource-response-useast1/stack%7Csecret-init%7Creq';
    sm.on(GetSecretValueCommand).resolves({ SecretString: completeMaterial('{}', counter()) ?? '' });
    try {
      // Act
      await handler({
        RequestType: 'Update',
        ResponseURL: `${server.origin}${resource}?AWSAccessKeyId=AKIDEXAMPLE&Expires=${EXPIRES}&Signature=${encodeURIComponent(sign('', resource))}`,
        StackId: 'stack',
        RequestId: 'req',
        LogicalResourceId: 'SecretInitResource',
        ResourceProperties: { SecretId: 'km' },
      });
      // Assess: one PUT, accepted, carrying the whole answer.
      expect(received).toHaveLength(1);
      expect(received[0]?.headers['content-type'] ?? '').toBe('');
      expect(Number(received[0]?.headers['content-length'])).toBe(Buffer.byteLength(received[0]?.body ?? ''));
      expect(JSON.parse(received[0]?.body ?? '{}')).toMatchObject({ Status: 'SUCCESS', RequestId: 'req' });
    } finally {
      await server.close();
    }
  });

  it('does not report success when the URL refuses the answer', async () => {
    // Prepare: a URL whose signature does not match anything the handler could send.
    const server = await startTestServer((_req, res) => res.writeHead(403).end());
    sm.on(GetSecretValueCommand).resolves({ SecretString: completeMaterial('{}', counter()) ?? '' });
    try {
      // Act / Assess: the failure surfaces (the Lambda errors and is logged) instead of passing silently.
      await expect(
        handler({
          RequestType: 'Delete',
          ResponseURL: `${server.origin}/x?Signature=bad`,
          StackId: 's',
          RequestId: 'r',
          LogicalResourceId: 'l',
          ResourceProperties: {},
        }),
      ).rejects.toThrow(/403/);
    } finally {
      await server.close();
    }
  });
});
