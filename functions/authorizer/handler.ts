import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { KEY_REFUSALS } from '../core/errors';
import { lambdaDeps, type DepsSource } from '../adapters/deps';
import { errorFields } from '../adapters/logger';
import { authorize, type Authorized } from '../services/auth.service';
import { MCP_ROUTE_PATH } from '../../lib/routes';

/**
 * The REQUEST authorizer of every caller route. Caching is off (TTL 0, no identity sources):
 * callers send either `X-API-Key` or `Authorization: Api-Key …`, and API Gateway refuses a
 * request outright when any configured identity source is missing, so no single header can be
 * the cache key. Nor could the answer be cached by key alone: a key is refused on a route that
 * names another deployment (`other_deployment`).
 *
 * A refused key is a Deny with the reason in its context, not a thrown `Unauthorized`: API
 * Gateway's UNAUTHORIZED response cannot see an authorizer's context, while its ACCESS_DENIED
 * response can (`$context.authorizer.reason`), and lib/gateway-responses.ts turns that one into
 * the 401 with the reason. The key itself is never logged nor returned.
 */
export const createHandler =
  (deps: DepsSource) =>
  async (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
    const d = deps();
    // Every value of a header sent twice (`headers` keeps only the last): two keys are refused.
    const headers: Record<string, string | readonly string[] | undefined> = {
      ...(event.headers ?? {}),
      ...(event.multiValueHeaders ?? {}),
    };
    let answer;
    try {
      // MCP clients send their token as `Authorization: Bearer`: taken on that route alone.
      answer = await authorize(d, headers, event.pathParameters?.deployment_id, { bearer: event.resource === MCP_ROUTE_PATH });
    } catch (e) {
      d.log.error('authorizer failed', errorFields(e));
      throw e;
    }
    const [arnPrefix, stage] = event.methodArn.split('/');
    const callerRoutes = `${arnPrefix}/${stage}/*/v1/deployments/*`;
    if (!answer.ok) {
      d.log.info('API key refused', { reason: answer.reason });
      return {
        principalId: 'anonymous',
        policyDocument: { Version: '2012-10-17', Statement: [{ Action: 'execute-api:Invoke', Effect: 'Deny', Resource: callerRoutes }] },
        context: { reason: answer.reason, detail: KEY_REFUSALS[answer.reason] },
      };
    }
    return {
      principalId: answer.deploymentId,
      policyDocument: { Version: '2012-10-17', Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: callerRoutes }] },
      context: { deployment_id: answer.deploymentId, revision: answer.revision, deleted: answer.deleted, ...limitsContext(answer) },
    };
  };

/**
 * The caller's consumer and limits, for the handlers that enforce them (adapters/api.ts
 * callerAuth). Flat: API Gateway takes only strings, numbers and booleans in a context.
 */
function limitsContext(a: Authorized): Record<string, string | number> {
  const c: Record<string, string | number> = {};
  if (a.consumerId !== undefined) c.consumer_id = a.consumerId;
  if (a.limits.rate_limit) {
    c.rate_requests = a.limits.rate_limit.requests;
    c.rate_per_seconds = a.limits.rate_limit.per_seconds;
  }
  if (a.limits.quota) {
    c.quota_executions = a.limits.quota.executions;
    c.quota_per = a.limits.quota.per;
  }
  return c;
}

export const handler = createHandler(lambdaDeps);
