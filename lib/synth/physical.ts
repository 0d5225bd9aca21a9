/**
 * The one naming scheme for what a template's resources become locally: physical names and
 * ARNs formatted exactly as AWS formats them for the synthesized account and region, queue URLs
 * that point at the local AWS endpoint, and the resolver contexts for every stack of an
 * assembly (cross-stack outputs and exports included).
 */
import { createHash } from 'node:crypto';
import type { Assembly, AssemblyStack, TemplateResource } from './assembly';
import { IntrinsicError, resolve, resolveString, type PhysicalIds, type PhysicalResource, type ResolveContext } from './intrinsics';

export interface LocalEnvironment {
  account: string;
  region: string;
  partition: string;
  urlSuffix: string;
  /** Base URL of the local AWS endpoint (lib/synth/aws-endpoint.ts); queue URLs live under it. */
  awsEndpointUrl: string;
}

const hash = (s: string, n: number): string => createHash('sha256').update(s).digest('hex').slice(0, n);

/** Letters and digits only, from a hash: API Gateway ids, IAM unique ids, secret suffixes. */
const alnum = (seed: string, n: number, upper = false): string => {
  const alphabet = upper ? 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567' : 'abcdefghijklmnopqrstuvwxyz012345';
  const bytes = createHash('sha256').update(seed).digest();
  let out = '';
  for (let i = 0; i < n; i++) out += alphabet[(bytes[i % bytes.length] as number) % 32];
  return out;
};

/** ARNs and URLs of local resources, formatted as AWS formats them. */
export class LocalArns {
  constructor(readonly env: LocalEnvironment) {}

  private arn(service: string, resource: string, region = this.env.region): string {
    return `arn:${this.env.partition}:${service}:${region}:${this.env.account}:${resource}`;
  }

  tableArn(table: string): string {
    return this.arn('dynamodb', `table/${table}`);
  }
  indexArn(table: string, index: string): string {
    return `${this.tableArn(table)}/index/${index}`;
  }
  /** The table name in a table or index ARN. */
  tableOfArn(arn: string): string | undefined {
    return /^arn:[^:]+:dynamodb:[^:]*:\d+:table\/([^/]+)/.exec(arn)?.[1];
  }

  queueArn(queue: string): string {
    return this.arn('sqs', queue);
  }
  queueUrl(queue: string): string {
    return `${this.env.awsEndpointUrl.replace(/\/$/, '')}/${this.env.account}/${queue}`;
  }
  /** A queue URL's ARN: SQS URLs are https://<host>/<account>/<name>, whatever the host. */
  queueArnOfUrl(url: string): string | undefined {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return undefined;
    }
    const m = /^\/(\d{12})\/([A-Za-z0-9_-]{1,80}(?:\.fifo)?)\/?$/.exec(parsed.pathname);
    return m?.[1] && m[2] ? `arn:${this.env.partition}:sqs:${this.env.region}:${m[1]}:${m[2]}` : undefined;
  }

  stateMachineArn(name: string): string {
    return this.arn('states', `stateMachine:${name}`);
  }
  /** Standard executions: arn:…:execution:<machine>:<name>. */
  executionArn(stateMachineArn: string, name: string): string {
    const machine = stateMachineArn.split(':').pop() ?? '';
    return this.arn('states', `execution:${machine}:${name}`);
  }
  /** Express executions: arn:…:express:<machine>:<name>:<run id>. */
  expressExecutionArn(stateMachineArn: string, name: string, runId: string): string {
    const machine = stateMachineArn.split(':').pop() ?? '';
    return this.arn('states', `express:${machine}:${name}:${runId}`);
  }
  /** The state machine an execution ARN (standard or express) belongs to. */
  stateMachineOfExecution(executionArn: string): string | undefined {
    const m = /^arn:([^:]+):states:([^:]+):(\d+):(?:execution|express):([^:]+):/.exec(executionArn);
    return m ? `arn:${m[1]}:states:${m[2]}:${m[3]}:stateMachine:${m[4]}` : undefined;
  }

  /** Secrets Manager appends a hyphen and six random characters to the name. */
  secretArn(name: string): string {
    return this.arn('secretsmanager', `secret:${name}-${alnum(`secret/${name}`, 6)}`);
  }
  kmsKeyArn(keyId: string): string {
    return this.arn('kms', `key/${keyId}`);
  }
  functionArn(name: string): string {
    return this.arn('lambda', `function:${name}`);
  }
  roleArn(name: string, rolePath = '/'): string {
    return `arn:${this.env.partition}:iam::${this.env.account}:role${rolePath}${name}`;
  }
  managedPolicyArn(name: string, policyPath = '/'): string {
    return `arn:${this.env.partition}:iam::${this.env.account}:policy${policyPath}${name}`;
  }
  logGroupArn(name: string): string {
    return this.arn('logs', `log-group:${name}:*`);
  }
  topicArn(name: string): string {
    return this.arn('sns', name);
  }
  alarmArn(name: string): string {
    return this.arn('cloudwatch', `alarm:${name}`);
  }
  /** A regional web ACL (the scope an API Gateway stage takes). */
  webAclArn(name: string, id: string): string {
    return this.arn('wafv2', `regional/webacl/${name}/${id}`);
  }
  /** Bucket ARNs name neither region nor account. */
  bucketArn(name: string): string {
    return `arn:${this.env.partition}:s3:::${name}`;
  }
  /** Rules on the default event bus. */
  ruleArn(name: string): string {
    return this.arn('events', `rule/${name}`);
  }
}

/** Name limits per type, for generated names (CloudFormation truncates the same way, then appends a suffix). */
const NAME_LIMITS: Readonly<Record<string, number>> = {
  'AWS::Lambda::Function': 64,
  'AWS::IAM::Role': 64,
  'AWS::IAM::Policy': 128,
  'AWS::IAM::ManagedPolicy': 128,
  'AWS::SQS::Queue': 80,
  'AWS::StepFunctions::StateMachine': 80,
  'AWS::SNS::Topic': 256,
  'AWS::DynamoDB::Table': 255,
  'AWS::SecretsManager::Secret': 256,
  'AWS::Logs::LogGroup': 512,
  'AWS::CloudWatch::Alarm': 255,
  'AWS::Events::Rule': 64,
  'AWS::WAFv2::WebACL': 128,
  'AWS::S3::Bucket': 63,
};

/** `<stack>-<logical id>`, deterministic so data kept on disk finds its resources after a restart. */
export function generatedName(stackName: string, logicalId: string, type: string): string {
  // Bucket names are lowercase (CloudFormation lowercases the stack name and id for them too).
  const name = type === 'AWS::S3::Bucket' ? `${stackName}-${logicalId}`.toLowerCase() : `${stackName}-${logicalId}`;
  const max = NAME_LIMITS[type] ?? 255;
  return name.length <= max ? name : `${name.slice(0, max - 9)}-${hash(name, 8)}`;
}

/** The property that names a resource explicitly, where its type has one. */
const NAME_PROPERTY: Readonly<Record<string, string>> = {
  'AWS::DynamoDB::Table': 'TableName',
  'AWS::SQS::Queue': 'QueueName',
  'AWS::StepFunctions::StateMachine': 'StateMachineName',
  'AWS::SecretsManager::Secret': 'Name',
  'AWS::Lambda::Function': 'FunctionName',
  'AWS::IAM::Role': 'RoleName',
  'AWS::IAM::Policy': 'PolicyName',
  'AWS::IAM::ManagedPolicy': 'ManagedPolicyName',
  'AWS::Logs::LogGroup': 'LogGroupName',
  'AWS::SNS::Topic': 'TopicName',
  'AWS::CloudWatch::Alarm': 'AlarmName',
  'AWS::ApiGateway::Stage': 'StageName',
  'AWS::Events::Rule': 'Name',
  'AWS::WAFv2::WebACL': 'Name',
  'AWS::S3::Bucket': 'BucketName',
};

/** What a resource of each type answers to Ref and Fn::GetAtt, given its physical name. */
function physicalOf(type: string, name: string, props: Record<string, unknown>, arns: LocalArns, id: string): PhysicalResource {
  switch (type) {
    case 'AWS::DynamoDB::Table': {
      const arn = arns.tableArn(name);
      return { ref: name, attributes: { Arn: arn, StreamArn: `${arn}/stream/1970-01-01T00:00:00.000` } };
    }
    case 'AWS::SQS::Queue': {
      const q = props.FifoQueue === true && !name.endsWith('.fifo') ? `${name}.fifo` : name;
      const url = arns.queueUrl(q);
      return { ref: url, attributes: { Arn: arns.queueArn(q), QueueName: q, QueueUrl: url } };
    }
    case 'AWS::StepFunctions::StateMachine': {
      const arn = arns.stateMachineArn(name);
      return { ref: arn, attributes: { Arn: arn, Name: name, StateMachineRevisionId: arn } };
    }
    case 'AWS::SecretsManager::Secret': {
      const arn = arns.secretArn(name);
      return { ref: arn, attributes: { Id: arn } };
    }
    case 'AWS::Lambda::Function':
      return { ref: name, attributes: { Arn: arns.functionArn(name) } };
    case 'AWS::KMS::Key': {
      // KMS names a key by a random UUID; this one is fixed per logical id, so a restart finds its material.
      const h = hash(`kms/${id}`, 32);
      const keyId = `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
      return { ref: keyId, attributes: { Arn: arns.kmsKeyArn(keyId), KeyId: keyId } };
    }
    case 'AWS::IAM::Role': {
      const rolePath = typeof props.Path === 'string' ? props.Path : '/';
      return { ref: name, attributes: { Arn: arns.roleArn(name, rolePath), RoleId: `AROA${alnum(`role/${name}`, 17, true)}` } };
    }
    case 'AWS::IAM::ManagedPolicy': {
      const arn = arns.managedPolicyArn(name, typeof props.Path === 'string' ? props.Path : '/');
      return { ref: arn, attributes: { PolicyArn: arn } };
    }
    case 'AWS::Logs::LogGroup':
      return { ref: name, attributes: { Arn: arns.logGroupArn(name) } };
    case 'AWS::SNS::Topic': {
      const arn = arns.topicArn(name);
      return { ref: arn, attributes: { TopicArn: arn, TopicName: name } };
    }
    case 'AWS::CloudWatch::Alarm':
      return { ref: name, attributes: { Arn: arns.alarmArn(name) } };
    case 'AWS::Events::Rule':
      return { ref: name, attributes: { Arn: arns.ruleArn(name) } };
    case 'AWS::S3::Bucket':
      return { ref: name, attributes: { Arn: arns.bucketArn(name), DomainName: `${name}.s3.amazonaws.com` } };
    case 'AWS::WAFv2::WebACL': {
      const h = hash(`webacl/${id}`, 32);
      const aclId = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
      return { ref: `${name}|${aclId}|${String(props.Scope ?? 'REGIONAL')}`, attributes: { Arn: arns.webAclArn(name, aclId), Id: aclId } };
    }
    case 'AWS::ApiGateway::RestApi':
      return { ref: alnum(`api/${id}`, 10), attributes: { RestApiId: alnum(`api/${id}`, 10), RootResourceId: alnum(`root/${id}`, 10) } };
    case 'AWS::ApiGateway::Resource':
      return { ref: alnum(`res/${id}`, 6), attributes: { ResourceId: alnum(`res/${id}`, 6) } };
    case 'AWS::ApiGateway::Authorizer':
      return { ref: alnum(`auth/${id}`, 6), attributes: { AuthorizerId: alnum(`auth/${id}`, 6) } };
    case 'AWS::ApiGateway::Deployment':
      return { ref: alnum(`dep/${id}`, 6), attributes: { DeploymentId: alnum(`dep/${id}`, 6) } };
    case 'AWS::ApiGateway::RequestValidator':
      return { ref: alnum(`val/${id}`, 6), attributes: { RequestValidatorId: alnum(`val/${id}`, 6) } };
    case 'AWS::Lambda::EventSourceMapping': {
      const h = hash(`esm/${id}`, 32);
      const uuid = `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
      return { ref: uuid, attributes: { Id: uuid } };
    }
    default:
      return { ref: name, attributes: {} };
  }
}

export interface ResolvedStack {
  stack: AssemblyStack;
  context: ResolveContext;
  /** Every resource's physical form (resources of a false Condition excluded). */
  physical: PhysicalIds;
  /** The template's outputs, resolved. */
  outputs: Readonly<Record<string, unknown>>;
  /** Any template value, resolved in this stack. */
  resolve(value: unknown, path?: string): unknown;
  resolveString(value: unknown, path?: string): string;
}

export interface ResolvedAssembly {
  env: LocalEnvironment;
  arns: LocalArns;
  /** Keyed by stack artifact id and by stack name. */
  stacks: Readonly<Record<string, ResolvedStack>>;
  stack(name: string): ResolvedStack;
}

/**
 * Physical resources and resolver contexts for every stack, in deployment order. `parameters`
 * gives values to template parameters without a usable Default (none today: CDK's asset
 * parameters are gone with the modern synthesizer, and BootstrapVersion is only asserted).
 */
export function resolveAssembly(
  assembly: Assembly,
  env: Omit<LocalEnvironment, 'account' | 'region'> & Partial<Pick<LocalEnvironment, 'account' | 'region'>>,
  parameters: Readonly<Record<string, Record<string, string>>> = {},
): ResolvedAssembly {
  const stacks: Record<string, ResolvedStack> = {};
  const exports = new Map<string, () => unknown>();
  let full: LocalEnvironment | undefined;
  for (const stack of assembly.stacks) {
    const e: LocalEnvironment = { ...env, account: env.account ?? stack.account, region: env.region ?? stack.region };
    full ??= e;
    const resolved = resolveStack(stack, new LocalArns(e), parameters[stack.id] ?? {}, {
      importValue: (name) => exports.get(name)?.(),
      stackOutput: (name, output) => {
        const other = stacks[name];
        if (!other) return undefined;
        return output in other.outputs ? other.outputs[output] : undefined;
      },
    });
    for (const [name, out] of Object.entries(stack.template.Outputs ?? {})) {
      if (out.Export === undefined) continue;
      const exportName = resolved.resolveString(out.Export.Name, `${stack.id}.Outputs.${name}.Export.Name`);
      exports.set(exportName, () => resolved.outputs[name]);
    }
    stacks[stack.id] = resolved;
    stacks[stack.stackName] = resolved;
  }
  if (!full) throw new Error(`${assembly.dir} holds no stacks`);
  return {
    env: full,
    arns: new LocalArns(full),
    stacks,
    stack(name) {
      const s = stacks[name];
      if (!s) throw new Error(`No stack ${name} (has ${Object.keys(stacks).join(', ')})`);
      return s;
    },
  };
}

function resolveStack(
  stack: AssemblyStack,
  arns: LocalArns,
  parameterValues: Readonly<Record<string, string>>,
  cross: Pick<ResolveContext, 'importValue' | 'stackOutput'>,
): ResolvedStack {
  const resources = stack.template.Resources;
  const parameters: Record<string, string> = {};
  for (const [name, p] of Object.entries(stack.template.Parameters ?? {})) {
    const given = parameterValues[name];
    if (given !== undefined) parameters[name] = given;
    else if (typeof p.Default === 'string' || typeof p.Default === 'number') parameters[name] = String(p.Default);
  }

  const memo = new Map<string, PhysicalResource>();
  const visiting = new Set<string>();
  const context: ResolveContext = {
    stackName: stack.stackName,
    account: arns.env.account,
    region: arns.env.region,
    partition: arns.env.partition,
    urlSuffix: arns.env.urlSuffix,
    parameters,
    mappings: stack.template.Mappings,
    ...cross,
    resource(logicalId) {
      const hit = memo.get(logicalId);
      if (hit) return hit;
      const r: TemplateResource | undefined = resources[logicalId];
      if (!r) return undefined;
      if (r.Condition !== undefined) {
        throw new IntrinsicError(`${stack.id}.Resources.${logicalId}`, `conditional resources (Condition ${r.Condition}) are not emulated`);
      }
      if (visiting.has(logicalId)) throw new IntrinsicError(`${stack.id}.Resources.${logicalId}`, 'its name depends on itself');
      visiting.add(logicalId);
      try {
        const props = r.Properties ?? {};
        const nameProp = NAME_PROPERTY[r.Type];
        const explicit = nameProp ? props[nameProp] : undefined;
        const name =
          explicit === undefined
            ? generatedName(stack.stackName, logicalId, r.Type)
            : resolveString(explicit, context, `${stack.id}.Resources.${logicalId}.Properties.${nameProp}`);
        const p = physicalOf(r.Type, name, props, arns, `${stack.id}/${logicalId}`);
        memo.set(logicalId, p);
        return p;
      } finally {
        visiting.delete(logicalId);
      }
    },
  };

  const physical: Record<string, PhysicalResource> = {};
  for (const id of Object.keys(resources)) {
    if (resources[id]?.Condition !== undefined) continue;
    physical[id] = context.resource(id) as PhysicalResource;
  }
  const outputs: Record<string, unknown> = {};
  for (const [name, out] of Object.entries(stack.template.Outputs ?? {})) {
    outputs[name] = resolve(out.Value, context, `${stack.id}.Outputs.${name}.Value`);
  }
  return {
    stack,
    context,
    physical,
    outputs,
    resolve: (value, path = stack.id) => resolve(value, context, path),
    resolveString: (value, path = stack.id) => resolveString(value, context, path),
  };
}
