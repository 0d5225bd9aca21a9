/**
 * What outlives a redeploy: the table, the queues with their dead-letter queues, the key
 * material secret and the alarm topic. Built from lib/tables.ts and lib/queues.ts.
 */
import * as path from 'node:path';
import { ArnFormat, CustomResource, Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { QUEUES, type QueueDefinition, type QueueName } from '../queues';
import { MAIN_TABLE } from '../tables';
import { PipegateFunction } from './pipegate-function';
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
  readonly alarmTopic: sns.Topic;

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
            'aws:SourceArn': this.formatArn({ service: 'cloudwatch', resource: 'alarm', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
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
    this.initialiseSecret(settings);
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
      entry: path.join(__dirname, 'secret-init.handler.ts'),
      timeout: Duration.seconds(30),
      logRetentionDays: settings.logRetentionDays,
    });
    init.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['secretsmanager:GetSecretValue', 'secretsmanager:PutSecretValue'],
        resources: [this.secret.secretArn],
      }),
    );
    new CustomResource(this, 'SecretInitResource', {
      serviceToken: init.fn.functionArn,
      resourceType: 'Custom::PipegateSecretInit',
      properties: { SecretId: this.secret.secretArn },
    });
  }
}
