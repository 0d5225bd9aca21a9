/**
 * The one signer and its calls: S3's published SigV4 example, presigned GETs exactly as S3's
 * own presigner makes them, the retry rule, and the JSON protocol's error mapping against a
 * fake service on loopback.
 */
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { isRetryable, jsonServiceCall, presignUrl, signRequest, withRetries, type RetryPolicy } from '../../../functions/adapters/sigv4';
import { reply, startScriptedServer, startTestServer, type ScriptedServer } from '../../support/http-server';

// The example credentials of AWS's SigV4 documentation (public, not a secret).
const S3_DOC_CREDS = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
const S3_DOC_DATE = new Date('2013-05-24T00:00:00Z');
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** No waiting in tests; the waits asked for are recorded instead. */
const instant = (waits: number[] = [], random = () => 1): RetryPolicy => ({
  maxAttempts: 3,
  baseMs: 100,
  capMs: 1000,
  sleep: (ms) => (waits.push(ms), Promise.resolve()),
  random,
});

describe('SigV4 signing', () => {
  it("matches S3's documented example: GET /test.txt with a Range", async () => {
    // Act
    const headers = await signRequest(
      { method: 'GET', url: new URL('https://examplebucket.s3.amazonaws.com/test.txt'), headers: { range: 'bytes=0-9' } },
      { region: 'us-east-1', service: 's3', credentials: S3_DOC_CREDS, now: S3_DOC_DATE },
    );

    // Assess
    expect(headers['x-amz-content-sha256']).toBe(EMPTY_SHA256);
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41'.replace(
        /,(?=[SC])/g,
        ', ',
      ),
    );
  });

  it.each([
    ['a plain key', 'd/x/e/y/out.image', { region: 'eu-west-1' }],
    ['odd characters', 'k/a b/ü+%2F/(x)*', { region: 'eu-west-1' }],
    ['a path-style endpoint', 'p/pipe/r/run/in.photo', { region: 'local', endpoint: 'http://127.0.0.1:4569', forcePathStyle: true }],
  ])("presigns a GET exactly as S3's presigner does (%s)", async (_what, key, where) => {
    // Prepare
    const creds = { ...S3_DOC_CREDS, sessionToken: 'FwoGZXIvYXdzEXAMPLE' };
    const sdk = new S3Client({
      ...where,
      credentials: creds,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    const expected = await getSignedUrl(
      sdk,
      new GetObjectCommand({ Bucket: 'the-bucket', Key: key, ResponseContentType: 'image/png', ResponseContentDisposition: 'attachment' }),
      {
        expiresIn: 300,
        signingDate: S3_DOC_DATE,
      },
    );
    const base =
      'endpoint' in where ? new URL(`${where.endpoint}/the-bucket`) : new URL(`https://the-bucket.s3.${where.region}.amazonaws.com`);
    const path = `${base.pathname.replace(/\/$/, '')}/${key
      .split('/')
      .map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
      .join('/')}`;
    const url = new URL(base.origin);
    url.searchParams.set('response-content-disposition', 'attachment');
    url.searchParams.set('response-content-type', 'image/png');
    url.searchParams.set('x-id', 'GetObject');

    // Act
    const ours = await presignUrl(
      { method: 'GET', url, path, headers: {} },
      { region: where.region, service: 's3', credentials: creds, now: S3_DOC_DATE, expiresIn: 300 },
    );

    // Assess: same address, same signed query, parameter by parameter.
    const a = new URL(ours);
    const b = new URL(expected);
    expect(a.origin + a.pathname).toBe(b.origin + b.pathname);
    expect(Object.fromEntries([...a.searchParams].sort())).toEqual(Object.fromEntries([...b.searchParams].sort()));
    expect(a.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('retries', () => {
  it('tries a throttle again with full jitter, doubling the bound, and gives up after maxAttempts', async () => {
    // Prepare
    const waits: number[] = [];
    let calls = 0;
    const throttled = () => {
      calls++;
      return Promise.reject(Object.assign(new Error('slow down'), { name: 'ThrottlingException' }));
    };

    // Act
    const failed = await withRetries(throttled, { ...instant(waits), maxAttempts: 4 }).catch((e: Error) => e.name);

    // Assess
    expect(failed).toBe('ThrottlingException');
    expect(calls).toBe(4);
    expect(waits).toEqual([100, 200, 400]);
  });

  it('never waits longer than the cap, and a random draw of 0 waits nothing', async () => {
    const waits: number[] = [];
    const zero: number[] = [];
    const fail = () => Promise.reject(Object.assign(new Error('x'), { status: 503 }));

    await withRetries(fail, { ...instant(waits), maxAttempts: 6, capMs: 250 }).catch(() => undefined);
    await withRetries(fail, { ...instant(zero, () => 0), maxAttempts: 3 }).catch(() => undefined);

    expect(waits).toEqual([100, 200, 250, 250, 250]);
    expect(zero).toEqual([0, 0]);
  });

  it('does not retry a refusal, and returns the first success', async () => {
    let calls = 0;
    const denied = await withRetries(() => {
      calls++;
      return Promise.reject(Object.assign(new Error('no'), { name: 'AccessDeniedException', status: 400 }));
    }, instant()).catch((e: Error) => e.name);
    const ok = await withRetries(() => Promise.resolve('fine'), instant());

    expect([denied, calls, ok]).toEqual(['AccessDeniedException', 1, 'fine']);
  });

  it.each([
    [{ name: 'ThrottlingException' }, true],
    [{ name: 'SlowDown', status: 503 }, true],
    [{ status: 500 }, true],
    [{ code: 'ECONNRESET' }, true],
    [{ name: 'TimeoutError' }, true],
    [{ name: 'NoSuchKey', status: 404 }, false],
    [{ name: 'AccessDenied', status: 403 }, false],
    [{ name: 'InvalidCiphertextException', status: 400 }, false],
  ])('%j is retryable: %s', (e, expected) => {
    expect(isRetryable(e)).toBe(expected);
  });
});

describe('a JSON protocol call', () => {
  let fake: ScriptedServer;
  beforeAll(async () => {
    // A string body is a proxy's HTML error page, not JSON.
    fake = await startScriptedServer([500, { __type: 'InternalFailure' }], (res, status, body) => {
      if (typeof body === 'string') {
        res.writeHead(status, { 'content-type': 'text/html' });
        res.end(body);
      } else reply(res, status, body);
    });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());
  const call = () =>
    jsonServiceCall({
      region: 'eu-west-1',
      service: 'secretsmanager',
      targetPrefix: 'secretsmanager',
      endpoint: fake.origin,
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'token' },
      label: 'Secrets Manager',
      retry: instant(),
    });

  it('posts the operation signed, and answers its JSON', async () => {
    fake.answers = [[200, { SecretString: 'x' }]];

    const out = await call()('GetSecretValue', { SecretId: 'arn:s' });

    expect(out).toEqual({ SecretString: 'x' });
    expect(fake.seen[0]?.method).toBe('POST');
    expect(JSON.parse(fake.seen[0]?.body ?? '')).toEqual({ SecretId: 'arn:s' });
    expect(fake.seen[0]?.headers).toMatchObject({
      'x-amz-target': 'secretsmanager.GetSecretValue',
      'content-type': 'application/x-amz-json-1.1',
      'x-amz-security-token': 'token',
      host: new URL(fake.origin).host,
    });
    expect(fake.seen[0]?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/secretsmanager\/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token;x-amz-target, /,
    );
  });

  it("throws the service's error by the name after the namespace, with its status and message", async () => {
    fake.answers = [[400, { __type: 'com.amazonaws.secretsmanager#ResourceNotFoundException', Message: 'not here' }]];

    const e = (await call()('GetSecretValue', { SecretId: 'x' }).catch((x: unknown) => x)) as {
      name: string;
      message: string;
      $metadata: unknown;
    };

    expect(e.name).toBe('ResourceNotFoundException');
    expect(e.message).toBe('Secrets Manager GetSecretValue: ResourceNotFoundException: not here');
    expect(e.$metadata).toEqual({ httpStatusCode: 400 });
    expect(fake.seen).toHaveLength(1);
  });

  it('tries a throttle and a 5xx page again, then answers', async () => {
    fake.answers = [
      [400, { __type: 'ThrottlingException', message: 'Rate exceeded' }],
      [502, '<html>bad gateway</html>'],
      [200, { SecretString: 'y' }],
    ];

    expect(await call()('GetSecretValue', { SecretId: 'x' })).toEqual({ SecretString: 'y' });
    expect(fake.seen).toHaveLength(3);
  });

  it('names an answer that is not JSON by its status, once the attempts are spent', async () => {
    fake.answers = [
      [503, 'busy'],
      [503, 'busy'],
      [503, 'busy'],
    ];

    await expect(call()('GetSecretValue', { SecretId: 'x' })).rejects.toMatchObject({ name: 'Secrets Manager503', status: 503 });
    expect(fake.seen).toHaveLength(3);
  });

  it('throws a refused connection with its socket code, after the attempts', async () => {
    const closed = await startTestServer(() => undefined);
    const origin = closed.origin;
    await closed.close();

    const e = await jsonServiceCall({
      region: 'eu-west-1',
      service: 'kms',
      targetPrefix: 'TrentService',
      endpoint: origin,
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      retry: instant(),
    })('Decrypt', {}).catch((x: unknown) => x);

    expect(e).toMatchObject({ code: 'ECONNREFUSED' });
  });
});
