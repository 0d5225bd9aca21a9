/**
 * The one route table. The CDK service stack builds API Gateway resources from it and the
 * local gateway matches requests against it, so both serve exactly the same API.
 * Plain data: imports nothing from aws-cdk-lib.
 */
export type RouteAuth = 'apiKey' | 'owner' | 'none';
export type HttpVerb = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Route {
  method: HttpVerb;
  /** API Gateway style path, parameters in braces; a trailing slash is always optional. */
  path: string;
  /** Folder under functions/ holding handler.ts. */
  handler: string;
  auth: RouteAuth;
  /** Honours `Prefer: wait=N`: may hold the request open until the execution finishes. */
  waits?: true;
  /**
   * Takes inline ASSET values: bodies up to the inline limit (functions/core/assets.ts
   * INLINE_ASSET_BODY_MAX_BYTES) reach the handler, which counts all but those values against
   * the usual limit.
   */
  inlineAssets?: true;
  /**
   * The answer streams (API Gateway `ResponseTransferMode: STREAM`, a Lambda streaming handler
   * written with `streamedHttpHandler`): bodies of any size pass through in chunks, never held
   * whole, and binary needs no binary media types. Bounded by STREAMED_ROUTE_TIMEOUT_SECONDS.
   */
  streams?: true;
}

/**
 * How long a streamed answer may last: API Gateway's ceiling for a streamed integration (15
 * minutes), used as its integration time-out and as the function's time-out. Past the first
 * 10 MB API Gateway passes 2 MB/s, so this bounds a download to ≈ 1.8 GB.
 */
export const STREAMED_ROUTE_TIMEOUT_SECONDS = 900;

export const ROUTES: readonly Route[] = [
  // Callers, with a deployment's API key. Every route whose answer carries execution values
  // streams (`streams`): values pulled back from the claim check can pass Lambda's 6 MB buffered
  // answer, and a streamed answer costs the same below it (docs/aws.md, Streamed answers).
  { method: 'POST', path: '/v1/deployments/{deployment_id}/executions', handler: 'execute', auth: 'apiKey', waits: true, inlineAssets: true, streams: true },
  // A presigned PUT for a file too large to send inline (functions/core/upload-request.ts).
  { method: 'POST', path: '/v1/deployments/{deployment_id}/uploads', handler: 'upload-create', auth: 'apiKey' },
  { method: 'GET', path: '/v1/deployments/executions/{execution_id}/status', handler: 'execution-status', auth: 'apiKey', waits: true, streams: true },
  { method: 'GET', path: '/v1/deployments/executions/{execution_id}/result', handler: 'execution-result', auth: 'apiKey', waits: true, streams: true },
  // Server-sent events until the execution is done (functions/core/events.ts); streamed, so an
  // answer may stay open up to STREAMED_ROUTE_TIMEOUT_SECONDS.
  { method: 'GET', path: '/v1/deployments/executions/{execution_id}/events', handler: 'execution-events', auth: 'apiKey', streams: true },
  { method: 'POST', path: '/v1/deployments/executions/{execution_id}/cancel', handler: 'execution-cancel', auth: 'apiKey' },
  { method: 'GET', path: '/v1/deployments/{deployment_id}', handler: 'deployment-contract', auth: 'apiKey' },
  { method: 'GET', path: '/v1/deployments/{deployment_id}/openapi.json', handler: 'deployment-openapi', auth: 'apiKey' },
  // The docs page and its files load in a browser without a key header (a browser cannot add
  // one to a page load); the page asks for the key and sends it with its own calls to the
  // routes above, which the authorizer guards as usual. Neither serves anything of a deployment.
  { method: 'GET', path: '/v1/deployments/{deployment_id}/docs', handler: 'deployment-docs', auth: 'none' },
  { method: 'GET', path: '/v1/docs/{asset}', handler: 'deployment-docs', auth: 'none' },
  // A stored object's bytes: the URL is the capability (signed, expiring, bound to one object;
  // see functions/core/asset-links.ts), so a browser or a callback receiver opens it as it is.
  { method: 'GET', path: '/v1/assets/{token}', handler: 'asset-get', auth: 'none', streams: true },
  // The same answer's status and headers without the bytes (size and type before a download).
  { method: 'HEAD', path: '/v1/assets/{token}', handler: 'asset-get', auth: 'none', streams: true },
  // A deployment's web form: the link is the capability (functions/core/form-link.ts), so no key;
  // the form's routes act as the deployment through the callers' code, rate-limited per link and
  // per address (functions/services/form.service.ts; on AWS also a WAF rule on this prefix).
  { method: 'GET', path: '/v1/forms/{form_token}', handler: 'form-page', auth: 'none' },
  // The page's script and style sheet, the same for every form (the token is not checked).
  { method: 'GET', path: '/v1/forms/{form_token}/files/{asset}', handler: 'form-page', auth: 'none' },
  { method: 'POST', path: '/v1/forms/{form_token}/executions', handler: 'form-execute', auth: 'none', inlineAssets: true },
  { method: 'GET', path: '/v1/forms/{form_token}/executions/{execution_id}', handler: 'form-execution', auth: 'none', waits: true, streams: true },
  { method: 'POST', path: '/v1/forms/{form_token}/uploads', handler: 'form-upload', auth: 'none' },
  // Owners: IAM on AWS, a bearer token on the local runtime.
  { method: 'GET', path: '/v1/pipelines', handler: 'pipeline-list', auth: 'owner' },
  { method: 'PUT', path: '/v1/pipelines/{pipeline_id}', handler: 'pipeline-push', auth: 'owner' },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}', handler: 'pipeline-get', auth: 'owner' },
  { method: 'POST', path: '/v1/pipelines/{pipeline_id}/runs', handler: 'run-start', auth: 'owner', waits: true, streams: true },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/runs', handler: 'run-list', auth: 'owner', streams: true },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/runs/{run_id}', handler: 'run-get', auth: 'owner', waits: true, streams: true },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/runs/{run_id}/events', handler: 'run-events', auth: 'owner', streams: true },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/deployment', handler: 'deployment-readiness', auth: 'owner' },
  { method: 'PUT', path: '/v1/pipelines/{pipeline_id}/deployment', handler: 'deployment-publish', auth: 'owner' },
  { method: 'DELETE', path: '/v1/pipelines/{pipeline_id}/deployment', handler: 'deployment-delete', auth: 'owner' },
  { method: 'POST', path: '/v1/pipelines/{pipeline_id}/deployment/keys', handler: 'deployment-keys', auth: 'owner' },
  // Consumers: each caller its own key, limits and expiry (functions/core/consumers.ts).
  { method: 'POST', path: '/v1/pipelines/{pipeline_id}/deployment/consumers', handler: 'deployment-consumers', auth: 'owner' },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/deployment/consumers', handler: 'deployment-consumers', auth: 'owner' },
  { method: 'PATCH', path: '/v1/pipelines/{pipeline_id}/deployment/consumers/{consumer_id}', handler: 'deployment-consumers', auth: 'owner' },
  { method: 'DELETE', path: '/v1/pipelines/{pipeline_id}/deployment/consumers/{consumer_id}', handler: 'deployment-consumers', auth: 'owner' },
  { method: 'POST', path: '/v1/pipelines/{pipeline_id}/deployment/consumers/{consumer_id}/keys', handler: 'deployment-consumers', auth: 'owner' },
  // The deployment key's own limits, enforced as a consumer's.
  { method: 'PUT', path: '/v1/pipelines/{pipeline_id}/deployment/limits', handler: 'deployment-consumers', auth: 'owner' },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/executions/{execution_id}', handler: 'owner-execution-get', auth: 'owner', streams: true },
  { method: 'GET', path: '/v1/secrets', handler: 'secret-list', auth: 'owner' },
  { method: 'PUT', path: '/v1/secrets/{name}', handler: 'secret-put', auth: 'owner' },
  { method: 'DELETE', path: '/v1/secrets/{name}', handler: 'secret-delete', auth: 'owner' },
  { method: 'POST', path: '/v1/pipelines/{pipeline_id}/executions/{execution_id}/cancel', handler: 'owner-execution-cancel', auth: 'owner' },
  { method: 'POST', path: '/v1/pipelines/{pipeline_id}/executions/{execution_id}/callback/redeliver', handler: 'owner-callback-redeliver', auth: 'owner' },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/deployment/executions', handler: 'deployment-executions', auth: 'owner', streams: true },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/deployment/usage', handler: 'deployment-usage', auth: 'owner' },
];

/** Functions that are not behind a route: the authorizer, queue consumers, state-machine tasks. */
export const WORKERS = {
  authorizer: 'authorizer',
  runner: 'runner',
  taskStart: 'task-start',
  taskRun: 'task-run',
  taskFail: 'task-fail',
  callbackDispatch: 'callback-dispatch',
  sweeper: 'sweeper',
} as const;

export const routeHandlers = (): string[] => [...new Set(ROUTES.map((r) => r.handler))];
