/**
 * The REST API's resource policy (AWS::ApiGateway::RestApi Policy), evaluated as API Gateway
 * evaluates it for each authorization type:
 * - NONE: the policy alone decides, and only an explicit Allow lets the request through;
 * - CUSTOM (the API-key authorizer): an explicit Deny refuses it before the authorizer runs;
 *   otherwise the authorizer decides;
 * - AWS_IAM (owner routes): an explicit Deny refuses it; otherwise the principal's identity
 *   policy or the resource policy must allow it (both, for a principal of another account).
 * The local owner's bearer token stands for one IAM principal (`ownerPrincipal`) whose identity
 * policy allows execute-api:Invoke: IAM's own grant is what start:synth cannot see, so it is
 * taken as given, and the template's policy is what is checked.
 * `execute-api:/<stage>/<METHOD>/<path>` resources are expanded to this API's ARNs, as API
 * Gateway does when the policy is saved.
 */
import { runSimulation } from '@cloud-copilot/iam-simulate';
import { isPlainObject } from '../../functions/core/values';
import type { GatewayAuth } from '../local/gateway/routing';
import type { PolicyDocument } from './iam';

export interface ApiPolicyIdentity {
  partition: string;
  region: string;
  account: string;
  apiId: string;
}

/** Allowed or not, for one request to a method of the given authorization. */
export type ApiPolicyCheck = (auth: GatewayAuth, methodArn: string) => Promise<boolean>;

/** Stands for a caller with no IAM identity: a principal of no account the policy names, with every identity grant. */
const UNSIGNED = 'arn:aws:iam::000000000000:user/unsigned-caller';
const ALLOW_INVOKE = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'execute-api:Invoke', Resource: '*' }] };

const asArray = (x: unknown): unknown[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);

/** The policy with its `execute-api:/…` shorthand resources written out as ARNs. */
export function expandApiPolicy(policy: PolicyDocument, api: ApiPolicyIdentity): PolicyDocument {
  const expand = (r: unknown) =>
    typeof r === 'string' && r.startsWith('execute-api:/')
      ? `arn:${api.partition}:execute-api:${api.region}:${api.account}:${api.apiId}/${r.slice('execute-api:/'.length)}`
      : r;
  const statements = asArray(policy.Statement).map((s) => {
    if (!isPlainObject(s)) return s;
    const out: Record<string, unknown> = { ...s };
    for (const key of ['Resource', 'NotResource'])
      if (s[key] !== undefined) out[key] = Array.isArray(s[key]) ? s[key].map(expand) : expand(s[key]);
    return out;
  });
  return { Version: policy.Version ?? '2012-10-17', Statement: statements };
}

/**
 * The check for one API: undefined policy allows everything (API Gateway without a resource
 * policy leaves the decision to the method's own authorization).
 */
export function apiPolicyCheck(policy: PolicyDocument | undefined, api: ApiPolicyIdentity, ownerPrincipal: string): ApiPolicyCheck {
  if (!policy) return () => Promise.resolve(true);
  const expanded = expandApiPolicy(policy, api);
  const ownerAccount = ownerPrincipal.split(':')[4] ?? '';
  return async (auth, methodArn) => {
    const signed = auth === 'owner';
    const principal = signed ? ownerPrincipal : UNSIGNED;
    const result = await runSimulation(
      {
        request: {
          principal,
          action: 'execute-api:Invoke',
          resource: { resource: methodArn, accountId: api.account },
          // The principal keys exist only on IAM-signed requests.
          contextVariables: {
            'aws:SecureTransport': 'true',
            'aws:CurrentTime': new Date().toISOString(),
            'aws:EpochTime': String(Math.floor(Date.now() / 1000)),
            ...(signed ? { 'aws:PrincipalArn': ownerPrincipal, 'aws:PrincipalAccount': ownerAccount } : {}),
          },
        },
        identityPolicies: [{ name: 'identity', policy: ALLOW_INVOKE }],
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        resourcePolicy: expanded,
      },
      { simulationMode: 'Strict' },
    );
    if (result.resultType === 'error') throw new Error(`The API's resource policy could not be evaluated: ${result.errors.message}`);
    if (result.overallResult === 'ExplicitlyDenied') return false;
    // The unsigned stand-in belongs to no account of the policy, so Allowed means an explicit Allow.
    if (auth === 'none') return result.overallResult === 'Allowed';
    return auth === 'apiKey' || result.overallResult === 'Allowed';
  };
}
