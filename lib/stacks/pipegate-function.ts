/**
 * The one place that holds every Lambda default: bundling, runtime, architecture, tracing, log
 * retention, memory, environment and a role that starts empty and is granted only what
 * lib/stacks/permissions.ts lists.
 */
import * as path from 'node:path';
import { ArnFormat, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { ObjectAction, QueryTarget, StatesAction, TableAction } from './permissions';
import { shellQuote } from '../../functions/core/snippets';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
export const RUNTIME = lambda.Runtime.NODEJS_24_X;
/** esbuild's target, kept in step with RUNTIME. */
export const ESBUILD_TARGET = 'node24';
export const DEFAULT_MEMORY_MB = 256;

export const handlerEntry = (name: string): string => path.join(REPO_ROOT, 'functions', name, 'handler.ts');

export interface PipegateFunctionProps {
  /** Name of the handler folder under functions/ (also the function's label in the console). */
  name: string;
  /** Source file exporting `handler`; defaults to functions/<name>/handler.ts. */
  entry?: string;
  timeout: Duration;
  memorySize?: number;
  /** Its share of the account's concurrency (lib/concurrency.ts); none draws on the shared pool. */
  reservedConcurrency?: number;
  environment?: Record<string, string>;
  /** One of the periods CloudWatch Logs accepts (checked in settings.ts). */
  logRetentionDays: number;
  /** Packages left out of the bundle (see bundleExternals in permissions.ts). */
  externalModules?: string[];
  /**
   * Lambda's own lines (START, END and REPORT are INFO, a time-out or crash WARN or above):
   * with one set, logs are in Lambda's JSON format and lines below the level are not written.
   * The functions' own lines are JSON written to stdout either way, unfiltered.
   */
  systemLogLevel?: 'WARN' | 'INFO' | 'DEBUG';
  /** Files copied beside the bundle, into `toDir` (the docs page's static files). */
  copyFiles?: { fromDir: string; files: readonly string[]; toDir: string };
}

export class PipegateFunction extends Construct {
  readonly fn: nodejs.NodejsFunction;
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

    this.fn = new nodejs.NodejsFunction(this, 'Function', {
      entry: props.entry ?? handlerEntry(props.name),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: path.join(REPO_ROOT, 'package-lock.json'),
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
      bundling: {
        minify: true,
        sourceMap: true,
        // Stack traces need file and line, not the original text: keeps the bundle small.
        sourcesContent: false,
        target: ESBUILD_TARGET,
        format: nodejs.OutputFormat.CJS,
        // ESM builds of the SDK tree-shake far better than its CommonJS ones.
        mainFields: ['module', 'main'],
        // The SDK v3 is bundled, not taken from the runtime: the function runs the exact client
        // versions the tests ran against (package-lock.json), and a minified, tree-shaken
        // bundle loads faster on a cold start than the runtime's full SDK from disk.
        bundleAwsSDK: true,
        // Only what this function can use: SDK clients it never creates stay out.
        externalModules: props.externalModules ?? [],
        ...(props.copyFiles ? { commandHooks: copyHooks(props.copyFiles) } : {}),
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
   * StartExecution on the machine; StopExecution on its executions, whose names (the pipegate
   * execution ids) are only known at run time.
   */
  grantStates(machine: sfn.StateMachine, actions: readonly StatesAction[]): void {
    for (const action of actions) {
      const resources = action === 'StartExecution' ? [machine.stateMachineArn] : [executionArnPattern(machine)];
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

/** esbuild bundles locally; after it, copy the listed files into the asset folder. */
function copyHooks(c: NonNullable<PipegateFunctionProps['copyFiles']>): nodejs.ICommandHooks {
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (_inputDir: string, outputDir: string) => [
      `mkdir -p ${shellQuote(path.join(outputDir, c.toDir))}`,
      ...c.files.map((f) => `cp ${shellQuote(path.join(c.fromDir, f))} ${shellQuote(path.join(outputDir, c.toDir, f))}`),
    ],
  };
}
