/**
 * The one route table. The CDK service stack builds API Gateway resources from it and the
 * local gateway matches requests against it, so both serve exactly the same API.
 * Plain data: imports nothing from aws-cdk-lib.
 */
import type { Answer, Route } from '../functions/core/route-types';

export type {
  Answer,
  HeaderName,
  HttpVerb,
  ParameterName,
  ResponseName,
  Route,
  RouteAuth,
  SchemaName,
} from '../functions/core/route-types';

/** The MCP route's path (functions/core/mcp-tool.ts): the authorizer takes `Authorization: Bearer` on it alone. */
export const MCP_ROUTE_PATH = '/v1/deployments/{deployment_id}/mcp';

/**
 * How long a streamed answer may last: API Gateway's ceiling for a streamed integration (15
 * minutes), used as its integration time-out and as the function's time-out. Past the first
 * 10 MB API Gateway passes 2 MB/s, so this bounds a download to ≈ 1.8 GB.
 */
export const STREAMED_ROUTE_TIMEOUT_SECONDS = 900;

/** Answers several routes give alike. */
const FORM_NOT_FOUND: Answer = {
  description: 'Form Not Found: never issued or altered, rotated, disabled, or its deployment deleted.',
  shape: 'FormNotFound',
};
const FORM_LIMITED: Answer = {
  description:
    'Too Many Requests: past the per-link or per-address limit of runs, uploads and progress streams a minute (`detail` says which), or API Gateway throttling.',
  shape: ['FormRateLimited', 'TooManyRequests'],
  overlapping: true,
  headers: { RetryAfterLimit: false },
};
const NO_DEPLOYMENT: Answer = {
  description: 'Pipeline Not Found, or it has no deployment.',
  shape: ['NotFoundPipeline', 'NotFoundDeployment'],
};
const NOT_PUBLISHED: Answer = {
  description: 'Pipeline Not Found, or it is not published.',
  shape: ['NotFoundPipeline', 'NotFoundDeployment'],
};
const NO_CONSUMER: Answer = {
  description: 'Pipeline, Deployment or Consumer Not Found.',
  shape: ['NotFoundPipeline', 'NotFoundDeployment', 'NotFoundConsumer'],
};
/** An execution the owner asked for by id that is not theirs to see. */
const OWNER_EXECUTION_NOT_FOUND: Answer = {
  description: 'Execution Not Found: unknown, expired, or of another pipeline.',
  shape: 'NotFoundExecution',
};

/**
 * Callers, with a deployment's API key: each deployment's own document is made of these. Kept
 * apart so that the function serving it bundles these operations, not every route's.
 */
const CALLER_TABLE = [
  // Every route whose answer carries execution values streams (`streams`): values pulled back
  // from the claim check can pass Lambda's 6 MB buffered answer, and a streamed answer costs
  // the same below it (docs/aws.md, Streamed answers).
  {
    method: 'POST',
    path: '/v1/deployments/{deployment_id}/executions',
    handler: 'execute',
    auth: 'apiKey',
    waits: true,
    inlineAssets: true,
    streams: true,
    operationId: 'execute',
    summary: 'Start an execution of a deployment',
    params: ['DeploymentId', 'IdempotencyKey', 'PreferWait'],
    body: { shape: 'ExecutionRequest', optional: true, description: 'Optional; an empty body means `{}`.' },
    answers: {
      '200': {
        description: 'Only with `Prefer: wait=N`: the execution finished within N seconds; its result and URLs.',
        shape: 'ExecutionFinished',
        headers: { Location: true, PreferenceApplied: false },
      },
      '202': {
        description: 'Accepted and queued (with `Prefer: wait=N`: not finished within N seconds).',
        shape: 'Accepted',
        headers: { Location: true, PreferenceApplied: false },
      },
      '400': { description: 'Invalid Input Structure, or Missing Callback URL.', shape: ['InvalidInputStructure', 'MissingCallbackUrl'] },
      '404': 'DeploymentNotFound',
      '413': 'PayloadTooLarge',
      '415': { description: 'Unsupported Media Type.', shape: 'UnsupportedMediaType' },
      '422': {
        description: 'Invalid Input, Invalid Callback URL, or Idempotency Key Reused.',
        shape: ['InvalidInput', 'InvalidCallbackUrl', 'IdempotencyKeyReused'],
      },
    },
  },
  // A presigned PUT for a file too large to send inline (functions/core/upload-request.ts).
  {
    method: 'POST',
    path: '/v1/deployments/{deployment_id}/uploads',
    handler: 'upload-create',
    auth: 'apiKey',
    operationId: 'createUpload',
    summary: 'A presigned PUT for a file too large to send inline',
    description: "PUT exactly `bytes` bytes to `upload_url` with `headers`, then send `asset` as an asset input's value.",
    params: ['DeploymentId'],
    body: { shape: 'UploadRequest' },
    answers: {
      '201': { description: 'The upload URL and the asset value to send.', shape: 'UploadAnswer' },
      '400': { description: 'Invalid Input Structure.', shape: 'InvalidInputStructure' },
      '404': 'DeploymentNotFound',
      '413': 'PayloadTooLarge',
      '422': { description: 'Invalid Input: no asset input takes this type and size.', shape: 'InvalidInput' },
    },
  },
  {
    method: 'GET',
    path: '/v1/deployments/executions/{execution_id}/status',
    handler: 'execution-status',
    auth: 'apiKey',
    waits: true,
    streams: true,
    operationId: 'getExecutionStatus',
    summary: "An execution's status",
    params: ['ExecutionId', 'PreferWait'],
    answers: {
      '200': {
        description: 'The status (with `Prefer: wait=N`: once terminal, or after N seconds).',
        shape: 'ExecutionStatusBody',
        headers: { RetryAfterPoll: false, PreferenceApplied: false },
      },
      '404': 'ExecutionNotFound',
    },
  },
  {
    method: 'GET',
    path: '/v1/deployments/executions/{execution_id}/result',
    handler: 'execution-result',
    auth: 'apiKey',
    waits: true,
    streams: true,
    operationId: 'getExecutionResult',
    summary: "An execution's result, once it has finished",
    params: ['ExecutionId', 'PreferWait'],
    answers: {
      '200': { description: 'The result (visible outputs only).', shape: 'ExecutionResult', headers: { PreferenceApplied: false } },
      '404': 'ExecutionNotFound',
      '409': {
        description: 'Execution not completed (with `Prefer: wait=N`: not within N seconds), with its current status.',
        shape: 'ExecutionNotCompleted',
        headers: { RetryAfterPoll: true, PreferenceApplied: false },
      },
    },
  },
  // Server-sent events until the execution is done (functions/core/events.ts); streamed, so an
  // answer may stay open up to STREAMED_ROUTE_TIMEOUT_SECONDS.
  {
    method: 'GET',
    path: '/v1/deployments/executions/{execution_id}/events',
    handler: 'execution-events',
    auth: 'apiKey',
    streams: true,
    operationId: 'getExecutionEvents',
    summary: "An execution's live progress, as server-sent events",
    description:
      'A `text/event-stream` until the execution is done: first a `retry:` hint, then events, each with an `id:` that orders them: ' +
      '`status` (StatusEvent), `node` (NodeEvent), `waiting` (WaitingEvent: a wait node the deployment publishes visible began to wait, with its resume URL), `output` (OutputEvent), and last `done`, whose data is exactly the result body of GET result; then the stream closes. ' +
      'Send `Last-Event-ID` to resume after that event without repeats; a finished execution replays everything at once. ' +
      'A comment (`: keep-alive`) comes at least every 15 s; a stream closes itself after 14 minutes without `done` (reconnect with Last-Event-ID).',
    params: ['ExecutionId', 'LastEventId'],
    answers: { '200': { description: 'The event stream.', events: 'ExecutionResult' }, '404': 'ExecutionNotFound' },
  },
  {
    method: 'POST',
    path: '/v1/deployments/executions/{execution_id}/cancel',
    handler: 'execution-cancel',
    auth: 'apiKey',
    operationId: 'cancelExecution',
    summary: 'Cancel a pending or running execution at once',
    params: ['ExecutionId'],
    answers: {
      '200': { description: 'Cancelled: the status.', shape: 'ExecutionStatusBody' },
      '404': 'ExecutionNotFound',
      '409': { description: 'Execution already finished, with its status.', shape: 'ExecutionAlreadyFinished' },
    },
  },
  // The deployment as an MCP server (functions/core/mcp-tool.ts): stateless Streamable HTTP,
  // streamed so that a tools/call sends progress before its result and may wait like `Prefer:
  // wait` (`waits`: it holds a wait slot). Takes `Authorization: Bearer <key>` too.
  {
    method: 'POST',
    path: MCP_ROUTE_PATH,
    handler: 'deployment-mcp',
    auth: 'apiKey',
    waits: true,
    inlineAssets: true,
    streams: true,
    operationId: 'mcp',
    summary: 'This deployment as an MCP server: one tool that runs it (Streamable HTTP, stateless)',
    description:
      'Send each JSON-RPC message of the Model Context Protocol in a POST, with `Accept: application/json, text/event-stream` and the key (`Authorization: Bearer <key>` as MCP clients send it, or either of the usual forms). ' +
      '`tools/list` gives one tool, named after the pipeline (`-` as `_`), whose arguments are the visible inputs as plain values; `tools/call` runs an execution (source `mcp`, the same limits and usage as an execute) and answers with its outputs, after `notifications/progress` when the call carries a `progressToken`; ' +
      'as a task (`params.task`) it answers at once, and `tasks/get`, `tasks/result`, `tasks/cancel` follow the execution. No session is kept: any request may go to any instance.',
    params: ['DeploymentId'],
    body: { shape: 'McpMessage', description: 'One JSON-RPC message.' },
    answers: {
      '200': {
        description: "A request's answer: a `text/event-stream` of JSON-RPC messages (progress, then the response), or one JSON message.",
        media: 'mcp',
      },
      '202': { description: 'Accepted: a notification or a response; no body.' },
      '400': { description: 'Not a JSON-RPC message the transport takes (parse error, invalid request).', shape: 'McpErrorAnswer' },
      '403': { description: "An `Origin` other than the service's own.", shape: 'OriginRefused' },
      '404': 'DeploymentNotFound',
      '406': { description: 'Accept does not list both application/json and text/event-stream.', shape: 'McpErrorAnswer' },
      '413': 'PayloadTooLarge',
      '415': { description: 'Content-Type other than application/json.', shape: 'McpErrorAnswer' },
    },
  },
  {
    method: 'GET',
    path: MCP_ROUTE_PATH,
    handler: 'deployment-mcp',
    auth: 'apiKey',
    // One function serves both methods, and it is a streaming one.
    streams: true,
    operationId: 'mcpStream',
    summary: 'No server-initiated stream: 405 (the MCP server keeps no session)',
    params: ['DeploymentId'],
    answers: {
      '405': { description: 'Method Not Allowed: POST messages instead.', shape: 'McpMethodNotAllowed', headers: { Allow: true } },
      '404': 'DeploymentNotFound',
    },
  },
  {
    method: 'GET',
    path: '/v1/deployments/{deployment_id}',
    handler: 'deployment-contract',
    auth: 'apiKey',
    operationId: 'getDeploymentContract',
    summary: 'The visible contract: input ids, types and published values; output ids',
    params: ['DeploymentId'],
    answers: { '200': { description: 'The visible contract.', shape: 'CallerContract' }, '404': 'DeploymentNotFound' },
  },
  {
    method: 'GET',
    path: '/v1/deployments/{deployment_id}/openapi.json',
    handler: 'deployment-openapi',
    auth: 'apiKey',
    operationId: 'getDeploymentOpenApi',
    summary: "This deployment's API as an OpenAPI 3.1 document",
    params: ['DeploymentId'],
    answers: { '200': { description: 'The OpenAPI document.', shape: 'OpenApiDocument' }, '404': 'DeploymentNotFound' },
  },
] as const satisfies readonly Route[];

/** The folders (functions/<name>/handler.ts) serving caller routes. */
export type CallerHandlerName = (typeof CALLER_TABLE)[number]['handler'];
export const CALLER_ROUTES: readonly Route<CallerHandlerName>[] = CALLER_TABLE;

const RESUME_TABLE = [
  // A wait node's resume URL: the URL is the capability (functions/core/resume-token.ts), so no
  // key; it is given to the pipeline's own http nodes (a job's webhook), callers of a visible
  // wait, and the owner (functions/services/resume.service.ts).
  {
    method: 'POST',
    path: '/v1/resume/{token}',
    handler: 'resume',
    auth: 'none',
    operationId: 'resume',
    summary: "Send a waiting execution its event: a JSON object that becomes the wait node's value (once; the URL is the capability)",
    description:
      "The URL comes from an execution's `waiting` list (the status, the result's 409, events; for the owner, the run and execution views), or from the pipeline itself (`$resume_url('id')` in an http node: a job's webhook). " +
      'It works from the moment the execution starts: an event posted before the node begins to wait is kept, and taken when it does. ' +
      'It works once (409 after), and no more once the wait is over (410: the node timed out, or the execution ended or was cancelled). No key is needed and none is taken.',
    params: ['ResumeToken'],
    body: { shape: 'ResumeRequest' },
    answers: {
      '202': { description: 'The event was kept: the node takes it as its value.', shape: 'ResumeAccepted' },
      '400': {
        description: "Invalid Request: the body is not a JSON object, or not the node's `fields` (each problem named).",
        shape: 'InvalidRequest',
      },
      '404': { description: 'Resume URL Not Found: never issued, or altered.', shape: 'ResumeNotFound' },
      '409': { description: 'Resume URL Already Used: an event was posted to it before.', shape: 'ResumeAlreadyUsed' },
      '410': { description: 'Resume URL Gone: the node timed out, or the execution ended.', shape: 'ResumeGone' },
      '413': 'PayloadTooLarge',
      '415': { description: 'Unsupported Media Type.', shape: 'UnsupportedMediaType' },
    },
  },
] as const satisfies readonly Route[];

const OTHER_TABLE = [
  // The docs page and its files load in a browser without a key header (a browser cannot add
  // one to a page load); the page asks for the key and sends it with its own calls to the
  // routes above, which the authorizer guards as usual. Neither serves anything of a deployment.
  {
    method: 'GET',
    path: '/v1/deployments/{deployment_id}/docs',
    handler: 'deployment-docs',
    auth: 'none',
    operationId: 'getDeploymentDocs',
    summary: "This deployment's docs page (HTML): it asks for the API key, then shows the API and lets you try it",
    params: ['DeploymentId'],
    answers: {
      '200': { description: 'The page. It holds nothing of the deployment but its id.', media: 'html' },
      '404': 'DeploymentNotFound',
    },
  },
  {
    method: 'GET',
    path: '/v1/docs/{asset}',
    handler: 'deployment-docs',
    auth: 'none',
    operationId: 'getDocsAsset',
    summary: "A file of the docs page: its script, or Swagger UI's (from the swagger-ui-dist package)",
    params: ['DocsAsset'],
    answers: { '200': { description: 'The file.', media: 'file' }, '404': { description: 'No such file.', shape: 'NotFound' } },
  },
  // A stored object's bytes: the URL is the capability (signed, expiring, bound to one object;
  // see functions/core/asset-links.ts), so a browser or a callback receiver opens it as it is.
  {
    method: 'GET',
    path: '/v1/assets/{token}',
    handler: 'asset-get',
    auth: 'none',
    streams: true,
    operationId: 'getAsset',
    summary: "A stored asset's bytes, at the link a result or callback gave (signed, expiring, bound to one object)",
    description:
      'Each read of a result mints fresh links, each with its `expires_at` (`PIPEGATE_ASSET_LINK_TTL_SECONDS`, 24 hours by default). ' +
      'A link stops working when it expires (410), and at once when its deployment is deleted (404). ' +
      'SVG, HTML, XML, scripts, PDF and unknown types are served as attachments; every answer has `X-Content-Type-Options: nosniff`. ' +
      'One `Range: bytes=` range is honoured (206).',
    params: ['AssetToken', 'Range'],
    answers: {
      '200': {
        description: 'The exact bytes, with their own media type as Content-Type.',
        media: 'bytes',
        headers: { ContentLength: false, ContentDisposition: false, NoSniff: false },
      },
      '206': { description: 'The range asked for.', media: 'bytes', headers: { ContentRange: false } },
      '404': {
        description: 'Asset Not Found: the link was never issued or was altered, its deployment was deleted, or the object is gone.',
        shape: 'AssetNotFound',
      },
      '410': { description: 'Asset Link Expired: read the result again for a fresh link.', shape: 'AssetLinkExpired' },
      '416': { description: 'Range Not Satisfiable.', shape: 'RangeNotSatisfiable' },
    },
  },
  // The same answer's status and headers without the bytes (size and type before a download).
  {
    method: 'HEAD',
    path: '/v1/assets/{token}',
    handler: 'asset-get',
    auth: 'none',
    streams: true,
    operationId: 'headAsset',
    summary: 'What GET answers at this link (status and headers: size, media type, disposition), without the bytes',
    description: 'Answers as GET does, Range included, with no body: 404 and 410 as for GET.',
    params: ['AssetToken', 'Range'],
    answers: {
      '200': {
        description: 'The headers GET would send: the size, the media type, the disposition.',
        headers: { ContentLength: false, ContentDisposition: false, NoSniff: false },
      },
      '206': { description: 'The headers of the range asked for.', headers: { ContentRange: false } },
      // The answers GET gives, their bodies left out as HEAD's are.
      '404': { description: 'Asset Not Found, as for GET.', shape: 'AssetNotFound' },
      '410': { description: 'Asset Link Expired, as for GET: read the result again for a fresh link.', shape: 'AssetLinkExpired' },
      '416': { description: 'Range Not Satisfiable.', shape: 'RangeNotSatisfiable' },
    },
  },
  ...RESUME_TABLE,
  // A deployment's web form: the link is the capability (functions/core/form-link.ts), so no key;
  // the form's routes act as the deployment through the callers' code, rate-limited per link and
  // per address (functions/services/form.service.ts; on AWS also a WAF rule on this prefix).
  {
    method: 'GET',
    path: '/v1/forms/{form_token}',
    handler: 'form-page',
    auth: 'none',
    operationId: 'getForm',
    summary: "The web form's page (HTML), generated from the published contract: visible inputs and outputs only",
    params: ['FormToken'],
    answers: {
      '200': { description: 'The page.', media: 'html' },
      '404': {
        description:
          'No form behind this link (never issued or altered, rotated, disabled, or its deployment deleted, alike): a page saying so in words, for the person who followed it.',
        media: 'html',
      },
    },
  },
  // The page's script and style sheet, the same for every form (the token is not checked).
  {
    method: 'GET',
    path: '/v1/forms/{form_token}/files/{asset}',
    handler: 'form-page',
    auth: 'none',
    operationId: 'getFormAsset',
    summary: "The form page's script or style sheet (the same for every form)",
    params: ['FormToken', 'FormAsset'],
    answers: { '200': { description: 'The file.', media: 'file' }, '404': { description: 'No such file.', shape: 'NotFound' } },
  },
  {
    method: 'POST',
    path: '/v1/forms/{form_token}/executions',
    handler: 'form-execute',
    auth: 'none',
    inlineAssets: true,
    operationId: 'executeForm',
    summary: 'Run the deployment through its form, as a caller would (no callback); counted against the rate limits',
    params: ['FormToken'],
    body: { shape: 'FormExecutionRequest', optional: true },
    answers: {
      '202': { description: 'Queued.', shape: 'FormAccepted', headers: { Location: true } },
      '400': {
        description: 'Invalid Input Structure (a callback included), or Missing Callback URL.',
        shape: ['InvalidInputStructure', 'MissingCallbackUrl'],
      },
      '404': FORM_NOT_FOUND,
      '413': 'PayloadTooLarge',
      '415': { description: 'Unsupported Media Type.', shape: 'UnsupportedMediaType' },
      '422': {
        description: 'Invalid Input (a hidden or unknown input, a wrong value or file), or Invalid Callback URL.',
        shape: ['InvalidInput', 'InvalidCallbackUrl'],
      },
      '429': FORM_LIMITED,
    },
  },
  {
    method: 'GET',
    path: '/v1/forms/{form_token}/executions/{execution_id}',
    handler: 'form-execution',
    auth: 'none',
    waits: true,
    streams: true,
    operationId: 'getFormExecution',
    summary: 'A form execution: progress, then its result (`output_artifacts` filled); readable through the link that made it only',
    params: ['FormToken', 'ExecutionId', 'PreferWait'],
    answers: {
      '200': { description: 'The execution (with `Prefer: wait=N`: once terminal, or after N seconds).', shape: 'FormExecution' },
      '404': {
        description: 'Form Not Found, or Execution Not Found (unknown, expired, or not made through this link).',
        shape: ['FormNotFound', 'NotFoundExecution'],
      },
    },
  },
  // The page's live progress: the callers' event stream (functions/services/events.service.ts),
  // its own function so that visitors' streams hold a share apart from API callers' (lib/concurrency.ts).
  {
    method: 'GET',
    path: '/v1/forms/{form_token}/executions/{execution_id}/events',
    handler: 'form-events',
    auth: 'none',
    streams: true,
    operationId: 'getFormExecutionEvents',
    summary:
      "A form execution's live progress, as server-sent events; readable through the link that made it only, counted against the rate limits",
    description:
      'The events of `GET /v1/deployments/executions/{execution_id}/events` (the nodes a caller sees), `done` holding exactly what `GET /v1/forms/{form_token}/executions/{execution_id}` answers. ' +
      'Opening a stream counts against the per-link and per-address limits, as a run does.',
    params: ['FormToken', 'ExecutionId', 'LastEventId'],
    answers: {
      '200': { description: 'The event stream.', events: 'FormExecution' },
      '404': {
        description: 'Form Not Found, or Execution Not Found (unknown, expired, or not made through this link).',
        shape: ['FormNotFound', 'NotFoundExecution'],
      },
      '429': FORM_LIMITED,
    },
  },
  {
    method: 'POST',
    path: '/v1/forms/{form_token}/uploads',
    handler: 'form-upload',
    auth: 'none',
    operationId: 'createFormUpload',
    summary: "A presigned PUT for a file, as the callers' uploads route; counted against the rate limits",
    params: ['FormToken'],
    body: { shape: 'UploadRequest' },
    answers: {
      '201': { description: 'The upload URL and the asset value to send.', shape: 'UploadAnswer' },
      '400': { description: 'Invalid Input Structure.', shape: 'InvalidInputStructure' },
      '404': FORM_NOT_FOUND,
      '413': 'PayloadTooLarge',
      '422': { description: 'Invalid Input: no asset input takes this type and size.', shape: 'InvalidInput' },
      '429': FORM_LIMITED,
    },
  },
  // Owners: IAM on AWS, a bearer token on the local runtime.
  {
    method: 'GET',
    path: '/v1/pipelines',
    handler: 'pipeline-list',
    auth: 'owner',
    operationId: 'listPipelines',
    summary: 'Every pipeline, with its latest version',
    answers: { '200': { description: 'The pipelines.', shape: 'PipelineList' } },
  },
  {
    method: 'PUT',
    path: '/v1/pipelines/{pipeline_id}',
    handler: 'pipeline-push',
    auth: 'owner',
    operationId: 'pushPipeline',
    summary: 'Push a definition: a new version, or the latest one when the content is unchanged',
    params: ['PipelineId'],
    body: { shape: 'PipelineDefinition', description: 'The pipeline definition.' },
    answers: {
      '200': { description: 'Unchanged: the latest version.', shape: 'PushResult' },
      '201': { description: 'A new version.', shape: 'PushResult' },
      '400': { description: 'Invalid Pipeline Definition (every problem listed), or an invalid pipeline id.', shape: 'InvalidDefinition' },
      '413': 'PayloadTooLarge',
    },
  },
  {
    method: 'GET',
    path: '/v1/pipelines/{pipeline_id}',
    handler: 'pipeline-get',
    auth: 'owner',
    operationId: 'getPipeline',
    summary: 'One pipeline with its latest definition',
    params: ['PipelineId'],
    answers: { '200': { description: 'The pipeline.', shape: 'Pipeline' }, '404': 'PipelineNotFound' },
  },
  {
    method: 'POST',
    path: '/v1/pipelines/{pipeline_id}/runs',
    handler: 'run-start',
    auth: 'owner',
    waits: true,
    streams: true,
    operationId: 'startRun',
    summary: 'Run the latest version, with optional input overrides',
    params: ['PipelineId', 'PreferWait'],
    body: { shape: 'RunRequest', optional: true, description: 'Optional; an empty body means `{}`.' },
    answers: {
      '200': {
        description: 'The run finished within `Prefer: wait=N`: as `GET …/runs/{run_id}` shows it.',
        shape: 'Run',
        headers: { Location: true, PreferenceApplied: true },
      },
      '202': { description: 'Queued.', shape: 'RunAccepted', headers: { Location: true } },
      '400': { description: 'Invalid Request: the body, an unknown input or a value of the wrong type.', shape: 'InvalidRequest' },
      '404': 'PipelineNotFound',
      '413': 'PayloadTooLarge',
    },
  },
  // A presigned PUT for a run's file too large for a definition's data URI (services/pipeline-uploads.service.ts).
  {
    method: 'POST',
    path: '/v1/pipelines/{pipeline_id}/uploads',
    handler: 'pipeline-upload',
    auth: 'owner',
    operationId: 'createRunUpload',
    summary: "A presigned PUT for a run's file, as the callers' uploads route",
    description:
      "PUT exactly `bytes` bytes to `upload_url` with `headers`, then send `asset.value` as the asset input's value in a run's `inputs`. It serves one run of this pipeline, and no caller.",
    params: ['PipelineId'],
    body: { shape: 'UploadRequest' },
    answers: {
      '201': { description: 'The upload URL and the asset value to send.', shape: 'UploadAnswer' },
      '400': {
        description: 'Invalid Request: the body, or no asset input of the latest version takes this type and size.',
        shape: 'InvalidRequest',
      },
      '404': 'PipelineNotFound',
      '413': 'PayloadTooLarge',
    },
  },
  {
    method: 'GET',
    path: '/v1/pipelines/{pipeline_id}/runs',
    handler: 'run-list',
    auth: 'owner',
    streams: true,
    operationId: 'listRuns',
    summary: 'Runs, newest first',
    params: ['PipelineId', 'PageLimit', 'PageCursor'],
    answers: {
      '200': { description: 'A page of runs.', shape: 'RunList' },
      '400': { description: 'Invalid Request: a bad limit or cursor.', shape: 'InvalidRequest' },
      '404': 'PipelineNotFound',
    },
  },
  {
    method: 'GET',
    path: '/v1/pipelines/{pipeline_id}/runs/{run_id}',
    handler: 'run-get',
    auth: 'owner',
    waits: true,
    streams: true,
    operationId: 'getRun',
    summary: 'One run with its outputs',
    params: ['PipelineId', 'RunId', 'PreferWait'],
    answers: { '200': { description: 'The run.', shape: 'Run' }, '404': { description: 'Run Not Found.', shape: 'NotFoundRun' } },
  },
  {
    method: 'GET',
    path: '/v1/pipelines/{pipeline_id}/runs/{run_id}/events',
    handler: 'run-events',
    auth: 'owner',
    streams: true,
    operationId: 'getRunEvents',
    summary: "A run's live progress, as server-sent events",
    description:
      'As the caller route `GET /v1/deployments/executions/{execution_id}/events`, for a run: every node and output (nothing is hidden from the owner), and `done` holding the run as GET run shows it.',
    params: ['PipelineId', 'RunId', 'LastEventId'],
    answers: { '200': { description: 'The event stream.', events: 'Run' }, '404': { description: 'Run Not Found.', shape: 'NotFoundRun' } },
  },
  {
    method: 'GET',
    path: '/v1/pipelines/{pipeline_id}/deployment',
    handler: 'deployment-readiness',
    auth: 'owner',
    operationId: 'getReadiness',
    summary: 'Readiness, the discovered and the published contract',
    params: ['PipelineId'],
    answers: { '200': { description: 'The readiness view.', shape: 'Readiness' }, '404': 'PipelineNotFound' },
  },
  {
    method: 'PUT',
    path: '/v1/pipelines/{pipeline_id}/deployment',
    handler: 'deployment-publish',
    auth: 'owner',
    operationId: 'publish',
    summary: 'Publish (create or update) the deployment from the latest finished run',
    params: ['PipelineId'],
    body: { shape: 'PublishRequest', optional: true, description: 'Optional visibility per input and output; an empty body means `{}`.' },
    answers: {
      '200': { description: 'Updated: the deployment id stays the same.', shape: 'Deployment', headers: { NoStore: true } },
      '201': {
        description: 'Created: the API key and signing secret are shown this once.',
        shape: 'NewDeployment',
        headers: { NoStore: true },
      },
      '400': { description: 'Invalid Request: an unknown entry or a malformed visibility.', shape: 'InvalidRequest' },
      '404': 'PipelineNotFound',
      '409': {
        description: 'Publish refused (no successful run, the latest run failed, no Input and no Output nodes), or a concurrent publish.',
        shape: ['PublishNoSuccessfulRun', 'PublishLatestRunFailed', 'PublishNoInputsOrOutputs', 'Conflict'],
      },
      '413': 'PayloadTooLarge',
    },
  },
  {
    method: 'DELETE',
    path: '/v1/pipelines/{pipeline_id}/deployment',
    handler: 'deployment-delete',
    auth: 'owner',
    operationId: 'deleteDeployment',
    summary: 'Delete the deployment, at once and for good',
    params: ['PipelineId', 'Confirm'],
    answers: {
      '204': { description: 'Deleted: every later request for the deployment or its executions answers 404.' },
      '400': { description: 'Confirmation Required: `confirm` missing or not the deployment id.', shape: 'ConfirmationRequired' },
      '404': NO_DEPLOYMENT,
    },
  },
  {
    method: 'POST',
    path: '/v1/pipelines/{pipeline_id}/deployment/keys',
    handler: 'deployment-keys',
    auth: 'owner',
    operationId: 'rotateCredential',
    summary: 'Rotate the API key (or the callback signing secret)',
    description:
      'Without a grace period the old credential stops at once; with one, both work until it ends (callbacks then carry both signatures).',
    params: ['PipelineId'],
    body: { shape: 'RotateRequest', optional: true, description: 'Optional; an empty body rotates the API key with no grace period.' },
    answers: {
      '200': { description: 'The new credential, shown this once.', shape: 'RotateResult', headers: { NoStore: true } },
      '400': { description: 'Invalid Request.', shape: 'InvalidRequest' },
      '404': NO_DEPLOYMENT,
      '409': { description: 'A concurrent change; try again.', shape: 'Conflict' },
      '413': 'PayloadTooLarge',
    },
  },
  // Consumers: each caller its own key, limits and expiry (functions/core/consumers.ts).
  {
    method: 'POST',
    path: '/v1/pipelines/{pipeline_id}/deployment/consumers',
    handler: 'deployment-consumers',
    auth: 'owner',
    operationId: 'createConsumer',
    summary: 'Create a consumer: its own API key, rate limit, quota and expiry',
    description: 'The key works like the deployment key (both header forms, every caller route) on this deployment only.',
    params: ['PipelineId'],
    body: { shape: 'ConsumerCreate' },
    answers: {
      '201': { description: 'Created; the key is shown this once.', shape: 'NewConsumer', headers: { NoStore: true } },
      '400': { description: 'Invalid Request: `detail` names each refused field.', shape: 'InvalidRequest' },
      '404': NO_DEPLOYMENT,
      '409': { description: 'A consumer id clashed (a new id is drawn for each try); try again.', shape: 'Conflict' },
      '413': 'PayloadTooLarge',
    },
  },
  {
    method: 'GET',
    path: '/v1/pipelines/{pipeline_id}/deployment/consumers',
    handler: 'deployment-consumers',
    auth: 'owner',
    operationId: 'listConsumers',
    summary: "The deployment's consumers: limits, key prefix and last use, never key material",
    params: ['PipelineId'],
    answers: { '200': { description: 'Every consumer.', shape: 'ConsumerList' }, '404': NO_DEPLOYMENT },
  },
  {
    method: 'PATCH',
    path: '/v1/pipelines/{pipeline_id}/deployment/consumers/{consumer_id}',
    handler: 'deployment-consumers',
    auth: 'owner',
    operationId: 'updateConsumer',
    summary: "Change a consumer's name, limits, expiry or metadata (null removes a limit or the expiry)",
    params: ['PipelineId', 'ConsumerId'],
    body: { shape: 'ConsumerPatch' },
    answers: {
      '200': { description: 'The consumer as it now is; its next request meets the new limits.', shape: 'Consumer' },
      '400': { description: 'Invalid Request: `detail` names each refused field.', shape: 'InvalidRequest' },
      '404': NO_CONSUMER,
      '409': { description: 'The consumer is revoked, or changed meanwhile.', shape: 'Conflict' },
      '413': 'PayloadTooLarge',
    },
  },
  {
    method: 'DELETE',
    path: '/v1/pipelines/{pipeline_id}/deployment/consumers/{consumer_id}',
    handler: 'deployment-consumers',
    auth: 'owner',
    operationId: 'revokeConsumer',
    summary: 'Revoke a consumer: its key is refused from the next request on (401 `consumer_revoked`)',
    params: ['PipelineId', 'ConsumerId'],
    answers: {
      '204': { description: 'Revoked (also when it already was).' },
      '404': NO_CONSUMER,
      '409': { description: 'The consumer changed meanwhile; try again.', shape: 'Conflict' },
    },
  },
  {
    method: 'POST',
    path: '/v1/pipelines/{pipeline_id}/deployment/consumers/{consumer_id}/keys',
    handler: 'deployment-consumers',
    auth: 'owner',
    operationId: 'rotateConsumerKey',
    summary: "Rotate a consumer's key; with a grace period the old one works until it ends",
    params: ['PipelineId', 'ConsumerId'],
    body: { shape: 'ConsumerRotate', optional: true },
    answers: {
      '200': { description: 'The new key, shown this once.', shape: 'ConsumerKey', headers: { NoStore: true } },
      '400': { description: 'Invalid Request.', shape: 'InvalidRequest' },
      '404': NO_CONSUMER,
      '409': { description: 'The consumer is revoked, or changed meanwhile.', shape: 'Conflict' },
      '413': 'PayloadTooLarge',
    },
  },
  // The deployment key's own limits, enforced as a consumer's.
  {
    method: 'PUT',
    path: '/v1/pipelines/{pipeline_id}/deployment/limits',
    handler: 'deployment-consumers',
    auth: 'owner',
    operationId: 'setDeploymentKeyLimits',
    summary: "Set the deployment key's own rate limit and quota (absent or null: none)",
    description: "Enforced as a consumer's limits are; the deployment's consumers keep their own.",
    params: ['PipelineId'],
    body: { shape: 'KeyLimits' },
    answers: {
      '200': { description: 'The limits now in force.', shape: 'DeploymentKeyLimits' },
      '400': { description: 'Invalid Request: `detail` names each refused field.', shape: 'InvalidRequest' },
      '404': NO_DEPLOYMENT,
      '409': { description: 'A concurrent change; try again.', shape: 'Conflict' },
      '413': 'PayloadTooLarge',
    },
  },
  {
    method: 'GET',
    path: '/v1/pipelines/{pipeline_id}/executions/{execution_id}',
    handler: 'owner-execution-get',
    auth: 'owner',
    streams: true,
    operationId: 'getOwnerExecution',
    summary: 'Any run or API execution of the pipeline: inputs (hidden ones named), outputs, error, node trace and callback attempts',
    params: ['PipelineId', 'ExecutionId'],
    answers: { '200': { description: 'The execution.', shape: 'OwnerExecution' }, '404': OWNER_EXECUTION_NOT_FOUND },
  },
  {
    method: 'GET',
    path: '/v1/secrets',
    handler: 'secret-list',
    auth: 'owner',
    operationId: 'listSecrets',
    summary: "Every owner secret's name and when it was set, never a value",
    answers: { '200': { description: 'The secrets, by name.', shape: 'SecretList' } },
  },
  {
    method: 'PUT',
    path: '/v1/secrets/{name}',
    handler: 'secret-put',
    auth: 'owner',
    operationId: 'setSecret',
    summary: 'Create or replace an owner secret',
    description:
      "Pipelines reference it as `{{secrets.NAME}}` in an http node's url and header values and `$secrets.NAME` in its body. The value is stored sealed and never returned.",
    params: ['SecretName'],
    body: { shape: 'SecretValue' },
    answers: {
      '200': { description: 'Set (created or replaced).', shape: 'SecretSummary' },
      '400': { description: 'Invalid Request: a bad name or body (the value is never repeated).', shape: 'InvalidRequest' },
      '413': 'PayloadTooLarge',
    },
  },
  {
    method: 'DELETE',
    path: '/v1/secrets/{name}',
    handler: 'secret-delete',
    auth: 'owner',
    operationId: 'deleteSecret',
    summary: 'Delete an owner secret; runs that reference it then fail naming it',
    params: ['SecretName'],
    answers: {
      '204': { description: 'Deleted.' },
      '400': { description: 'Invalid Request: a bad name.', shape: 'InvalidRequest' },
      '404': { description: 'Secret Not Found.', shape: 'NotFoundSecret' },
    },
  },
  {
    method: 'POST',
    path: '/v1/pipelines/{pipeline_id}/executions/{execution_id}/cancel',
    handler: 'owner-execution-cancel',
    auth: 'owner',
    operationId: 'cancelOwnerExecution',
    summary: 'Cancel a pending or running run or API execution at once',
    description: "The same move as a caller's cancel: one conditional write, its work stopped, its callback (if any) sent.",
    params: ['PipelineId', 'ExecutionId'],
    answers: {
      '200': { description: 'Cancelled: the execution as the owner sees it.', shape: 'OwnerExecution' },
      '404': OWNER_EXECUTION_NOT_FOUND,
      '409': { description: 'Execution already finished, with its status.', shape: 'ExecutionAlreadyFinished' },
    },
  },
  {
    method: 'POST',
    path: '/v1/pipelines/{pipeline_id}/executions/{execution_id}/callback/redeliver',
    handler: 'owner-callback-redeliver',
    auth: 'owner',
    operationId: 'redeliverCallback',
    summary: 'Send a settled callback again: one new attempt with the same webhook-id',
    description:
      'For a finished execution whose callback was delivered or dead-lettered. One attempt, no retry schedule; receivers deduplicate on `webhook-id`. A repeat while that attempt is owed starts nothing and answers the same. While the callback is still on its retry schedule: its next attempt is sent now instead of at its time (once), and the schedule carries on from it.',
    params: ['PipelineId', 'ExecutionId'],
    answers: {
      '202': { description: 'The redelivery is queued: the delivery record, outcome `pending`.', shape: 'CallbackDelivery' },
      '404': OWNER_EXECUTION_NOT_FOUND,
      '409': { description: 'Nothing to redeliver: no callback, or not finished (`detail` says which).', shape: 'Conflict' },
    },
  },
  {
    method: 'GET',
    path: '/v1/pipelines/{pipeline_id}/deployment/executions',
    handler: 'deployment-executions',
    auth: 'owner',
    streams: true,
    operationId: 'listDeploymentExecutions',
    summary: "The live deployment's API executions, newest first",
    description:
      "Read from an index of the deployment's executions (never a scan). With `status`, a page looks at a bounded number of executions and may hold fewer than `limit`; follow `next_cursor` until it is null.",
    params: ['PipelineId', 'StatusFilter', 'Since', 'PageLimit', 'PageCursor'],
    answers: {
      '200': { description: 'A page of executions.', shape: 'ExecutionList' },
      '400': { description: 'Invalid Request: a bad status, since, limit or cursor.', shape: 'InvalidRequest' },
      '404': NOT_PUBLISHED,
    },
  },
  {
    method: 'GET',
    path: '/v1/pipelines/{pipeline_id}/deployment/usage',
    handler: 'deployment-usage',
    auth: 'owner',
    operationId: 'getDeploymentUsage',
    summary: "The live deployment's finished executions by status, with p50/p95 durations, over the last hour and day",
    description:
      'Kept as counters per five-minute bucket, written once per finished execution; percentiles are the upper bound of the duration bin they fall in.',
    params: ['PipelineId'],
    answers: { '200': { description: 'Usage.', shape: 'Usage' }, '404': NOT_PUBLISHED },
  },
] as const satisfies readonly Route[];

/**
 * Every route handler's folder (functions/<name>/handler.ts): a name only the table can
 * introduce. What is keyed by it (each function's access, lib/stacks/permissions.ts) must name
 * every one, so a route whose handler lacks an entry there does not compile.
 */
export type HandlerName = CallerHandlerName | (typeof OTHER_TABLE)[number]['handler'];

export const ROUTES: readonly Route<HandlerName>[] = /* @__PURE__ */ (CALLER_ROUTES as readonly Route<HandlerName>[]).concat(OTHER_TABLE);

/**
 * The resume route: each deployment's own document offers it beside the caller routes when the
 * deployment has visible wait nodes (functions/core/openapi.ts).
 */
export const DEPLOYMENT_ROUTES: readonly Route[] = /* @__PURE__ */ (CALLER_ROUTES as readonly Route[]).concat(RESUME_TABLE);

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

export type WorkerName = (typeof WORKERS)[keyof typeof WORKERS];
/** Every function pipegate deploys, by folder under functions/. */
export type FunctionName = HandlerName | WorkerName;

/** Each route handler once, in the table's order. */
export const routeHandlers = (): HandlerName[] => [...new Set(ROUTES.map((r) => r.handler))];
