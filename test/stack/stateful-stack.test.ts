import { Template } from 'aws-cdk-lib/assertions';
import type { CfnElement } from 'aws-cdk-lib';
import { DEFAULT_RESULT_RETENTION_DAYS, objectExpiryDays } from '../../lib/config';
import { QUEUES } from '../../lib/queues';
import { MAIN_TABLE } from '../../lib/tables';
import { buildTestApp, refOf, resourcesOf } from './stack-fixture';
import { isPlainObject } from '../../functions/core/values';

// Prepare: one app for the whole file.
const built = buildTestApp();
const data = resourcesOf(Template.fromStack(built.stateful));
const idOf = (el: unknown): string => built.stateful.getLogicalId(el as CfnElement);

describe('table from lib/tables.ts', () => {
  const table = data[idOf(built.stateful.table.node.defaultChild)];
  const props = table?.Properties ?? {};

  it('has the keys, indexes and expiry attribute of MAIN_TABLE', () => {
    // Assess
    expect(props.KeySchema).toEqual([
      { AttributeName: MAIN_TABLE.partitionKey, KeyType: 'HASH' },
      { AttributeName: MAIN_TABLE.sortKey, KeyType: 'RANGE' },
    ]);
    const indexes = (props.GlobalSecondaryIndexes as { IndexName: string; KeySchema: unknown; Projection: unknown }[]).map((i) => ({
      name: i.IndexName,
      keys: i.KeySchema,
      projection: i.Projection,
    }));
    expect(indexes).toEqual(
      MAIN_TABLE.indexes.map((i) => ({
        name: i.name,
        keys: [
          { AttributeName: i.partitionKey, KeyType: 'HASH' },
          { AttributeName: i.sortKey, KeyType: 'RANGE' },
        ],
        projection: { ProjectionType: i.projection },
      })),
    );
    expect(props.TimeToLiveSpecification).toEqual({ AttributeName: MAIN_TABLE.ttlAttribute, Enabled: true });
  });

  it('is on-demand, encrypted, recoverable to a point in time and retained', () => {
    // Assess
    expect(props.BillingMode).toBe('PAY_PER_REQUEST');
    expect(props.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(props.SSESpecification).toMatchObject({ SSEEnabled: true });
    expect(table?.DeletionPolicy).toBe('Retain');
  });
});

describe('queues from lib/queues.ts', () => {
  const queues = Object.entries(data).filter(([, r]) => r.Type === 'AWS::SQS::Queue');
  const policies = Object.values(data).filter((r) => r.Type === 'AWS::SQS::QueuePolicy');

  it.each(Object.values(QUEUES))('$id has a dead-letter queue after maxReceiveCount receives', (def) => {
    // Act
    const q = data[idOf(built.stateful.queues[def.id].queue.node.defaultChild)]?.Properties ?? {};
    const redrive = q.RedrivePolicy as { deadLetterTargetArn: unknown; maxReceiveCount: number };
    // Assess
    expect(redrive.maxReceiveCount).toBe(def.maxReceiveCount);
    const dlq = data[refOf(redrive.deadLetterTargetArn) ?? ''];
    expect(dlq?.Type).toBe('AWS::SQS::Queue');
    expect(dlq?.Properties?.MessageRetentionPeriod).toBe(def.deadLetterRetentionSeconds);
    expect(q.VisibilityTimeout).toBe(def.visibilityTimeoutSeconds);
    expect(def.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(6 * def.consumerTimeoutSeconds);
  });

  it('holds only the queues and their dead-letter queues', () => {
    // Assess
    expect(queues).toHaveLength(2 * Object.keys(QUEUES).length);
  });

  it.each(queues.map(([id]) => id))('%s is encrypted and refuses requests without TLS', (id) => {
    // Assess
    expect(data[id]?.Properties?.SqsManagedSseEnabled).toBe(true);
    const denies = policies
      .filter((p) => (p.Properties?.Queues as unknown[]).some((q) => refOf(q) === id))
      .flatMap((p) => (p.Properties?.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement)
      .filter(
        (s) => s.Effect === 'Deny' && isPlainObject(s.Condition) && JSON.stringify(s.Condition).includes('"aws:SecureTransport":"false"'),
      );
    expect(denies).toHaveLength(1);
  });

  it('alarms when any dead-letter queue holds a message', () => {
    // Prepare
    const dlqs = Object.values(built.stateful.queues).map((p) => idOf(p.deadLetter.node.defaultChild));
    // Act
    const watched = Object.values(data)
      .filter((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties?.MetricName === 'ApproximateNumberOfMessagesVisible')
      .map((r) => ({
        queue: refOf((r.Properties?.Dimensions as { Value: unknown }[])[0]?.Value),
        threshold: r.Properties?.Threshold,
        op: r.Properties?.ComparisonOperator,
      }));
    // Assess
    expect(watched.map((w) => w.queue).sort()).toEqual(dlqs.sort());
    for (const w of watched) expect([w.threshold, w.op]).toEqual([0, 'GreaterThanThreshold']);
  });
});

describe('key material secret', () => {
  const secretId = idOf(built.stateful.secret.node.defaultChild);

  it('starts with a generated pepper, is retained, and is completed by the init resource', () => {
    // Assess
    const secret = data[secretId];
    expect(secret?.DeletionPolicy).toBe('Retain');
    expect(secret?.Properties?.GenerateSecretString).toMatchObject({ GenerateStringKey: 'pepper', SecretStringTemplate: '{}' });
    const init = Object.values(data).find((r) => r.Type === 'Custom::PipegateSecretInit');
    expect(refOf(init?.Properties?.SecretId)).toBe(secretId);
  });

  it('lets only the init function write it', () => {
    // Act
    const writers = Object.values(data)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap((r) => (r.Properties?.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] }).Statement)
      .filter((s) => JSON.stringify(s.Action).includes('secretsmanager:'));
    // Assess
    const pepperId = idOf(built.stateful.pepperSecret.node.defaultChild);
    expect(writers).toEqual([
      {
        Effect: 'Allow',
        Action: ['secretsmanager:GetSecretValue', 'secretsmanager:PutSecretValue'],
        Resource: [{ Ref: secretId }, { Ref: pepperId }],
      },
    ]);
  });

  it('has an SNS alarm topic that refuses publishing without TLS', () => {
    // Assess
    const topicPolicy = Object.values(data).find((r) => r.Type === 'AWS::SNS::TopicPolicy');
    expect(JSON.stringify(topicPolicy?.Properties)).toContain('"aws:SecureTransport":"false"');
  });
});

describe('objects bucket', () => {
  const bucketId = idOf(built.stateful.bucket.node.defaultChild);
  const bucket = data[bucketId];
  const props = bucket?.Properties ?? {};

  it('is private, ACL-free, encrypted with S3-managed keys, unversioned and retained', () => {
    // Assess
    expect(props.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(props.OwnershipControls).toEqual({ Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] });
    expect(props.BucketEncryption).toEqual({
      ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
    });
    expect(props.VersioningConfiguration).toBeUndefined();
    expect(bucket?.DeletionPolicy).toBe('Retain');
  });

  it('refuses requests without TLS (and below TLS 1.2)', () => {
    // Act
    const policy = Object.values(data).find((r) => r.Type === 'AWS::S3::BucketPolicy' && refOf(r.Properties?.Bucket) === bucketId);
    const denies = (policy?.Properties?.PolicyDocument as { Statement: { Effect: string; Condition?: unknown }[] }).Statement.filter(
      (s) => s.Effect === 'Deny',
    );
    // Assess
    expect(denies.map((s) => s.Condition)).toEqual(
      expect.arrayContaining([{ Bool: { 'aws:SecureTransport': 'false' } }, { NumericLessThan: { 's3:TlsVersion': 1.2 } }]),
    );
  });

  it('expires every object a day after the results that name it (S3 counts whole days)', () => {
    // Assess
    expect(objectExpiryDays(DEFAULT_RESULT_RETENTION_DAYS)).toBe(8);
    expect(props.LifecycleConfiguration).toEqual({
      Rules: [
        { Id: 'expire-with-results', Status: 'Enabled', ExpirationInDays: 8, AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } },
      ],
    });
  });

  it.each([
    ['read', ['s3:GetObject'], true],
    ['delete', ['s3:DeleteObject'], true],
  ] as const)(
    'grants %s on the d/ and p/ key roots only, with ListBucket where a missing key must read as 404',
    (action, actions, lists) => {
      // Act
      const policy = data[idOf(built.stateful.objectPolicies[action].node.defaultChild)];
      const statements = (policy?.Properties?.PolicyDocument as { Statement: { Action: unknown; Resource: unknown; Effect: string }[] })
        .Statement;
      const arn = { 'Fn::GetAtt': [bucketId, 'Arn'] };
      // Assess
      expect(policy?.Type).toBe('AWS::IAM::ManagedPolicy');
      expect(statements[0]).toEqual({
        Effect: 'Allow',
        Action: actions.length === 1 ? actions[0] : actions,
        Resource: [{ 'Fn::Join': ['', [arn, '/d/*']] }, { 'Fn::Join': ['', [arn, '/p/*']] }],
      });
      expect(statements.slice(1)).toEqual(lists ? [{ Effect: 'Allow', Action: 's3:ListBucket', Resource: arn }] : []);
    },
  );

  it.each([
    ['caller-execution', 's3:PutObject', ['/d/*/e/*']],
    ['owner-run', 's3:PutObject', ['/p/*/r/*']],
    ['multipart-abort', 's3:AbortMultipartUpload', ['/d/*/e/*', '/p/*/r/*']],
    ['owner-upload', 's3:PutObject', ['/p/*/u/*']],
    ['caller-upload', 's3:PutObject', ['/d/*/u/*']],
  ] as const)('grants %s as %s on %j alone (one key family each)', (action, iamAction, families) => {
    // Act
    const policy = data[idOf(built.stateful.objectPolicies[action].node.defaultChild)];
    const statements = (policy?.Properties?.PolicyDocument as { Statement: unknown[] }).Statement;
    const arn = (keys: string) => ({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, keys]] });
    // Assess
    expect(policy?.Type).toBe('AWS::IAM::ManagedPolicy');
    expect(statements).toEqual([
      { Effect: 'Allow', Action: iamAction, Resource: families.length === 1 ? arn(families[0] ?? '') : families.map(arn) },
    ]);
  });

  it('keeps the retired bucket-wide write as it was for one release, held by no action', () => {
    // Act
    const [retiredId, retired] =
      Object.entries(data).find(([id, r]) => id.startsWith('ObjectsWrite') && r.Type === 'AWS::IAM::ManagedPolicy') ?? [];
    const arn = { 'Fn::GetAtt': [bucketId, 'Arn'] };
    // Assess
    expect(retired?.Properties?.Description).toBe('pipegate: write objects');
    expect((retired?.Properties?.PolicyDocument as { Statement: unknown[] }).Statement).toEqual([
      {
        Effect: 'Allow',
        Action: ['s3:AbortMultipartUpload', 's3:PutObject'],
        Resource: [{ 'Fn::Join': ['', [arn, '/d/*']] }, { 'Fn::Join': ['', [arn, '/p/*']] }],
      },
    ]);
    expect(Object.values(built.stateful.objectPolicies).map((p) => idOf(p.node.defaultChild))).not.toContain(retiredId);
  });
});
