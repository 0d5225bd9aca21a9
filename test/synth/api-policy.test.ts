/**
 * The API's resource policy as start:synth evaluates it, on the policy the stack synthesizes:
 * owner routes only to the configured principals, unsigned callers let through to every
 * method, and a policy without the unsigned callers' Allow shutting the unauthenticated routes.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { ROUTES } from '../../lib/routes';
import { apiPolicyCheck, expandApiPolicy, type ApiPolicyIdentity } from '../../lib/synth/api-policy';
import type { PolicyDocument } from '../../lib/synth/iam';
import { buildTestApp, resourcesOf } from '../stack/stack-fixture';

const API: ApiPolicyIdentity = { partition: 'aws', region: 'us-east-1', account: '123456789012', apiId: 'abc123' };
const arn = (method: string, path: string) =>
  `arn:aws:execute-api:us-east-1:123456789012:abc123/api/${method}${path.replace(/\{[^}]+\}/g, 'x')}`;

function policyOf(context: Record<string, unknown> = {}): PolicyDocument {
  const built = buildTestApp(context);
  const api = Object.values(resourcesOf(Template.fromStack(built.service))).find((r) => r.Type === 'AWS::ApiGateway::RestApi');
  return api?.Properties?.Policy as PolicyDocument;
}

const owner = ROUTES.filter((r) => r.auth === 'owner');
const others = ROUTES.filter((r) => r.auth !== 'owner');

describe("the API's resource policy under start:synth", () => {
  const byDefault = policyOf();
  const narrowed = policyOf({ ownerPrincipals: 'arn:aws:iam::123456789012:role/pipegate-owners,210987654321' });

  it('lets a principal of the deploying account call every owner route by default, and one of another account none', async () => {
    // Prepare
    const ours = apiPolicyCheck(byDefault, API, 'arn:aws:iam::123456789012:user/alice');
    const theirs = apiPolicyCheck(byDefault, API, 'arn:aws:iam::999999999999:user/mallory');
    // Act / Assess
    for (const r of owner) {
      await expect(ours('owner', arn(r.method, r.path))).resolves.toBe(true);
      await expect(theirs('owner', arn(r.method, r.path))).resolves.toBe(false);
    }
  });

  it('with ownerPrincipals, lets only the named role and the named account call owner routes', async () => {
    // Prepare
    const check = (p: string) => apiPolicyCheck(narrowed, API, p);
    const push = arn('PUT', '/v1/pipelines/{pipeline_id}');
    // Act / Assess
    await expect(check('arn:aws:iam::123456789012:role/pipegate-owners')('owner', push)).resolves.toBe(true);
    await expect(check('arn:aws:iam::210987654321:user/partner')('owner', push)).resolves.toBe(true);
    await expect(check('arn:aws:iam::123456789012:user/alice')('owner', push)).resolves.toBe(false);
    await expect(check('arn:aws:iam::123456789012:role/some-lambda')('owner', arn('GET', '/v1/secrets'))).resolves.toBe(false);
  });

  it('lets unsigned callers through to every caller and public route, whatever ownerPrincipals says', async () => {
    for (const policy of [byDefault, narrowed]) {
      const check = apiPolicyCheck(policy, API, 'arn:aws:iam::123456789012:user/nobody');
      for (const r of others) await expect(check(r.auth, arn(r.method, r.path))).resolves.toBe(true);
      // The 404 mock's methods (ANY /{proxy+}) have no authorization either.
      await expect(check('none', arn('GET', '/v1/no/such/path'))).resolves.toBe(true);
    }
  });

  it('refuses an unauthenticated route that the policy does not explicitly allow, and a caller route only on an explicit Deny', async () => {
    // Prepare: the policy without its Allow for unsigned callers, then with a Deny of one route.
    const statements = (byDefault.Statement as Array<{ Sid?: string }>).filter((s) => s.Sid !== 'UnsignedCallers');
    const noAllow = apiPolicyCheck({ ...byDefault, Statement: statements }, API, 'arn:aws:iam::123456789012:user/nobody');
    const denyStatus = apiPolicyCheck(
      {
        Version: '2012-10-17',
        Statement: [
          {
            Effect: 'Deny',
            Principal: '*',
            Action: 'execute-api:Invoke',
            Resource: 'execute-api:/api/GET/v1/deployments/executions/*/status',
          },
        ],
      },
      API,
      'arn:aws:iam::123456789012:user/nobody',
    );
    // Act / Assess
    await expect(noAllow('none', arn('GET', '/v1/assets/{token}'))).resolves.toBe(false);
    await expect(noAllow('apiKey', arn('POST', '/v1/deployments/{deployment_id}/executions'))).resolves.toBe(true);
    await expect(denyStatus('apiKey', arn('GET', '/v1/deployments/executions/{execution_id}/status'))).resolves.toBe(false);
    await expect(denyStatus('apiKey', arn('GET', '/v1/deployments/executions/{execution_id}/result'))).resolves.toBe(true);
  });

  it("writes the execute-api shorthand out as this API's ARNs", () => {
    // Act
    const expanded = expandApiPolicy(
      { Statement: [{ Effect: 'Allow', Principal: '*', Action: 'execute-api:Invoke', Resource: ['execute-api:/*', 'arn:aws:s3:::x'] }] },
      API,
    );
    // Assess
    expect(expanded.Statement).toEqual([
      expect.objectContaining({ Resource: ['arn:aws:execute-api:us-east-1:123456789012:abc123/*', 'arn:aws:s3:::x'] }),
    ]);
  });

  it('allows everything when the API has no resource policy', async () => {
    await expect(apiPolicyCheck(undefined, API, 'arn:aws:iam::999999999999:user/x')('owner', arn('GET', '/v1/secrets'))).resolves.toBe(
      true,
    );
  });
});
