import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { isAppError } from '../core/errors';
import { lambdaDeps, type DepsSource } from '../adapters/deps';
import { errorFields } from '../adapters/logger';
import { authorize } from '../services/auth.service';

/**
 * The REQUEST authorizer of every caller route. Caching is off (TTL 0, no identity sources):
 * callers send either `X-API-Key` or `Authorization: Api-Key …`, and API Gateway refuses a
 * request outright when any configured identity source is missing, so no single header can be
 * the cache key. The policy allows every caller route of the stage, so it would stay correct
 * even if caching were turned on; the handlers compare the key's deployment with the path.
 */
export const createHandler =
  (deps: DepsSource) =>
  async (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
    const d = deps();
    const headers: Record<string, string | undefined> = { ...(event.headers ?? {}) };
    let who;
    try {
      who = await authorize(d, headers);
    } catch (e) {
      // API Gateway turns exactly this message into its 401 (the UNAUTHORIZED gateway response).
      if (isAppError(e) && e.code === 'Unauthorized') throw new Error('Unauthorized');
      d.log.error('authorizer failed', errorFields(e));
      throw e;
    }
    const [arnPrefix, stage] = event.methodArn.split('/');
    return {
      principalId: who.deploymentId,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [
          { Action: 'execute-api:Invoke', Effect: 'Allow', Resource: `${arnPrefix}/${stage}/*/v1/deployments/*` },
        ],
      },
      context: { deployment_id: who.deploymentId, revision: who.revision, deleted: who.deleted },
    };
  };

export const handler = createHandler(lambdaDeps);
