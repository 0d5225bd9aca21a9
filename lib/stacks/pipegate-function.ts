/**
 * The one place that holds every Lambda default: bundling, runtime, architecture, tracing, log
 * retention, memory, environment and a role that starts empty and is granted only what
 * lib/stacks/permissions.ts lists.
 */
import * as path from 'node:path';
import {
  ArnFormat,
  AssetHashType,
  DockerImage,
  Duration,
  RemovalPolicy,
  Stack,
  Validations,
  type BundlingOptions,
  type ILocalBundling,
} from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { bundleSpec } from './bundles';
import { sharedBundler } from './bundler';
import type { ObjectAction, QueryTarget, StatesAction, TableAction } from './permissions';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
/** Kept in step with esbuild's target (bundles.ts ESBUILD_TARGET). */
export const RUNTIME = lambda.Runtime.NODEJS_24_X;
export const DEFAULT_MEMORY_MB = 256;

export interface PipegateFunctionProps {
  /** Its bundle in lib/stacks/bundles.ts (also the function's label in the console). */
  name: string;
  timeout: Duration;
  memorySize?: number;
  /** Its share of the account's concurrency (lib/concurrency.ts); none draws on the shared pool. */
  reservedConcurrency?: number;
  environment?: Record<string, string>;
  /** One of the periods CloudWatch Logs accepts (checked in settings.ts). */
  logRetentionDays: number;
  /**
   * Lambda's own lines (START, END and REPORT are INFO, a time-out or crash WARN or above):
   * with one set, logs are in Lambda's JSON format and lines below the level are not written.
   * The functions' own lines are JSON written to stdout either way, unfiltered.
   */
  systemLogLevel?: 'WARN' | 'INFO' | 'DEBUG';
}

export class PipegateFunction extends Construct {
  readonly fn: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: PipegateFunctionProps) {
    super(scope, id);

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // An explicit role instead of AWSLambdaBasicExecutionRole: that managed policy may create
    // log groups and write to any of them; this one may write to its own group only.
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `pipegate ${props.name}`,
    });
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    );

    // A function without a bundle entry fails here, where it is declared, rather than at synth.
    bundleSpec(props.name);
    this.fn = new lambda.Function(this, 'Function', {
      // The asset's hash is its output's (index.js, its map, the copied files), as NodejsFunction's is.
      code: lambda.Code.fromAsset(REPO_ROOT, { assetHashType: AssetHashType.OUTPUT, bundling: bundlingOf(props.name) }),
      handler: 'index.handler',
      description: `pipegate ${props.name}`,
      runtime: RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? DEFAULT_MEMORY_MB,
      timeout: props.timeout,
      ...(props.reservedConcurrency !== undefined ? { reservedConcurrentExecutions: props.reservedConcurrency } : {}),
      tracing: lambda.Tracing.ACTIVE,
      logGroup: this.logGroup,
      ...(props.systemLogLevel
        ? { loggingFormat: lambda.LoggingFormat.JSON, systemLogLevelV2: lambda.SystemLogLevel[props.systemLogLevel] }
        : {}),
      role: this.role,
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        ...props.environment,
      },
    });

    // Lambda adds xray:PutTraceSegments and xray:PutTelemetryRecords on "*" for active tracing.
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'X-Ray trace submission (xray:PutTraceSegments, xray:PutTelemetryRecords) supports no resource-level permissions.',
    });
  }

  /** Item actions on the table; Query on the named targets only (no index wildcard). */
  grantTable(table: dynamodb.ITable, actions: readonly TableAction[], query: readonly QueryTarget[]): void {
    if (actions.length > 0) {
      this.role.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: actions.map((a) => `dynamodb:${a}`), resources: [table.tableArn] }),
      );
    }
    if (query.length > 0) {
      this.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['dynamodb:Query'],
          resources: query.map((t) => (t === 'table' ? table.tableArn : `${table.tableArn}/index/${t}`)),
        }),
      );
    }
  }

  grantSend(queue: sqs.IQueue): void {
    this.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [queue.queueArn] }));
  }

  grantSecretRead(secret: secretsmanager.ISecret): void {
    this.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secret.secretArn] }));
  }

  /**
   * StartExecution on both machines (an execution runs on the one its version chose);
   * StopExecution on the Standard machine's executions alone, whose names (the pipegate
   * execution ids) are only known at run time: Express executions cannot be stopped.
   */
  grantStates(machines: Readonly<Record<'express' | 'standard', sfn.StateMachine>>, actions: readonly StatesAction[]): void {
    for (const action of actions) {
      const resources =
        action === 'StartExecution'
          ? [machines.express.stateMachineArn, machines.standard.stateMachineArn]
          : [executionArnPattern(machines.standard)];
      this.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: [`states:${action}`], resources }));
    }
  }

  /** Object access: the stateful stack's managed policy for each action (see StatefulStack.objectPolicies). */
  grantObjects(policies: Readonly<Record<ObjectAction, iam.IManagedPolicy>>, actions: readonly ObjectAction[]): void {
    for (const a of actions) this.role.addManagedPolicy(policies[a]);
  }

  /** Acknowledges a cdk-nag finding on this function and its role, with the reason. */
  acknowledge(id: string, reason: string): void {
    Validations.of(this).acknowledge({ id, reason });
  }
}

/** arn:…:execution:<machine name>:* — every execution of one state machine, and nothing else. */
export function executionArnPattern(machine: sfn.StateMachine): string {
  return Stack.of(machine).formatArn({
    service: 'states',
    resource: 'execution',
    resourceName: `${machine.stateMachineName}:*`,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}

/**
 * The function's bundle from lib/stacks/bundler.ts (esbuild in this process, a stack's bundles
 * built together, a cache across synths). The CDK calls it when the stack is bundled at all
 * (context `aws:cdk:bundling-stacks`); the image is never used, as local bundling always answers.
 */
function bundlingOf(name: string): BundlingOptions {
  return { image: DockerImage.fromRegistry('pipegate-bundles-locally'), local: new LocalBundle(name) };
}

class LocalBundle implements ILocalBundling {
  // An own field: the CDK's asset cache keys each asset by its bundling options, this included.
  constructor(readonly bundle: string) {}

  tryBundle(outputDir: string): boolean {
    sharedBundler(REPO_ROOT).writeTo(this.bundle, outputDir);
    return true;
  }
}
