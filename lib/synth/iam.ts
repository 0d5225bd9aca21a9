/**
 * IAM as the synthesized templates declare it: every role with the policies attached to it
 * (inline, AWS::IAM::Policy, customer-managed AWS::IAM::ManagedPolicy and the AWS-managed ones
 * known here), the resource policies of queues, topics and secrets, and an evaluator built on
 * @cloud-copilot/iam-simulate answering allowed or denied for one request.
 */
import { createHash } from 'node:crypto';
import { runSimulation, type EvaluationResult } from '@cloud-copilot/iam-simulate';
import type { ResolvedAssembly, ResolvedStack } from './physical';
import { isPlainObject } from '../../functions/core/values';

export interface PolicyDocument {
  Version?: string;
  Statement: unknown[] | Record<string, unknown>;
}

export interface AttachedPolicy {
  /** Where it comes from: `<stack>/<logical id>` of the role or policy, or the managed policy ARN. */
  name: string;
  document: PolicyDocument;
}

export interface Principal {
  stack: string;
  /** Logical id of the AWS::IAM::Role. */
  logicalId: string;
  roleArn: string;
  roleName: string;
  /** The access key id a process acting as this role signs with (see credentialsFor). */
  accessKeyId: string;
  policies: AttachedPolicy[];
  /** AWS-managed policies attached to the role whose documents are not known here. */
  unknownManagedPolicies: string[];
}

/**
 * AWS-managed policies are not in the template, only their ARNs. The ones pipegate's roles may
 * carry are copied here verbatim from AWS (policy version as noted); any other AWS-managed ARN
 * is listed in Principal.unknownManagedPolicies and grants nothing, and assertKnownPolicies()
 * refuses to serve a role that carries one, so no grant is silently missed.
 */
const AWS_MANAGED: Readonly<Record<string, PolicyDocument>> = {
  // v1
  'service-role/AWSLambdaBasicExecutionRole': {
    Version: '2012-10-17',
    Statement: [{ Effect: 'Allow', Action: ['logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:PutLogEvents'], Resource: '*' }],
  },
  // v2
  AWSXRayDaemonWriteAccess: {
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Action: [
          'xray:PutTraceSegments',
          'xray:PutTelemetryRecords',
          'xray:GetSamplingRules',
          'xray:GetSamplingTargets',
          'xray:GetSamplingStatisticSummaries',
        ],
        Resource: ['*'],
      },
    ],
  },
};

const asArray = (x: unknown): unknown[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);

function awsManaged(arn: string): PolicyDocument | undefined {
  const m = /^arn:[^:]+:iam::aws:policy\/(.+)$/.exec(arn);
  return m?.[1] ? AWS_MANAGED[m[1]] : undefined;
}

/**
 * Credentials for a role: the access key id names the role (the endpoint finds the principal
 * by it, as AWS finds the session behind a temporary key); the session token carries the
 * session name (Lambda names it after the function); the secret is derived and not checked.
 */
export function credentialsFor(
  roleArn: string,
  sessionName = 'local',
): { accessKeyId: string; secretAccessKey: string; sessionToken: string } {
  const h = createHash('sha256').update(roleArn).digest();
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let id = 'ASIA';
  for (let i = 0; i < 16; i++) id += alphabet[(h[i] as number) % 32];
  return {
    accessKeyId: id,
    secretAccessKey: createHash('sha256').update(`secret:${roleArn}`).digest('base64').slice(0, 40),
    sessionToken: `${TOKEN_PREFIX}${Buffer.from(JSON.stringify({ sessionName })).toString('base64url')}`,
  };
}

const TOKEN_PREFIX = 'pipegate-local.';

/** The session name in a token from credentialsFor(). */
export function sessionNameOf(token: string): string | undefined {
  if (!token.startsWith(TOKEN_PREFIX)) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token.slice(TOKEN_PREFIX.length), 'base64url').toString('utf8'));
    return isPlainObject(parsed) && typeof parsed.sessionName === 'string' ? parsed.sessionName : undefined;
  } catch {
    return undefined;
  }
}

/** Every AWS::IAM::Role in the assembly with everything attached to it, resolved. */
export function principalsOf(assembly: ResolvedAssembly): Principal[] {
  const out: Principal[] = [];
  const seen = new Set<ResolvedStack>();
  for (const stack of Object.values(assembly.stacks)) {
    if (seen.has(stack)) continue;
    seen.add(stack);
    const resources = stack.stack.template.Resources;
    const byRoleName = new Map<string, Principal>();
    for (const [logicalId, r] of Object.entries(resources)) {
      if (r.Type !== 'AWS::IAM::Role') continue;
      const physical = stack.physical[logicalId];
      const roleArn = physical?.attributes.Arn;
      if (!physical || !roleArn) continue;
      const where = `${stack.stack.id}.Resources.${logicalId}.Properties`;
      const props = r.Properties ?? {};
      const p: Principal = {
        stack: stack.stack.id,
        logicalId,
        roleArn,
        roleName: physical.ref,
        accessKeyId: credentialsFor(roleArn).accessKeyId,
        policies: [],
        unknownManagedPolicies: [],
      };
      asArray(props.Policies).forEach((inline, i) => {
        const doc = stack.resolve(isPlainObject(inline) ? inline.PolicyDocument : undefined, `${where}.Policies[${i}].PolicyDocument`);
        const name = isPlainObject(inline) && typeof inline.PolicyName === 'string' ? inline.PolicyName : String(i);
        p.policies.push({ name: `${stack.stack.id}/${logicalId}/${name}`, document: doc as PolicyDocument });
      });
      for (const [i, raw] of asArray(props.ManagedPolicyArns).entries()) {
        const arn = stack.resolveString(raw, `${where}.ManagedPolicyArns[${i}]`);
        attachManaged(p, arn, assembly);
      }
      byRoleName.set(physical.ref, p);
      out.push(p);
    }
    for (const [logicalId, r] of Object.entries(resources)) {
      if (r.Type !== 'AWS::IAM::Policy' && r.Type !== 'AWS::IAM::ManagedPolicy') continue;
      const where = `${stack.stack.id}.Resources.${logicalId}.Properties`;
      const props = r.Properties ?? {};
      const doc = stack.resolve(props.PolicyDocument, `${where}.PolicyDocument`) as PolicyDocument;
      for (const [i, roleRef] of asArray(props.Roles).entries()) {
        const roleName = stack.resolveString(roleRef, `${where}.Roles[${i}]`);
        byRoleName.get(roleName)?.policies.push({ name: `${stack.stack.id}/${logicalId}`, document: doc });
      }
    }
  }
  return out;
}

function attachManaged(p: Principal, arn: string, assembly: ResolvedAssembly): void {
  const known = awsManaged(arn);
  if (known) {
    p.policies.push({ name: arn, document: known });
    return;
  }
  // A customer-managed policy of a stack of the assembly (the role's own, or one it imports,
  // as the objects policies beside the bucket): its document is in that template.
  for (const stack of new Set(Object.values(assembly.stacks))) {
    for (const [logicalId, r] of Object.entries(stack.stack.template.Resources)) {
      if (r.Type === 'AWS::IAM::ManagedPolicy' && stack.physical[logicalId]?.ref === arn) {
        p.policies.push({ name: arn, document: stack.resolve(r.Properties?.PolicyDocument) as PolicyDocument });
        return;
      }
    }
  }
  p.unknownManagedPolicies.push(arn);
}

/** Throws when a role that local code acts as carries a managed policy whose grants are unknown. */
export function assertKnownPolicies(principals: readonly Principal[]): void {
  const bad = principals.filter((p) => p.unknownManagedPolicies.length > 0);
  if (bad.length > 0) {
    throw new Error(
      `Managed policies not known locally (add them to AWS_MANAGED in lib/synth/iam.ts): ${bad
        .map((p) => `${p.roleName}: ${p.unknownManagedPolicies.join(', ')}`)
        .join('; ')}`,
    );
  }
}

/**
 * Resource policies by resource ARN: queue policies (AWS::SQS::QueuePolicy), topic policies
 * (AWS::SNS::TopicPolicy), secret policies (AWS::SecretsManager::ResourcePolicy) and key
 * policies (AWS::KMS::Key's KeyPolicy, by the key's ARN).
 */
export function resourcePoliciesOf(assembly: ResolvedAssembly): Map<string, PolicyDocument[]> {
  const out = new Map<string, PolicyDocument[]>();
  const add = (arn: string, doc: PolicyDocument) => out.set(arn, [...(out.get(arn) ?? []), doc]);
  const seen = new Set<ResolvedStack>();
  for (const stack of Object.values(assembly.stacks)) {
    if (seen.has(stack)) continue;
    seen.add(stack);
    for (const [logicalId, r] of Object.entries(stack.stack.template.Resources)) {
      const where = `${stack.stack.id}.Resources.${logicalId}.Properties`;
      const props = r.Properties ?? {};
      if (r.Type === 'AWS::SQS::QueuePolicy') {
        const doc = stack.resolve(props.PolicyDocument, `${where}.PolicyDocument`) as PolicyDocument;
        for (const [i, url] of asArray(props.Queues).entries()) {
          const arn = assembly.arns.queueArnOfUrl(stack.resolveString(url, `${where}.Queues[${i}]`));
          if (!arn) throw new Error(`${where}.Queues[${i}] is not a queue URL`);
          add(arn, doc);
        }
      } else if (r.Type === 'AWS::SNS::TopicPolicy') {
        const doc = stack.resolve(props.PolicyDocument, `${where}.PolicyDocument`) as PolicyDocument;
        for (const [i, topic] of asArray(props.Topics).entries()) add(stack.resolveString(topic, `${where}.Topics[${i}]`), doc);
      } else if (r.Type === 'AWS::KMS::Key' && props.KeyPolicy !== undefined) {
        const arn = stack.physical[logicalId]?.attributes.Arn;
        if (arn) add(arn, stack.resolve(props.KeyPolicy, `${where}.KeyPolicy`) as PolicyDocument);
      } else if (r.Type === 'AWS::SecretsManager::ResourcePolicy') {
        add(
          stack.resolveString(props.SecretId, `${where}.SecretId`),
          stack.resolve(props.ResourcePolicy, `${where}.ResourcePolicy`) as PolicyDocument,
        );
      }
    }
  }
  return out;
}

/**
 * iam-simulate recognises condition keys with a variable part only in the `prefix/variable`
 * form (aws:PrincipalTag/<tag>); KMS's `kms:EncryptionContext:<context key>` it drops as
 * unknown, which would make every condition on it fail (or every Deny on it match). So that key
 * is carried, in the request and in every policy's conditions alike, under a global key of the
 * form it does evaluate; no pipegate role carries principal tags, so the names cannot collide.
 */
const KMS_CONTEXT_KEY = /^kms:encryptioncontext:(.+)$/i;
const carriedKmsKey = (contextKey: string): string => `aws:PrincipalTag/kms-encryption-context.${contextKey}`;

function withCarriedKmsKeys(doc: PolicyDocument): PolicyDocument {
  const statements = asArray(doc.Statement).map((st) => {
    if (!isPlainObject(st) || !isPlainObject(st.Condition)) return st;
    const condition = Object.fromEntries(
      Object.entries(st.Condition).map(([op, keys]) => [
        op,
        isPlainObject(keys)
          ? Object.fromEntries(
              Object.entries(keys).map(([k, v]) => [KMS_CONTEXT_KEY.test(k) ? carriedKmsKey(KMS_CONTEXT_KEY.exec(k)?.[1] ?? '') : k, v]),
            )
          : keys,
      ]),
    );
    return { ...st, Condition: condition };
  });
  return { ...doc, Statement: statements };
}

function carryKmsContext(context: Record<string, string | string[]>): Record<string, string | string[]> {
  return Object.fromEntries(
    Object.entries(context).map(([k, v]) => [KMS_CONTEXT_KEY.test(k) ? carriedKmsKey(KMS_CONTEXT_KEY.exec(k)?.[1] ?? '') : k, v]),
  );
}

export interface IamRequest {
  /** A role ARN, or a service principal such as `cloudwatch.amazonaws.com`. */
  principal: string;
  /** `service:Action`, e.g. `dynamodb:UpdateItem`. */
  action: string;
  /** The ARN the action targets, as AWS's service authorization reference names it. */
  resource: string;
  /** Condition keys and values; aws:SecureTransport defaults to true (the SDK always uses TLS on AWS). */
  context?: Record<string, string | string[]>;
}

export interface IamDecision {
  allowed: boolean;
  result: EvaluationResult;
  /** Why, in words (the simulator's error when the request could not be evaluated). */
  reason: string;
}

/**
 * Allowed or denied, for the principals and resource policies of one assembly. Identity and
 * resource policies are evaluated together by iam-simulate as AWS's policy evaluation logic
 * describes; there are no SCPs, RCPs, permission boundaries, session policies or VPC endpoint
 * policies in a pipegate deployment, so none are given.
 */
const DECISIONS_KEPT = 20_000;

export class IamEvaluator {
  private readonly byArn: Map<string, Principal>;
  private readonly byKey: Map<string, Principal>;
  /**
   * Decisions by request (principal, action, resource, condition values): the policies are
   * fixed for the evaluator's life, so the same request is the same decision, and evaluating
   * one is most of start:synth's own time under load (docs/performance.md). Off when a policy
   * reads the time, the one input not in the key.
   */
  private readonly decisions: Map<string, IamDecision> | undefined;

  constructor(
    readonly principals: readonly Principal[],
    private readonly resourcePolicies: ReadonlyMap<string, PolicyDocument[]> = new Map(),
    private readonly account: string = principals[0]?.roleArn.split(':')[4] ?? '',
  ) {
    this.byArn = new Map(principals.map((p) => [p.roleArn, p]));
    this.byKey = new Map(principals.map((p) => [p.accessKeyId, p]));
    const documents = JSON.stringify([
      principals.map((p) => p.policies.map((a) => a.document)),
      [...resourcePolicies.values()],
    ]).toLowerCase();
    this.decisions = documents.includes('aws:currenttime') || documents.includes('aws:epochtime') ? undefined : new Map();
  }

  /** Decisions kept (none when a policy reads the time). */
  get cachedDecisions(): number {
    return this.decisions?.size ?? 0;
  }

  static fromAssembly(assembly: ResolvedAssembly): IamEvaluator {
    return new IamEvaluator(principalsOf(assembly), resourcePoliciesOf(assembly), assembly.env.account);
  }

  principalByAccessKey(accessKeyId: string): Principal | undefined {
    return this.byKey.get(accessKeyId);
  }

  principal(roleArn: string): Principal | undefined {
    return this.byArn.get(roleArn);
  }

  async evaluate(req: IamRequest): Promise<IamDecision> {
    if (!this.decisions) return this.decide(req);
    const context = Object.entries(req.context ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const key = JSON.stringify([req.principal, req.action, req.resource, context]);
    const known = this.decisions.get(key);
    if (known) return known;
    const decision = await this.decide(req);
    // Bounded: per-item condition values (DynamoDB's leading keys) are unbounded.
    if (this.decisions.size >= DECISIONS_KEPT) this.decisions.clear();
    this.decisions.set(key, decision);
    return decision;
  }

  private async decide(req: IamRequest): Promise<IamDecision> {
    const role = this.byArn.get(req.principal);
    if (!role && req.principal.startsWith('arn:')) {
      return { allowed: false, result: 'ImplicitlyDenied', reason: `no role ${req.principal} in the templates` };
    }
    const resourcePolicies = this.resourcePolicies.get(req.resource) ?? [];
    const contextVariables: Record<string, string | string[]> = {
      'aws:SecureTransport': 'true',
      'aws:CurrentTime': new Date().toISOString(),
      'aws:EpochTime': String(Math.floor(Date.now() / 1000)),
      ...(role ? { 'aws:PrincipalArn': role.roleArn, 'aws:PrincipalAccount': this.account } : {}),
      ...carryKmsContext(req.context ?? {}),
    };
    const kms = req.action.toLowerCase().startsWith('kms:');
    const result = await runSimulation(
      {
        request: {
          principal: req.principal,
          action: req.action,
          resource: { resource: req.resource, accountId: this.account },
          contextVariables,
        },
        identityPolicies: (role?.policies ?? []).map((p, i) => ({
          name: `${i}:${p.name}`,
          policy: kms ? withCarriedKmsKeys(p.document) : p.document,
        })),
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        // Several resource policies on one resource (not the case today) are one document to IAM.
        resourcePolicy:
          resourcePolicies.length === 0
            ? undefined
            : withCarriedKmsKeys({ Version: '2012-10-17', Statement: resourcePolicies.flatMap((d) => asArray(d.Statement)) }),
      },
      { simulationMode: 'Strict' },
    );
    if (result.resultType === 'error') {
      return { allowed: false, result: 'ImplicitlyDenied', reason: `not evaluable: ${result.errors.message}` };
    }
    const allowed = result.overallResult === 'Allowed';
    const who = role ? role.roleName : req.principal;
    const reason = allowed
      ? `${who} may ${req.action} on ${req.resource}`
      : result.overallResult === 'ExplicitlyDenied'
        ? `an explicit Deny stops ${who} from ${req.action} on ${req.resource}`
        : `no policy allows ${who} to ${req.action} on ${req.resource}`;
    return { allowed, result: result.overallResult, reason };
  }
}
