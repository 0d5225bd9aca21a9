/**
 * The stateless half: one function per handler, the REST API built from lib/routes.ts, the
 * state machine from lib/state-machine.asl.json, the queue event sources and the alarms.
 * Access for every function comes from lib/stacks/permissions.ts.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { CfnOutput, CustomResource, Duration, RemovalPolicy, Stack, Token, Validations, type StackProps } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventsTargets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import type { Construct } from 'constructs';
import { beyondEveryLimitDetail } from '../../functions/core/body-size';
import { OWNER_SECRET_PURPOSE } from '../../functions/core/envelope';
import { ERRORS } from '../../functions/core/errors';
import { readConfig } from '../config';
import { GATEWAY_RESPONSES } from '../gateway-responses';
import { QUEUES } from '../queues';
import { MAIN_TABLE } from '../tables';
import { ROUTES, STREAMED_ROUTE_TIMEOUT_SECONDS, WORKERS, type FunctionName, type Route } from '../routes';
import { originOf } from '../storage-cors';
import { accessFor, allFunctionNames, OWNER_SECRETS_KMS_ACTIONS } from './permissions';
import { PipegateFunction, REPO_ROOT } from './pipegate-function';
import { type Settings } from './settings';
import { concurrencyPlan, minimumReservation, waitersBound, waits } from '../concurrency';
import { buildConcurrencyCheck, CUSTOM_RESOURCE_SERVICE_TIMEOUT } from './concurrency-check';
import {
  API_GATEWAY_INTEGRATION_TIMEOUT_SECONDS,
  AWS_MAX_WAIT_SECONDS,
  MARK_TASK_TIMEOUT_SECONDS,
  taskRunLambdaTimeoutSeconds,
} from '../workflow-budget';
import type { StatefulStack } from './stateful-stack';
import type { WorkflowType } from '../../functions/core/types';

export const ASL_PATH = path.join(REPO_ROOT, 'lib', 'state-machine.asl.json');

/** Placeholders in the ASL document and the task function each one stands for. */
export const ASL_SUBSTITUTIONS = {
  TaskStartArn: WORKERS.taskStart,
  TaskRunArn: WORKERS.taskRun,
  TaskFailArn: WORKERS.taskFail,
} as const;

/** Route handlers answer well inside API Gateway's 29 s integration limit. */
const ROUTE_TIMEOUT = Duration.seconds(15);
const WAITING_ROUTE_TIMEOUT = Duration.seconds(API_GATEWAY_INTEGRATION_TIMEOUT_SECONDS - 1);
const TASK_TIMEOUT = Duration.seconds(MARK_TASK_TIMEOUT_SECONDS);
/** A pass is bounded (PIPEGATE_SWEEP_LIMIT entries) and must end before the next one starts. */
const SWEEPER_TIMEOUT = Duration.seconds(50);

export interface ServiceStackProps extends StackProps {
  settings: Settings;
  stateful: StatefulStack;
}

export class ServiceStack extends Stack {
  readonly functions: Readonly<Record<string, PipegateFunction>>;
  /**
   * The state machines, both from the one ASL document: Express for executions that end within
   * its five minutes, Standard for those that may wait or run longer (decided per pipeline
   * version at push: functions/core/workflow-type.ts).
   */
  readonly stateMachines: Readonly<Record<WorkflowType, sfn.StateMachine>>;
  readonly api: apigw.RestApi;
  readonly apiUrl: string;

  constructor(scope: Construct, id: string, props: ServiceStackProps) {
    super(scope, id, props);
    const { settings, stateful } = props;

    const baseEnvironment: Record<string, string> = {
      PIPEGATE_TABLE: stateful.table.tableName,
      PIPEGATE_EXECUTIONS_QUEUE_URL: stateful.queues.executions.queue.queueUrl,
      PIPEGATE_CALLBACKS_QUEUE_URL: stateful.queues.callbacks.queue.queueUrl,
      PIPEGATE_SECRET_ARN: stateful.secret.secretArn,
      PIPEGATE_BUCKET: stateful.bucket.bucketName,
      PIPEGATE_EXECUTION_TIMEOUT_MS: String(settings.executionTimeoutMs),
      PIPEGATE_ALLOW_PRIVATE_URLS: 'false',
      // Open executions go on the sweep index (two index write units per execution), so the
      // sweeper finds what a lost or dead-lettered message or a cut-short state machine leaves.
      PIPEGATE_TRACK_OPEN: 'true',
      PIPEGATE_MAX_WAIT_SECONDS: String(AWS_MAX_WAIT_SECONDS),
      // Behind a custom domain the request's host and stage are not what callers use.
      ...(settings.publicUrl ? { PIPEGATE_PUBLIC_URL: settings.publicUrl } : {}),
    };

    const plan = settings.reservedConcurrency > 0 ? concurrencyPlan(allFunctionNames(), settings.reservedConcurrency) : undefined;
    // Checked against the account before any function reserves (lib/concurrency.ts).
    const checked = buildConcurrencyCheck(this, { settings, plan, least: minimumReservation(allFunctionNames()) });
    const functions: Record<string, PipegateFunction> = {};
    for (const name of allFunctionNames()) {
      const access = accessFor(name);
      const fn = new PipegateFunction(this, pascal(name), {
        name,
        timeout: this.timeoutFor(name, settings),
        ...(plan ? { reservedConcurrency: plan.reserved[name] } : {}),
        environment: baseEnvironment,
        logRetentionDays: settings.logRetentionDays,
        systemLogLevel: settings.lambdaSystemLogLevel,
      });
      functions[name] = fn;
      if (plan) fn.node.addDependency(checked);
      fn.grantTable(stateful.table, access.table, access.query);
      const reserved = plan?.reserved[name];
      // Updates limited to items of their own partition keys: the wait bound's counters, claimed uploads.
      const updateKeys = [...access.updateKeys];
      if (reserved !== undefined && waits(name)) {
        fn.fn.addEnvironment('PIPEGATE_MAX_WAITERS', String(waitersBound(reserved)));
        updateKeys.push('WAITERS#*');
      }
      if (updateKeys.length > 0) {
        const attributes = access.updateAttributes
          ? {
              'ForAllValues:StringEquals': {
                'dynamodb:Attributes': [MAIN_TABLE.partitionKey, MAIN_TABLE.sortKey, ...access.updateAttributes],
              },
              StringEqualsIfExists: { 'dynamodb:ReturnValues': 'NONE' },
            }
          : {};
        fn.role.addToPrincipalPolicy(
          new iam.PolicyStatement({
            actions: ['dynamodb:UpdateItem'],
            resources: [stateful.table.tableArn],
            conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': updateKeys }, ...attributes },
          }),
        );
      }
      for (const q of access.send) fn.grantSend(stateful.queues[q].queue);
      if (access.secret === 'pepper') {
        fn.grantSecretRead(stateful.pepperSecret);
        fn.fn.addEnvironment('PIPEGATE_SECRET_ARN', stateful.pepperSecret.secretArn);
      } else if (access.secret) fn.grantSecretRead(stateful.secret);
      fn.grantObjects(stateful.objectPolicies, access.objects);
      if (access.ownerSecrets.length > 0) {
        fn.role.addToPrincipalPolicy(
          new iam.PolicyStatement({
            actions: access.ownerSecrets.map((a) => OWNER_SECRETS_KMS_ACTIONS[a]),
            resources: [stateful.ownerSecretsKey.keyArn],
            // Only under an owner secret's encryption context, and one that names the secret.
            conditions: {
              StringEquals: { 'kms:EncryptionContext:purpose': OWNER_SECRET_PURPOSE },
              Null: { 'kms:EncryptionContext:secret_name': 'false' },
            },
          }),
        );
        fn.fn.addEnvironment('PIPEGATE_OWNER_SECRETS_KEY', stateful.ownerSecretsKey.keyArn);
      }
      if (access.consumes) {
        const pair = stateful.queues[access.consumes];
        fn.fn.addEventSource(
          new SqsEventSource(pair.queue, {
            batchSize: pair.definition.batchSize,
            reportBatchItemFailures: true,
            // At most the consumer's reservation: more pollers than that would only be throttled.
            ...(plan ? { maxConcurrency: plan.queueMaxConcurrency[access.consumes] } : {}),
          }),
        );
      }
    }
    this.functions = functions;

    this.stateMachines = {
      express: this.buildStateMachine(settings, 'express'),
      standard: this.buildStateMachine(settings, 'standard'),
    };
    for (const name of allFunctionNames()) {
      const access = accessFor(name);
      if (access.states.length === 0) continue;
      const fn = this.fn(name);
      // StartExecution on both machines; StopExecution on Standard executions only: Express has none.
      fn.grantStates(this.stateMachines, access.states);
      // Only functions that drive the machines learn their ARNs; the task functions they invoke
      // must not, or the machines and their tasks would depend on each other.
      fn.fn.addEnvironment('PIPEGATE_EXPRESS_STATE_MACHINE_ARN', this.stateMachines.express.stateMachineArn);
      fn.fn.addEnvironment('PIPEGATE_STANDARD_STATE_MACHINE_ARN', this.stateMachines.standard.stateMachineArn);
      if (access.states.includes('StopExecution')) {
        fn.acknowledge(
          `AwsSolutions-IAM5[Resource::${this.executionPatternFinding(this.stateMachines.standard)}]`,
          'A cancel stops the Standard executions named after the pipegate execution id, known only at run time; the pattern covers that state machine only.',
        );
      }
    }

    this.api = this.buildApi(settings);
    this.apiUrl = `https://${this.api.restApiId}.execute-api.${this.region}.${this.urlSuffix}/${settings.stageName}`;
    // The loop guard: the function running http nodes, and the push that checks their URLs, know
    // the API's own address (the API depends on neither, so this adds no cycle).
    for (const name of LOOP_GUARDED_FUNCTIONS) this.fn(name).fn.addEnvironment('PIPEGATE_API_URL', this.apiUrl);
    // The form page uploads straight to storage when it is served at an origin the bucket's
    // upload rule names (the API's own, the public URL's): it compares its own with these.
    this.fn(FORM_PAGE_FUNCTION).fn.addEnvironment('PIPEGATE_API_URL', this.apiUrl);
    // The MCP server refuses browser pages of other origins (DNS rebinding): it knows its own from these.
    this.fn(MCP_FUNCTION).fn.addEnvironment('PIPEGATE_API_URL', this.apiUrl);
    this.buildUploadCors(stateful, settings);

    this.buildSweeperSchedule();
    this.buildAlarms(stateful);

    new CfnOutput(this, 'ApiUrl', { value: this.apiUrl, description: 'Base URL of the pipegate API (stage included)' });
    new CfnOutput(this, 'Region', { value: this.region, description: 'Region to sign owner requests for' });
    new CfnOutput(this, 'TableName', { value: stateful.table.tableName });
    new CfnOutput(this, 'ExpressStateMachineArn', {
      value: this.stateMachines.express.stateMachineArn,
      description: 'Executions whose pipeline ends within five minutes',
    });
    new CfnOutput(this, 'StandardStateMachineArn', {
      value: this.stateMachines.standard.stateMachineArn,
      description: 'Executions whose pipeline may wait (polls, delays, events) or run longer',
    });
    new CfnOutput(this, 'AlarmTopicArn', { value: stateful.alarmTopic.topicArn, description: 'Subscribe here for alarms' });
  }

  fn(name: string): PipegateFunction {
    const f = this.functions[name];
    if (!f) throw new Error(`No function ${name}`);
    return f;
  }

  /** How cdk-nag spells executionArnPattern(): literals where the environment is known, <Ref> where not. */
  private executionPatternFinding(machine: sfn.StateMachine): string {
    const part = (value: string, pseudo: string) => (Token.isUnresolved(value) ? `<AWS::${pseudo}>` : value);
    const machineId = this.getLogicalId(machine.node.defaultChild as sfn.CfnStateMachine);
    return `arn:${part(this.partition, 'Partition')}:states:${part(this.region, 'Region')}:${part(this.account, 'AccountId')}:execution:<${machineId}.Name>:*`;
  }

  private timeoutFor(name: FunctionName, settings: Settings): Duration {
    const access = accessFor(name);
    if (access.consumes) return Duration.seconds(QUEUES[access.consumes].consumerTimeoutSeconds);
    if (name === WORKERS.taskRun) return Duration.seconds(taskRunLambdaTimeoutSeconds(settings.executionTimeoutMs));
    if (name === WORKERS.taskStart || name === WORKERS.taskFail) return TASK_TIMEOUT;
    if (name === WORKERS.sweeper) return SWEEPER_TIMEOUT;
    // A streamed answer lasts as long as the client takes to read it (2 MB/s past 10 MB); on a
    // route that also waits, the wait is capped (AWS_MAX_WAIT_SECONDS) and the rest is the body's.
    if (ROUTES.some((r) => r.handler === name && r.streams)) return Duration.seconds(STREAMED_ROUTE_TIMEOUT_SECONDS);
    if (ROUTES.some((r) => r.handler === name && r.waits)) return WAITING_ROUTE_TIMEOUT;
    return ROUTE_TIMEOUT;
  }

  /**
   * One of the two state machines: the same document and tasks, each with its own log group,
   * role and type. Standard's executions may wait for days (a Wait state between steps, nothing
   * running), so it has no execution time-out of its own: each step keeps the execution's
   * deadline, and the sweeper fails and stops one found past it.
   */
  private buildStateMachine(settings: Settings, type: WorkflowType): sfn.StateMachine {
    const id = type === 'express' ? 'Express' : 'Standard';
    const logGroup = new logs.LogGroup(this, `${id}StateMachineLogs`, {
      // The vendedlogs prefix keeps CloudWatch Logs' shared resource policy from growing per group.
      logGroupName: `/aws/vendedlogs/states/${this.stackName}-${type}`,
      retention: settings.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const substitutions: Record<string, string> = {};
    for (const [placeholder, name] of Object.entries(ASL_SUBSTITUTIONS)) substitutions[placeholder] = this.fn(name).fn.functionArn;

    const machine = new sfn.StateMachine(this, `${id}StateMachine`, {
      definitionBody: sfn.DefinitionBody.fromString(readFileSync(ASL_PATH, 'utf8')),
      definitionSubstitutions: substitutions,
      stateMachineType: type === 'express' ? sfn.StateMachineType.EXPRESS : sfn.StateMachineType.STANDARD,
      // ERROR by default: a failed execution's events with its data, not every event of every
      // success (the cost model's largest optional line).
      logs: {
        destination: logGroup,
        level: settings.stateMachineLogLevel === 'ALL' ? sfn.LogLevel.ALL : sfn.LogLevel.ERROR,
        includeExecutionData: true,
      },
      tracingEnabled: true,
    });
    if (settings.stateMachineLogLevel !== 'ALL') {
      Validations.of(machine).acknowledge({
        id: 'AwsSolutions-SF1',
        reason: 'Logs failed executions with their data (level ERROR) by default, for cost; -c stateMachineLogLevel=ALL logs every event.',
      });
    }
    // The ASL calls the unqualified function ARNs, so no version or alias wildcard is needed.
    machine.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: Object.values(ASL_SUBSTITUTIONS).map((name) => this.fn(name).fn.functionArn),
      }),
    );
    Validations.of(machine).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Step Functions log delivery (logs:CreateLogDelivery and related) and X-Ray trace submission support no resource-level permissions.',
    });
    return machine;
  }

  private buildApi(settings: Settings): apigw.RestApi {
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', {
      retention: settings.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const api = new apigw.RestApi(this, 'Api', {
      restApiName: settings.stackName,
      description: 'pipegate: pipelines as authenticated asynchronous HTTP APIs',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      policy: this.apiPolicy(settings),
      // Access logs need the account-level API Gateway logging role; retained because every
      // REST API in the account and region shares it.
      cloudWatchRole: true,
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
      deployOptions: {
        stageName: settings.stageName,
        tracingEnabled: true,
        loggingLevel: apigw.MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: false,
        throttlingRateLimit: settings.throttleRateLimit,
        throttlingBurstLimit: settings.throttleBurstLimit,
        accessLogDestination: new apigw.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigw.AccessLogFormat.custom(ACCESS_LOG_FORMAT),
      },
    });
    // Execution logging (loggingLevel ERROR) writes to a group API Gateway creates on first use
    // and keeps forever; created here first, before the stage, it gets the retention.
    const executionLogs = new logs.LogGroup(this, 'ApiExecutionLogs', {
      logGroupName: `API-Gateway-Execution-Logs_${api.restApiId}/${settings.stageName}`,
      retention: settings.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    api.deploymentStage.node.addDependency(executionLogs);
    // The stack's own ApiUrl output (no trailing slash, stage included) replaces this one.
    api.node.tryRemoveChild('Endpoint');
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      reason:
        'The account-level role API Gateway itself uses to write access and execution logs; AWS maintains this policy for exactly that.',
    });
    if (settings.payloadGuard) {
      this.buildWebAcl(api, settings);
    } else {
      Validations.of(api).acknowledge({
        id: 'AwsSolutions-APIG3',
        reason:
          'payloadGuard=false: no WAF web ACL (it adds $5 a month, $1 per rule and $0.60 per million requests); stage throttling and the API-key authorizer bound abuse.',
      });
    }
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-COG4',
      reason:
        'Callers authenticate with per-deployment API keys checked by the Lambda authorizer; owners sign with IAM (SigV4). No Cognito users exist.',
    });

    for (const r of GATEWAY_RESPONSES) {
      api.addGatewayResponse(`Response${r.type}`, {
        type: apigw.ResponseType.of(r.type),
        statusCode: r.statusCode,
        responseHeaders: r.headers,
        templates: { 'application/json': r.body },
      });
    }

    // Bodies are validated by the handlers (the contract's error messages); this checks parameters and
    // satisfies the one-validator-per-API rule without changing any response.
    const validator = api.addRequestValidator('Validator', { validateRequestBody: true, validateRequestParameters: true });

    const authorizer = new apigw.RequestAuthorizer(this, 'ApiKeyAuthorizer', {
      handler: this.fn(WORKERS.authorizer).fn,
      // Callers send either X-API-Key or Authorization: Api-Key. API Gateway answers 401 on its
      // own when any configured identity source is missing, so none is configured, and with
      // none there is nothing to key a cache on: every request reaches the authorizer.
      identitySources: [],
      resultsCacheTtl: Duration.seconds(0),
    });
    (authorizer.node.defaultChild as apigw.CfnAuthorizer).addPropertyDeletionOverride('IdentitySource');

    for (const route of ROUTES) this.addRoute(api, route, validator, authorizer);
    this.addNotFound(api);
    return api;
  }

  /**
   * The API's resource policy. IAM alone lets any principal of the account whose own policies
   * allow execute-api:Invoke call the owner routes; this limits them to `ownerPrincipals`:
   * - a Deny of the owner methods (lib/routes.ts, auth 'owner') to every signed request whose
   *   principal is none of them. aws:PrincipalArn exists only on IAM-signed requests, so the
   *   Null condition keeps the Deny off unsigned callers, whatever a method pattern matches;
   * - an Allow of every method to unsigned requests: with a resource policy present, API Gateway
   *   refuses an unauthenticated method (docs, asset links, the 404 mock) anything it does not
   *   allow, while a signed request still needs its identity policy (same account) as before;
   * - an Allow of the owner methods to principals of other accounts, if any are named (a
   *   cross-account call needs both sides to allow it).
   */
  private apiPolicy(settings: Settings): iam.PolicyDocument {
    const accounts = settings.ownerPrincipals.length === 0 ? [this.account] : settings.ownerPrincipals.filter((p) => /^\d{12}$/.test(p));
    const arns = settings.ownerPrincipals.filter((p) => p.startsWith('arn:'));
    const ownerMethods = ownerMethodPatterns(settings.stageName);
    const notConfigured: Record<string, Record<string, string | string[]>> = { Null: { 'aws:PrincipalArn': 'false' } };
    if (accounts.length > 0) notConfigured.StringNotEquals = { 'aws:PrincipalAccount': accounts };
    if (arns.length > 0) notConfigured.ArnNotLike = { 'aws:PrincipalArn': arns };
    const statements = [
      new iam.PolicyStatement({
        sid: 'UnsignedCallers',
        principals: [new iam.AnyPrincipal()],
        actions: ['execute-api:Invoke'],
        resources: ['execute-api:/*'],
        conditions: { Null: { 'aws:PrincipalArn': 'true' } },
      }),
      new iam.PolicyStatement({
        sid: 'OwnerRoutesOnlyToOwnerPrincipals',
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: ['execute-api:Invoke'],
        resources: ownerMethods,
        conditions: notConfigured,
      }),
    ];
    // Where the account is not known at synth, every named principal is allowed here.
    const accountOf = (p: string) => (p.startsWith('arn:') ? p.split(':')[4] : p);
    const foreign = Token.isUnresolved(this.account)
      ? settings.ownerPrincipals
      : settings.ownerPrincipals.filter((p) => accountOf(p) !== this.account);
    if (foreign.length > 0) {
      statements.push(
        new iam.PolicyStatement({
          sid: 'OwnerPrincipalsOfOtherAccounts',
          principals: foreign.map((p) => (p.startsWith('arn:') ? new iam.ArnPrincipal(p) : new iam.AccountPrincipal(p))),
          actions: ['execute-api:Invoke'],
          resources: ownerMethods,
        }),
      );
    }
    return new iam.PolicyDocument({ statements });
  }

  /**
   * The web ACL on the stage, its rules in the order WAF evaluates them:
   * - Lambda takes at most 6 MB per synchronous invocation while API Gateway accepts 10 MB, so
   *   a body in between would fail the invocation and answer 500. WAF sees the request before
   *   API Gateway does: a Content-Length of 5,000,000 bytes or more (above the functions' own
   *   limits: 256 KiB, and 4 MiB for an execution request with inline assets) is answered 413.
   *   Bodies sent without a Content-Length (chunked) are not covered: see docs/aws.md.
   * - Key checksums are public, so junk keys fail only at the authorizer, after they have spent
   *   the stage's shared throttle: one address past `rateLimitPerAddress` requests a minute is
   *   answered 429 before API Gateway counts it. Form links are public pages; their paths are
   *   counted apart, against the stricter `formRateLimitPerAddress`.
   * - Two AWS managed rule groups with no subscription fee and few capacity units (see
   *   MANAGED_RULE_GROUPS).
   */
  private buildWebAcl(api: apigw.RestApi, settings: Settings): void {
    const visibility = (name: string) => ({
      cloudWatchMetricsEnabled: true,
      metricName: `${settings.stackName}-${name}`,
      sampledRequestsEnabled: false,
    });
    const rateRule = (
      name: string,
      metric: string,
      priority: number,
      limit: number,
      bodyKey: string,
      scopeDown?: wafv2.CfnWebACL.StatementProperty,
    ): wafv2.CfnWebACL.RuleProperty => ({
      name,
      priority,
      action: {
        block: {
          customResponse: {
            responseCode: 429,
            customResponseBodyKey: bodyKey,
            responseHeaders: [{ name: 'Retry-After', value: String(WAF_RATE_WINDOW_SECONDS) }],
          },
        },
      },
      statement: {
        rateBasedStatement: {
          limit,
          aggregateKeyType: 'IP',
          evaluationWindowSec: WAF_RATE_WINDOW_SECONDS,
          ...(scopeDown ? { scopeDownStatement: scopeDown } : {}),
        },
      },
      visibilityConfig: visibility(metric),
    });
    const acl = new wafv2.CfnWebACL(this, 'ApiWebAcl', {
      scope: 'REGIONAL',
      defaultAction: { allow: {} },
      visibilityConfig: visibility('api'),
      customResponseBodies: {
        PayloadTooLarge: { contentType: 'APPLICATION_JSON', content: JSON.stringify(payloadTooLargeBody()) },
        AddressRateLimited: {
          contentType: 'APPLICATION_JSON',
          content: JSON.stringify(rateLimitedBody('rateLimitPerAddress', settings.rateLimitPerAddress)),
        },
        FormRateLimited: {
          contentType: 'APPLICATION_JSON',
          content: JSON.stringify(rateLimitedBody('formRateLimitPerAddress', settings.formRateLimitPerAddress)),
        },
      },
      rules: [
        {
          name: 'BodyAboveLambdaLimit',
          priority: 0,
          action: { block: { customResponse: { responseCode: 413, customResponseBodyKey: 'PayloadTooLarge' } } },
          statement: {
            regexMatchStatement: {
              fieldToMatch: { singleHeader: { Name: 'content-length' } },
              regexString: PAYLOAD_GUARD_CONTENT_LENGTH,
              textTransformations: [{ priority: 0, type: 'NONE' }],
            },
          },
          visibilityConfig: visibility('body-above-lambda-limit'),
        },
        rateRule('RatePerAddress', 'rate-per-address', 1, settings.rateLimitPerAddress, 'AddressRateLimited'),
        rateRule('FormRatePerAddress', 'form-rate-per-address', 2, settings.formRateLimitPerAddress, 'FormRateLimited', {
          // CONTAINS: WAF sees the path with the stage in front on API Gateway's own host
          // (/api/v1/forms/…) and without it behind a custom domain.
          byteMatchStatement: {
            fieldToMatch: { uriPath: {} },
            positionalConstraint: 'CONTAINS',
            searchString: FORM_PATH_PREFIX,
            textTransformations: [{ priority: 0, type: 'NONE' }],
          },
        }),
        ...MANAGED_RULE_GROUPS.map((name, i) => ({
          name,
          priority: 3 + i,
          overrideAction: { none: {} },
          statement: { managedRuleGroupStatement: { vendorName: 'AWS', name } },
          visibilityConfig: visibility(name),
        })),
      ],
    });
    new wafv2.CfnWebACLAssociation(this, 'ApiWebAclAssociation', { resourceArn: api.deploymentStage.stageArn, webAclArn: acl.attrArn });
  }

  private addRoute(api: apigw.RestApi, route: Route, validator: apigw.IRequestValidator, authorizer: apigw.IAuthorizer): void {
    // API Gateway REST matches /x/ against the resource /x, and a resource path part cannot be
    // empty, so the optional trailing slash needs no second resource.
    const resource = api.root.resourceForPath(route.path);
    const pathParams = [...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] ?? '');
    const authorizationType = {
      apiKey: apigw.AuthorizationType.CUSTOM,
      owner: apigw.AuthorizationType.IAM,
      none: apigw.AuthorizationType.NONE,
    }[route.auth];
    // STREAM makes the integration URI Lambda's InvokeWithResponseStream path
    // (2021-11-15/…/response-streaming-invocations); its time-out may then reach 15 minutes.
    const streaming = route.streams
      ? { responseTransferMode: apigw.ResponseTransferMode.STREAM, timeout: Duration.seconds(STREAMED_ROUTE_TIMEOUT_SECONDS) }
      : {};
    const method = resource.addMethod(
      route.method,
      new apigw.LambdaIntegration(this.fn(route.handler).fn, { allowTestInvoke: false, ...streaming }),
      {
        authorizationType,
        authorizer: route.auth === 'apiKey' ? authorizer : undefined,
        requestValidator: validator,
        requestParameters: Object.fromEntries(pathParams.map((p) => [`method.request.path.${p}`, true])),
      },
    );
    if (route.auth === 'none') {
      const reason =
        route.handler === 'asset-get'
          ? 'Asset links: the URL is the capability (an HMAC-signed, expiring token bound to one object, checked by the function with a key derived from the service key material), so a browser or a callback receiver opens it without a key header.'
          : "The deployment docs page and its static files: a browser loads them without a key header. They serve nothing of a deployment; the page sends the caller's key with its own calls to the authorized routes.";
      for (const id of ['AwsSolutions-APIG4', 'AwsSolutions-COG4']) Validations.of(method).acknowledge({ id, reason });
    }
  }

  /**
   * Any path no route matches: a mock answers 404 without calling anything. Without it API
   * Gateway would answer such requests with the same response it gives unsigned IAM calls.
   */
  private addNotFound(api: apigw.RestApi): void {
    const method = api.root.addResource('{proxy+}').addMethod(
      'ANY',
      new apigw.MockIntegration({
        requestTemplates: { 'application/json': '{"statusCode": 404}' },
        integrationResponses: [{ statusCode: '404', responseTemplates: { 'application/json': '{"error":"Not Found"}' } }],
      }),
      { methodResponses: [{ statusCode: '404' }], authorizationType: apigw.AuthorizationType.NONE },
    );
    Validations.of(method).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason: 'A mock that only answers 404 for paths with no route; it reaches no backend and returns no data.',
    });
  }

  /**
   * The web form's upload rule in the objects bucket's CORS configuration (lib/storage-cors.ts):
   * PUT from the API's execute-api origin, and from the public URL's when there is one. A custom
   * resource here, since only this stack knows the API's id; its function may read and write that
   * one bucket's CORS configuration and nothing else (s3:PutBucketCORS also covers
   * DeleteBucketCors). It runs on deploys that change the origins or the bucket, and on delete.
   */
  private buildUploadCors(stateful: StatefulStack, settings: Settings): void {
    const fn = new PipegateFunction(this, 'UploadCors', {
      name: 'upload-cors',
      timeout: Duration.seconds(30),
      logRetentionDays: settings.logRetentionDays,
      systemLogLevel: settings.lambdaSystemLogLevel,
    });
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['s3:GetBucketCORS', 's3:PutBucketCORS'], resources: [stateful.bucket.bucketArn] }),
    );
    const apiOrigin = `https://${this.api.restApiId}.execute-api.${this.region}.${this.urlSuffix}`;
    new CustomResource(this, 'UploadCorsResource', {
      serviceToken: fn.fn.functionArn,
      resourceType: 'Custom::PipegateUploadCors',
      serviceTimeout: CUSTOM_RESOURCE_SERVICE_TIMEOUT,
      properties: {
        Bucket: stateful.bucket.bucketName,
        Origins: [apiOrigin, ...(settings.publicUrl ? [originOf(settings.publicUrl)] : [])],
      },
    });
  }

  /**
   * The sweeper, every minute: an ordinary scheduled Lambda, so a local host of this template runs
   * it too. EventBridge invokes it asynchronously, so Lambda's own retries of a failed async
   * invocation (2 by default, a minute and two apart) would overlap the next passes: none, and a
   * pass still queued after a minute is dropped, since the next one is due.
   */
  private buildSweeperSchedule(): void {
    this.fn(WORKERS.sweeper).fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.seconds(60) });
    new events.Rule(this, 'SweeperSchedule', {
      description: 'pipegate: one sweeper pass (stuck executions, lost callbacks)',
      schedule: events.Schedule.rate(Duration.minutes(1)),
      targets: [new eventsTargets.LambdaFunction(this.fn(WORKERS.sweeper).fn, { retryAttempts: 0 })],
    });
  }

  private buildAlarms(stateful: StatefulStack): void {
    const action = new cwActions.SnsAction(stateful.alarmTopic);
    const period = Duration.minutes(5);
    const alarms: [string, string, cloudwatch.IMetric][] = [
      [
        'SweeperErrorsAlarm',
        'pipegate: the sweeper failed (a pass, or repairs in it)',
        this.fn(WORKERS.sweeper).fn.metricErrors({ period }),
      ],
      ['ExecutionsFailedAlarm', 'pipegate: Express state machine executions failed', this.stateMachines.express.metricFailed({ period })],
      // An Express execution ends at five minutes wherever it is; Standard has no execution time-out to reach.
      [
        'ExecutionsTimedOutAlarm',
        'pipegate: Express state machine executions timed out',
        this.stateMachines.express.metricTimedOut({ period }),
      ],
      [
        'StandardExecutionsFailedAlarm',
        'pipegate: Standard state machine executions failed',
        this.stateMachines.standard.metricFailed({ period }),
      ],
      ['Api5xxAlarm', 'pipegate: API answered 5xx', this.api.metricServerError({ period })],
    ];
    for (const [id, description, metric] of alarms) {
      new cloudwatch.Alarm(this, id, {
        alarmDescription: description,
        metric,
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }).addAlarmAction(action);
    }
  }
}

/**
 * Content-Length values WAF answers 413: 5,000,000 bytes and up (seven digits from 5, or eight
 * and more). That is above every route's own limit (the execute route's inline-asset limit,
 * 4 MiB, is the largest) and below Lambda's 6 MB event.
 */
export const PAYLOAD_GUARD_CONTENT_LENGTH = '^([5-9][0-9]{6}|[0-9]{8,})$';

/**
 * The owner routes as resource-policy method patterns (`execute-api:/<stage>/<METHOD>/<path>`,
 * which API Gateway expands to this API's ARNs), each path parameter a wildcard.
 */
export const ownerMethodPatterns = (stage: string): string[] =>
  ROUTES.filter((r) => r.auth === 'owner').map((r) => `execute-api:/${stage}/${r.method}${r.path.replace(/\{[^}]+\}/g, '*')}`);

/** The function serving the web form's page. */
const FORM_PAGE_FUNCTION = 'form-page';
const MCP_FUNCTION = 'deployment-mcp';

/** Functions told the API's own URL for the loop guard: the one running http nodes, and the push checking them. */
export const LOOP_GUARDED_FUNCTIONS = [WORKERS.taskRun, 'pipeline-push'] as const;

/** The rate-based rules' evaluation window: their limits are per minute. */
export const WAF_RATE_WINDOW_SECONDS = 60;

/** The path prefix of the public form links, counted by the stricter rate rule. */
export const FORM_PATH_PREFIX = '/v1/forms/';

/**
 * AWS managed rule groups on the web ACL: no subscription fee (each costs $1 a month as a rule)
 * and 225 capacity units together, well inside the 1,500 the per-request price includes.
 * AmazonIpReputationList (25 WCU) blocks addresses Amazon's threat intelligence lists as bots and
 * scanners; KnownBadInputsRuleSet (200 WCU) blocks request patterns of known exploits (Log4j,
 * Java deserialization, localhost Host headers). Left out: CommonRuleSet (700 WCU) blocks bodies
 * over 8 KB, below the execute route's 256 KiB; AnonymousIpList blocks hosting providers, where
 * many callers' servers run.
 */
export const MANAGED_RULE_GROUPS = ['AWSManagedRulesAmazonIpReputationList', 'AWSManagedRulesKnownBadInputsRuleSet'] as const;

/** What WAF answers an address past one of the rate-based rules' limits (the setting named). */
export const rateLimitedBody = (setting: string, limit: number) => ({
  error: ERRORS.TooManyRequests.message,
  detail: `more than ${limit} requests a minute from one address (${setting}); wait and retry`,
});

/**
 * What WAF answers to a body above every route's limit: both limits, since it cannot tell
 * which route's was meant (PIPEGATE_MAX_BODY_BYTES is not set on AWS).
 */
export const payloadTooLargeBody = () => ({
  error: ERRORS.PayloadTooLarge.message,
  detail: beyondEveryLimitDetail(readConfig({}).maxBodyBytes),
});

/** One JSON object per request; never headers, so API keys stay out of the logs. */
const ACCESS_LOG_FORMAT = JSON.stringify({
  requestId: '$context.requestId',
  ip: '$context.identity.sourceIp',
  caller: '$context.identity.caller',
  userArn: '$context.identity.userArn',
  requestTime: '$context.requestTime',
  httpMethod: '$context.httpMethod',
  resourcePath: '$context.resourcePath',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  responseLatency: '$context.responseLatency',
  integrationLatency: '$context.integration.latency',
  authorizerError: '$context.authorizer.error',
  errorMessage: '$context.error.messageString',
  xrayTraceId: '$context.xrayTraceId',
  // messageString arrives already quoted and escaped; unquote the placeholder so it stays valid JSON.
}).replace('"$context.error.messageString"', '$context.error.messageString');

const pascal = (name: string): string =>
  name
    .split('-')
    .map((p) => (p[0]?.toUpperCase() ?? '') + p.slice(1))
    .join('');
