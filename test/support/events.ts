import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayRequestAuthorizerEvent, Context, SQSEvent } from 'aws-lambda';

/** A REST API proxy event as API Gateway sends it on AWS, with the stage in requestContext.path. */
export function proxyEvent(opts: {
  method: string;
  resource: string;
  path: string;
  pathParameters?: Record<string, string>;
  headers?: Record<string, string>;
  body?: string | null;
  query?: Record<string, string>;
  authorizer?: Record<string, string>;
  stage?: string;
}): APIGatewayProxyEvent {
  const stage = opts.stage ?? 'prod';
  const headers = { Host: 'abc123.execute-api.eu-west-1.amazonaws.com', 'X-Forwarded-Proto': 'https', ...opts.headers };
  return {
    resource: opts.resource,
    path: opts.path,
    httpMethod: opts.method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: opts.query ?? null,
    multiValueQueryStringParameters: opts.query ? Object.fromEntries(Object.entries(opts.query).map(([k, v]) => [k, [v]])) : null,
    pathParameters: opts.pathParameters ?? null,
    stageVariables: null,
    body: opts.body ?? null,
    isBase64Encoded: false,
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      authorizer: opts.authorizer ?? null,
      protocol: 'HTTP/1.1',
      httpMethod: opts.method,
      identity: { sourceIp: '203.0.113.9', userAgent: 'test' } as APIGatewayProxyEvent['requestContext']['identity'],
      path: `/${stage}${opts.path}`,
      stage,
      requestId: randomUUID(),
      requestTimeEpoch: Date.now(),
      resourceId: 'r1',
      resourcePath: opts.resource,
      domainName: 'abc123.execute-api.eu-west-1.amazonaws.com',
    },
  };
}

export function authorizerEvent(headers: Record<string, string>): APIGatewayRequestAuthorizerEvent {
  return {
    type: 'REQUEST',
    methodArn: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/v1/deployments/x/executions',
    resource: '/v1/deployments/{deployment_id}/executions',
    path: '/v1/deployments/x/executions',
    httpMethod: 'POST',
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    pathParameters: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    stageVariables: null,
    requestContext: {} as APIGatewayRequestAuthorizerEvent['requestContext'],
  };
}

export function sqsEvent(bodies: string[]): SQSEvent {
  return {
    Records: bodies.map((body) => ({
      messageId: randomUUID(),
      receiptHandle: randomUUID(),
      body,
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: String(Date.now()),
        SenderId: 'x',
        ApproximateFirstReceiveTimestamp: String(Date.now()),
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:executions',
      awsRegion: 'eu-west-1',
    })),
  };
}

export const context = (): Context =>
  ({
    awsRequestId: randomUUID(),
    functionName: 'test',
    getRemainingTimeInMillis: () => 30_000,
  }) as unknown as Context;
