import { PipegateClient } from '../../../lib/cli/client';
import { regionFromHost, signRequest } from '../../../lib/cli/sigv4';

// The AWS SigV4 test suite's example credentials (public, not a secret).
const CREDS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const WHEN = new Date('2015-08-30T12:36:00Z');

describe('SigV4 signing of owner calls', () => {
  it('matches the AWS test suite vector get-vanilla', async () => {
    // Act
    const headers = await signRequest(
      { method: 'GET', url: new URL('https://example.amazonaws.com/'), headers: {} },
      { region: 'us-east-1', service: 'service', credentials: CREDS, now: WHEN },
    );

    // Assess
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, ' +
        'Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    );
    expect(headers['x-amz-date']).toBe('20150830T123600Z');
    expect(headers.host).toBeUndefined();
  });

  it('signs for execute-api with the body, query and content type covered', async () => {
    // Prepare
    const url = new URL('https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/pipelines/greeting/deployment?confirm=d-1');
    const sign = (body: string, u = url) =>
      signRequest(
        { method: 'PUT', url: u, headers: { 'Content-Type': 'application/json' }, body },
        { region: 'eu-west-1', credentials: CREDS, now: WHEN },
      );

    // Act
    const a = await sign('{"inputs":{}}');
    const again = await sign('{"inputs":{}}');
    const otherBody = await sign('{"inputs":{"x":{"visible":false}}}');
    const otherQuery = await sign('{"inputs":{}}', new URL(url.href.replace('d-1', 'd-2')));

    // Assess
    expect(a.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20150830\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=[0-9a-f]{64}$/,
    );
    expect(again.authorization).toBe(a.authorization);
    expect(otherBody.authorization).not.toBe(a.authorization);
    expect(otherQuery.authorization).not.toBe(a.authorization);
  });

  it('adds the session token of temporary credentials', async () => {
    // Act
    const headers = await signRequest(
      { method: 'GET', url: new URL('https://x.execute-api.us-east-2.amazonaws.com/v1/pipelines'), headers: {} },
      { region: 'us-east-2', credentials: async () => ({ ...CREDS, sessionToken: 'FwoGZXIvYXdzEXAMPLE' }), now: WHEN },
    );

    // Assess
    expect(headers['x-amz-security-token']).toBe('FwoGZXIvYXdzEXAMPLE');
    expect(headers.authorization).toContain('x-amz-security-token');
  });

  it('is what the client sends on AWS instead of a bearer token', async () => {
    // Prepare
    const seen: { url: string; headers: Record<string, string> }[] = [];
    const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
      seen.push({ url: String(input), headers: init?.headers as Record<string, string> });
      return new Response(JSON.stringify({ pipelines: [] }), { status: 200, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch;
    const client = new PipegateClient({
      connection: { baseUrl: 'https://abc.execute-api.eu-west-1.amazonaws.com/prod', owner: { kind: 'sigv4', region: 'eu-west-1' } },
      fetch: fakeFetch,
      credentials: CREDS,
    });

    // Act
    await client.listPipelines();

    // Assess
    expect(seen).toHaveLength(1);
    expect(seen[0]?.url).toBe('https://abc.execute-api.eu-west-1.amazonaws.com/prod/v1/pipelines');
    expect(seen[0]?.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request/);
    expect(seen[0]?.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
  });
});

describe('region from an API Gateway host', () => {
  it.each([
    ['abc123.execute-api.eu-west-1.amazonaws.com', 'eu-west-1'],
    ['ABC.execute-api.us-gov-west-1.amazonaws.com', 'us-gov-west-1'],
    ['abc.execute-api.cn-north-1.amazonaws.com.cn', 'cn-north-1'],
    ['api.example.com', undefined],
    ['execute-api.eu-west-1.amazonaws.com.evil.com', undefined],
  ])('%s → %s', (host, region) => {
    expect(regionFromHost(host)).toBe(region);
  });
});
