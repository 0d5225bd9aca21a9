/**
 * The whole service from the synthesized cloud assembly, on one machine: what `cdk deploy`
 * would upload, deployed onto local stand-ins in the templates' own terms. Every Lambda runs
 * its bundled asset in worker threads (./function-host) with the environment, handler,
 * timeout and memory of its template resource; the functions' AWS SDK reaches the local AWS
 * endpoint (./aws-endpoint), which checks every call against the function's role; the API,
 * the state machine, the queues and their event source mappings, schedules, secrets and
 * custom resources are all read from the templates. `npm run start:synth` runs it.
 */
import '../local/polyfills';
import { randomInt, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { APIGatewayAuthorizerResult, APIGatewayProxyEvent, APIGatewayProxyResult, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoDBClient, type CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createGateway } from '../local/gateway';
import { LocalQueue, LocalQueuePort } from '../local/queue';
import { readConfig } from '../config';
import { API_GATEWAY_MAX_BODY_BYTES } from '../gateway-responses';
import type { BucketCorsRule } from '../storage-cors';
import { isPlainObject } from '../../functions/core/values';
import { createDeps, type Deps } from '../../functions/adapters/deps';
import { isConditionFailure, localEndpointConfig } from '../../functions/adapters/dynamo';
import { createGuardedHttp } from '../../functions/adapters/guarded-http';
import { parseKeyMaterial, StaticKeyMaterial } from '../../functions/adapters/key-material';
import { sweepKey } from '../../functions/adapters/executions.store';
import { createObjectStore } from '../../functions/adapters/objects.store';
import { createLogger, silentLogger } from '../../functions/adapters/logger';
import { forEachState, LocalWorkflow, type WorkflowTask } from '../local/workflow';
import { cachedAssembly, loadAssembly, type Assembly } from './assembly';
import { LocalKms } from '../local/kms';
import { LocalSecretStore, startAwsEndpoint, type AwsEndpoint, type EndpointQueue, type StateMachinePort } from './aws-endpoint';
import { FunctionError, FunctionHost, type FunctionSpec } from './function-host';
import { apiFromTemplate, type TemplateApi } from './gateway-from-template';
import { assertKnownPolicies, credentialsFor, IamEvaluator, type IamDecision, type IamRequest } from './iam';
import { bootstrap, describeRecovered, onRecordedPort, type Boot, type BootOptions, type Booted, type Wired } from '../local/bootstrap';
import { apiPolicyCheck } from './api-policy';
import { firewallFromTemplate } from './waf';
import { resolveAssembly, type ResolvedAssembly, type ResolvedStack } from './physical';
import { AWS_QUOTAS, scaled, scaleFactorOf, scaleModelFromTemplates, templateReservations, type ScaleModel } from './scale-model';
import { readSavedJson, writeSavedJson } from '../local/saved-json';
import { compileRoutes, matchResource, normaliseBasePath, stripBasePath } from '../local/gateway/routing';
import { gatewayReplies, send } from '../local/gateway/replies';

/** Host, port, data dir, owner token, env and inMemory as lib/local/bootstrap.ts takes them. */
export interface SynthRuntimeOptions extends BootOptions {
  /** An assembly already loaded (tests pass an edited copy); default: the cached synth of the sources. */
  assembly?: Assembly;
  /** Environments kept warm per function at most (default 4). */
  maxConcurrency?: number;
  /** Each log line: the runtime's own and every function's. Default: stderr. */
  log?: ((line: string) => void) | false;
  /** A line per stage of the start (synth, bundles, functions, custom resources, recovery). */
  progress?: (line: string) => void;
  /**
   * The scale model's factor (./scale-model): the templates' limits and AWS's quotas times this,
   * enforced as AWS enforces them. Default: PIPEGATE_SCALE, else no model.
   */
  scale?: number;
  /**
   * The emulated account's Lambda concurrency quota, as GetAccountSettings answers it and the
   * scale model shares it (default: PIPEGATE_SCALE_ACCOUNT_CONCURRENCY, else AWS's 1,000).
   */
  accountConcurrency?: number;
  /** Units other functions of the emulated account have reserved (default: PIPEGATE_SCALE_ACCOUNT_RESERVED, else 0). */
  accountReservedElsewhere?: number;
  /**
   * The IAM principal the owner token stands for, checked against the API's resource policy
   * (default: PIPEGATE_OWNER_PRINCIPAL, else a user of the template's account, DEFAULT_OWNER_USER).
   */
  ownerPrincipal?: string;
}

/** The owner token's principal by default: a user of the deploying account. */
export const DEFAULT_OWNER_USER = 'pipegate-owner';

/** URL, owner token, data dir, drain time, what the start recovered and the stop: lib/local/bootstrap.ts. */
export interface SynthRuntime extends Booted {
  assembly: Assembly;
  resolved: ResolvedAssembly;
  endpoint: AwsEndpoint;
  iam: IamEvaluator;
  /** By function name. */
  functions: ReadonlyMap<string, FunctionHost>;
  /** By state machine ARN. */
  stateMachines: ReadonlyMap<string, LocalWorkflow & StateMachinePort>;
  /** By queue ARN. */
  queues: ReadonlyMap<string, LocalQueue>;
  /** The one state machine a pipegate assembly has (what `npm start` calls `workflow`). */
  workflow: LocalWorkflow & StateMachinePort;
  /**
   * The table, queues and state machine as the functions see them, from this process and
   * outside IAM (the restart's recovery uses them; tests plant state with them).
   */
  deps: Deps;
  /** Every scheduled target, running on its rate; `fire` invokes it once now, as the rule would. */
  schedules: readonly Schedule[];
  /** The scale model when one is on: its limits and what it refused. */
  scale?: ScaleModel;
}

export interface Schedule {
  ruleArn: string;
  functionName: string;
  everyMs: number;
  fire(): Promise<unknown>;
}

/**
 * Function settings a local run may tune (call-back schedule, poll intervals, time-outs...),
 * given as PIPEGATE_* variables to start:synth. The wiring (table, queues, secret, state
 * machine) always comes from the template.
 */
const WIRING = new Set([
  'PIPEGATE_TABLE',
  'PIPEGATE_EXECUTIONS_QUEUE_URL',
  'PIPEGATE_CALLBACKS_QUEUE_URL',
  'PIPEGATE_SECRET_ARN',
  'PIPEGATE_OWNER_SECRETS_KEY',
  'PIPEGATE_STATE_MACHINE_ARN',
  'PIPEGATE_BUCKET',
  'PIPEGATE_S3_ENDPOINT',
  'PIPEGATE_S3_FORCE_PATH_STYLE',
  'PIPEGATE_DYNAMODB_ENDPOINT',
  'PIPEGATE_TRACK_OPEN',
  'PIPEGATE_DATA_DIR',
  'PIPEGATE_OWNER_TOKEN',
  'PIPEGATE_BASE_PATH',
  'PIPEGATE_SCALE',
  'PIPEGATE_SCALE_ACCOUNT_CONCURRENCY',
  'PIPEGATE_SCALE_ACCOUNT_RESERVED',
  'PIPEGATE_OWNER_PRINCIPAL',
]);

/** An error that the local API Gateway answers with DEFAULT_5XX at this status. */
class IntegrationError extends Error {
  constructor(
    message: string,
    readonly gatewayStatus: number,
  ) {
    super(message);
  }
}

export async function startSynthRuntime(opts: SynthRuntimeOptions = {}): Promise<SynthRuntime> {
  const log = opts.log === false ? () => undefined : (opts.log ?? ((line: string) => process.stderr.write(`${line}\n`)));
  const progress = opts.progress ?? (() => undefined);
  const assembly = opts.assembly ?? loadAssembly((await cachedAssembly({ progress })).dir);
  const { booted, wired } = await bootstrap(opts, '.pipegate-synth', (boot) => wireSynth(opts, boot, assembly, log, progress));
  const said = describeRecovered(booted.recovered);
  if (said !== null) log(`recovered ${said}`);
  const { exposed } = wired;
  return { ...booted, ...exposed };
}

/** What start:synth exposes beside what every runtime does (lib/local/bootstrap.ts Booted). */
type SynthParts = Omit<SynthRuntime, keyof Booted>;

/** The service from the templates: the bundles in worker threads, every AWS call checked by IAM. */
async function wireSynth(
  opts: SynthRuntimeOptions,
  boot: Boot,
  assembly: Assembly,
  log: (line: string) => void,
  progress: (line: string) => void,
): Promise<Wired & { exposed: SynthParts }> {
  const { env, dataDir } = boot;
  // On the port it had last time (the data dir's `aws-port`) when free: upload URLs the
  // functions presign name it, so those handed out before a restart still work after it.
  const endpoint = await onRecordedPort(
    join(dataDir, 'aws-port'),
    (port) => startAwsEndpoint({ port, log: (line) => log(line) }),
    (message) => log(`AWS endpoint: ${message}`),
  );
  boot.onStop(() => endpoint.stop());
  const resolved = resolveAssembly(assembly, { partition: 'aws', urlSuffix: 'amazonaws.com', awsEndpointUrl: endpoint.url });
  const iam = memoized(IamEvaluator.fromAssembly(resolved), assembly);
  const stacks = assembly.stacks.map((s) => resolved.stack(s.id));
  const region = resolved.env.region;
  const factor = opts.scale ?? scaleFactorOf(env.PIPEGATE_SCALE);
  const accountConcurrency =
    opts.accountConcurrency ?? (env.PIPEGATE_SCALE_ACCOUNT_CONCURRENCY ? Number(env.PIPEGATE_SCALE_ACCOUNT_CONCURRENCY) : undefined);
  const reservedElsewhere =
    opts.accountReservedElsewhere ?? (env.PIPEGATE_SCALE_ACCOUNT_RESERVED ? Number(env.PIPEGATE_SCALE_ACCOUNT_RESERVED) : 0);
  const scale = factor === undefined ? undefined : scaleModelFromTemplates(stacks, { factor, accountConcurrency, reservedElsewhere });
  // The account as Lambda's GetAccountSettings reports it: what this service's functions held
  // when the data dir last started (a redeploy's functions still hold the old plan while the
  // deploy-time check runs) and what others reserved are not unreserved.
  const reservationsFile = join(dataDir, 'lambda-reservations.json');
  const saved = readSavedJson(reservationsFile);
  let heldByService = isPlainObject(saved) && typeof saved.total === 'number' ? saved.total : 0;
  const quota = accountConcurrency ?? AWS_QUOTAS.accountConcurrency;
  const lambdaAccount = () => ({ quota, unreserved: Math.max(0, quota - reservedElsewhere - heldByService) });

  const dynamo = await boot.tables(stacks.flatMap((s) => tableInputs(s)));

  const secrets = new LocalSecretStore(join(dataDir, 'secrets-manager.json'));
  for (const stack of stacks) defineSecrets(stack, secrets);
  // The templates' KMS keys, created once (their material in the data dir, as KMS keeps it).
  const kms = new LocalKms(join(dataDir, 'kms.json'));
  for (const stack of stacks) {
    for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
      const arn = r.Type === 'AWS::KMS::Key' ? stack.physical[id]?.attributes.Arn : undefined;
      if (arn) kms.define(arn);
    }
  }

  // Functions, by physical name and by ARN.
  const hosts = new Map<string, FunctionHost>();
  // Each function's execution role, resolved once here for everything that acts as it.
  const roles = new Map<string, string>();
  const byArn = new Map<string, FunctionHost>();
  const tuning = Object.fromEntries(
    Object.entries(env).filter((e): e is [string, string] => e[0].startsWith('PIPEGATE_') && !WIRING.has(e[0]) && e[1] !== undefined),
  );
  for (const fn of assembly.functions) {
    const stack = resolved.stack(fn.stack);
    const where = `${fn.stack}.Resources.${fn.logicalId}.Properties`;
    const physical = stack.physical[fn.logicalId];
    if (!physical) throw new Error(`${where}: no physical function`);
    const arn = physical.attributes.Arn ?? '';
    const roleArn = stack.resolveString(fn.properties.Role, `${where}.Role`);
    roles.set(physical.ref, roleArn);
    const variables = (
      isPlainObject(fn.properties.Environment)
        ? stack.resolve(fn.properties.Environment.Variables ?? {}, `${where}.Environment.Variables`)
        : {}
    ) as Record<string, string>;
    const credentials = credentialsFor(roleArn);
    const memoryMb = Number(fn.properties.MemorySize ?? 128);
    const spec: FunctionSpec = {
      name: physical.ref,
      arn,
      file: fn.file,
      exportName: fn.exportName,
      root: fn.assetDir,
      timeoutSeconds: Number(fn.properties.Timeout ?? 3),
      memoryMb,
      env: {
        ...variables,
        // Local callers and call-back receivers live on this machine's private addresses.
        PIPEGATE_ALLOW_PRIVATE_URLS: 'true',
        ...tuning,
        // The wait bound is a share of the function's reservation, so it scales with it.
        ...(scale && Number(variables.PIPEGATE_MAX_WAITERS) > 0
          ? { PIPEGATE_MAX_WAITERS: String(scaled(Number(variables.PIPEGATE_MAX_WAITERS), scale.factor)) }
          : {}),
        AWS_ENDPOINT_URL: endpoint.url,
        // S3 addresses buckets by host name unless told otherwise; the local endpoint has one host.
        PIPEGATE_S3_ENDPOINT: endpoint.url,
        PIPEGATE_S3_FORCE_PATH_STYLE: 'true',
        AWS_ACCESS_KEY_ID: credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
        AWS_SESSION_TOKEN: credentials.sessionToken,
        AWS_REGION: region,
        AWS_DEFAULT_REGION: region,
        AWS_LAMBDA_FUNCTION_NAME: physical.ref,
        AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(memoryMb),
        AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${physical.ref}`,
        AWS_EXECUTION_ENV: `AWS_Lambda_${String(fn.properties.Runtime ?? 'nodejs')}`,
        LAMBDA_TASK_ROOT: fn.assetDir,
        TZ: ':UTC',
        // No profile or shared file of this machine may reach a function's SDK.
        AWS_CONFIG_FILE: join(dataDir, 'no-aws-config'),
        AWS_SHARED_CREDENTIALS_FILE: join(dataDir, 'no-aws-credentials'),
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
    };
    const host = new FunctionHost(spec, {
      // Under the scale model an environment per concurrent invocation Lambda allows, and no more.
      maxConcurrency: scale ? scale.lambda.limitOf(spec.name) : opts.maxConcurrency,
      ...(scale ? { concurrency: () => scale.lambda.acquire(spec.name) } : {}),
      log: (name, line) => log(`[${name}] ${line}`),
    });
    boot.onStop(() => host.stop());
    hosts.set(spec.name, host);
    byArn.set(arn, host);
  }
  const fnByArn = (arn: string, where: string): FunctionHost => {
    const h = byArn.get(arn) ?? hosts.get(arn);
    if (!h) throw new Error(`${where}: no function ${arn} in the assembly`);
    return h;
  };

  // State machines: the template's definition with its substitutions, tasks calling the bundles.
  const machines = new Map<string, LocalWorkflow & StateMachinePort>();
  const machineRoles: string[] = [];
  for (const stack of stacks) {
    for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
      if (r.Type !== 'AWS::StepFunctions::StateMachine') continue;
      const where = `${stack.stack.id}.Resources.${id}.Properties`;
      const props = r.Properties ?? {};
      const arn = stack.physical[id]?.ref ?? '';
      const roleArn = stack.resolveString(props.RoleArn, `${where}.RoleArn`);
      machineRoles.push(roleArn);
      const definition = stateMachineDefinition(stack, props, where);
      const tasks: Record<string, WorkflowTask> = {};
      forEachTask(definition, (name, resource) => {
        const fn = fnByArn(resource, `${where} state ${name}`);
        tasks[name] = async (input) => {
          const d = await iam.evaluate({ principal: roleArn, action: 'lambda:InvokeFunction', resource: fn.spec.arn });
          if (!d.allowed) {
            // What Step Functions reports when its role may not invoke the function.
            throw new FunctionError(
              'Lambda.AWSLambdaException',
              `User: ${roleArn} is not authorized to perform: lambda:InvokeFunction on resource: ${fn.spec.arn} (Service: Lambda, Status Code: 403, Error Code: AccessDeniedException)`,
            );
          }
          return fn.invoke(input).catch((err: unknown) => {
            // Step Functions names Lambda's service errors Lambda.<error>.
            if (err instanceof FunctionError && err.name === 'TooManyRequestsException')
              throw new FunctionError('Lambda.TooManyRequestsException', err.message);
            throw err;
          });
        };
      });
      const type = props.StateMachineType === 'EXPRESS' ? 'EXPRESS' : 'STANDARD';
      const workflow = new LocalWorkflow({
        definition,
        tasks,
        onError: (name, err) => log(`state machine ${arn}: execution ${name} failed: ${err instanceof Error ? err.message : String(err)}`),
      });
      const port = Object.assign(workflow, { type }) as LocalWorkflow & StateMachinePort;
      boot.onStop(() => workflow.stopAll(2_000));
      machines.set(arn, port);
    }
  }

  // Every role local code acts as (each resolved once, above), before anything acts as one;
  // API Gateway's account-level logging role is not one.
  const actedAs = new Set([...roles.values(), ...machineRoles]);
  assertKnownPolicies(iam.principals.filter((p) => actedAs.has(p.roleArn)));

  // Queues with the event source mappings that consume them.
  const mappings = stacks.flatMap((stack) =>
    Object.entries(stack.stack.template.Resources)
      .filter(([, r]) => r.Type === 'AWS::Lambda::EventSourceMapping')
      .map(([id, r]) => {
        const where = `${stack.stack.id}.Resources.${id}.Properties`;
        const p = stack.resolve(r.Properties ?? {}, where) as Record<string, unknown>;
        return {
          where,
          queueArn: String(p.EventSourceArn),
          fn: fnByArn(String(p.FunctionName), where),
          batchSize: Number(p.BatchSize ?? 10),
          reportFailures: Array.isArray(p.FunctionResponseTypes) && p.FunctionResponseTypes.includes('ReportBatchItemFailures'),
          enabled: p.Enabled !== false,
          maximumConcurrency:
            isPlainObject(p.ScalingConfig) && p.ScalingConfig.MaximumConcurrency !== undefined
              ? Number(p.ScalingConfig.MaximumConcurrency)
              : undefined,
        };
      }),
  );
  const queues = new Map<string, LocalQueue>();
  for (const stack of stacks) {
    for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
      if (r.Type !== 'AWS::SQS::Queue') continue;
      const where = `${stack.stack.id}.Resources.${id}.Properties`;
      const props = stack.resolve(r.Properties ?? {}, where) as Record<string, unknown>;
      const attrs = stack.physical[id]?.attributes ?? {};
      const arn = attrs.Arn ?? '';
      const redrive = isPlainObject(props.RedrivePolicy) ? props.RedrivePolicy : undefined;
      if (
        redrive &&
        ![...Object.values(resolved.stacks)].some((s) =>
          Object.values(s.physical).some((x) => x.attributes.Arn === redrive.deadLetterTargetArn),
        )
      ) {
        throw new Error(`${where}.RedrivePolicy: dead-letter target ${String(redrive.deadLetterTargetArn)} is not a queue of the assembly`);
      }
      const consumer = mappings.find((m) => m.queueArn === arn);
      const queue = new LocalQueue({
        dir: join(dataDir, 'queues'),
        name: attrs.QueueName ?? id,
        visibilityTimeoutSeconds: Number(props.VisibilityTimeout ?? 30),
        // Without a redrive policy SQS keeps receiving a message until it expires.
        maxReceiveCount: redrive ? Number(redrive.maxReceiveCount) : Number.MAX_SAFE_INTEGER,
        batchSize: consumer?.batchSize ?? 10,
        // The pollers invoke at most the mapping's MaximumConcurrency at once (else the function's concurrency).
        ...(scale && consumer
          ? { concurrency: scale.queueConcurrency(consumer.maximumConcurrency) ?? scale.lambda.limitOf(consumer.fn.spec.name) }
          : {}),
        onError: (err: unknown) => log(`queue ${arn}: ${err instanceof Error ? err.message : String(err)}`),
      });
      boot.onStop(() => queue.stop());
      queues.set(arn, queue);
    }
  }

  const endpointQueues = new Map<string, EndpointQueue>([...queues].map(([arn, q]) => [arn, q]));
  const bucketResources = stacks.flatMap((stack) =>
    Object.entries(stack.stack.template.Resources)
      .filter(([, r]) => r.Type === 'AWS::S3::Bucket')
      .map(([id, r]) => {
        const props = stack.resolve(r.Properties ?? {}, `${stack.stack.id}.Resources.${id}.Properties`);
        return { name: stack.physical[id]?.ref ?? '', days: expirationDaysOf(props), cors: corsRulesOf(props) };
      }),
  );
  const corsRules = Object.fromEntries(bucketResources.map((b) => [b.name, b.cors]));
  const buckets = bucketResources.map((b) => b.name);
  const expirationDays = Object.fromEntries(bucketResources.flatMap((b) => (b.days === undefined ? [] : [[b.name, b.days]])));
  endpoint.serve({
    iam,
    arns: resolved.arns,
    dynamoEndpoint: dynamo.endpoint,
    queues: endpointQueues,
    stateMachines: machines,
    secrets,
    kms,
    objects: { dir: join(dataDir, 'objects'), buckets, expirationDays, cors: corsRules },
    lambdaAccount,
    ...(scale ? { throughput: scale.dynamo, startThrottle: scale.states } : {}),
  });
  // S3's own lifecycle expiry, from the template's rules: a pass at start and every hour.
  boot.every(
    3600 * 1000,
    () => endpoint.expireObjects(),
    (err: unknown) => log(`object expiry failed: ${err instanceof Error ? err.message : String(err)}`),
    { now: true },
  );

  // Custom resources, as CloudFormation runs them on the first deploy.
  progress(`${hosts.size} functions and ${queues.size} queues set up; running custom resources`);
  // Those naming the API's own address run once it listens (listening, below): only then is the
  // local address that stands for it known, as CloudFormation creates them after the API.
  const namesApi = apiAddressNamed(stacks);
  for (const stack of stacks)
    await runCustomResources(
      stack,
      dataDir,
      fnByArn,
      (v) => v,
      log,
      (props) => !namesApi(props),
    );
  // Past the deploy-time concurrency check: the functions now hold the template's reservations.
  heldByService = [...templateReservations(stacks).values()].reduce((a, b) => a + b, 0);
  writeSavedJson(reservationsFile, { total: heldByService });
  progress('recovering what the last stop left unfinished');

  // A restart owes the work it finds unfinished what `npm start` owes it: AWS never restarts,
  // but this process holds the state machine's runs, and they die with it.
  const deps = recoveryDeps([...hosts.values()], dynamo.endpoint, resolved, queues, secrets, [...machines.values()][0], endpoint.url);

  // The event source mappings poll only with what the function's role allows.
  const consumers: Array<() => void> = [];
  for (const m of mappings) {
    if (!m.enabled) continue;
    const queue = queues.get(m.queueArn);
    if (!queue) throw new Error(`${m.where}: event source ${m.queueArn} is not a queue of the assembly`);
    const roleArn = roles.get(m.fn.spec.name);
    if (roleArn === undefined) throw new Error(`${m.where}: no role for ${m.fn.spec.name}`);
    for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes']) {
      const d = await iam.evaluate({ principal: roleArn, action, resource: m.queueArn });
      // CloudFormation fails to create such a mapping ("The provided execution role does not have permissions").
      if (!d.allowed)
        throw new Error(
          `${m.where}: the execution role of ${m.fn.spec.name} does not have permissions to call ${action.slice(4)} on SQS (${d.reason})`,
        );
    }
    consumers.push(() =>
      queue.start(async (event: SQSEvent) => {
        const out = (await m.fn.invoke(event)) as SQSBatchResponse | null;
        // Without ReportBatchItemFailures Lambda ignores what the function returns.
        return m.reportFailures && out ? out : undefined;
      }),
    );
  }

  // Schedules: EventBridge rules with a rate, each target invoked as EventBridge invokes it.
  const schedules: Schedule[] = [];
  for (const stack of stacks) {
    const permissions = Object.entries(stack.stack.template.Resources)
      .filter(([, r]) => r.Type === 'AWS::Lambda::Permission')
      .map(([id, r]) => stack.resolve(r.Properties ?? {}, `${stack.stack.id}.Resources.${id}.Properties`) as Record<string, unknown>);
    for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
      if (r.Type !== 'AWS::Events::Rule') continue;
      const where = `${stack.stack.id}.Resources.${id}.Properties`;
      const p = stack.resolve(r.Properties ?? {}, where) as Record<string, unknown>;
      if (typeof p.ScheduleExpression !== 'string' || p.State === 'DISABLED') continue;
      const everyMs = rateMs(p.ScheduleExpression, where);
      const ruleArn = stack.physical[id]?.attributes.Arn ?? '';
      for (const target of Array.isArray(p.Targets) ? p.Targets.filter(isPlainObject) : []) {
        const fn = fnByArn(String(target.Arn), `${where}.Targets`);
        // Without a resource-based permission for events.amazonaws.com (and this rule) the
        // rule fires and the invocation fails (its FailedInvocations metric).
        const permitted = permissions.some(
          (perm) =>
            (perm.FunctionName === fn.spec.arn || perm.FunctionName === fn.spec.name) &&
            perm.Principal === 'events.amazonaws.com' &&
            (perm.Action === 'lambda:InvokeFunction' || perm.Action === 'lambda:*') &&
            (typeof perm.SourceArn !== 'string' || perm.SourceArn === ruleArn),
        );
        const fire = async (): Promise<unknown> => {
          if (!permitted)
            throw new Error(`${ruleArn}: events.amazonaws.com may not invoke ${fn.spec.arn} (no AWS::Lambda::Permission for the rule)`);
          const event =
            typeof target.Input === 'string'
              ? (JSON.parse(target.Input) as unknown)
              : {
                  version: '0',
                  id: randomUUID(),
                  'detail-type': 'Scheduled Event',
                  source: 'aws.events',
                  account: resolved.env.account,
                  time: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
                  region,
                  resources: [ruleArn],
                  detail: {},
                };
          return fn.invoke(event);
        };
        // One pass at a time: a pass still running when the next is due is not started twice here
        // (EventBridge would start it; the functions it targets are safe to run twice).
        boot.every(everyMs, fire, (err: unknown) =>
          log(`schedule ${ruleArn}: ${fn.spec.name} failed: ${err instanceof Error ? err.message : String(err)}`),
        );
        schedules.push({ ruleArn, functionName: fn.spec.name, everyMs, fire });
      }
    }
  }

  // The API.
  const serviceStack = stacks.find((s) => Object.values(s.stack.template.Resources).some((r) => r.Type === 'AWS::ApiGateway::RestApi'));
  if (!serviceStack) throw new Error('No stack of the assembly declares a REST API');
  const api: TemplateApi = apiFromTemplate(serviceStack);
  const account = resolved.env.account;
  const invokeFromApi = (fnArn: string, sourceArn: string, event: unknown): Promise<unknown> => {
    // Without a resource-based permission API Gateway cannot invoke the function: a 500.
    if (!api.mayInvoke(fnArn, sourceArn))
      return Promise.reject(new IntegrationError(`Invalid permissions on Lambda function ${fnArn} for ${sourceArn}`, 500));
    return fnByArn(fnArn, 'API')
      .invoke(event)
      .catch((err: unknown) => {
        if (err instanceof FunctionError && err.name === 'RequestEntityTooLargeException') throw new IntegrationError(err.message, 500);
        throw err;
      });
  };
  const replies = gatewayReplies(api.gatewayResponses);
  const methodArn = (event: APIGatewayProxyEvent) =>
    `arn:aws:execute-api:${region}:${account}:${api.apiId}/${api.stage}/${event.httpMethod}${event.resource.replace(/\{[^}]+\}/g, (m) => event.pathParameters?.[m.slice(1, -1)] ?? '')}`;
  const handlers: Record<string, (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>> = {};
  // Methods whose integration streams (ResponseTransferMode STREAM) invoke with a response stream.
  const streamInvokers: Record<string, (event: APIGatewayProxyEvent) => Promise<Readable>> = {};
  for (const [name, fnArn] of Object.entries(api.functionArns)) {
    handlers[name] = (event) =>
      (invokeFromApi(fnArn, methodArn(event), event) as Promise<APIGatewayProxyResult>).catch((err: unknown) => {
        // A throttled Lambda never ran, so it gave no proxy result: API Gateway answers its
        // INTEGRATION_FAILURE response (a 500 unless the API declares one).
        if (err instanceof FunctionError && err.name === 'TooManyRequestsException')
          return proxyResultOf(replies('INTEGRATION_FAILURE', event.requestContext.requestId, 500));
        throw err;
      });
    streamInvokers[name] = async (event) => {
      // lambda:InvokeFunction covers InvokeWithResponseStream too: the same permission check.
      if (!api.mayInvoke(fnArn, methodArn(event)))
        throw new IntegrationError(`Invalid permissions on Lambda function ${fnArn} for ${methodArn(event)}`, 500);
      return fnByArn(fnArn, 'API')
        .invokeStream(event)
        .catch((err: unknown) => {
          // Throttled before it ran: the same INTEGRATION_FAILURE response as a buffered method.
          if (err instanceof FunctionError && err.name === 'TooManyRequestsException')
            throw Object.assign(new IntegrationError(err.message, 500), { gatewayResponse: 'INTEGRATION_FAILURE' });
          throw err;
        });
    };
  }
  const authorizer = api.authorizer;
  // PIPEGATE_LOG_FORMAT reaches the functions as a tuning variable, checked by their config reader.
  const requestLog = createLogger('pipegate-synth', log, deps.config.logFormat ?? (process.stderr.isTTY ? 'text' : 'json'));
  const gateway = createGateway({
    routes: api.routes,
    handlers,
    streamInvokers,
    authorizer: (event) =>
      authorizer
        ? (invokeFromApi(
            authorizer.functionArn,
            `arn:aws:execute-api:${region}:${account}:${api.apiId}/authorizers/${authorizer.authorizerId}`,
            event,
          ) as Promise<APIGatewayAuthorizerResult>)
        : Promise.reject(new Error('The template declares no authorizer')),
    authorizerSettings: authorizer?.settings,
    gatewayResponses: api.gatewayResponses,
    ownerToken: boot.ownerToken,
    maxBodyBytes: API_GATEWAY_MAX_BODY_BYTES,
    basePath: env.PIPEGATE_BASE_PATH,
    integrationTimeoutMs: api.integrationTimeoutMs,
    api: { region, account, apiId: api.apiId, stage: api.stage },
    resourcePolicy: apiPolicyCheck(
      api.policy,
      { partition: resolved.env.partition, region, account, apiId: api.apiId },
      opts.ownerPrincipal ?? env.PIPEGATE_OWNER_PRINCIPAL ?? `arn:${resolved.env.partition}:iam::${account}:user/${DEFAULT_OWNER_USER}`,
    ),
    firewall: firewallFromTemplate(
      serviceStack,
      `arn:${resolved.env.partition}:apigateway:${region}::/restapis/${api.apiId}/stages/${api.stage}`,
    ),
    log: (line) => requestLog.info('request', line),
  });
  const throttled = scale ? stageThrottle(api, env.PIPEGATE_BASE_PATH, scale) : () => false;
  const workflow = [...machines.values()][0];
  if (!workflow || machines.size !== 1) throw new Error(`Expected one state machine in the assembly, found ${machines.size}`);
  const executionsQueue = queues.get(resolved.arns.queueArnOfUrl(deps.config.executionsQueueUrl) ?? '');
  if (!executionsQueue) throw new Error(`No local queue for ${deps.config.executionsQueueUrl}`);

  return {
    // The functions' own conditional writes, from this process: AWS never stops, so no role holds them.
    deps,
    workflow,
    executionsQueue,
    drainSeconds: deps.config.drainSeconds,
    repair: () => indexUnmarkedOpen(deps, dynamo.endpoint),
    start() {
      for (const consume of consumers) consume();
    },
    handle(req, res) {
      if (throttled(req)) {
        req.resume();
        const requestId = randomUUID();
        return send(res, replies('THROTTLED', requestId), requestId);
      }
      gateway(req, res);
    },
    async listening(url) {
      // The API's execute-api address stands for this runtime's own wherever the templates name
      // it: the functions' environments (read by a sandbox when it starts; none of these has
      // been asked for before the API listens) and the custom resources left for now.
      const localize = localApiAddress(stacks, url, boot.env.PIPEGATE_BASE_PATH);
      for (const host of hosts.values()) Object.assign(host.spec.env, localize(host.spec.env));
      for (const stack of stacks) await runCustomResources(stack, dataDir, fnByArn, localize, log, namesApi);
    },
    say: (message, fields) => log(`${message}${fields ? ` ${JSON.stringify(fields)}` : ''}`),
    exposed: {
      assembly,
      resolved,
      endpoint,
      iam,
      functions: hosts,
      stateMachines: machines,
      queues,
      workflow,
      deps,
      schedules,
      ...(scale ? { scale } : {}),
    },
  };
}

/** A gateway reply as the proxy result that renders it. */
function proxyResultOf(reply: { status: number; headers: Array<[string, string]>; body: Buffer }): APIGatewayProxyResult {
  return { statusCode: reply.status, headers: Object.fromEntries(reply.headers), body: reply.body.toString('utf8') };
}

/**
 * API Gateway's throttling of a request, before anything else it does: the stage's per-method
 * bucket (method and resource, as the API's routes match them; the root catch-all for the rest).
 */
function stageThrottle(api: TemplateApi, basePath: string | undefined, scale: ScaleModel): (req: IncomingMessage) => boolean {
  const resources = compileRoutes(api.routes, new Set(api.routes.map((r) => r.handler)));
  const base = normaliseBasePath(basePath);
  return (req) => {
    const method = (req.method ?? 'GET').toUpperCase();
    const path = stripBasePath((req.url ?? '/').split('?', 1)[0] ?? '/', base);
    let resource = '/{proxy+}';
    if (path !== undefined) {
      try {
        const segments = (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path)
          .split('/')
          .slice(1)
          .map((x) => decodeURIComponent(x));
        const match = matchResource(resources, segments);
        if (match?.resource.methods.has(method)) resource = match.resource.path;
      } catch {
        // An undecodable path is answered 400 by the gateway; it still counts against the catch-all.
      }
    }
    return !scale.stage.admit(`${method} ${resource}`);
  };
}

/**
 * The evaluator with its decisions remembered per principal, action, resource and context: a
 * simulation costs ≈ 5 ms of CPU and an execution makes dozens of calls. Only where no policy
 * of the assembly conditions on the time, since then a decision cannot change while it runs.
 */
function memoized(iam: IamEvaluator, assembly: Assembly): IamEvaluator {
  if (/aws:(CurrentTime|EpochTime)/i.test(JSON.stringify(assembly.stacks.map((s) => s.template)))) return iam;
  const decisions = new Map<string, Promise<IamDecision>>();
  const memo = Object.create(iam) as IamEvaluator;
  memo.evaluate = (req: IamRequest) => {
    const key = JSON.stringify([req.principal, req.action, req.resource, req.context ?? {}]);
    let d = decisions.get(key);
    if (!d) {
      d = iam.evaluate(req);
      decisions.set(key, d);
    }
    return d;
  };
  return memo;
}

/**
 * The stores and queues as the functions see them (their environment names the table, the
 * queues and the secret), for the restart's recovery, which runs in this process.
 */
function recoveryDeps(
  hosts: FunctionHost[],
  dynamoEndpoint: string,
  resolved: ResolvedAssembly,
  queues: ReadonlyMap<string, LocalQueue>,
  secrets: LocalSecretStore,
  workflow: LocalWorkflow | undefined,
  awsEndpoint: string,
): Deps {
  // A function's wiring whose secret is the whole key material (the authorizer's is the pepper alone).
  const whole = (arn: string | undefined) => secrets.find(arn ?? '')?.value.includes('"master_key"') === true;
  const fnEnv = hosts
    .map((h) => h.spec.env)
    .find((e) => e.PIPEGATE_TABLE && e.PIPEGATE_EXECUTIONS_QUEUE_URL && e.PIPEGATE_CALLBACKS_QUEUE_URL && whole(e.PIPEGATE_SECRET_ARN));
  if (!fnEnv || !workflow) throw new Error('No function of the assembly names the table, both queues and the secret');
  const queue = (url: string | undefined): LocalQueue => {
    const q = queues.get(resolved.arns.queueArnOfUrl(url ?? '') ?? '');
    if (!q) throw new Error(`No local queue for ${String(url)}`);
    return q;
  };
  const secret = secrets.find(fnEnv.PIPEGATE_SECRET_ARN ?? '');
  if (!secret) throw new Error(`No secret ${String(fnEnv.PIPEGATE_SECRET_ARN)}`);
  const config = readConfig({ ...fnEnv, PIPEGATE_DYNAMODB_ENDPOINT: dynamoEndpoint, AWS_REGION: resolved.env.region });
  return createDeps(config, {
    queue: new LocalQueuePort({
      executions: queue(fnEnv.PIPEGATE_EXECUTIONS_QUEUE_URL),
      callbacks: queue(fnEnv.PIPEGATE_CALLBACKS_QUEUE_URL),
    }),
    workflow,
    keyMaterial: new StaticKeyMaterial(parseKeyMaterial(secret.value)),
    http: createGuardedHttp({ allowPrivate: false }),
    // The recovery does the sweeper's work, so it reaches the bucket as the sweeper does.
    objects: createObjectStore(
      { region: resolved.env.region, s3Endpoint: awsEndpoint, s3ForcePathStyle: true },
      config.bucket,
      sweeperCredentials(hosts),
    ),
    log: silentLogger,
  });
}

/** The credentials the sweeper function's sandbox holds (its role's). */
function sweeperCredentials(hosts: FunctionHost[]): { accessKeyId: string; secretAccessKey: string; sessionToken: string } {
  const env = hosts.find((h) => h.spec.env.AWS_LAMBDA_FUNCTION_NAME === h.spec.name && /sweeper/i.test(h.spec.name))?.spec.env;
  if (!env?.AWS_ACCESS_KEY_ID || !env.AWS_SECRET_ACCESS_KEY || !env.AWS_SESSION_TOKEN)
    throw new Error('No sweeper function in the assembly');
  return { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, sessionToken: env.AWS_SESSION_TOKEN };
}

/**
 * Puts open executions that a kill left off the sweep index back on it (one Scan), and says how
 * many: the functions write as on AWS, moving the sweep marker in the status write itself, and
 * dynalite writes index entries before the item, so a process killed between the two can leave
 * an open execution off the index. Run by the bootstrap after an unclean stop only: a stop that
 * finished left every write whole. Local only: on AWS nothing restarts, and DynamoDB updates an
 * item and its index entries together.
 */
async function indexUnmarkedOpen(d: Deps, dynamoEndpoint: string): Promise<number> {
  let indexed = 0;
  const db = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'local', ...localEndpointConfig(dynamoEndpoint) }));
  try {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await db.send(
        new ScanCommand({
          TableName: d.config.table,
          ProjectionExpression: 'pk, sk, created_at',
          FilterExpression: 'attribute_exists(execution_id) AND #s IN (:p, :r) AND attribute_not_exists(sweep)',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':p': 'pending', ':r': 'running' },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        indexed += 1;
        await db
          .send(
            new UpdateCommand({
              TableName: d.config.table,
              Key: { pk: item.pk, sk: item.sk },
              UpdateExpression: 'SET sweep = :open, sweep_at = :at',
              ConditionExpression: '#s IN (:p, :r)',
              ExpressionAttributeNames: { '#s': 'status' },
              ExpressionAttributeValues: {
                ':open': sweepKey('open', String(item.pk).slice('EXEC#'.length)),
                ':at': item.created_at,
                ':p': 'pending',
                ':r': 'running',
              },
            }),
          )
          .catch((err: unknown) => {
            if (!isConditionFailure(err)) throw err;
          });
      }
      start = page.LastEvaluatedKey;
    } while (start);
  } finally {
    db.destroy();
  }
  return indexed;
}

/** DefinitionString (or Definition) with DefinitionSubstitutions applied, as Step Functions gets it. */
function stateMachineDefinition(stack: ResolvedStack, props: Record<string, unknown>, where: string): Record<string, unknown> {
  let text =
    props.DefinitionString !== undefined
      ? stack.resolveString(props.DefinitionString, `${where}.DefinitionString`)
      : JSON.stringify(stack.resolve(props.Definition, `${where}.Definition`));
  const subs = (
    props.DefinitionSubstitutions === undefined ? {} : stack.resolve(props.DefinitionSubstitutions, `${where}.DefinitionSubstitutions`)
  ) as Record<string, unknown>;
  text = text.replace(/\$\{([^}]+)\}/g, (m, key: string) => {
    const v = subs[key];
    if (v === undefined) throw new Error(`${where}: DefinitionString names \${${key}}, which DefinitionSubstitutions does not give`);
    return String(v);
  });
  const parsed = JSON.parse(text) as unknown;
  if (!isPlainObject(parsed)) throw new Error(`${where}: the definition is not a JSON object`);
  return parsed;
}

function forEachTask(machine: Record<string, unknown>, visit: (name: string, resource: string) => void): void {
  forEachState(machine, (state, name) => {
    if (state.Type !== 'Task') return;
    const resource = String(state.Resource);
    if (!/^arn:[^:]+:lambda:[^:]+:\d{12}:function:[^:]+$/.test(resource))
      throw new Error(`State ${name}: only direct Lambda function ARNs are run locally (got ${resource})`);
    visit(name, resource);
  });
}

/**
 * Each AWS::DynamoDB::Table of the template, as `npm start` makes its table (ensureTableAs):
 * created on first start, rebuilt when a data dir from before an index was added lacks it.
 * dynalite has no TTL (TimeToLiveSpecification): the stores treat expired items as absent.
 */
export function tableInputs(stack: ResolvedStack): CreateTableCommandInput[] {
  return Object.entries(stack.stack.template.Resources)
    .filter(([, r]) => r.Type === 'AWS::DynamoDB::Table')
    .map(([id, r]) => {
      const p = stack.resolve(r.Properties ?? {}, `${stack.stack.id}.Resources.${id}.Properties`) as Record<string, unknown>;
      return {
        TableName: stack.physical[id]?.ref ?? id,
        BillingMode: (p.BillingMode as CreateTableCommandInput['BillingMode']) ?? 'PROVISIONED',
        AttributeDefinitions: p.AttributeDefinitions as CreateTableCommandInput['AttributeDefinitions'],
        KeySchema: p.KeySchema as CreateTableCommandInput['KeySchema'],
        ...(p.GlobalSecondaryIndexes
          ? { GlobalSecondaryIndexes: p.GlobalSecondaryIndexes as CreateTableCommandInput['GlobalSecondaryIndexes'] }
          : {}),
        ...(p.ProvisionedThroughput
          ? { ProvisionedThroughput: p.ProvisionedThroughput as CreateTableCommandInput['ProvisionedThroughput'] }
          : {}),
      };
    });
}

/** Secrets Manager's GenerateSecretString, for a secret created on first start only. */
function defineSecrets(stack: ResolvedStack, store: LocalSecretStore): void {
  for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
    if (r.Type !== 'AWS::SecretsManager::Secret') continue;
    const where = `${stack.stack.id}.Resources.${id}.Properties`;
    const p = stack.resolve(r.Properties ?? {}, where) as Record<string, unknown>;
    const arn = stack.physical[id]?.ref ?? '';
    store.define(arn, () => {
      if (typeof p.SecretString === 'string') return p.SecretString;
      const g = isPlainObject(p.GenerateSecretString) ? p.GenerateSecretString : {};
      let alphabet = '';
      if (g.ExcludeUppercase !== true) alphabet += 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
      if (g.ExcludeLowercase !== true) alphabet += 'abcdefghijklmnopqrstuvwxyz';
      if (g.ExcludeNumbers !== true) alphabet += '0123456789';
      if (g.ExcludePunctuation !== true) alphabet += '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
      if (g.IncludeSpace === true) alphabet += ' ';
      const excluded = typeof g.ExcludeCharacters === 'string' ? g.ExcludeCharacters : '';
      const chars = [...alphabet].filter((c) => !excluded.includes(c));
      const length = Number(g.PasswordLength ?? 32);
      const password = Array.from({ length }, () => chars[randomInt(chars.length)]).join('');
      if (typeof g.SecretStringTemplate === 'string' && typeof g.GenerateStringKey === 'string') {
        return JSON.stringify({ ...(JSON.parse(g.SecretStringTemplate) as Record<string, unknown>), [g.GenerateStringKey]: password });
      }
      return password;
    });
  }
}

/** Whether a resolved value names a REST API's execute-api address. */
function apiAddressNamed(stacks: ResolvedStack[]): (value: unknown) => boolean {
  const hosts = stacks.flatMap((stack) =>
    Object.entries(stack.stack.template.Resources)
      .filter(([, r]) => r.Type === 'AWS::ApiGateway::RestApi')
      .map(([id]) => `${stack.physical[id]?.ref ?? id}.execute-api.`),
  );
  return (value) => {
    const text = JSON.stringify(value);
    return hosts.some((h) => text.includes(h));
  };
}

/**
 * What stands for the API's own address in resolved template values: its execute-api base URL
 * (stage included) becomes this runtime's URL (and base path), its bare origin this runtime's
 * origin, in every string of a value.
 */
function localApiAddress(stacks: ResolvedStack[], url: string, basePath: string | undefined): <T>(value: T) => T {
  const pairs: Array<[string, string]> = [];
  for (const stack of stacks) {
    for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
      if (r.Type !== 'AWS::ApiGateway::RestApi') continue;
      const origin = `https://${stack.physical[id]?.ref ?? id}.execute-api.${stack.resolveString({ Ref: 'AWS::Region' })}.${stack.resolveString({ Ref: 'AWS::URLSuffix' })}`;
      for (const stage of Object.values(stack.stack.template.Resources)) {
        if (stage.Type !== 'AWS::ApiGateway::Stage' || typeof stage.Properties?.StageName !== 'string') continue;
        pairs.push([`${origin}/${stage.Properties.StageName}`, `${url}${normaliseBasePath(basePath)}`]);
      }
      pairs.push([origin, new URL(url).origin]);
    }
  }
  const swap = (v: unknown): unknown => {
    if (typeof v === 'string') return pairs.reduce((acc, [from, to]) => acc.split(from).join(to), v);
    if (Array.isArray(v)) return v.map(swap);
    if (isPlainObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, swap(x)]));
    return v;
  };
  return <T>(value: T): T => swap(value) as T;
}

/** A custom resource as the data dir remembers it: its properties (null: recorded before they were) and physical id. */
interface CreatedResource {
  properties: Record<string, unknown> | null;
  type?: string;
  physicalId?: string;
}

function readCreated(file: string): Record<string, CreatedResource> {
  if (!existsSync(file)) return {};
  const saved = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  // The first format listed the created resources' keys only.
  if (Array.isArray(saved)) return Object.fromEntries(saved.map((k) => [String(k), { properties: null }]));
  return isPlainObject(saved) ? (saved as Record<string, CreatedResource>) : {};
}

/**
 * Custom resources run as CloudFormation runs them: an event to the ServiceToken function with
 * a pre-signed URL (here a local one) it PUTs its outcome to. Each one's properties are recorded
 * in the data dir, and the next start sends what a redeploy would: nothing while they are the
 * same, Update (with the old ones) when they changed, Delete for a resource no longer in the
 * template. Resources recorded before their properties were are taken as unchanged.
 */
async function runCustomResources(
  stack: ResolvedStack,
  dataDir: string,
  fnByArn: (arn: string, where: string) => FunctionHost,
  localize: <T>(value: T) => T,
  log: (line: string) => void,
  only: (properties: Record<string, unknown>) => boolean = () => true,
): Promise<void> {
  const file = join(dataDir, 'custom-resources.json');
  const created = readCreated(file);
  const save = () => writeFileSync(file, JSON.stringify(created), { mode: 0o600 });
  const prefix = `${stack.stack.stackName}/`;
  const present = new Set<string>();
  for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
    if (!r.Type.startsWith('Custom::') && r.Type !== 'AWS::CloudFormation::CustomResource') continue;
    const key = `${prefix}${id}`;
    present.add(key);
    const where = `${stack.stack.id}.Resources.${id}.Properties`;
    const resolvedProps = stack.resolve(r.Properties ?? {}, where) as Record<string, unknown>;
    if (!only(resolvedProps)) continue;
    const properties = localize(resolvedProps);
    const before = created[key];
    if (before && (before.properties === null || isDeepStrictEqual(before.properties, properties))) {
      if (before.properties === null) created[key] = { ...before, properties };
      continue;
    }
    const physicalId = await invokeCustomResource(
      stack,
      id,
      r.Type,
      fnByArn(String(properties.ServiceToken), `${where}.ServiceToken`),
      properties,
      before?.properties ? { old: before.properties, physicalId: before.physicalId } : undefined,
    );
    created[key] = { properties, type: r.Type, physicalId };
    save();
  }
  for (const [key, was] of Object.entries(created)) {
    if (!key.startsWith(prefix) || present.has(key)) continue;
    const id = key.slice(prefix.length);
    if (was.properties) {
      let fn: FunctionHost | undefined;
      try {
        fn = fnByArn(String(was.properties.ServiceToken), `${key} (removed)`);
      } catch {
        log(`custom resource ${key} is no longer in the template, nor its function: not deleted`);
      }
      if (fn)
        await invokeCustomResource(stack, id, was.type ?? 'AWS::CloudFormation::CustomResource', fn, was.properties, {
          old: was.properties,
          physicalId: was.physicalId,
          remove: true,
        });
    }
    delete created[key];
    save();
  }
  save();
}

/** One event to a custom resource's function; its answered physical id, or an error naming its reason. */
async function invokeCustomResource(
  stack: ResolvedStack,
  id: string,
  type: string,
  fn: FunctionHost,
  properties: Record<string, unknown>,
  previous?: { old: Record<string, unknown>; physicalId?: string; remove?: boolean },
): Promise<string | undefined> {
  const requestType = previous === undefined ? 'Create' : previous.remove ? 'Delete' : 'Update';
  let answer: Record<string, unknown> | undefined;
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      try {
        answer = JSON.parse(body) as Record<string, unknown>;
      } catch {
        answer = { Status: 'FAILED', Reason: 'unreadable response' };
      }
      res.end();
    });
  });
  await new Promise<void>((res) => receiver.listen(0, '127.0.0.1', () => res()));
  try {
    const { port } = receiver.address() as AddressInfo;
    await fn.invoke({
      RequestType: requestType,
      ServiceToken: properties.ServiceToken,
      ResponseURL: `http://127.0.0.1:${port}/cloudformation-response/${randomUUID()}`,
      StackId: stack.resolveString({ Ref: 'AWS::StackId' }),
      RequestId: randomUUID(),
      LogicalResourceId: id,
      ResourceType: type,
      ResourceProperties: properties,
      ...(previous?.physicalId !== undefined ? { PhysicalResourceId: previous.physicalId } : {}),
      ...(requestType === 'Update' && previous ? { OldResourceProperties: previous.old } : {}),
    });
  } finally {
    receiver.closeAllConnections();
    await new Promise((res) => receiver.close(res));
  }
  const key = `${stack.stack.stackName}/${id}`;
  if (answer?.Status !== 'SUCCESS')
    throw new Error(`${key}: custom resource ${requestType} failed: ${String(answer?.Reason ?? 'no response')}`);
  return typeof answer.PhysicalResourceId === 'string' ? answer.PhysicalResourceId : undefined;
}

/** `rate(1 minute)`, `rate(5 minutes)`, hours and days; cron() schedules are not run locally. */
function rateMs(expression: string, where: string): number {
  const m = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
  if (!m?.[1] || !m[2]) throw new Error(`${where}: schedule ${expression} is not run locally (only rate(...) is)`);
  const unit = m[2].startsWith('minute') ? 60_000 : m[2].startsWith('hour') ? 3_600_000 : 86_400_000;
  return Number(m[1]) * unit;
}

/** A bucket's CORS rules from its CorsConfiguration, as S3 applies them (none: CORS not enabled). */
function corsRulesOf(props: unknown): BucketCorsRule[] {
  const rules = isPlainObject(props) && isPlainObject(props.CorsConfiguration) ? props.CorsConfiguration.CorsRules : undefined;
  const strings = (x: unknown): string[] => (Array.isArray(x) ? x.filter((s): s is string => typeof s === 'string') : []);
  return (Array.isArray(rules) ? rules : []).filter(isPlainObject).map((r) => ({
    allowedMethods: strings(r.AllowedMethods),
    allowedOrigins: strings(r.AllowedOrigins),
    allowedHeaders: strings(r.AllowedHeaders),
    exposedHeaders: strings(r.ExposedHeaders),
    maxAgeSeconds: typeof r.MaxAge === 'number' ? r.MaxAge : 0,
  }));
}

/**
 * The days of a bucket's whole-bucket expiry rule (enabled, no prefix, tag or size filter), as
 * S3 applies it; rules S3 would apply to part of the bucket only are not emulated (none today).
 */
function expirationDaysOf(props: unknown): number | undefined {
  const rules = isPlainObject(props) && isPlainObject(props.LifecycleConfiguration) ? props.LifecycleConfiguration.Rules : undefined;
  for (const r of Array.isArray(rules) ? rules : []) {
    if (!isPlainObject(r) || r.Status !== 'Enabled' || typeof r.ExpirationInDays !== 'number') continue;
    if (r.Prefix !== undefined || r.Filter !== undefined || r.TagFilters !== undefined) continue;
    return r.ExpirationInDays;
  }
  return undefined;
}
