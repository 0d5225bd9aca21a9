/**
 * The upload-cors custom resource (lib/stacks/upload-cors.handler.ts) against the S3 emulation's
 * CORS configuration (GetBucketCors, PutBucketCors, DeleteBucketCors): Create, Update and Delete
 * as CloudFormation sends them, each answered to the response URL, each leaving the preflight
 * answered for the resource's origins only and every other rule of the bucket as it was.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteBucketCorsCommand, GetBucketCorsCommand, PutBucketCorsCommand, S3Client } from '@aws-sdk/client-s3';
import { startLocalS3, type LocalS3 } from '../../lib/local/s3';
import { answerUploadCors } from '../../lib/stacks/upload-cors.handler';
import type { CustomResourceEvent } from '../../lib/stacks/cfn-response';
import { UPLOAD_CORS_RULE_ID } from '../../lib/storage-cors';
import { reply, startTestServer, type TestServer } from '../support/http-server';

const BUCKET = 'pipegate-objects';
const creds = { accessKeyId: 'AKLOCALTEST', secretAccessKey: 'local-test-secret' };
const API = 'https://abc123.execute-api.us-east-1.amazonaws.com';
const CUSTOM = 'https://pipes.example.org';
const THEIRS = { ID: 'their-rule', AllowedMethods: ['GET'], AllowedOrigins: ['https://elsewhere.example'], MaxAgeSeconds: 60 };

describe('the upload-cors custom resource on the S3 emulation', () => {
  let dir: string;
  let s3: LocalS3;
  let client: S3Client;
  let receiver: TestServer;
  const answers: { Status?: string; PhysicalResourceId?: string; Reason?: string }[] = [];

  const start = async () => {
    s3 = await startLocalS3({
      dir,
      buckets: [BUCKET],
      region: 'local',
      secretOf: (id) => (id === creds.accessKeyId ? creds.secretAccessKey : undefined),
    });
    client = new S3Client({ endpoint: s3.url, forcePathStyle: true, region: 'local', credentials: creds });
  };
  const stop = async () => {
    client.destroy();
    await s3.stop();
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pipegate-upload-cors-'));
    receiver = await startTestServer((req, res) => {
      answers.push(JSON.parse(req.body) as (typeof answers)[number]);
      reply(res, 200);
    });
    await start();
  });
  afterAll(async () => {
    await stop();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const event = (RequestType: CustomResourceEvent['RequestType'], origins: string[], old?: string[]): CustomResourceEvent => ({
    RequestType,
    ResponseURL: `${receiver.origin}/response`,
    StackId: 'stack',
    RequestId: 'req',
    LogicalResourceId: 'UploadCorsResource',
    ...(RequestType === 'Create' ? {} : { PhysicalResourceId: `${BUCKET}/${UPLOAD_CORS_RULE_ID}` }),
    ResourceProperties: { ServiceToken: 'arn', Bucket: BUCKET, Origins: origins },
    ...(old ? { OldResourceProperties: { ServiceToken: 'arn', Bucket: BUCKET, Origins: old } } : {}),
  });
  const run = async (e: CustomResourceEvent) => {
    answers.length = 0;
    await answerUploadCors(e, client);
    return answers[0];
  };
  const allowed = async (origin: string): Promise<boolean> => {
    const r = await fetch(`${s3.url}/${BUCKET}/d/x/u/y`, {
      method: 'OPTIONS',
      headers: { Origin: origin, 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'content-type' },
    });
    return r.status === 200 && r.headers.get('access-control-allow-origin') === origin;
  };
  const rules = async () => (await client.send(new GetBucketCorsCommand({ Bucket: BUCKET }))).CORSRules ?? [];

  it('Create: puts the rule in beside a rule someone else set, and the preflight is answered for its origins only', async () => {
    // Prepare
    await client.send(new PutBucketCorsCommand({ Bucket: BUCKET, CORSConfiguration: { CORSRules: [THEIRS] } }));
    // Act
    const answer = await run(event('Create', [API, CUSTOM]));
    // Assess
    expect(answer).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: `${BUCKET}/${UPLOAD_CORS_RULE_ID}` });
    expect(await allowed(API)).toBe(true);
    expect(await allowed(CUSTOM)).toBe(true);
    expect(await allowed('https://evil.example')).toBe(false);
    expect((await rules()).map((r) => r.ID)).toEqual(['their-rule', UPLOAD_CORS_RULE_ID]);
  });

  it('Update: replaces its own rule (never a second one), and the same event twice changes nothing', async () => {
    // Act
    await run(event('Update', [API], [API, CUSTOM]));
    const once = await rules();
    const answer = await run(event('Update', [API], [API, CUSTOM]));
    // Assess
    expect(answer?.Status).toBe('SUCCESS');
    expect(await rules()).toEqual(once);
    expect(once.map((r) => r.ID)).toEqual(['their-rule', UPLOAD_CORS_RULE_ID]);
    expect(await allowed(API)).toBe(true);
    expect(await allowed(CUSTOM)).toBe(false);
  });

  it('keeps the configuration across a restart of the emulation, as S3 keeps it', async () => {
    // Act
    await stop();
    await start();
    // Assess
    expect(await allowed(API)).toBe(true);
    expect((await rules()).map((r) => r.ID)).toEqual(['their-rule', UPLOAD_CORS_RULE_ID]);
  });

  it('Delete: takes its rule out and leaves the other; with nothing else left, no configuration at all', async () => {
    // Act
    const answer = await run(event('Delete', [API]));
    // Assess
    expect(answer?.Status).toBe('SUCCESS');
    expect(await allowed(API)).toBe(false);
    expect((await rules()).map((r) => r.ID)).toEqual(['their-rule']);

    // Prepare: only the upload rule.
    await client.send(new DeleteBucketCorsCommand({ Bucket: BUCKET }));
    await run(event('Create', [API]));
    // Act
    await run(event('Delete', [API]));
    await run(event('Delete', [API]));
    // Assess
    await expect(client.send(new GetBucketCorsCommand({ Bucket: BUCKET }))).rejects.toMatchObject({ name: 'NoSuchCORSConfiguration' });
  });

  it('answers FAILED, naming why, for properties without origins', async () => {
    // Prepare
    jest.spyOn(console, 'error').mockImplementation(() => undefined);
    // Act
    const answer = await run(event('Create', []));
    // Assess
    expect(answer).toMatchObject({ Status: 'FAILED', Reason: expect.stringMatching(/Origins/) });
  });
});
