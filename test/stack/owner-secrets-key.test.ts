/**
 * The owner secrets' KMS key: rotated, retained, usable only under an owner secret's encryption
 * context, and granted only to the function that seals (secret-put: GenerateDataKey) and the
 * one that opens (task-run: Decrypt).
 */
import { Template } from 'aws-cdk-lib/assertions';
import type { CfnElement } from 'aws-cdk-lib';
import { OWNER_SECRET_PURPOSE } from '../../functions/core/envelope';
import { allFunctionNames } from '../../lib/stacks/permissions';
import { buildTestApp, resourcesOf } from './stack-fixture';

const built = buildTestApp();
const stateful = resourcesOf(Template.fromStack(built.stateful));
const svc = resourcesOf(Template.fromStack(built.service));
const keyId = built.stateful.getLogicalId(built.stateful.ownerSecretsKey.node.defaultChild as CfnElement);

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Principal?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}
const actions = (s: Statement): string[] => [s.Action].flat();
const kmsStatementsOf = (fnName: string): Statement[] => {
  const roleId = built.service.getLogicalId(built.service.fn(fnName).role.node.defaultChild as CfnElement);
  return Object.values(svc)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties?.Roles).includes(`"${roleId}"`))
    .flatMap((r) => (r.Properties?.PolicyDocument as { Statement: Statement[] }).Statement)
    .filter((s) => actions(s).some((a) => a.startsWith('kms:') || a === '*'));
};

describe('the owner secrets key', () => {
  it('is a symmetric key with rotation on, retained on delete', () => {
    const key = stateful[keyId] as {
      Type: string;
      Properties: Record<string, unknown>;
      DeletionPolicy?: string;
      UpdateReplacePolicy?: string;
    };
    expect(key.Type).toBe('AWS::KMS::Key');
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.DeletionPolicy).toBe('Retain');
    expect(key.UpdateReplacePolicy).toBe('Retain');
  });

  it("refuses, in its own policy, any use outside an owner secret's encryption context", () => {
    const policy = (stateful[keyId]?.Properties?.KeyPolicy as { Statement: Statement[] }).Statement;
    const deny = policy.find((s) => s.Effect === 'Deny');
    expect(deny).toMatchObject({
      Principal: { AWS: '*' },
      Condition: { StringNotEquals: { 'kms:EncryptionContext:purpose': OWNER_SECRET_PURPOSE } },
    });
    for (const a of ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey*', 'kms:ReEncrypt*'])
      expect(actions(deny as Statement)).toContain(a);
    // The rest is KMS's default: the account's IAM policies decide who may use it.
    expect(policy.filter((s) => s.Effect === 'Allow')).toHaveLength(1);
  });

  it('lets secret-put generate data keys and task-run decrypt them, each under the context only; no other function may use it', () => {
    const granted: Record<string, string[]> = {};
    for (const name of allFunctionNames()) {
      const stmts = kmsStatementsOf(name);
      if (stmts.length === 0) continue;
      granted[name] = stmts.flatMap(actions).sort();
      for (const s of stmts) {
        expect(JSON.stringify(s.Resource)).toContain(keyId);
        expect(s.Condition).toEqual({
          StringEquals: { 'kms:EncryptionContext:purpose': OWNER_SECRET_PURPOSE },
          Null: { 'kms:EncryptionContext:secret_name': 'false' },
        });
      }
    }
    expect(granted).toEqual({ 'secret-put': ['kms:GenerateDataKey'], 'task-run': ['kms:Decrypt'] });
  });

  it('names the key only to the functions that use it, and secret-put no longer reads the key material', () => {
    for (const name of allFunctionNames()) {
      const id = built.service.getLogicalId(built.service.fn(name).fn.node.defaultChild as CfnElement);
      const env = (svc[id]?.Properties?.Environment as { Variables: Record<string, unknown> }).Variables;
      expect([name, 'PIPEGATE_OWNER_SECRETS_KEY' in env]).toEqual([name, ['secret-put', 'task-run'].includes(name)]);
    }
    const roleId = built.service.getLogicalId(built.service.fn('secret-put').role.node.defaultChild as CfnElement);
    const putPolicies = Object.values(svc).filter(
      (r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties?.Roles).includes(`"${roleId}"`),
    );
    expect(JSON.stringify(putPolicies)).not.toContain('secretsmanager:');
  });

  it('leaves the key material to the functions that use the master key: pepper-only readers get KeyPepper alone', () => {
    const materialId = built.stateful.getLogicalId(built.stateful.secret.node.defaultChild as CfnElement);
    const pepperId = built.stateful.getLogicalId(built.stateful.pepperSecret.node.defaultChild as CfnElement);
    const reads = (fnName: string): string => {
      const roleId = built.service.getLogicalId(built.service.fn(fnName).role.node.defaultChild as CfnElement);
      return JSON.stringify(
        Object.values(svc)
          .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties?.Roles).includes(`"${roleId}"`))
          .flatMap((r) => (r.Properties?.PolicyDocument as { Statement: Statement[] }).Statement)
          .filter((st) => actions(st).includes('secretsmanager:GetSecretValue'))
          .map((st) => st.Resource),
      );
    };
    for (const name of ['authorizer', 'form-page', 'form-upload', 'deployment-consumers']) {
      expect([name, reads(name).includes(pepperId), reads(name).includes(materialId)]).toEqual([name, true, false]);
    }
    for (const name of ['secret-put', 'secret-list', 'secret-delete']) expect([name, reads(name)]).toEqual([name, '[]']);
  });

  it('is granted by no policy of the stateful stack', () => {
    const policies = Object.values(stateful).filter((r) => r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy');
    expect(JSON.stringify(policies)).not.toContain('kms:');
  });
});
