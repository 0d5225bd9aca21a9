import type { Assembly, Template } from '../../lib/synth/assembly';
import { credentialsFor, IamEvaluator, principalsOf } from '../../lib/synth/iam';
import { resolveAssembly, type ResolvedAssembly } from '../../lib/synth/physical';
import { SYNTH_TIMEOUT_MS, testAssembly } from '../support/synth';
import { functionRoleArn, localEnv, tableArn, queueArn, withTemplate } from './synth-helpers';

describe('IAM from the synthesized templates', () => {
  let assembly: Assembly;
  let resolved: ResolvedAssembly;
  let iam: IamEvaluator;

  beforeAll(async () => {
    assembly = await testAssembly();
    resolved = resolveAssembly(assembly, localEnv());
    iam = IamEvaluator.fromAssembly(resolved);
  }, SYNTH_TIMEOUT_MS);

  const can = async (fn: string, action: string, resource: string, context?: Record<string, string>) =>
    (await iam.evaluate({ principal: functionRoleArn(resolved, fn), action, resource, context })).allowed;

  it('finds every role, each function role with its default policy and the managed policies it imports attached', () => {
    // Act
    const principals = principalsOf(resolved);
    const execute = principals.find((p) => p.roleArn === functionRoleArn(resolved, 'execute'));
    // Assess
    expect(principals.length).toBeGreaterThanOrEqual(assembly.functions.length);
    // The objects policies live in the stateful stack, beside the bucket.
    expect(execute?.policies.map((p) => p.name)).toEqual([
      expect.stringMatching(/^arn:aws:iam::123456789012:policy\/PipegateStateful-ObjectsRead/),
      expect.stringMatching(/^arn:aws:iam::123456789012:policy\/PipegateStateful-ObjectsCallerExecution/),
      expect.stringMatching(/^Pipegate\/ExecuteRoleDefaultPolicy/),
    ]);
    expect(execute?.unknownManagedPolicies).toEqual([]);
    expect(iam.principalByAccessKey(credentialsFor(execute?.roleArn ?? '').accessKeyId)).toEqual(execute);
  });

  it('allows what a role is granted, on the ARN it is granted for, and nothing else', async () => {
    // Assess
    expect(await can('execute', 'dynamodb:PutItem', tableArn(resolved))).toBe(true);
    // UpdateItem only on claimed uploads, as DynamoDB names the item's partition key (the wait
    // bound's counters too when the deploy reserves concurrency: nothing reserved, no bound).
    expect(await can('execute', 'dynamodb:UpdateItem', tableArn(resolved), { 'dynamodb:LeadingKeys': 'EXEC#x' })).toBe(false);
    expect(await can('execute', 'dynamodb:UpdateItem', tableArn(resolved), { 'dynamodb:LeadingKeys': 'WAITERS#execute#3' })).toBe(false);
    expect(await can('execute', 'dynamodb:UpdateItem', tableArn(resolved), { 'dynamodb:LeadingKeys': 'UPLOAD#u1' })).toBe(true);
    expect(await can('execute', 'dynamodb:PutItem', `${tableArn(resolved)}-other`)).toBe(false);
    expect(await can('execute', 'sqs:SendMessage', queueArn(resolved, 'Executions'))).toBe(true);
    expect(await can('execute', 'sqs:SendMessage', queueArn(resolved, 'Callbacks'))).toBe(false);
    expect(await can('execution-status', 'sqs:SendMessage', queueArn(resolved, 'Executions'))).toBe(false);
  });

  it('tells a table from its indexes: Query on an index needs that index ARN', async () => {
    // Assess
    expect(await can('pipeline-list', 'dynamodb:Query', `${tableArn(resolved)}/index/gsi1`)).toBe(true);
    expect(await can('pipeline-list', 'dynamodb:Query', `${tableArn(resolved)}/index/nope`)).toBe(false);
    expect(await can('execution-status', 'dynamodb:Query', `${tableArn(resolved)}/index/gsi1`)).toBe(false);
  });

  it("applies the queues' resource policies: their TLS-only Deny refuses a plain-HTTP call", async () => {
    // Assess
    const q = queueArn(resolved, 'Executions');
    expect(await can('execute', 'sqs:SendMessage', q, { 'aws:SecureTransport': 'true' })).toBe(true);
    const plain = await iam.evaluate({
      principal: functionRoleArn(resolved, 'execute'),
      action: 'sqs:SendMessage',
      resource: q,
      context: { 'aws:SecureTransport': 'false' },
    });
    expect(plain).toMatchObject({ allowed: false, result: 'ExplicitlyDenied' });
  });

  it('denies a call once the statement granting it is removed from the template', async () => {
    // Prepare: the execute role's policy without its sqs:SendMessage statement.
    const stripped = withTemplate(assembly, 'Pipegate', (t: Template) => {
      const [, policy] = Object.entries(t.Resources).find(([id]) => id.startsWith('ExecuteRoleDefaultPolicy')) ?? [];
      const doc = policy?.Properties?.PolicyDocument as { Statement: { Action: unknown }[] };
      doc.Statement = doc.Statement.filter((s) => s.Action !== 'sqs:SendMessage');
    });
    const strippedResolved = resolveAssembly(stripped, localEnv());
    const strippedIam = IamEvaluator.fromAssembly(strippedResolved);
    const request = {
      principal: functionRoleArn(strippedResolved, 'execute'),
      action: 'sqs:SendMessage',
      resource: queueArn(strippedResolved, 'Executions'),
    };
    // Act
    const before = await iam.evaluate(request);
    const after = await strippedIam.evaluate(request);
    // Assess
    expect(before.allowed).toBe(true);
    expect(after).toMatchObject({ allowed: false, result: 'ImplicitlyDenied' });
  });

  it('knows every managed policy a function role carries and lists the ones it does not know', () => {
    // Prepare
    const fnRoles = new Set(assembly.functions.map((f) => resolved.stack(f.stack).resolveString(f.properties.Role)));
    // Act
    const principals = principalsOf(resolved);
    // Assess
    expect(principals.filter((p) => fnRoles.has(p.roleArn)).flatMap((p) => p.unknownManagedPolicies)).toEqual([]);
    expect(principals.flatMap((p) => p.unknownManagedPolicies)).toEqual([
      'arn:aws:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs',
    ]);
  });

  it('denies a role the templates do not hold', async () => {
    // Act
    const d = await iam.evaluate({
      principal: 'arn:aws:iam::123456789012:role/nobody',
      action: 'dynamodb:GetItem',
      resource: tableArn(resolved),
    });
    // Assess
    expect(d.allowed).toBe(false);
  });
});

describe('decisions kept by request', () => {
  const roleArn = 'arn:aws:iam::123456789012:role/r';
  const table = 'arn:aws:dynamodb:us-east-1:123456789012:table/T';
  const evaluator = (condition: Record<string, unknown>): IamEvaluator =>
    new IamEvaluator([
      {
        stack: 'S',
        logicalId: 'R',
        roleArn,
        roleName: 'r',
        accessKeyId: 'AKIAR',
        policies: [
          {
            name: 'p',
            document: {
              Version: '2012-10-17',
              Statement: [{ Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: table, Condition: condition }],
            },
          },
        ],
        unknownManagedPolicies: [],
      },
    ]);
  const get = (key: string) => ({
    principal: roleArn,
    action: 'dynamodb:GetItem',
    resource: table,
    context: { 'dynamodb:LeadingKeys': [key] },
  });

  it('answers the same request with the same decision, each set of condition values apart', async () => {
    // Prepare
    const iam = evaluator({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['DEPLOYMENT#*'] } });

    // Act
    const first = await iam.evaluate(get('DEPLOYMENT#1'));
    const again = await iam.evaluate(get('DEPLOYMENT#1'));
    const other = await iam.evaluate(get('EXEC#1'));

    // Assess
    expect(first.allowed).toBe(true);
    expect(again).toBe(first);
    expect(other.allowed).toBe(false);
    expect(iam.cachedDecisions).toBe(2);
  });

  it('keeps nothing when a policy reads the time, the one input not in the key', async () => {
    // Prepare
    const iam = evaluator({ DateLessThan: { 'aws:CurrentTime': '2000-01-01T00:00:00Z' } });

    // Act
    const refused = await iam.evaluate(get('DEPLOYMENT#1'));

    // Assess
    expect(refused.allowed).toBe(false);
    expect(iam.cachedDecisions).toBe(0);
  });
});
