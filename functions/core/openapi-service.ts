/**
 * The whole-service OpenAPI 3.1 document: every route of the table (lib/routes.ts) with its
 * operation, built by openapi-shared.ts as every per-deployment document is. docs/openapi.json is this,
 * written by `npm run openapi`; a test holds the committed file equal to it.
 */
import {
  CALLER_PARAMETERS,
  CALLER_RESPONSES,
  CALLER_SECURITY_SCHEMES,
  PARAMETER_COMPONENTS,
  jsonContent,
  orderedSchemas,
  reachableComponents,
  responseHeaders,
  routePaths,
  schemaRef,
  type JsonSchema,
} from './openapi-shared';
import type { ResponseName, Route } from './route-types';

const OWNER_RESPONSES: Record<'OwnerUnauthorized' | 'OwnerForbidden' | Extract<ResponseName, 'PipelineNotFound'>, JsonSchema> = {
  OwnerUnauthorized: {
    description:
      "Missing or wrong owner credentials (`Unauthorized`): locally the owner token; on AWS an unsigned request, or an IAM identity that may not invoke this route (API Gateway's ACCESS_DENIED, answered 401 with `reason` and `detail` empty).",
    headers: responseHeaders({ BearerChallenge: true }),
    content: jsonContent(schemaRef('Unauthorized')),
  },
  OwnerForbidden: {
    description: 'AWS: the IAM signature was refused (invalid or expired).',
    content: jsonContent(schemaRef('Forbidden')),
  },
  PipelineNotFound: { description: 'Pipeline Not Found.', content: jsonContent(schemaRef('NotFoundPipeline')) },
};

const OWNER_PARAMETERS: Record<string, JsonSchema> = {
  PipelineId: PARAMETER_COMPONENTS.PipelineId,
  RunId: PARAMETER_COMPONENTS.RunId,
  SecretName: PARAMETER_COMPONENTS.SecretName,
  ConsumerId: PARAMETER_COMPONENTS.ConsumerId,
};

const OWNER_SECURITY_SCHEMES: Record<string, JsonSchema> = {
  OwnerBearer: {
    type: 'http',
    scheme: 'bearer',
    description: 'Local runtime: the owner token (`PIPEGATE_OWNER_TOKEN`, else generated once into the data dir as `owner-token`).',
  },
  AwsSigV4: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description:
      "AWS: the request is signed with AWS Signature Version 4 (service `execute-api`, the stack's region) by an identity allowed `execute-api:Invoke` on the owner routes; API Gateway checks it (IAM authorization) before any function runs. The `pipegate` CLI signs with the standard AWS credential chain.",
    'x-amazon-apigateway-authtype': 'awsSigv4',
  },
};

const DESCRIPTION = [
  "The whole service: the caller API (a deployment's API key) and the owner API (IAM on AWS, a bearer token on the local runtime).",
  '',
  "- Paths are relative to the base URL, stage and any prefix included; a trailing slash is always optional. The base URL is `PIPEGATE_PUBLIC_URL` when the service is configured with one; otherwise, on AWS, API Gateway's host and stage, and on the local runtime the request's Host header (and `PIPEGATE_BASE_PATH`).",
  '- Every error is JSON `{ "error": <message>, "detail"?: <explanation> }` plus named fields.',
  '- Timestamps are ISO 8601 UTC with milliseconds and `Z`.',
  '- The local runtime also answers `GET /health` with 200 `{"status":"ok"}`, without credentials.',
  '- Each deployment describes its own request and response at `GET /v1/deployments/{deployment_id}/openapi.json`.',
].join('\n');

/** `routes`: every route of the table (lib/routes.ts ROUTES); the caller routes among them are those with `auth: 'apiKey'`. */
export function serviceOpenApi(routes: readonly Route[]) {
  const paths = routePaths(routes);
  const available = {
    securitySchemes: { ...CALLER_SECURITY_SCHEMES, ...OWNER_SECURITY_SCHEMES },
    parameters: { ...CALLER_PARAMETERS, ...OWNER_PARAMETERS },
    responses: { ...CALLER_RESPONSES, ...OWNER_RESPONSES },
    schemas: orderedSchemas(routes.filter((r) => r.auth === 'apiKey')),
  };
  const used = reachableComponents(paths, available);
  // Keep the components' declared order (readers browse them), but only those a path reaches.
  const pick = (kind: keyof typeof available) =>
    Object.fromEntries(Object.entries(available[kind]).filter(([name]) => used[kind]?.[name] !== undefined));
  return {
    openapi: '3.1.0',
    info: {
      title: 'pipegate',
      version: '0.1.0',
      summary: 'Publish a pipeline as an authenticated, asynchronous HTTP API.',
      description: DESCRIPTION,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [
      { url: 'http://127.0.0.1:3000', description: 'The local runtime (`npm start`).' },
      {
        url: 'https://{api_id}.execute-api.{region}.amazonaws.com/{stage}',
        description: 'A deployed stack (the ApiUrl stack output): `api_id` is the REST API id, `stage` the stage name.',
        variables: { api_id: { default: 'abc123' }, region: { default: 'eu-west-1' }, stage: { default: 'api' } },
      },
    ],
    tags: [
      { name: 'callers', description: 'Execute a published deployment, with its API key.' },
      { name: 'forms', description: "A deployment's web form: anyone with its link (`form_url`) runs it in a browser, without a key." },
      { name: 'owners', description: 'Push, run, publish, rotate and delete pipelines; set owner secrets.' },
    ],
    paths,
    components: {
      securitySchemes: available.securitySchemes,
      parameters: pick('parameters'),
      responses: pick('responses'),
      schemas: pick('schemas'),
    },
  };
}

/** docs/openapi.json's exact text. */
export const serviceOpenApiText = (routes: readonly Route[]): string => `${JSON.stringify(serviceOpenApi(routes), null, 2)}\n`;
