/**
 * The one route table. The CDK service stack builds API Gateway resources from it and the
 * local gateway matches requests against it, so both serve exactly the same API.
 * Plain data: imports nothing from aws-cdk-lib.
 */
export type RouteAuth = 'apiKey' | 'owner' | 'none';
export type HttpVerb = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface Route {
  method: HttpVerb;
  /** API Gateway style path, parameters in braces; a trailing slash is always optional. */
  path: string;
  /** Folder under functions/ holding handler.ts. */
  handler: string;
  auth: RouteAuth;
  /** Honours `Prefer: wait=N`: may hold the request open until the execution finishes. */
  waits?: true;
}

export const ROUTES: readonly Route[] = [
  // Callers, with a deployment's API key.
  { method: 'POST', path: '/v1/deployments/{deployment_id}/executions', handler: 'execute', auth: 'apiKey', waits: true },
  { method: 'GET', path: '/v1/deployments/executions/{execution_id}/status', handler: 'execution-status', auth: 'apiKey', waits: true },
  { method: 'GET', path: '/v1/deployments/executions/{execution_id}/result', handler: 'execution-result', auth: 'apiKey', waits: true },
  { method: 'POST', path: '/v1/deployments/executions/{execution_id}/cancel', handler: 'execution-cancel', auth: 'apiKey' },
  { method: 'GET', path: '/v1/deployments/{deployment_id}', handler: 'deployment-contract', auth: 'apiKey' },
  { method: 'GET', path: '/v1/deployments/{deployment_id}/openapi.json', handler: 'deployment-openapi', auth: 'apiKey' },
  // The docs page and its files load in a browser without a key header (a browser cannot add
  // one to a page load); the page asks for the key and sends it with its own calls to the
  // routes above, which the authorizer guards as usual. Neither serves anything of a deployment.
  { method: 'GET', path: '/v1/deployments/{deployment_id}/docs', handler: 'deployment-docs', auth: 'none' },
  { method: 'GET', path: '/v1/docs/{asset}', handler: 'deployment-docs', auth: 'none' },
  // Owners: IAM on AWS, a bearer token on the local runtime.
  { method: 'GET', path: '/v1/pipelines', handler: 'pipeline-list', auth: 'owner' },
  { method: 'PUT', path: '/v1/pipelines/{pipeline_id}', handler: 'pipeline-push', auth: 'owner' },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}', handler: 'pipeline-get', auth: 'owner' },
  { method: 'POST', path: '/v1/pipelines/{pipeline_id}/runs', handler: 'run-start', auth: 'owner', waits: true },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/runs', handler: 'run-list', auth: 'owner' },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/runs/{run_id}', handler: 'run-get', auth: 'owner', waits: true },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/deployment', handler: 'deployment-readiness', auth: 'owner' },
  { method: 'PUT', path: '/v1/pipelines/{pipeline_id}/deployment', handler: 'deployment-publish', auth: 'owner' },
  { method: 'DELETE', path: '/v1/pipelines/{pipeline_id}/deployment', handler: 'deployment-delete', auth: 'owner' },
  { method: 'POST', path: '/v1/pipelines/{pipeline_id}/deployment/keys', handler: 'deployment-keys', auth: 'owner' },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/executions/{execution_id}', handler: 'owner-execution-get', auth: 'owner' },
  { method: 'GET', path: '/v1/secrets', handler: 'secret-list', auth: 'owner' },
  { method: 'PUT', path: '/v1/secrets/{name}', handler: 'secret-put', auth: 'owner' },
  { method: 'DELETE', path: '/v1/secrets/{name}', handler: 'secret-delete', auth: 'owner' },
  { method: 'POST', path: '/v1/pipelines/{pipeline_id}/executions/{execution_id}/cancel', handler: 'owner-execution-cancel', auth: 'owner' },
  { method: 'POST', path: '/v1/pipelines/{pipeline_id}/executions/{execution_id}/callback/redeliver', handler: 'owner-callback-redeliver', auth: 'owner' },
  { method: 'GET', path: '/v1/pipelines/{pipeline_id}/deployment/executions', handler: 'deployment-executions', auth: 'owner' },
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
