/**
 * What stands in front of the functions besides the authorizer: the web ACL's rate-based rules
 * and managed rule groups, and the API's resource policy limiting the owner routes.
 */
import type { CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { ROUTES } from '../../lib/routes';
import {
  FORM_PATH_PREFIX,
  LOOP_GUARDED_FUNCTIONS,
  MANAGED_RULE_GROUPS,
  ownerMethodPatterns,
  rateLimitedBody,
  WAF_RATE_WINDOW_SECONDS,
} from '../../lib/stacks/service-stack';
import { parseSettings } from '../../lib/stacks/settings';
import { buildTestApp, resourcesOf } from './stack-fixture';

type Rule = {
  Name: string;
  Priority: number;
  Action?: unknown;
  OverrideAction?: unknown;
  Statement: Record<string, Record<string, unknown>>;
};
type Statement = {
  Sid?: string;
  Effect: string;
  Principal: unknown;
  Action: string;
  Resource: string | string[];
  Condition?: Record<string, Record<string, unknown>>;
};

function built(context: Record<string, unknown> = {}) {
  const svc = resourcesOf(Template.fromStack(buildTestApp(context).service));
  const acl = Object.values(svc).find((r) => r.Type === 'AWS::WAFv2::WebACL');
  const api = Object.values(svc).find((r) => r.Type === 'AWS::ApiGateway::RestApi');
  return {
    rules: (acl?.Properties?.Rules ?? []) as Rule[],
    bodies: (acl?.Properties?.CustomResponseBodies ?? {}) as Record<string, { Content: string }>,
    statements: ((api?.Properties?.Policy as { Statement?: Statement[] } | undefined)?.Statement ?? []) as Statement[],
  };
}

describe('the web ACL: rate-based rules and managed rule groups', () => {
  const byDefault = built();
  const rule = (name: string) => byDefault.rules.find((r) => r.Name === name);

  it('answers an address past rateLimitPerAddress requests a minute 429 with Retry-After, naming the setting', () => {
    // Assess
    expect(rule('RatePerAddress')).toMatchObject({
      Priority: 1,
      Action: {
        Block: {
          CustomResponse: {
            ResponseCode: 429,
            CustomResponseBodyKey: 'AddressRateLimited',
            ResponseHeaders: [{ Name: 'Retry-After', Value: String(WAF_RATE_WINDOW_SECONDS) }],
          },
        },
      },
      Statement: { RateBasedStatement: { Limit: 1200, AggregateKeyType: 'IP', EvaluationWindowSec: 60 } },
    });
    expect(rule('RatePerAddress')?.Statement.RateBasedStatement?.ScopeDownStatement).toBeUndefined();
    expect(JSON.parse(byDefault.bodies.AddressRateLimited?.Content ?? '')).toEqual(rateLimitedBody('rateLimitPerAddress', 1200));
    expect(rateLimitedBody('rateLimitPerAddress', 1200)).toEqual({
      error: 'Too Many Requests',
      detail: expect.stringMatching(/more than 1200 requests a minute from one address \(rateLimitPerAddress\)/),
    });
  });

  it('counts the form paths apart against the stricter formRateLimitPerAddress', () => {
    // Assess
    expect(rule('FormRatePerAddress')).toMatchObject({
      Priority: 2,
      Action: { Block: { CustomResponse: { ResponseCode: 429, CustomResponseBodyKey: 'FormRateLimited' } } },
      Statement: {
        RateBasedStatement: {
          Limit: 120,
          AggregateKeyType: 'IP',
          ScopeDownStatement: {
            ByteMatchStatement: { FieldToMatch: { UriPath: {} }, PositionalConstraint: 'CONTAINS', SearchString: FORM_PATH_PREFIX },
          },
        },
      },
    });
    expect(JSON.parse(byDefault.bodies.FormRateLimited?.Content ?? '')).toEqual(rateLimitedBody('formRateLimitPerAddress', 120));
  });

  it('adds the cheap AWS managed rule groups after the rules of its own, with their own actions', () => {
    // Assess
    const groups = byDefault.rules.filter((r) => r.Statement.ManagedRuleGroupStatement);
    expect(groups.map((r) => r.Statement.ManagedRuleGroupStatement)).toEqual(
      MANAGED_RULE_GROUPS.map((Name) => ({ VendorName: 'AWS', Name })),
    );
    expect(MANAGED_RULE_GROUPS).toEqual(['AWSManagedRulesAmazonIpReputationList', 'AWSManagedRulesKnownBadInputsRuleSet']);
    for (const g of groups) {
      expect(g.OverrideAction).toEqual({ None: {} });
      expect(g.Priority).toBeGreaterThan(2);
    }
    expect(new Set(byDefault.rules.map((r) => r.Priority)).size).toBe(byDefault.rules.length);
  });

  it('takes its limits from the context, and refuses limits WAF or the rules cannot take', () => {
    // Act
    const tuned = built({ rateLimitPerAddress: '600', formRateLimitPerAddress: 30 });
    // Assess
    expect(tuned.rules.find((r) => r.Name === 'RatePerAddress')?.Statement.RateBasedStatement?.Limit).toBe(600);
    expect(tuned.rules.find((r) => r.Name === 'FormRatePerAddress')?.Statement.RateBasedStatement?.Limit).toBe(30);
    expect(() => parseSettings({ rateLimitPerAddress: 9 })).toThrow(/rateLimitPerAddress/);
    expect(() => parseSettings({ rateLimitPerAddress: 100, formRateLimitPerAddress: 200 })).toThrow(
      /formRateLimitPerAddress 200 must not exceed rateLimitPerAddress 100/,
    );
  });
});

describe("the API's resource policy", () => {
  const byDefault = built();
  const sid = (statements: Statement[], id: string) => statements.find((s) => s.Sid === id);

  it('denies the owner routes, and only them, to signed principals of any account but the deploying one', () => {
    // Prepare
    const deny = sid(byDefault.statements, 'OwnerRoutesOnlyToOwnerPrincipals');
    const owner = ROUTES.filter((r) => r.auth === 'owner');
    // Assess
    expect(deny).toMatchObject({ Effect: 'Deny', Principal: { AWS: '*' }, Action: 'execute-api:Invoke' });
    expect(deny?.Condition).toEqual({
      Null: { 'aws:PrincipalArn': 'false' },
      StringNotEquals: { 'aws:PrincipalAccount': ['123456789012'] },
    });
    expect([...(deny?.Resource as string[])].sort()).toEqual(ownerMethodPatterns('api').sort());
    expect(deny?.Resource).toHaveLength(owner.length);
    expect(ownerMethodPatterns('api')).toContain('execute-api:/api/PUT/v1/pipelines/*');
  });

  it('allows every method to unsigned requests only, so signed owners still need their identity policy', () => {
    // Assess
    expect(sid(byDefault.statements, 'UnsignedCallers')).toMatchObject({
      Effect: 'Allow',
      Principal: { AWS: '*' },
      Resource: 'execute-api:/*',
      Condition: { Null: { 'aws:PrincipalArn': 'true' } },
    });
    expect(byDefault.statements.filter((s) => s.Effect === 'Allow')).toHaveLength(1);
  });

  it('with ownerPrincipals, denies everyone else and allows the principals of other accounts', () => {
    // Act
    const narrowed = built({
      ownerPrincipals: 'arn:aws:iam::123456789012:role/owners, 210987654321, arn:aws:iam::123456789012:root',
    }).statements;
    // Assess
    expect(sid(narrowed, 'OwnerRoutesOnlyToOwnerPrincipals')?.Condition).toEqual({
      Null: { 'aws:PrincipalArn': 'false' },
      StringNotEquals: { 'aws:PrincipalAccount': ['210987654321', '123456789012'] },
      ArnNotLike: { 'aws:PrincipalArn': ['arn:aws:iam::123456789012:role/owners'] },
    });
    expect(sid(narrowed, 'OwnerPrincipalsOfOtherAccounts')).toMatchObject({
      Effect: 'Allow',
      Principal: { AWS: 'arn:aws:iam::210987654321:root' },
    });
    expect(() => parseSettings({ ownerPrincipals: 'alice' })).toThrow(/ownerPrincipals/);
  });
});

describe('the loop guard', () => {
  it("tells the function running http nodes and the push checking them the API's own URL, and no other function but the form page (which compares its own origin with the bucket's upload rule) and the MCP server (which refuses other origins)", () => {
    // Prepare
    const app = buildTestApp();
    const svc = resourcesOf(Template.fromStack(app.service));
    const apiId = Object.entries(svc).find(([, r]) => r.Type === 'AWS::ApiGateway::RestApi')?.[0];
    const told = Object.entries(app.service.functions)
      .filter(([, f]) => {
        const id = app.service.getLogicalId(f.fn.node.defaultChild as CfnElement);
        const env = (svc[id]?.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {};
        return (
          env.PIPEGATE_API_URL !== undefined &&
          JSON.stringify(env.PIPEGATE_API_URL).includes(`"Ref":"${apiId}"`) &&
          JSON.stringify(env.PIPEGATE_API_URL).includes('execute-api')
        );
      })
      .map(([name]) => name)
      .sort();
    // Assess
    // ... and the form page, which compares its own origin with the API's (test/stack/upload-cors.test.ts),
    // and the MCP server, which refuses browser pages of other origins (DNS rebinding).
    expect(told).toEqual([...LOOP_GUARDED_FUNCTIONS, 'form-page', 'deployment-mcp'].sort());
    expect(LOOP_GUARDED_FUNCTIONS).toEqual(['task-run', 'pipeline-push']);
  });
});

describe('the key material, split', () => {
  it('gives the authorizer the pepper-only secret and no grant on the key material; every other reader the key material', () => {
    // Prepare
    const app = buildTestApp();
    const stateful = resourcesOf(Template.fromStack(app.stateful));
    const svc = Template.fromStack(app.service).toJSON() as {
      Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
    };
    const ids = (prefix: string) =>
      Object.keys(stateful).filter((id) => stateful[id]?.Type === 'AWS::SecretsManager::Secret' && id.startsWith(prefix));
    const [pepperId] = ids('KeyPepper');
    const [materialId] = ids('KeyMaterial');
    const grantsOf = (fnName: string) => {
      const roleId = app.service.getLogicalId(app.service.fn(fnName).role.node.defaultChild as CfnElement);
      return Object.values(svc.Resources)
        .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties?.Roles).includes(roleId))
        .flatMap((r) => (r.Properties?.PolicyDocument as { Statement: Statement[] }).Statement)
        .filter((st) => [st.Action].flat().includes('secretsmanager:GetSecretValue'))
        .map((st) => JSON.stringify(st.Resource));
    };
    const envOf = (fnName: string) => {
      const id = app.service.getLogicalId(app.service.fn(fnName).fn.node.defaultChild as CfnElement);
      return JSON.stringify(
        (svc.Resources[id]?.Properties?.Environment as { Variables: Record<string, unknown> }).Variables.PIPEGATE_SECRET_ARN,
      );
    };
    // Assess
    expect(pepperId).toBeDefined();
    expect(grantsOf('authorizer')).toHaveLength(1);
    expect(grantsOf('authorizer')[0]).toContain(pepperId);
    expect(grantsOf('authorizer')[0]).not.toContain(materialId);
    expect(envOf('authorizer')).toContain(pepperId);
    for (const name of ['execute', 'deployment-keys', 'task-run', 'asset-get']) {
      expect(grantsOf(name).join()).toContain(materialId);
      expect(grantsOf(name).join()).not.toContain(pepperId);
    }
    const pepperInit = Object.entries(stateful).find(([id]) => id.startsWith('PepperInitResource'));
    expect(pepperInit?.[1].Properties).toMatchObject({ SecretId: { Ref: pepperId }, CopyPepperFrom: { Ref: materialId } });
    expect(JSON.stringify((pepperInit?.[1] as { DependsOn?: unknown }).DependsOn)).toContain('SecretInitResource');
  });
});
