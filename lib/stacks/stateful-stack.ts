/**
 * What outlives a redeploy: the table, the queues with their dead-letter queues, the objects
 * bucket, the key material secret and the alarm topic. Built from lib/tables.ts and lib/queues.ts.
 */
import { ArnFormat, CustomResource, Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { DEFAULT_RESULT_RETENTION_DAYS, objectExpiryDays } from '../config';
import { QUEUES, type QueueDefinition, type QueueName } from '../queues';
import type { ObjectAction } from './permissions';
import { OWNER_SECRET_PURPOSE } from '../../functions/core/envelope';
import {
  CALLER_EXECUTION_KEYS,
  CALLER_UPLOAD_KEYS,
  OBJECT_KEY_ROOTS,
  PIPELINE_RUN_KEYS,
  PIPELINE_UPLOAD_KEYS,
} from '../../functions/core/object-keys';
import { MAIN_TABLE } from '../tables';
import { PipegateFunction } from './pipegate-function';
import { CUSTOM_RESOURCE_SERVICE_TIMEOUT } from './concurrency-check';
import type { Settings } from './settings';

export interface StatefulStackProps extends StackProps {
  settings: Settings;
}

export interface QueuePair {
  definition: QueueDefinition;
  queue: sqs.Queue;
  deadLetter: sqs.Queue;
}

export class StatefulStack extends Stack {
  readonly table: dynamodb.Table;
  readonly queues: Record<QueueName, QueuePair>;
  readonly secret: secretsmanager.Secret;
  /** The pepper alone, copied from `secret`: all the authorizer reads. */
  readonly pepperSecret: secretsmanager.Secret;
  /** Seals owner secrets' data keys (envelope encryption); granted in the service stack to the functions that seal or open them. */
  readonly ownerSecretsKey: kms.Key;
  readonly alarmTopic: sns.Topic;
  readonly bucket: s3.Bucket;
  /** What a function may do with objects, one customer-managed policy per action (lib/stacks/permissions.ts). */
  readonly objectPolicies: Readonly<Record<ObjectAction, iam.ManagedPolicy>>;

  constructor(scope: Construct, id: string, props: StatefulStackProps) {
    super(scope, id, props);
    const { settings } = props;

    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: MAIN_TABLE.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: MAIN_TABLE.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      timeToLiveAttribute: MAIN_TABLE.ttlAttribute,
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of MAIN_TABLE.indexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: index.sortKey, type: dynamodb.AttributeType.STRING },
        projectionType: dynamodb.ProjectionType[index.projection],
      });
    }

    this.alarmTopic = new sns.Topic(this, 'Alarms', { displayName: 'pipegate alarms', enforceSSL: true });
    // enforceSSL writes a topic policy, and a topic policy replaces SNS's default one: without
    // this Allow CloudWatch cannot publish, and no alarm would ever notify anyone.
    this.alarmTopic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'AllowCloudWatchAlarmsOfThisAccount',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [this.alarmTopic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': this.account },
          ArnLike: {
            'aws:SourceArn': this.formatArn({
              service: 'cloudwatch',
              resource: 'alarm',
              resourceName: '*',
              arnFormat: ArnFormat.COLON_RESOURCE_NAME,
            }),
          },
        },
      }),
    );
    if (settings.alarmEmail) this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(settings.alarmEmail));
    Validations.of(this.alarmTopic).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason:
        'CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed SNS key, and alarm notifications carry only alarm names and states.',
    });

    this.bucket = this.objectsBucket();
    this.objectPolicies = this.objectAccessPolicies(this.bucket);

    this.queues = {
      executions: this.queuePair(QUEUES.executions),
      callbacks: this.queuePair(QUEUES.callbacks),
    };

    this.secret = new secretsmanager.Secret(this, 'KeyMaterial', {
      description: 'pipegate key material: pepper for API-key hashes, master key sealing signing secrets',
      // CloudFormation generates the pepper; SecretInit adds the 32-byte master key.
      generateSecretString: {
        secretStringTemplate: '{}',
        generateStringKey: 'pepper',
        passwordLength: 64,
        excludePunctuation: true,
      },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'Not rotated: every stored API-key hash is keyed by the pepper and every signing secret is sealed by the master key, so rotating either would invalidate all keys and secrets.',
    });
    this.pepperSecret = new secretsmanager.Secret(this, 'KeyPepper', {
      description: 'pipegate: the pepper for API-key hashes alone (a copy), for the authorizer, which needs no master key',
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.pepperSecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'Not rotated: a copy of the pepper every stored API-key hash is keyed by; rotating it would invalidate all keys.',
    });
    this.initialiseSecret(settings);
    this.ownerSecretsKey = this.ownerSecretsKmsKey();
  }

  /**
   * The KMS key owner secrets' data keys are encrypted under. Its policy is KMS's default (the
   * account's IAM policies decide who uses it: the functions that seal or open owner secrets,
   * granted in the service stack, whose roles this stack cannot name without a cycle) plus one
   * Deny: no principal may use it for anything but an owner secret's encryption context, so a
   * grant added elsewhere by mistake cannot turn it into a general-purpose key. Rotation is on
   * (yearly, automatic; KMS keeps every earlier version to decrypt with); retained on delete,
   * since every sealed secret would be lost with it.
   */
  private ownerSecretsKmsKey(): kms.Key {
    const key = new kms.Key(this, 'OwnerSecretsKey', {
      description: 'pipegate: encrypts the data keys of owner secrets (the encryption context names the secret)',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'OwnerSecretsContextOnly',
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: ['kms:Encrypt', 'kms:Decrypt', 'kms:ReEncrypt*', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: { StringNotEquals: { 'kms:EncryptionContext:purpose': OWNER_SECRET_PURPOSE } },
      }),
    );
    return key;
  }

  /**
   * The one bucket for asset bytes and values too large for a record (functions/core/object-keys.ts).
   * Private (public access blocked, ACLs off, TLS only), encrypted with S3-managed keys: SSE-KMS
   * would add a KMS request to every GET and PUT and a key grant to every role that reads,
   * writes or presigns, for no gain here (no other account or key policy needs to be kept out).
   * Unversioned, so a delete removes the bytes. Every object expires objectExpiryDays (8) days
   * after it was written (lib/config.ts says why one more than the 7-day retention): that is
   * how executions' objects go, with no listing and no request of ours; a deleted deployment's
   * go at once as far as one bounded pass reaches, and the rule takes the rest.
   *
   * No CorsConfiguration here: the web form's upload rule (lib/storage-cors.ts) names the API's
   * execute-api origin, which only the service stack knows (naming it here would be a cycle), so
   * the service stack's upload-cors custom resource owns the rule. A CorsConfiguration here would
   * be rewritten by every update of this stack that touched it, dropping that rule.
   */
  private objectsBucket(): s3.Bucket {
    const bucket = new s3.Bucket(this, 'Objects', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      versioned: false,
      lifecycleRules: [
        {
          id: 'expire-with-results',
          enabled: true,
          expiration: Duration.days(objectExpiryDays(DEFAULT_RESULT_RETENTION_DAYS)),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
      ],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'No server access logs: every object is written, read and removed by pipegate functions whose own logs and X-Ray traces record each request, and access logs would need a second bucket with its own retention.',
    });
    return bucket;
  }

  /**
   * Read is s3:GetObject (HeadObject and presigned GETs are authorized as it) and delete
   * s3:DeleteObject, each on the bucket's two key roots (every key starts with d/ or p/): readers
   * and deleters also get s3:ListBucket, without which S3 answers a missing key with 403 instead
   * of 404 (a HeadObject could not tell "not there" from "refused"), and removing a prefix lists
   * it first. Writes are s3:PutObject (presigned PUTs, and a multipart upload's Create,
   * UploadPart and Complete) on one key family each, so that a function, or a URL its role
   * signs, can write nothing of another family; multipart-abort is s3:AbortMultipartUpload (a
   * streamed write that fails) on the two execution families. The policies live here, beside
   * the bucket, so that their object ARNs are this stack's own references.
   */
  private objectAccessPolicies(bucket: s3.Bucket): Record<ObjectAction, iam.ManagedPolicy> {
    const objects = OBJECT_KEY_ROOTS.map((root) => bucket.arnForObjects(`${root}/*`));
    const list = new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] });
    const bucketId = this.getLogicalId(bucket.node.defaultChild as s3.CfnBucket);
    const policy = (id: string, description: string, statements: iam.PolicyStatement[]) => {
      const p = new iam.ManagedPolicy(this, id, { description, statements });
      for (const root of OBJECT_KEY_ROOTS) {
        Validations.of(p).acknowledge({
          id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${root}/*]`,
          reason:
            'Objects are keyed by ids chosen at run time (functions/core/object-keys.ts): the grant covers the key roots of deployments (d/) and pipelines (p/), for one action.',
        });
      }
      return p;
    };
    const keys = (id: string, whose: string, action: string, families: readonly string[]) =>
      this.keyFamilyPolicy(bucket, bucketId, id, whose, action, families);
    const policies: Record<ObjectAction, iam.ManagedPolicy> = {
      read: policy('ObjectsRead', 'pipegate: read objects', [
        new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: objects }),
        list,
      ]),
      delete: policy('ObjectsDelete', 'pipegate: delete objects', [
        new iam.PolicyStatement({ actions: ['s3:DeleteObject'], resources: objects }),
        list,
      ]),
      'caller-execution': keys('ObjectsCallerExecution', "write callers' executions", 's3:PutObject', [CALLER_EXECUTION_KEYS]),
      'owner-run': keys('ObjectsOwnerRun', "write owners' runs", 's3:PutObject', [PIPELINE_RUN_KEYS]),
      'multipart-abort': keys('ObjectsMultipartAbort', "abort executions' and runs' multipart writes", 's3:AbortMultipartUpload', [
        CALLER_EXECUTION_KEYS,
        PIPELINE_RUN_KEYS,
      ]),
      'owner-upload': keys('ObjectsOwnerUpload', "write owners' uploads", 's3:PutObject', [PIPELINE_UPLOAD_KEYS]),
      'caller-upload': keys('ObjectsCallerUpload', "write callers' uploads", 's3:PutObject', [CALLER_UPLOAD_KEYS]),
    };
    // Retired: the bucket-wide write, held by no function any more. `cdk deploy --all` updates
    // this stack first, while the roles of a service stack deployed before still hold it:
    // removing it here would fail (IAM refuses to delete a policy still attached) or, detached,
    // leave those functions without their writes until the service stack is updated. So it
    // stays as it was (a new description would replace it) for one release, then goes.
    policy('ObjectsWrite', 'pipegate: write objects', [
      new iam.PolicyStatement({ actions: ['s3:PutObject', 's3:AbortMultipartUpload'], resources: objects }),
    ]);
    return policies;
  }

  /**
   * One action on some key families alone (`d/*\/e/*` callers' executions, `p/*\/r/*` owners'
   * runs, `d/*\/u/*` and `p/*\/u/*` their uploads; functions/core/object-keys.ts): a function, or a
   * URL signed by a role holding it, can touch no key of another family.
   */
  private keyFamilyPolicy(
    bucket: s3.Bucket,
    bucketId: string,
    id: string,
    whose: string,
    action: string,
    families: readonly string[],
  ): iam.ManagedPolicy {
    const p = new iam.ManagedPolicy(this, id, {
      description: `pipegate: ${whose}`,
      statements: [new iam.PolicyStatement({ actions: [action], resources: families.map((keys) => bucket.arnForObjects(keys)) })],
    });
    for (const keys of families) {
      Validations.of(p).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${keys}]`,
        reason: `Keys hold the owner and execution or upload ids chosen at run time (functions/core/object-keys.ts): the grant covers ${keys} only, for one action.`,
      });
    }
    return p;
  }

  private queuePair(definition: QueueDefinition): QueuePair {
    if (definition.visibilityTimeoutSeconds < 6 * definition.consumerTimeoutSeconds) {
      throw new Error(
        `Queue ${definition.id}: visibility time-out ${definition.visibilityTimeoutSeconds} s is less than six times its consumer's ${definition.consumerTimeoutSeconds} s`,
      );
    }
    const name = definition.id[0]?.toUpperCase() + definition.id.slice(1);
    const deadLetter = new sqs.Queue(this, `${name}DeadLetter`, {
      retentionPeriod: Duration.seconds(definition.deadLetterRetentionSeconds),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    const queue = new sqs.Queue(this, `${name}Queue`, {
      visibilityTimeout: Duration.seconds(definition.visibilityTimeoutSeconds),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: deadLetter, maxReceiveCount: definition.maxReceiveCount },
    });
    new cloudwatch.Alarm(this, `${name}DeadLetterAlarm`, {
      alarmDescription: `pipegate: messages dead-lettered from the ${definition.id} queue`,
      metric: deadLetter.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }).addAlarmAction(new cwActions.SnsAction(this.alarmTopic));
    return { definition, queue, deadLetter };
  }

  private initialiseSecret(settings: Settings): void {
    const init = new PipegateFunction(this, 'SecretInit', {
      name: 'secret-init',
      timeout: Duration.seconds(30),
      logRetentionDays: settings.logRetentionDays,
    });
    init.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['secretsmanager:GetSecretValue', 'secretsmanager:PutSecretValue'],
        resources: [this.secret.secretArn, this.pepperSecret.secretArn],
      }),
    );
    const material = new CustomResource(this, 'SecretInitResource', {
      serviceToken: init.fn.functionArn,
      resourceType: 'Custom::PipegateSecretInit',
      serviceTimeout: CUSTOM_RESOURCE_SERVICE_TIMEOUT,
      properties: { SecretId: this.secret.secretArn },
    });
    // After the material is complete: the pepper is copied from it (an existing stack keeps its
    // pepper, so every stored key hash stays valid).
    const pepper = new CustomResource(this, 'PepperInitResource', {
      serviceToken: init.fn.functionArn,
      resourceType: 'Custom::PipegateSecretInit',
      serviceTimeout: CUSTOM_RESOURCE_SERVICE_TIMEOUT,
      properties: { SecretId: this.pepperSecret.secretArn, CopyPepperFrom: this.secret.secretArn },
    });
    pepper.node.addDependency(material);
  }
}
