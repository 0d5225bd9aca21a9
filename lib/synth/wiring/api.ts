/**
 * The template's REST API as the local gateway serves it: its methods, integrations (each
 * invoking its function only with a resource-based permission for the method), Lambda
 * authorizer, gateway responses, resource policy, WAF web ACL and (under the scale model) the
 * stage's throttling.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { APIGatewayAuthorizerResult, APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { createLogger } from '../../../functions/adapters/logger';
import { API_GATEWAY_MAX_BODY_BYTES } from '../../gateway-responses';
import { createGateway } from '../../local/gateway';
import { gatewayReplies, send } from '../../local/gateway/replies';
import { compileRoutes, matchResource, normaliseBasePath, stripBasePath } from '../../local/gateway/routing';
import { apiPolicyCheck } from '../api-policy';
import { FunctionError } from '../function-host';
import { apiFromTemplate, type TemplateApi } from '../gateway-from-template';
import type { ScaleModel } from '../scale-model';
import { firewallFromTemplate } from '../waf';
import type { FunctionLookup, Wiring } from './context';

/** The owner token's principal by default: a user of the deploying account. */
export const DEFAULT_OWNER_USER = 'pipegate-owner';

/** An error that the local API Gateway answers with DEFAULT_5XX at this status. */
class IntegrationError extends Error {
  constructor(
    message: string,
    readonly gatewayStatus: number,
  ) {
    super(message);
  }
}

/**
 * The request handler of the one stack that declares a REST API. `ownerPrincipal` is the IAM
 * principal the owner token stands for; `logFormat` that of the request log.
 */
export function wireApi(
  w: Wiring,
  fnByArn: FunctionLookup,
  { ownerPrincipal, logFormat }: { ownerPrincipal: string | undefined; logFormat: 'json' | 'text' | undefined },
): (req: IncomingMessage, res: ServerResponse) => void {
  const { scale } = w;
  const { env } = w.boot;
  const region = w.resolved.env.region;
  const serviceStack = w.stacks.find((s) => Object.values(s.stack.template.Resources).some((r) => r.Type === 'AWS::ApiGateway::RestApi'));
  if (!serviceStack) throw new Error('No stack of the assembly declares a REST API');
  const api: TemplateApi = apiFromTemplate(serviceStack);
  const account = w.resolved.env.account;
  const invokeFromApi = (fnArn: string, sourceArn: string, event: unknown): Promise<unknown> => {
    // Without a resource-based permission API Gateway cannot invoke the function: a 500.
    if (!api.mayInvoke(fnArn, sourceArn))
      return Promise.reject(new IntegrationError(`Invalid permissions on Lambda function ${fnArn} for ${sourceArn}`, 500));
    return fnByArn(fnArn, 'API')
      .invoke(event)
      .catch((err: unknown) => {
        if (err instanceof FunctionError && err.name === 'RequestEntityTooLargeException') throw new IntegrationError(err.message, 500);
        throw err;
      });
  };
  const replies = gatewayReplies(api.gatewayResponses);
  const methodArn = (event: APIGatewayProxyEvent) =>
    `arn:aws:execute-api:${region}:${account}:${api.apiId}/${api.stage}/${event.httpMethod}${event.resource.replace(/\{[^}]+\}/g, (m) => event.pathParameters?.[m.slice(1, -1)] ?? '')}`;
  const handlers: Record<string, (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>> = {};
  // Methods whose integration streams (ResponseTransferMode STREAM) invoke with a response stream.
  const streamInvokers: Record<string, (event: APIGatewayProxyEvent) => Promise<Readable>> = {};
  for (const [name, fnArn] of Object.entries(api.functionArns)) {
    handlers[name] = (event) =>
      (invokeFromApi(fnArn, methodArn(event), event) as Promise<APIGatewayProxyResult>).catch((err: unknown) => {
        // A throttled Lambda never ran, so it gave no proxy result: API Gateway answers its
        // INTEGRATION_FAILURE response (a 500 unless the API declares one).
        if (err instanceof FunctionError && err.name === 'TooManyRequestsException')
          return proxyResultOf(replies('INTEGRATION_FAILURE', event.requestContext.requestId, 500));
        throw err;
      });
    streamInvokers[name] = async (event) => {
      // lambda:InvokeFunction covers InvokeWithResponseStream too: the same permission check.
      if (!api.mayInvoke(fnArn, methodArn(event)))
        throw new IntegrationError(`Invalid permissions on Lambda function ${fnArn} for ${methodArn(event)}`, 500);
      return fnByArn(fnArn, 'API')
        .invokeStream(event)
        .catch((err: unknown) => {
          // Throttled before it ran: the same INTEGRATION_FAILURE response as a buffered method.
          if (err instanceof FunctionError && err.name === 'TooManyRequestsException')
            throw Object.assign(new IntegrationError(err.message, 500), { gatewayResponse: 'INTEGRATION_FAILURE' });
          throw err;
        });
    };
  }
  const authorizer = api.authorizer;
  // PIPEGATE_LOG_FORMAT reaches the functions as a tuning variable, checked by their config reader.
  const requestLog = createLogger('pipegate-synth', w.log, logFormat ?? (process.stderr.isTTY ? 'text' : 'json'));
  const gateway = createGateway({
    routes: api.routes,
    handlers,
    streamInvokers,
    authorizer: (event) =>
      authorizer
        ? (invokeFromApi(
            authorizer.functionArn,
            `arn:aws:execute-api:${region}:${account}:${api.apiId}/authorizers/${authorizer.authorizerId}`,
            event,
          ) as Promise<APIGatewayAuthorizerResult>)
        : Promise.reject(new Error('The template declares no authorizer')),
    authorizerSettings: authorizer?.settings,
    gatewayResponses: api.gatewayResponses,
    ownerToken: w.boot.ownerToken,
    maxBodyBytes: API_GATEWAY_MAX_BODY_BYTES,
    basePath: env.PIPEGATE_BASE_PATH,
    integrationTimeoutMs: api.integrationTimeoutMs,
    api: { region, account, apiId: api.apiId, stage: api.stage },
    resourcePolicy: apiPolicyCheck(
      api.policy,
      { partition: w.resolved.env.partition, region, account, apiId: api.apiId },
      ownerPrincipal ?? env.PIPEGATE_OWNER_PRINCIPAL ?? `arn:${w.resolved.env.partition}:iam::${account}:user/${DEFAULT_OWNER_USER}`,
    ),
    firewall: firewallFromTemplate(
      serviceStack,
      `arn:${w.resolved.env.partition}:apigateway:${region}::/restapis/${api.apiId}/stages/${api.stage}`,
    ),
    log: (line) => requestLog.info('request', line),
  });
  const throttled = scale ? stageThrottle(api, env.PIPEGATE_BASE_PATH, scale) : () => false;
  return (req, res) => {
    if (throttled(req)) {
      req.resume();
      const requestId = randomUUID();
      return send(res, replies('THROTTLED', requestId), requestId);
    }
    gateway(req, res);
  };
}

/** A gateway reply as the proxy result that renders it. */
function proxyResultOf(reply: { status: number; headers: Array<[string, string]>; body: Buffer }): APIGatewayProxyResult {
  return { statusCode: reply.status, headers: Object.fromEntries(reply.headers), body: reply.body.toString('utf8') };
}

/**
 * API Gateway's throttling of a request, before anything else it does: the stage's per-method
 * bucket (method and resource, as the API's routes match them; the root catch-all for the rest).
 */
function stageThrottle(api: TemplateApi, basePath: string | undefined, scale: ScaleModel): (req: IncomingMessage) => boolean {
  const resources = compileRoutes(api.routes, new Set(api.routes.map((r) => r.handler)));
  const base = normaliseBasePath(basePath);
  return (req) => {
    const method = (req.method ?? 'GET').toUpperCase();
    const path = stripBasePath((req.url ?? '/').split('?', 1)[0] ?? '/', base);
    let resource = '/{proxy+}';
    if (path !== undefined) {
      try {
        const segments = (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path)
          .split('/')
          .slice(1)
          .map((x) => decodeURIComponent(x));
        const match = matchResource(resources, segments);
        if (match?.resource.methods.has(method)) resource = match.resource.path;
      } catch {
        // An undecodable path is answered 400 by the gateway; it still counts against the catch-all.
      }
    }
    return !scale.stage.admit(`${method} ${resource}`);
  };
}
