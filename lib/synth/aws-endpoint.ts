/**
 * One local HTTP endpoint standing in for AWS itself, for the bundled functions' SDK v3 clients
 * (they reach it through AWS_ENDPOINT_URL). Each request is signed with SigV4; the access key
 * id in its credential scope names the role it acts as (credentialsFor in ./iam). The call is
 * mapped to the IAM action and resource ARN AWS authorizes it as, evaluated against the
 * templates' policies, and refused as AWS refuses it, or carried out: DynamoDB forwarded to
 * dynalite, SQS onto the local queues, Step Functions onto the local state machines, Secrets
 * Manager onto a local secret store, KMS onto the local KMS (lib/local/kms.ts), Lambda's
 * GetAccountSettings from the emulated account's concurrency, S3 (requests without an X-Amz-Target) onto the same S3
 * emulation `npm start` uses (lib/local/s3.ts), its signatures verified against the role's
 * secret and each object or bucket action, presigned URLs included, authorized at use time.
 * Calls pipegate's functions never make are refused with UnknownOperationException rather than
 * half-emulated.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { credentialsFor, sessionNameOf, type IamDecision, type IamEvaluator, type Principal } from './iam';
import { createS3Handler, type S3Handler } from '../local/s3';
import { readSavedJson, writeSavedJson } from '../local/saved-json';
import type { BucketCorsRule } from '../storage-cors';
import { contextOf, KmsError, type LocalKms } from '../local/kms';
import type { LocalArns } from './physical';
import { isPlainObject } from '../../functions/core/values';
import { AWS_QUOTAS, type PartitionThroughput, type StartExecutionThrottle } from './scale-model';
import type { AccountConcurrency } from '../concurrency';

/** A local queue as the endpoint uses it (lib/local/queue.ts LocalQueue). */
export interface EndpointQueue {
  send(body: string, opts?: { delaySeconds?: number }): Promise<string>;
}

/**
 * A local state machine (lib/local/workflow.ts LocalWorkflow fits): the endpoint keeps Step
 * Functions' rules on names and ARNs, the port runs executions by name.
 */
export interface StateMachinePort {
  /** The template's StateMachineType. */
  readonly type: 'STANDARD' | 'EXPRESS';
  start(name: string, input: Record<string, unknown>): Promise<unknown>;
  stop(name: string, cause: string): Promise<void>;
  /** Names of the executions still going. */
  running(): string[];
}

export interface AwsServices {
  iam: IamEvaluator;
  arns: LocalArns;
  /** dynalite's URL; DynamoDB calls are forwarded there unchanged once allowed. */
  dynamoEndpoint?: string;
  /** By queue ARN. */
  queues?: ReadonlyMap<string, EndpointQueue>;
  /** By state machine ARN. */
  stateMachines?: ReadonlyMap<string, StateMachinePort>;
  secrets?: LocalSecretStore;
  /** KMS: the templates' keys (lib/local/kms.ts), their material in the data dir. */
  kms?: LocalKms;
  /** S3: the templates' buckets (physical names), their objects kept under `dir`. */
  objects?: {
    dir: string;
    buckets: readonly string[];
    expirationDays?: Readonly<Record<string, number>>;
    cors?: Readonly<Record<string, readonly BucketCorsRule[]>>;
  };
  /** DynamoDB's per-key throughput, when the scale model is on (./scale-model). */
  throughput?: PartitionThroughput;
  /** Step Functions' StartExecution throttle, when the scale model is on. */
  startThrottle?: StartExecutionThrottle;
  /** The emulated account's Lambda concurrency, as GetAccountSettings answers it now. */
  lambdaAccount?: () => AccountConcurrency;
}

export interface Denial {
  at: string;
  principal: string;
  action: string;
  resource: string;
  reason: string;
}

export interface AwsEndpointOptions extends Partial<AwsServices> {
  host?: string;
  port?: number;
  /** One line per denial (default: stderr). */
  log?: (line: string) => void;
}

export interface AwsEndpoint {
  url: string;
  /** Every call refused by IAM since the start, oldest first. */
  readonly denials: Denial[];
  /** Sets (or replaces) what the endpoint serves; until then every call answers 503. */
  serve(services: AwsServices): void;
  /** One pass of the buckets' lifecycle expiry (lib/local/s3.ts); 0 without buckets. */
  expireObjects(): Promise<number>;
  stop(): Promise<void>;
}

/** Requests larger than this are refused before parsing (AWS's own limits are far lower). */
const MAX_REQUEST_BYTES = 16 * 1024 * 1024;

class AwsError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** SQS's query-compatible error code (x-amzn-query-error). */
    readonly queryError?: string,
  ) {
    super(message);
  }
}

type Service = 'dynamodb' | 'sqs' | 'states' | 'secretsmanager' | 'kms' | 'lambda';

const TARGET_PREFIX: Readonly<Record<string, Service>> = {
  DynamoDB_20120810: 'dynamodb',
  AmazonSQS: 'sqs',
  AWSStepFunctions: 'states',
  secretsmanager: 'secretsmanager',
  TrentService: 'kms',
};

const CONTENT_TYPE: Readonly<Record<Service, string>> = {
  dynamodb: 'application/x-amz-json-1.0',
  sqs: 'application/x-amz-json-1.0',
  states: 'application/x-amz-json-1.0',
  secretsmanager: 'application/x-amz-json-1.1',
  kms: 'application/x-amz-json-1.1',
  lambda: 'application/json',
};

interface Caller {
  principal: Principal;
  /** arn:aws:sts::<account>:assumed-role/<role>/<session>, as AWS names the caller in errors. */
  identity: string;
}

interface Call {
  service: Service;
  operation: string;
  body: Record<string, unknown>;
  raw: Buffer;
  headers: IncomingMessage['headers'];
  caller: Caller;
}

export async function startAwsEndpoint(options: AwsEndpointOptions = {}): Promise<AwsEndpoint> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const denials: Denial[] = [];
  let services: AwsServices | undefined;
  let s3: S3Handler | undefined;
  const serve = (next: AwsServices): void => {
    services = next;
    s3 = next.objects ? s3Of(next, next.objects) : undefined;
  };
  if (options.iam && options.arns) serve(options as AwsServices);
  const standard = new Map<string, Map<string, { input: string; executionArn: string; startDate: number }>>();

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const e = err instanceof AwsError ? err : new AwsError(500, 'InternalFailure', err instanceof Error ? err.message : String(err));
      if (!res.headersSent) reply(res, serviceOf(req) ?? 'dynamodb', e);
      else res.destroy();
    });
  });

  /**
   * S3 as the roles see it: a key's secret is its role's (credentialsFor), and every action S3
   * authorizes is evaluated against the role's policies, as for the other services.
   */
  function s3Of(s: AwsServices, objects: NonNullable<AwsServices['objects']>): S3Handler {
    return createS3Handler({
      dir: objects.dir,
      buckets: objects.buckets,
      expirationDays: objects.expirationDays,
      // The template's CorsConfiguration: S3 answers a browser's preflight from it.
      cors: (bucket) => objects.cors?.[bucket] ?? [],
      region: s.arns.env.region,
      secretOf: (id) => {
        const p = s.iam.principalByAccessKey(id);
        return p ? credentialsFor(p.roleArn).secretAccessKey : undefined;
      },
      authorize: async (c) => {
        const p = s.iam.principalByAccessKey(c.accessKeyId);
        if (!p) return 'The AWS Access Key Id you provided does not exist in our records.';
        const identity = `arn:${s.arns.env.partition}:sts::${s.arns.env.account}:assumed-role/${p.roleName}/${sessionNameOf(c.sessionToken ?? '') ?? p.roleName}`;
        const d = await s.iam.evaluate({ principal: p.roleArn, action: c.action, resource: c.resource });
        if (d.allowed) return undefined;
        denials.push({ at: new Date().toISOString(), principal: identity, action: c.action, resource: c.resource, reason: d.reason });
        log(`aws-endpoint: AccessDenied ${c.action} on ${c.resource} for ${identity}: ${d.reason}`);
        const why =
          d.result === 'ExplicitlyDenied'
            ? 'with an explicit deny in a policy'
            : `because no identity-based policy allows the ${c.action} action`;
        return `User: ${identity} is not authorized to perform: ${c.action} on resource: "${c.resource}" ${why}`;
      },
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Every JSON-protocol service names its operation in X-Amz-Target; Lambda's REST API and S3
    // never do, and Lambda's requests are signed for the service `lambda`.
    if (req.headers['x-amz-target'] === undefined && scopeOf(req) === 'lambda') return lambda(req, res);
    if (req.headers['x-amz-target'] === undefined && s3) return s3(req, res);
    const raw = await readBody(req);
    const service = serviceOf(req);
    if (!service)
      throw new AwsError(400, 'UnknownOperationException', `No AWS JSON operation in X-Amz-Target ${String(req.headers['x-amz-target'])}`);
    if (!services) throw new AwsError(503, 'ServiceUnavailable', 'The local AWS endpoint is not serving yet');
    const s = services;
    const operation = String(req.headers['x-amz-target']).split('.').slice(1).join('.');
    const caller = identify(req, service, s);
    let body: Record<string, unknown>;
    try {
      const parsed: unknown = raw.length === 0 ? {} : JSON.parse(raw.toString('utf8'));
      if (!isPlainObject(parsed)) throw new Error('not an object');
      body = parsed;
    } catch {
      throw new AwsError(400, 'SerializationException', 'The request body is not a JSON object');
    }
    const call: Call = { service, operation, body, raw, headers: req.headers, caller };
    switch (service) {
      case 'dynamodb':
        return dynamo(call, s, res);
      case 'sqs':
        return sqs(call, s, res);
      case 'states':
        return states(call, s, res);
      case 'secretsmanager':
        return secrets(call, s, res);
      case 'kms':
        return kms(call, s, res);
      case 'lambda':
        throw unknownOperation(call);
    }
  }

  /** The role behind the request's access key id, from the SigV4 credential scope. */
  function identify(req: IncomingMessage, service: Service, s: AwsServices): Caller {
    const auth = String(req.headers.authorization ?? '');
    const m = /^AWS4-HMAC-SHA256 Credential=([A-Z0-9]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request,/.exec(auth);
    const invalid = () =>
      new AwsError(
        service === 'sqs' ? 403 : 400,
        'UnrecognizedClientException',
        'The security token included in the request is invalid.',
        service === 'sqs' ? 'InvalidClientTokenId;Sender' : undefined,
      );
    if (!m?.[1]) throw invalid();
    if (m[4] !== service)
      throw new AwsError(400, 'InvalidSignatureException', `Credential should be scoped to correct service: '${service}'.`);
    const principal = s.iam.principalByAccessKey(m[1]);
    if (!principal) throw invalid();
    const token = String(req.headers['x-amz-security-token'] ?? '');
    const session = sessionNameOf(token) ?? principal.roleName;
    return { principal, identity: `arn:${s.arns.env.partition}:sts::${s.arns.env.account}:assumed-role/${principal.roleName}/${session}` };
  }

  /** Evaluates every authorization the call needs; the first refusal answers for the call. */
  async function authorize(
    call: Call,
    s: AwsServices,
    checks: readonly { action: string; resource: string; context?: Record<string, string | string[]> }[],
  ): Promise<void> {
    for (const c of checks) {
      const d: IamDecision = await s.iam.evaluate({
        principal: call.caller.principal.roleArn,
        action: c.action,
        resource: c.resource,
        context: c.context,
      });
      if (d.allowed) continue;
      const denial: Denial = {
        at: new Date().toISOString(),
        principal: call.caller.identity,
        action: c.action,
        resource: c.resource,
        reason: d.reason,
      };
      denials.push(denial);
      log(`aws-endpoint: AccessDenied ${c.action} on ${c.resource} for ${call.caller.identity}: ${d.reason}`);
      const why =
        d.result === 'ExplicitlyDenied'
          ? 'with an explicit deny in a policy'
          : `because no identity-based policy allows the ${c.action} action`;
      const message = `User: ${call.caller.identity} is not authorized to perform: ${c.action} on resource: ${c.resource} ${why}`;
      throw call.service === 'sqs'
        ? new AwsError(403, 'AccessDenied', message, 'AccessDenied;Sender')
        : new AwsError(400, 'AccessDeniedException', message);
    }
  }

  // --- DynamoDB -----------------------------------------------------------------------------

  async function dynamo(call: Call, s: AwsServices, res: ServerResponse): Promise<void> {
    const { body, operation } = call;
    const tableArn = (name: unknown): string => {
      if (typeof name !== 'string' || name === '') throw new AwsError(400, 'ValidationException', 'TableName is required');
      return name.startsWith('arn:') ? name : s.arns.tableArn(name);
    };
    const action = `dynamodb:${operation}`;
    let checks: { action: string; resource: string; context?: Record<string, string | string[]> }[];
    switch (operation) {
      case 'GetItem':
      case 'PutItem':
      case 'UpdateItem':
      case 'DeleteItem': {
        // DynamoDB adds the item's partition key as `dynamodb:LeadingKeys` to every item call,
        // and to an update the attributes it names (`dynamodb:Attributes`: the key's and those
        // it changes) and what it returns (`dynamodb:ReturnValues`).
        const key = isPlainObject(body.Key) ? body.Key : isPlainObject(body.Item) ? body.Item : {};
        const pk = isPlainObject(key.pk) && typeof key.pk.S === 'string' ? key.pk.S : undefined;
        const context: Record<string, string | string[]> = pk !== undefined ? { 'dynamodb:LeadingKeys': pk } : {};
        if (operation === 'UpdateItem') {
          const names = isPlainObject(body.ExpressionAttributeNames) ? (body.ExpressionAttributeNames as Record<string, string>) : {};
          const updated = typeof body.UpdateExpression === 'string' ? updatedAttributes(body.UpdateExpression, names) : [];
          context['dynamodb:Attributes'] = [...new Set([...Object.keys(key), ...updated])];
          context['dynamodb:ReturnValues'] = typeof body.ReturnValues === 'string' ? body.ReturnValues : 'NONE';
        }
        checks = [{ action, resource: tableArn(body.TableName), ...(Object.keys(context).length > 0 ? { context } : {}) }];
        break;
      }
      case 'DescribeTable':
        checks = [{ action, resource: tableArn(body.TableName) }];
        break;
      case 'Query':
      case 'Scan': {
        // A read of an index is authorized on the index's ARN, not the table's.
        const table = tableArn(body.TableName);
        checks = [{ action, resource: typeof body.IndexName === 'string' ? `${table}/index/${body.IndexName}` : table }];
        break;
      }
      case 'BatchGetItem':
      case 'BatchWriteItem':
        checks = Object.keys(isPlainObject(body.RequestItems) ? body.RequestItems : {}).map((t) => ({ action, resource: tableArn(t) }));
        break;
      default:
        throw unknownOperation(call);
    }
    await authorize(call, s, checks);
    if (!s.dynamoEndpoint) throw new AwsError(500, 'InternalFailure', 'No DynamoDB endpoint is configured');
    const metered = s.throughput?.keysOf(operation, body);
    if (metered && s.throughput && !s.throughput.admit(metered.kind, metered.keys)) {
      // What an on-demand table answers when one key (or an index's key) is past its partition's throughput.
      throw new AwsError(
        400,
        'ProvisionedThroughputExceededException',
        'Throughput exceeds the current capacity for one or more global secondary indexes or partitions. DynamoDB is automatically scaling your table or index so please try again shortly.',
      );
    }
    const forwarded: Record<string, string> = {};
    for (const h of ['content-type', 'x-amz-target', 'x-amz-date', 'authorization', 'x-amz-security-token']) {
      const v = call.headers[h];
      if (typeof v === 'string') forwarded[h] = v;
    }
    const answer = await fetch(s.dynamoEndpoint, { method: 'POST', headers: forwarded, body: call.raw });
    const headers: Record<string, string> = {};
    for (const h of ['content-type', 'x-amzn-requestid', 'x-amz-crc32']) {
      const v = answer.headers.get(h);
      if (v !== null) headers[h] = v;
    }
    const out = Buffer.from(await answer.arrayBuffer());
    if (metered && answer.ok) s.throughput?.charge(metered.kind, metered.keys, metered.kind === 'write' ? call.raw.length : out.length);
    res.writeHead(answer.status, headers);
    res.end(out);
  }

  // --- SQS (JSON protocol) ------------------------------------------------------------------

  async function sqs(call: Call, s: AwsServices, res: ServerResponse): Promise<void> {
    const { body, operation } = call;
    if (operation !== 'SendMessage' && operation !== 'SendMessageBatch') throw unknownOperation(call);
    const url = typeof body.QueueUrl === 'string' ? body.QueueUrl : '';
    const arn = s.arns.queueArnOfUrl(url);
    if (!arn) throw new AwsError(400, 'InvalidAddress', `The address ${url} is not valid for this endpoint.`, 'InvalidAddress;Sender');
    // SendMessageBatch is authorized as sqs:SendMessage.
    await authorize(call, s, [{ action: 'sqs:SendMessage', resource: arn }]);
    const queue = s.queues?.get(arn);
    if (!queue)
      throw new AwsError(400, 'QueueDoesNotExist', 'The specified queue does not exist.', 'AWS.SimpleQueueService.NonExistentQueue;Sender');
    const send = async (entry: Record<string, unknown>): Promise<{ MessageId: string; MD5OfMessageBody: string }> => {
      if (entry.MessageAttributes !== undefined || entry.MessageSystemAttributes !== undefined) {
        throw new AwsError(
          400,
          'InvalidParameterValue',
          'Message attributes are not emulated locally (pipegate sends none)',
          'InvalidParameterValue;Sender',
        );
      }
      const text = entry.MessageBody;
      if (typeof text !== 'string')
        throw new AwsError(400, 'MissingParameter', 'The request must contain the parameter MessageBody.', 'MissingParameter;Sender');
      const delay = entry.DelaySeconds;
      if (delay !== undefined && typeof delay !== 'number')
        throw new AwsError(400, 'InvalidParameterValue', 'DelaySeconds must be a number', 'InvalidParameterValue;Sender');
      try {
        const id = await queue.send(text, { delaySeconds: delay ?? 0 });
        return { MessageId: id, MD5OfMessageBody: createHash('md5').update(text, 'utf8').digest('hex') };
      } catch (err) {
        throw new AwsError(400, 'InvalidParameterValue', err instanceof Error ? err.message : String(err), 'InvalidParameterValue;Sender');
      }
    };
    if (operation === 'SendMessage') return json(res, call.service, await send(body));
    const entries = Array.isArray(body.Entries) ? body.Entries.filter(isPlainObject) : [];
    if (entries.length === 0)
      throw new AwsError(
        400,
        'EmptyBatchRequest',
        'There should be at least one SendMessageBatchRequestEntry in the request.',
        'AWS.SimpleQueueService.EmptyBatchRequest;Sender',
      );
    if (entries.length > 10)
      throw new AwsError(
        400,
        'TooManyEntriesInBatchRequest',
        'Maximum number of entries per request are 10.',
        'AWS.SimpleQueueService.TooManyEntriesInBatchRequest;Sender',
      );
    const ids = entries.map((e) => String(e.Id));
    if (new Set(ids).size !== ids.length)
      throw new AwsError(
        400,
        'BatchEntryIdsNotDistinct',
        'Two or more batch entries in the request have the same Id.',
        'AWS.SimpleQueueService.BatchEntryIdsNotDistinct;Sender',
      );
    const Successful: Record<string, string>[] = [];
    const Failed: Record<string, unknown>[] = [];
    for (const entry of entries) {
      try {
        Successful.push({ Id: String(entry.Id), ...(await send(entry)) });
      } catch (err) {
        const e = err instanceof AwsError ? err : new AwsError(500, 'InternalError', String(err));
        Failed.push({ Id: String(entry.Id), SenderFault: e.status < 500, Code: e.code, Message: e.message });
      }
    }
    return json(res, call.service, { Successful, Failed });
  }

  // --- Step Functions -----------------------------------------------------------------------

  async function states(call: Call, s: AwsServices, res: ServerResponse): Promise<void> {
    const { body, operation } = call;
    if (operation === 'StartExecution') {
      const machineArn = typeof body.stateMachineArn === 'string' ? body.stateMachineArn : '';
      if (!/^arn:[^:]+:states:[^:]+:\d{12}:stateMachine:[^:]+$/.test(machineArn))
        throw new AwsError(400, 'InvalidArn', `Invalid Arn: '${machineArn}'`);
      await authorize(call, s, [{ action: 'states:StartExecution', resource: machineArn }]);
      const machine = s.stateMachines?.get(machineArn);
      if (!machine) throw new AwsError(400, 'StateMachineDoesNotExist', `State Machine Does Not Exist: '${machineArn}'`);
      const name = body.name === undefined ? randomUUID() : body.name;
      if (typeof name !== 'string' || !/^[^\s<>{}[\]?*"#%\\^|~`$&,;:/\p{Cc}]{1,80}$/u.test(name)) {
        throw new AwsError(400, 'InvalidName', `Invalid Name: '${String(name)}'`);
      }
      const inputText = body.input === undefined ? '{}' : body.input;
      let input: unknown;
      try {
        input = JSON.parse(String(inputText));
      } catch {
        throw new AwsError(400, 'InvalidExecutionInput', 'Invalid State Machine Execution Input: not valid JSON');
      }
      if (!isPlainObject(input)) throw new AwsError(400, 'InvalidExecutionInput', 'pipegate state machines take a JSON object as input');
      if (s.startThrottle && !s.startThrottle.admit(machine.type)) throw new AwsError(400, 'ThrottlingException', 'Rate exceeded');
      const startDate = Date.now() / 1000;
      if (machine.type === 'EXPRESS') {
        // No name idempotency for Express: every start is a new execution with its own run id.
        await machine.start(name, input);
        return json(res, call.service, { executionArn: s.arns.expressExecutionArn(machineArn, name, randomUUID()), startDate });
      }
      const names = standard.get(machineArn) ?? new Map<string, { input: string; executionArn: string; startDate: number }>();
      standard.set(machineArn, names);
      const earlier = names.get(name);
      if (earlier) {
        // Standard: the same name and input while the execution is open is the same start.
        if (earlier.input === String(inputText) && machine.running().includes(name)) {
          return json(res, call.service, { executionArn: earlier.executionArn, startDate: earlier.startDate });
        }
        throw new AwsError(400, 'ExecutionAlreadyExists', `Execution Already Exists: '${earlier.executionArn}'`);
      }
      const executionArn = s.arns.executionArn(machineArn, name);
      names.set(name, { input: String(inputText), executionArn, startDate });
      await machine.start(name, input);
      return json(res, call.service, { executionArn, startDate });
    }
    if (operation === 'StopExecution') {
      const executionArn = typeof body.executionArn === 'string' ? body.executionArn : '';
      const m = /^arn:[^:]+:states:[^:]+:\d{12}:(execution|express):([^:]+):([^:]+)(?::[^:]+)?$/.exec(executionArn);
      if (!m) throw new AwsError(400, 'InvalidArn', `Invalid Arn: '${executionArn}'`);
      if (m[1] === 'express') throw new AwsError(400, 'InvalidArn', `Express executions cannot be stopped: '${executionArn}'`);
      await authorize(call, s, [{ action: 'states:StopExecution', resource: executionArn }]);
      const machineArn = s.arns.stateMachineOfExecution(executionArn) ?? '';
      const machine = s.stateMachines?.get(machineArn);
      const name = m[3] ?? '';
      if (!machine || machine.type === 'EXPRESS' || !standard.get(machineArn)?.has(name)) {
        throw new AwsError(400, 'ExecutionDoesNotExist', `Execution Does Not Exist: '${executionArn}'`);
      }
      await machine.stop(name, typeof body.cause === 'string' ? body.cause : '');
      return json(res, call.service, { stopDate: Date.now() / 1000 });
    }
    throw unknownOperation(call);
  }

  // --- Secrets Manager ----------------------------------------------------------------------

  async function secrets(call: Call, s: AwsServices, res: ServerResponse): Promise<void> {
    const { body, operation } = call;
    if (operation !== 'GetSecretValue' && operation !== 'PutSecretValue') throw unknownOperation(call);
    const id = typeof body.SecretId === 'string' ? body.SecretId : '';
    const secret = s.secrets?.find(id);
    // An unknown secret is authorized as the ARN it was named by (AWS answers the same way).
    const resource =
      secret?.arn ??
      (id.startsWith('arn:') ? id : `arn:${s.arns.env.partition}:secretsmanager:${s.arns.env.region}:${s.arns.env.account}:secret:${id}`);
    await authorize(call, s, [{ action: `secretsmanager:${operation}`, resource }]);
    if (!secret || !s.secrets) throw new AwsError(400, 'ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
    if (operation === 'GetSecretValue') {
      if (body.VersionId !== undefined && body.VersionId !== secret.versionId) {
        throw new AwsError(400, 'ResourceNotFoundException', "Secrets Manager can't find the specified secret value for VersionId");
      }
      return json(res, call.service, {
        ARN: secret.arn,
        Name: secret.name,
        VersionId: secret.versionId,
        SecretString: secret.value,
        VersionStages: ['AWSCURRENT'],
        CreatedDate: secret.createdDate / 1000,
      });
    }
    if (typeof body.SecretString !== 'string')
      throw new AwsError(400, 'InvalidParameterException', 'SecretString is required (SecretBinary is not emulated)');
    const token = typeof body.ClientRequestToken === 'string' ? body.ClientRequestToken : undefined;
    const updated = s.secrets.put(secret.arn, body.SecretString, token);
    return json(res, call.service, { ARN: updated.arn, Name: updated.name, VersionId: updated.versionId, VersionStages: ['AWSCURRENT'] });
  }

  // --- Lambda (REST) -------------------------------------------------------------------------

  /** GetAccountSettings, the one Lambda call a pipegate function makes (the deploy-time concurrency check). */
  async function lambda(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    if (!services) throw new AwsError(503, 'ServiceUnavailable', 'The local AWS endpoint is not serving yet');
    const s = services;
    const path = new URL(req.url ?? '/', 'http://local').pathname.replace(/\/$/, '');
    const operation = req.method === 'GET' && path === '/2016-08-19/account-settings' ? 'GetAccountSettings' : `${req.method} ${path}`;
    const call: Call = { service: 'lambda', operation, body: {}, raw, headers: req.headers, caller: identify(req, 'lambda', s) };
    if (operation !== 'GetAccountSettings') throw unknownOperation(call);
    // Lambda authorizes GetAccountSettings on no resource: a policy must name "*".
    await authorize(call, s, [{ action: 'lambda:GetAccountSettings', resource: '*' }]);
    const account = s.lambdaAccount?.() ?? { quota: AWS_QUOTAS.accountConcurrency, unreserved: AWS_QUOTAS.accountConcurrency };
    return json(res, 'lambda', {
      AccountLimit: {
        TotalCodeSize: 80_530_636_800,
        CodeSizeUnzipped: 262_144_000,
        CodeSizeZipped: 52_428_800,
        ConcurrentExecutions: account.quota,
        UnreservedConcurrentExecutions: account.unreserved,
      },
      AccountUsage: { TotalCodeSize: 0, FunctionCount: 0 },
    });
  }

  // --- KMS ----------------------------------------------------------------------------------

  /**
   * GenerateDataKey, Encrypt and Decrypt on the templates' keys. Each is authorized on the key's
   * ARN (Decrypt's from the blob, as KMS finds it) with the request's encryption context as
   * condition keys (kms:EncryptionContext:<key>, kms:EncryptionContextKeys), against the
   * caller's policies and the key policy together.
   */
  async function kms(call: Call, s: AwsServices, res: ServerResponse): Promise<void> {
    const { body, operation } = call;
    if (operation !== 'GenerateDataKey' && operation !== 'Encrypt' && operation !== 'Decrypt') throw unknownOperation(call);
    let context: Record<string, string>;
    try {
      context = contextOf(body.EncryptionContext);
    } catch (e) {
      throw new AwsError(400, 'ValidationException', e instanceof Error ? e.message : String(e));
    }
    let resource: string | undefined;
    if (operation === 'Decrypt') {
      const blob = typeof body.CiphertextBlob === 'string' ? Buffer.from(body.CiphertextBlob, 'base64') : Buffer.alloc(0);
      resource = s.kms?.keyArnOfBlob(blob);
      if (resource === undefined) throw new AwsError(400, 'InvalidCiphertextException', '');
    } else {
      const id = typeof body.KeyId === 'string' ? body.KeyId : '';
      resource =
        s.kms?.keyArnOf(id) ??
        (id.startsWith('arn:') ? id : `arn:${s.arns.env.partition}:kms:${s.arns.env.region}:${s.arns.env.account}:key/${id}`);
    }
    const conditions: Record<string, string | string[]> = { 'kms:EncryptionContextKeys': Object.keys(context) };
    for (const [k, v] of Object.entries(context)) conditions[`kms:EncryptionContext:${k}`] = v;
    await authorize(call, s, [{ action: `kms:${operation}`, resource, context: conditions }]);
    if (!s.kms) throw new AwsError(400, 'NotFoundException', `Key '${resource}' does not exist`);
    let answer: Record<string, unknown>;
    try {
      answer = s.kms.call(operation, body);
    } catch (e) {
      if (e instanceof KmsError) throw new AwsError(400, e.code, e.message);
      throw e;
    }
    return json(res, call.service, answer);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host ?? '127.0.0.1';
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    denials,
    serve,
    expireObjects: () => (s3 ? s3.expire() : Promise.resolve(0)),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The top-level attributes an UpdateExpression changes: each SET, REMOVE, ADD and DELETE
 * action's target path, its first element, `#name` placeholders resolved.
 */
export function updatedAttributes(expression: string, names: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  const parts = expression.split(/\b(SET|REMOVE|ADD|DELETE)\b/i);
  for (let i = 1; i < parts.length; i += 2) {
    const clause = (parts[i] ?? '').toUpperCase();
    let depth = 0;
    let action = '';
    const actions: string[] = [];
    for (const ch of parts[i + 1] ?? '') {
      if (ch === '(') depth += 1;
      if (ch === ')') depth -= 1;
      if (ch === ',' && depth === 0) {
        actions.push(action);
        action = '';
      } else action += ch;
    }
    actions.push(action);
    for (const a of actions) {
      const target = (clause === 'SET' ? a.split('=')[0] : a.trim().split(/\s+/)[0]) ?? '';
      const first = target.trim().split(/[.[]/)[0] ?? '';
      if (first !== '') out.push(first.startsWith('#') ? (names[first] ?? first) : first);
    }
  }
  return out;
}

/** The service a SigV4 request is signed for (its credential scope's fourth part). */
function scopeOf(req: IncomingMessage): string | undefined {
  return /Credential=[^/]+\/\d{8}\/[a-z0-9-]+\/([a-z0-9-]+)\/aws4_request/.exec(String(req.headers.authorization ?? ''))?.[1];
}

function serviceOf(req: IncomingMessage): Service | undefined {
  const target = req.headers['x-amz-target'];
  if (typeof target !== 'string') return scopeOf(req) === 'lambda' ? 'lambda' : undefined;
  return TARGET_PREFIX[target.split('.')[0] ?? ''];
}

function unknownOperation(call: Call): AwsError {
  return new AwsError(
    400,
    'UnknownOperationException',
    `${call.service}:${call.operation} is not emulated by the local AWS endpoint (pipegate's functions do not call it)`,
    call.service === 'sqs' ? 'UnknownOperation;Sender' : undefined,
  );
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_REQUEST_BYTES) {
        reject(new AwsError(413, 'RequestEntityTooLarge', 'Request too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function json(res: ServerResponse, service: Service, body: unknown): void {
  res.writeHead(200, { 'content-type': CONTENT_TYPE[service], 'x-amzn-requestid': randomUUID() });
  res.end(JSON.stringify(body));
}

/**
 * AWS's JSON-protocol error: `__type` names the error (the SDK takes the part after '#'), and
 * SQS, being query-compatible, also names its classic error code in x-amzn-query-error.
 */
function reply(res: ServerResponse, service: Service, e: AwsError): void {
  const headers: Record<string, string> = { 'content-type': CONTENT_TYPE[service], 'x-amzn-requestid': randomUUID() };
  if (e.queryError) headers['x-amzn-query-error'] = e.queryError;
  const type = e.code.endsWith('Exception') || service !== 'sqs' ? `com.amazon.coral.service#${e.code}` : `com.amazonaws.sqs#${e.code}`;
  res.writeHead(e.status, headers);
  res.end(JSON.stringify({ __type: type, message: e.message }));
}

// --- The local secret store -------------------------------------------------------------------

export interface SecretRecord {
  arn: string;
  name: string;
  value: string;
  versionId: string;
  /** Milliseconds since the epoch. */
  createdDate: number;
}

/**
 * Secrets by ARN, kept in one JSON file (mode 0600) when a file is given, so PutSecretValue
 * survives a restart as it does on AWS. A secret is found by its full ARN, its ARN without the
 * six-character suffix, or its name, as Secrets Manager finds it.
 */
export class LocalSecretStore {
  private readonly secrets = new Map<string, SecretRecord>();

  constructor(private readonly file?: string) {
    if (!file) return;
    const saved = readSavedJson(file);
    for (const r of Array.isArray(saved) ? saved : []) {
      if (isPlainObject(r) && typeof r.arn === 'string' && typeof r.value === 'string')
        this.secrets.set(r.arn, r as unknown as SecretRecord);
    }
  }

  /** Creates the secret with `initial()` unless it already exists (as CloudFormation creates it once). */
  define(arn: string, initial: () => string): SecretRecord {
    const existing = this.secrets.get(arn);
    if (existing) return existing;
    return this.put(arn, initial());
  }

  find(secretId: string): SecretRecord | undefined {
    const exact = this.secrets.get(secretId);
    if (exact) return exact;
    for (const r of this.secrets.values()) {
      if (r.name === secretId || r.arn.slice(0, -7) === secretId) return r;
    }
    return undefined;
  }

  put(arn: string, value: string, versionId: string = randomUUID()): SecretRecord {
    const name = /:secret:(.+)-[A-Za-z0-9]{6}$/.exec(arn)?.[1];
    if (!name) throw new Error(`Not a secret ARN: ${arn}`);
    const record: SecretRecord = { arn, name, value, versionId, createdDate: Date.now() };
    this.secrets.set(arn, record);
    if (this.file) writeSavedJson(this.file, [...this.secrets.values()]);
    return record;
  }
}
