/**
 * The REST API as a template declares it, read into what the local gateway serves: each
 * AWS::ApiGateway::Method with its resource path (from the Resource chain), authorization type
 * and the function its AWS_PROXY integration calls; the REQUEST authorizer with its identity
 * sources and TTL; the stage; the Gateway Responses; and the AWS::Lambda::Permission resources
 * that let API Gateway invoke each function. Nothing here comes from lib/routes.ts.
 */
import { isPlainObject } from '../../functions/core/values';
import { gatewayResponseFromTemplate, type GatewayResponse } from '../gateway-responses';
import type { AuthorizerSettings, GatewayRoute } from '../local/gateway';
import { wildcardMatcher } from '../local/gateway';
import type { PolicyDocument } from './iam';
import type { ResolvedStack } from './physical';

export interface TemplateApi {
  apiId: string;
  stage: string;
  routes: GatewayRoute[];
  /** ARN of the function behind each route's `handler` (the handler is the function's name). */
  functionArns: Record<string, string>;
  authorizer?: { functionArn: string; authorizerId: string; settings: AuthorizerSettings };
  gatewayResponses: GatewayResponse[];
  /** Integration time-out, milliseconds (API Gateway's default 29 s unless a method sets less). */
  integrationTimeoutMs: number;
  /** Whether a resource-based permission lets API Gateway invoke `functionArn` for `sourceArn`. */
  mayInvoke(functionArn: string, sourceArn: string): boolean;
  /** The RestApi's resource policy (its Policy property), if it has one. */
  policy?: PolicyDocument;
}

/**
 * `arn:aws:apigateway:<region>:lambda:path/2015-03-31/functions/<function arn>/invocations`
 * (Invoke), or with `streaming`, `…/2021-11-15/functions/<function arn>/response-streaming-invocations`
 * (InvokeWithResponseStream, which a STREAM integration must use).
 */
function functionOfUri(uri: string, where: string, streaming = false): string {
  const m = streaming
    ? /:lambda:path\/2021-11-15\/functions\/(arn:[^/]+)\/response-streaming-invocations$/.exec(uri)
    : /:lambda:path\/2015-03-31\/functions\/(arn:[^/]+)\/invocations$/.exec(uri);
  if (!m?.[1])
    throw new Error(`${where}: integration URI ${uri} does not invoke a Lambda function${streaming ? ' with a response stream' : ''}`);
  return m[1];
}

export function apiFromTemplate(stack: ResolvedStack): TemplateApi {
  const resources = stack.stack.template.Resources;
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const apis = ofType('AWS::ApiGateway::RestApi');
  if (apis.length !== 1) throw new Error(`${stack.stack.id}: expected one AWS::ApiGateway::RestApi, found ${apis.length}`);
  const [apiLogicalId, apiResource] = apis[0] as [string, { Properties?: Record<string, unknown> }];
  const rawPolicy = apiResource.Properties?.Policy;
  const policy =
    rawPolicy === undefined ? undefined : stack.resolve(rawPolicy, `${stack.stack.id}.Resources.${apiLogicalId}.Properties.Policy`);
  if (policy !== undefined && !(isPlainObject(policy) && policy.Statement !== undefined))
    throw new Error(`${apiLogicalId}: Policy is not a policy document`);
  const apiId = stack.physical[apiLogicalId]?.ref ?? '';
  const rootId = stack.physical[apiLogicalId]?.attributes.RootResourceId ?? '';

  const stages = ofType('AWS::ApiGateway::Stage');
  if (stages.length !== 1) throw new Error(`${stack.stack.id}: expected one AWS::ApiGateway::Stage, found ${stages.length}`);
  const stage = stack.resolveString((stages[0]?.[1].Properties ?? {}).StageName, `${stack.stack.id}.Stage.StageName`);

  // Resource id → path, through the ParentId chain.
  const parts = new Map<string, { parent: string; part: string }>();
  for (const [id, r] of ofType('AWS::ApiGateway::Resource')) {
    const props = r.Properties ?? {};
    const self = stack.physical[id]?.ref ?? id;
    parts.set(self, {
      parent: stack.resolveString(props.ParentId, `${id}.ParentId`),
      part: stack.resolveString(props.PathPart, `${id}.PathPart`),
    });
  }
  const pathOf = (resourceId: string): string => {
    const segments: string[] = [];
    let at = resourceId;
    while (at !== rootId) {
      const p = parts.get(at);
      if (!p) throw new Error(`API resource ${at} has no path back to the root`);
      segments.unshift(p.part);
      at = p.parent;
    }
    return `/${segments.join('/')}`;
  };

  let authorizer: TemplateApi['authorizer'];
  const authorizers = ofType('AWS::ApiGateway::Authorizer');
  if (authorizers.length > 1) throw new Error(`${stack.stack.id}: more than one authorizer is not served locally`);
  for (const [id, r] of authorizers) {
    const props = r.Properties ?? {};
    if (props.Type !== 'REQUEST') throw new Error(`${id}: only REQUEST authorizers are served locally (found ${String(props.Type)})`);
    const identity = props.IdentitySource === undefined ? '' : stack.resolveString(props.IdentitySource, `${id}.IdentitySource`);
    authorizer = {
      functionArn: functionOfUri(stack.resolveString(props.AuthorizerUri, `${id}.AuthorizerUri`), id),
      authorizerId: stack.physical[id]?.ref ?? id,
      settings: {
        identitySources: identity === '' ? [] : identity.split(',').map((s) => s.trim()),
        // CloudFormation's default when the property is absent.
        ttlSeconds: props.AuthorizerResultTtlInSeconds === undefined ? 300 : Number(props.AuthorizerResultTtlInSeconds),
      },
    };
  }

  const routes: GatewayRoute[] = [];
  const functionArns: Record<string, string> = {};
  let integrationTimeoutMs = 29_000;
  for (const [id, r] of ofType('AWS::ApiGateway::Method')) {
    const props = r.Properties ?? {};
    const integration = isPlainObject(props.Integration) ? props.Integration : {};
    const method = String(props.HttpMethod);
    const resourceId = stack.resolveString(props.ResourceId, `${id}.ResourceId`);
    const path = pathOf(resourceId);
    if (integration.Type === 'MOCK') {
      // The root {proxy+} mock answers 404 for paths no method matches; the local gateway
      // answers those itself with the same body, so only its shape is checked here.
      const answer = JSON.stringify(integration.IntegrationResponses ?? []);
      if (path !== '/{proxy+}' || !answer.includes('"StatusCode":"404"'))
        throw new Error(`${id}: a MOCK integration other than the 404 catch-all is not served locally`);
      continue;
    }
    if (integration.Type !== 'AWS_PROXY') throw new Error(`${id}: integration type ${String(integration.Type)} is not served locally`);
    const mode = integration.ResponseTransferMode === undefined ? 'BUFFERED' : String(integration.ResponseTransferMode);
    if (mode !== 'BUFFERED' && mode !== 'STREAM') throw new Error(`${id}: response transfer mode ${mode} is not served locally`);
    const streams = mode === 'STREAM';
    const functionArn = functionOfUri(stack.resolveString(integration.Uri, `${id}.Integration.Uri`), id, streams);
    const name = functionArn.split(':').pop() ?? functionArn;
    functionArns[name] = functionArn;
    // A streamed method's time-out (up to 15 minutes) is its own; the others share the API's.
    let routeTimeoutMs: number | undefined;
    if (typeof integration.TimeoutInMillis === 'number') {
      if (streams) routeTimeoutMs = integration.TimeoutInMillis;
      else integrationTimeoutMs = Math.min(integrationTimeoutMs, integration.TimeoutInMillis);
    }
    const type = String(props.AuthorizationType ?? 'NONE');
    let auth: GatewayRoute['auth'];
    if (type === 'CUSTOM') {
      if (!authorizer || stack.resolveString(props.AuthorizerId, `${id}.AuthorizerId`) !== authorizer.authorizerId) {
        throw new Error(`${id}: CUSTOM authorization names an authorizer the template does not declare`);
      }
      auth = 'apiKey';
    } else if (type === 'AWS_IAM') auth = 'owner';
    else if (type === 'NONE') auth = 'none';
    else throw new Error(`${id}: authorization type ${type} is not served locally`);
    routes.push({
      method,
      path,
      handler: name,
      auth,
      ...(streams ? { streams: true } : {}),
      ...(routeTimeoutMs === undefined ? {} : { integrationTimeoutMs: routeTimeoutMs }),
    });
  }

  const gatewayResponses = ofType('AWS::ApiGateway::GatewayResponse').map(([id, r]) =>
    gatewayResponseFromTemplate(stack.resolve(r.Properties ?? {}, `${id}.Properties`) as Record<string, unknown>),
  );

  const permissions = ofType('AWS::Lambda::Permission').map(([id, r]) => {
    const p = stack.resolve(r.Properties ?? {}, `${id}.Properties`) as Record<string, unknown>;
    // Compiled once: every API request asks.
    const source = typeof p.SourceArn === 'string' ? wildcardMatcher(p.SourceArn) : () => true;
    return { fn: String(p.FunctionName), principal: String(p.Principal), action: String(p.Action), source };
  });
  const mayInvoke = (functionArn: string, sourceArn: string): boolean =>
    permissions.some(
      (p) =>
        (p.fn === functionArn || p.fn === functionArn.split(':').pop()) &&
        p.principal === 'apigateway.amazonaws.com' &&
        (p.action === 'lambda:InvokeFunction' || p.action === 'lambda:*') &&
        p.source(sourceArn),
    );

  return {
    apiId,
    stage,
    routes,
    functionArns,
    authorizer,
    gatewayResponses,
    integrationTimeoutMs,
    mayInvoke,
    ...(policy ? { policy: policy as unknown as PolicyDocument } : {}),
  };
}
