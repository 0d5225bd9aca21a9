/**
 * The whole-service OpenAPI 3.1 document: the caller API from openapi-shared.ts (the same parts
 * every per-deployment document is made of) and the owner API. docs/openapi.json is this,
 * written by `npm run openapi`; a test holds the committed file equal to it.
 */
import {
  CALLER_PARAMETERS,
  CALLER_RESPONSES,
  CALLER_SCHEMAS,
  CALLER_SECURITY_SCHEMES,
  EVERY_ROUTE_RESPONSES,
  SCHEMAS,
  LAST_EVENT_ID_PARAMETER,
  callerPaths,
  eventStreamOk,
  jsonContent,
  parameterRef,
  reachableComponents,
  responseRef,
  schemaRef,
  type JsonSchema,
  type PathItem,
} from './openapi-shared';

const OWNER_SECURITY = [{ OwnerBearer: [] }, { AwsSigV4: [] }];

/** An execution the owner asked for by id that is not theirs to see. */
const OWNER_EXECUTION_NOT_FOUND = {
  description: 'Execution Not Found: unknown, expired, or of another pipeline.',
  content: jsonContent(schemaRef('NotFoundExecution')),
};

/** A pipeline-scoped route about its deployment: the pipeline or its deployment is missing. */
const noLiveDeployment = (description: string) => ({
  description,
  content: jsonContent({ oneOf: [schemaRef('NotFoundPipeline'), schemaRef('NotFoundDeployment')] }),
});

const noConsumer = {
  description: 'Pipeline, Deployment or Consumer Not Found.',
  content: jsonContent({ oneOf: [schemaRef('NotFoundPipeline'), schemaRef('NotFoundDeployment'), schemaRef('NotFoundConsumer')] }),
};

/** The query parameters of a paged owner list. */
const PAGE_PARAMETERS = [
  { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
  { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: '`next_cursor` of the previous page.' },
];

/** An owner operation: its credentials and the answers every owner route may give. */
const ownerOp = (o: { responses: Record<string, unknown> } & Record<string, unknown>) => ({
  tags: ['owners'],
  ...o,
  security: OWNER_SECURITY,
  responses: { ...o.responses, '401': responseRef('OwnerUnauthorized'), '403': responseRef('OwnerForbidden'), ...EVERY_ROUTE_RESPONSES },
});

/** The deployment docs page and its files: for a browser, so no credentials (the page asks for the key). */
const DOCS_PATHS: Record<string, PathItem> = {
  '/v1/deployments/{deployment_id}/docs': {
    get: {
      tags: ['callers'],
      operationId: 'getDeploymentDocs',
      summary: "This deployment's docs page (HTML): it asks for the API key, then shows the API and lets you try it",
      security: [],
      parameters: [parameterRef('DeploymentId')],
      responses: {
        '200': { description: 'The page. It holds nothing of the deployment but its id.', content: { 'text/html': { schema: { type: 'string' } } } },
        '404': responseRef('DeploymentNotFound'),
        ...EVERY_ROUTE_RESPONSES,
      },
    },
  },
  '/v1/docs/{asset}': {
    get: {
      tags: ['callers'],
      operationId: 'getDocsAsset',
      summary: "A file of the docs page: its script, or Swagger UI's (from the swagger-ui-dist package)",
      security: [],
      parameters: [{ name: 'asset', in: 'path', required: true, schema: { type: 'string', enum: ['pipegate-docs.js', 'swagger-ui-bundle.js', 'swagger-ui.css'] } }],
      responses: {
        '200': { description: 'The file.', content: { 'text/javascript': { schema: { type: 'string' } }, 'text/css': { schema: { type: 'string' } } } },
        '404': { description: 'No such file.', content: jsonContent(schemaRef('NotFound')) },
        ...EVERY_ROUTE_RESPONSES,
      },
    },
  },
};

/** A deployment's web form: the link is the capability (no credentials); rate-limited per link and per address. */
function formPaths(): Record<string, PathItem> {
  const token = { name: 'form_token', in: 'path', required: true, schema: { type: 'string', pattern: '^pgf_[A-Za-z0-9_-]{43}$' }, description: 'The token of the form link (`form_url`), as given.' };
  const notFound = { description: 'Form Not Found: never issued or altered, rotated, disabled, or its deployment deleted.', content: jsonContent(schemaRef('FormNotFound')) };
  const limited = {
    description: 'Too Many Requests: past the per-link or per-address limit of runs and uploads a minute (`detail` says which), or API Gateway throttling.',
    headers: { 'Retry-After': { description: 'Seconds until the limit allows another.', schema: { type: 'integer' } } },
    content: jsonContent({ anyOf: [schemaRef('FormRateLimited'), schemaRef('TooManyRequests')] }),
  };
  const oneOf = (description: string, ...names: string[]) => ({ description, content: jsonContent(names.length === 1 ? schemaRef(names[0] ?? '') : { oneOf: names.map(schemaRef) }) });
  return {
    '/v1/forms/{form_token}': {
      get: {
        tags: ['forms'],
        operationId: 'getForm',
        summary: "The web form's page (HTML), generated from the published contract: visible inputs and outputs only",
        security: [],
        parameters: [token],
        responses: { '200': { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } }, '404': notFound, ...EVERY_ROUTE_RESPONSES },
      },
    },
    '/v1/forms/{form_token}/files/{asset}': {
      get: {
        tags: ['forms'],
        operationId: 'getFormAsset',
        summary: "The form page's script or style sheet (the same for every form)",
        security: [],
        parameters: [token, { name: 'asset', in: 'path', required: true, schema: { type: 'string', enum: ['pipegate-form.js', 'pipegate-form.css'] } }],
        responses: {
          '200': { description: 'The file.', content: { 'text/javascript': { schema: { type: 'string' } }, 'text/css': { schema: { type: 'string' } } } },
          '404': { description: 'No such file.', content: jsonContent(schemaRef('NotFound')) },
          ...EVERY_ROUTE_RESPONSES,
        },
      },
    },
    '/v1/forms/{form_token}/executions': {
      post: {
        tags: ['forms'],
        operationId: 'executeForm',
        summary: 'Run the deployment through its form, as a caller would (no callback); counted against the rate limits',
        security: [],
        parameters: [token],
        requestBody: { required: false, content: { 'application/json': { schema: schemaRef('FormExecutionRequest') } } },
        responses: {
          '202': { description: 'Queued.', headers: { Location: { description: 'status_url.', required: true, schema: { type: 'string', format: 'uri' } } }, content: jsonContent(schemaRef('FormAccepted')) },
          '400': oneOf('Invalid Input Structure (a callback included), or Missing Callback URL.', 'InvalidInputStructure', 'MissingCallbackUrl'),
          '404': notFound,
          '413': responseRef('PayloadTooLarge'),
          '415': oneOf('Unsupported Media Type.', 'UnsupportedMediaType'),
          '422': oneOf('Invalid Input (a hidden or unknown input, a wrong value or file), or Invalid Callback URL.', 'InvalidInput', 'InvalidCallbackUrl'),
          ...EVERY_ROUTE_RESPONSES,
          '429': limited,
        },
      },
    },
    '/v1/forms/{form_token}/executions/{execution_id}': {
      get: {
        tags: ['forms'],
        operationId: 'getFormExecution',
        summary: 'A form execution: progress, then its result (`output_artifacts` filled); readable through the link that made it only',
        security: [],
        parameters: [token, parameterRef('ExecutionId'), parameterRef('PreferWait')],
        responses: {
          '200': { description: 'The execution (with `Prefer: wait=N`: once terminal, or after N seconds).', content: jsonContent(schemaRef('FormExecution')) },
          '404': oneOf('Form Not Found, or Execution Not Found (unknown, expired, or not made through this link).', 'FormNotFound', 'NotFoundExecution'),
          ...EVERY_ROUTE_RESPONSES,
        },
      },
    },
    '/v1/forms/{form_token}/uploads': {
      post: {
        tags: ['forms'],
        operationId: 'createFormUpload',
        summary: "A presigned PUT for a file, as the callers' uploads route; counted against the rate limits",
        security: [],
        parameters: [token],
        requestBody: { required: true, content: { 'application/json': { schema: schemaRef('UploadRequest') } } },
        responses: {
          '201': { description: 'The upload URL and the asset value to send.', content: jsonContent(schemaRef('UploadAnswer')) },
          '400': oneOf('Invalid Input Structure.', 'InvalidInputStructure'),
          '404': notFound,
          '413': responseRef('PayloadTooLarge'),
          '422': oneOf('Invalid Input: no asset input takes this type and size.', 'InvalidInput'),
          ...EVERY_ROUTE_RESPONSES,
          '429': limited,
        },
      },
    },
  };
}

/** The capability links an ASSET value's URL points at: no credentials, the URL is the proof. */
function assetPaths(): Record<string, PathItem> {
  // The asset's own media type is the answer's Content-Type; octet-stream stands for all of them.
  const bytes = { description: 'The exact bytes, with their own media type as Content-Type.', content: { 'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } };
  const header = (description: string) => ({ description, schema: { type: 'string' } });
  return {
    '/v1/assets/{token}': {
      get: {
        tags: ['callers'],
        operationId: 'getAsset',
        summary: "A stored asset's bytes, at the link a result or callback gave (signed, expiring, bound to one object)",
        description: [
          'Each read of a result mints fresh links, each with its `expires_at` (`PIPEGATE_ASSET_LINK_TTL_SECONDS`, 24 hours by default).',
          'A link stops working when it expires (410), and at once when its deployment is deleted (404).',
          'SVG, HTML, XML, scripts, PDF and unknown types are served as attachments; every answer has `X-Content-Type-Options: nosniff`.',
          'One `Range: bytes=` range is honoured (206).',
        ].join(' '),
        security: [],
        parameters: [
          { name: 'token', in: 'path', required: true, schema: { type: 'string', maxLength: 2048 }, description: 'The token of the link, as given.' },
          { name: 'Range', in: 'header', required: false, schema: { type: 'string' }, description: 'One `bytes=` range.' },
        ],
        responses: {
          '200': {
            ...bytes,
            headers: {
              'Content-Length': header('The size in bytes.'),
              'Content-Disposition': header('`inline` for images, audio, video, plain text and JSON; `attachment` for anything else.'),
              'X-Content-Type-Options': header('Always `nosniff`.'),
            },
          },
          '206': { ...bytes, description: 'The range asked for.', headers: { 'Content-Range': header('`bytes <first>-<last>/<size>`.') } },
          '404': { description: 'Asset Not Found: the link was never issued or was altered, its deployment was deleted, or the object is gone.', content: jsonContent(schemaRef('AssetNotFound')) },
          '410': {
            description: 'Asset Link Expired: read the result again for a fresh link.',
            content: jsonContent(schemaRef('AssetLinkExpired')),
          },
          '416': { description: 'Range Not Satisfiable.', content: jsonContent(schemaRef('RangeNotSatisfiable')) },
          ...EVERY_ROUTE_RESPONSES,
        },
      },
      head: {
        tags: ['callers'],
        operationId: 'headAsset',
        summary: 'What GET answers at this link (status and headers: size, media type, disposition), without the bytes',
        description: 'Answers as GET does, Range included, with no body: 404 and 410 as for GET.',
        security: [],
        parameters: [
          { name: 'token', in: 'path', required: true, schema: { type: 'string', maxLength: 2048 }, description: 'The token of the link, as given.' },
          { name: 'Range', in: 'header', required: false, schema: { type: 'string' }, description: 'One `bytes=` range.' },
        ],
        responses: {
          '200': {
            description: 'The headers GET would send: the size, the media type, the disposition.',
            headers: {
              'Content-Length': header('The size in bytes.'),
              'Content-Type': header("The asset's media type."),
              'Content-Disposition': header('`inline` for images, audio, video, plain text and JSON; `attachment` for anything else.'),
              'Accept-Ranges': header('Always `bytes`.'),
              'X-Content-Type-Options': header('Always `nosniff`.'),
            },
          },
          '206': { description: 'The headers of the range asked for.', headers: { 'Content-Range': header('`bytes <first>-<last>/<size>`.') } },
          // The answers GET gives, their bodies left out as HEAD's are.
          '404': { description: 'Asset Not Found, as for GET.', content: jsonContent(schemaRef('AssetNotFound')) },
          '410': { description: 'Asset Link Expired, as for GET: read the result again for a fresh link.', content: jsonContent(schemaRef('AssetLinkExpired')) },
          '416': { description: 'Range Not Satisfiable.', content: jsonContent(schemaRef('RangeNotSatisfiable')) },
          ...EVERY_ROUTE_RESPONSES,
        },
      },
    },
  };
}

const OWNER_PATHS: Record<string, PathItem> = {
  '/v1/pipelines': {
    get: ownerOp({
      operationId: 'listPipelines',
      summary: 'Every pipeline, with its latest version',
      responses: {
        '200': { description: 'The pipelines.', content: { 'application/json': { schema: schemaRef('PipelineList') } } },
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}': {
    put: ownerOp({
      operationId: 'pushPipeline',
      summary: 'Push a definition: a new version, or the latest one when the content is unchanged',
      parameters: [
        parameterRef('PipelineId'),
      ],
      requestBody: {
        required: true,
        description: 'The pipeline definition.',
        content: { 'application/json': { schema: schemaRef('PipelineDefinition') } },
      },
      responses: {
        '200': {
          description: 'Unchanged: the latest version.',
          content: { 'application/json': { schema: schemaRef('PushResult') } },
        },
        '201': { description: 'A new version.', content: { 'application/json': { schema: schemaRef('PushResult') } } },
        '400': {
          description: 'Invalid Pipeline Definition (every problem listed), or an invalid pipeline id.',
          content: { 'application/json': { schema: schemaRef('InvalidDefinition') } },
        },
        '413': responseRef('PayloadTooLarge'),
      },
    }),
    get: ownerOp({
      operationId: 'getPipeline',
      summary: 'One pipeline with its latest definition',
      parameters: [
        parameterRef('PipelineId'),
      ],
      responses: {
        '200': { description: 'The pipeline.', content: { 'application/json': { schema: schemaRef('Pipeline') } } },
        '404': responseRef('PipelineNotFound'),
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/runs': {
    post: ownerOp({
      operationId: 'startRun',
      summary: 'Run the latest version, with optional input overrides',
      parameters: [
        parameterRef('PipelineId'),
        parameterRef('PreferWait'),
      ],
      requestBody: {
        required: false,
        description: 'Optional; an empty body means `{}`.',
        content: { 'application/json': { schema: schemaRef('RunRequest') } },
      },
      responses: {
        '200': {
          description: 'The run finished within `Prefer: wait=N`: as `GET …/runs/{run_id}` shows it.',
          headers: {
            Location: { description: 'The status URL.', required: true, schema: { type: 'string', format: 'uri' } },
            'Preference-Applied': { description: '`wait=<seconds>` actually allowed.', required: true, schema: { type: 'string', pattern: '^wait=\\d+$' } },
          },
          content: { 'application/json': { schema: schemaRef('Run') } },
        },
        '202': {
          description: 'Queued.',
          headers: { Location: { description: 'The status URL.', required: true, schema: { type: 'string', format: 'uri' } } },
          content: { 'application/json': { schema: schemaRef('RunAccepted') } },
        },
        '400': {
          description: 'Invalid Request: the body, an unknown input or a value of the wrong type.',
          content: { 'application/json': { schema: schemaRef('InvalidRequest') } },
        },
        '404': responseRef('PipelineNotFound'),
        '413': responseRef('PayloadTooLarge'),
      },
    }),
    get: ownerOp({
      operationId: 'listRuns',
      summary: 'Runs, newest first',
      parameters: [
        parameterRef('PipelineId'),
        ...PAGE_PARAMETERS,
      ],
      responses: {
        '200': { description: 'A page of runs.', content: { 'application/json': { schema: schemaRef('RunList') } } },
        '400': {
          description: 'Invalid Request: a bad limit or cursor.',
          content: { 'application/json': { schema: schemaRef('InvalidRequest') } },
        },
        '404': responseRef('PipelineNotFound'),
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/runs/{run_id}': {
    get: ownerOp({
      operationId: 'getRun',
      summary: 'One run with its outputs',
      parameters: [
        parameterRef('PipelineId'),
        parameterRef('RunId'),
        parameterRef('PreferWait'),
      ],
      responses: {
        '200': { description: 'The run.', content: { 'application/json': { schema: schemaRef('Run') } } },
        '404': { description: 'Run Not Found.', content: { 'application/json': { schema: schemaRef('NotFoundRun') } } },
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/runs/{run_id}/events': {
    get: ownerOp({
      operationId: 'getRunEvents',
      summary: "A run's live progress, as server-sent events",
      description:
        'As the caller route `GET /v1/deployments/executions/{execution_id}/events`, for a run: every node and output (nothing is hidden from the owner), and `done` holding the run as GET run shows it.',
      parameters: [
        parameterRef('PipelineId'),
        parameterRef('RunId'),
        LAST_EVENT_ID_PARAMETER,
      ],
      responses: {
        '200': eventStreamOk('Run'),
        '404': { description: 'Run Not Found.', content: { 'application/json': { schema: schemaRef('NotFoundRun') } } },
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/deployment': {
    get: ownerOp({
      operationId: 'getReadiness',
      summary: 'Readiness, the discovered and the published contract',
      parameters: [
        parameterRef('PipelineId'),
      ],
      responses: {
        '200': { description: 'The readiness view.', content: { 'application/json': { schema: schemaRef('Readiness') } } },
        '404': responseRef('PipelineNotFound'),
      },
    }),
    put: ownerOp({
      operationId: 'publish',
      summary: 'Publish (create or update) the deployment from the latest finished run',
      parameters: [
        parameterRef('PipelineId'),
      ],
      requestBody: {
        required: false,
        description: 'Optional visibility per input and output; an empty body means `{}`.',
        content: { 'application/json': { schema: schemaRef('PublishRequest') } },
      },
      responses: {
        '200': {
          description: 'Updated: the deployment id stays the same.',
          headers: { 'Cache-Control': { description: 'Never cached.', required: true, schema: { const: 'no-store' } } },
          content: { 'application/json': { schema: schemaRef('Deployment') } },
        },
        '201': {
          description: 'Created: the API key and signing secret are shown this once.',
          headers: { 'Cache-Control': { description: 'Never cached.', required: true, schema: { const: 'no-store' } } },
          content: { 'application/json': { schema: schemaRef('NewDeployment') } },
        },
        '400': {
          description: 'Invalid Request: an unknown entry or a malformed visibility.',
          content: { 'application/json': { schema: schemaRef('InvalidRequest') } },
        },
        '404': responseRef('PipelineNotFound'),
        '409': {
          description: 'Publish refused (no successful run, the latest run failed, no Input and no Output nodes), or a concurrent publish.',
          content: {
            'application/json': {
              schema: {
                oneOf: [
                  schemaRef('PublishNoSuccessfulRun'),
                  schemaRef('PublishLatestRunFailed'),
                  schemaRef('PublishNoInputsOrOutputs'),
                  schemaRef('Conflict'),
                ],
              },
            },
          },
        },
        '413': responseRef('PayloadTooLarge'),
      },
    }),
    delete: ownerOp({
      operationId: 'deleteDeployment',
      summary: 'Delete the deployment, at once and for good',
      parameters: [
        parameterRef('PipelineId'),
        {
          name: 'confirm',
          in: 'query',
          required: true,
          schema: schemaRef('Uuid'),
          description: 'The deployment id, repeated as confirmation.',
        },
      ],
      responses: {
        '204': { description: 'Deleted: every later request for the deployment or its executions answers 404.' },
        '400': {
          description: 'Confirmation Required: `confirm` missing or not the deployment id.',
          content: { 'application/json': { schema: schemaRef('ConfirmationRequired') } },
        },
        '404': noLiveDeployment('Pipeline Not Found, or it has no deployment.'),
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/deployment/keys': {
    post: ownerOp({
      operationId: 'rotateCredential',
      summary: 'Rotate the API key (or the callback signing secret)',
      description: 'Without a grace period the old credential stops at once; with one, both work until it ends (callbacks then carry both signatures).',
      parameters: [
        parameterRef('PipelineId'),
      ],
      requestBody: {
        required: false,
        description: 'Optional; an empty body rotates the API key with no grace period.',
        content: { 'application/json': { schema: schemaRef('RotateRequest') } },
      },
      responses: {
        '200': {
          description: 'The new credential, shown this once.',
          headers: { 'Cache-Control': { description: 'Never cached.', required: true, schema: { const: 'no-store' } } },
          content: { 'application/json': { schema: schemaRef('RotateResult') } },
        },
        '400': { description: 'Invalid Request.', content: { 'application/json': { schema: schemaRef('InvalidRequest') } } },
        '404': noLiveDeployment('Pipeline Not Found, or it has no deployment.'),
        '409': {
          description: 'A concurrent change; try again.',
          content: { 'application/json': { schema: schemaRef('Conflict') } },
        },
        '413': responseRef('PayloadTooLarge'),
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/deployment/consumers': {
    post: ownerOp({
      operationId: 'createConsumer',
      summary: 'Create a consumer: its own API key, rate limit, quota and expiry',
      description: 'The key works like the deployment key (both header forms, every caller route) on this deployment only.',
      parameters: [parameterRef('PipelineId')],
      requestBody: { required: true, content: { 'application/json': { schema: schemaRef('ConsumerCreate') } } },
      responses: {
        '201': {
          description: 'Created; the key is shown this once.',
          headers: { 'Cache-Control': { description: 'Never cached.', required: true, schema: { const: 'no-store' } } },
          content: { 'application/json': { schema: schemaRef('NewConsumer') } },
        },
        '400': { description: 'Invalid Request: `detail` names each refused field.', content: { 'application/json': { schema: schemaRef('InvalidRequest') } } },
        '404': noLiveDeployment('Pipeline Not Found, or it has no deployment.'),
        '409': { description: 'A consumer id clashed (a new id is drawn for each try); try again.', content: { 'application/json': { schema: schemaRef('Conflict') } } },
        '413': responseRef('PayloadTooLarge'),
      },
    }),
    get: ownerOp({
      operationId: 'listConsumers',
      summary: "The deployment's consumers: limits, key prefix and last use, never key material",
      parameters: [parameterRef('PipelineId')],
      responses: {
        '200': { description: 'Every consumer.', content: { 'application/json': { schema: schemaRef('ConsumerList') } } },
        '404': noLiveDeployment('Pipeline Not Found, or it has no deployment.'),
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/deployment/consumers/{consumer_id}': {
    patch: ownerOp({
      operationId: 'updateConsumer',
      summary: "Change a consumer's name, limits, expiry or metadata (null removes a limit or the expiry)",
      parameters: [parameterRef('PipelineId'), parameterRef('ConsumerId')],
      requestBody: { required: true, content: { 'application/json': { schema: schemaRef('ConsumerPatch') } } },
      responses: {
        '200': { description: 'The consumer as it now is; its next request meets the new limits.', content: { 'application/json': { schema: schemaRef('Consumer') } } },
        '400': { description: 'Invalid Request: `detail` names each refused field.', content: { 'application/json': { schema: schemaRef('InvalidRequest') } } },
        '404': noConsumer,
        '409': { description: 'The consumer is revoked, or changed meanwhile.', content: { 'application/json': { schema: schemaRef('Conflict') } } },
        '413': responseRef('PayloadTooLarge'),
      },
    }),
    delete: ownerOp({
      operationId: 'revokeConsumer',
      summary: "Revoke a consumer: its key is refused from the next request on (401 `consumer_revoked`)",
      parameters: [parameterRef('PipelineId'), parameterRef('ConsumerId')],
      responses: {
        '204': { description: 'Revoked (also when it already was).' },
        '404': noConsumer,
        '409': { description: 'The consumer changed meanwhile; try again.', content: { 'application/json': { schema: schemaRef('Conflict') } } },
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/deployment/consumers/{consumer_id}/keys': {
    post: ownerOp({
      operationId: 'rotateConsumerKey',
      summary: "Rotate a consumer's key; with a grace period the old one works until it ends",
      parameters: [parameterRef('PipelineId'), parameterRef('ConsumerId')],
      requestBody: { required: false, content: { 'application/json': { schema: schemaRef('ConsumerRotate') } } },
      responses: {
        '200': {
          description: 'The new key, shown this once.',
          headers: { 'Cache-Control': { description: 'Never cached.', required: true, schema: { const: 'no-store' } } },
          content: { 'application/json': { schema: schemaRef('ConsumerKey') } },
        },
        '400': { description: 'Invalid Request.', content: { 'application/json': { schema: schemaRef('InvalidRequest') } } },
        '404': noConsumer,
        '409': { description: 'The consumer is revoked, or changed meanwhile.', content: { 'application/json': { schema: schemaRef('Conflict') } } },
        '413': responseRef('PayloadTooLarge'),
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/deployment/limits': {
    put: ownerOp({
      operationId: 'setDeploymentKeyLimits',
      summary: "Set the deployment key's own rate limit and quota (absent or null: none)",
      description: "Enforced as a consumer's limits are; the deployment's consumers keep their own.",
      parameters: [parameterRef('PipelineId')],
      requestBody: { required: true, content: { 'application/json': { schema: schemaRef('KeyLimits') } } },
      responses: {
        '200': { description: 'The limits now in force.', content: { 'application/json': { schema: schemaRef('DeploymentKeyLimits') } } },
        '400': { description: 'Invalid Request: `detail` names each refused field.', content: { 'application/json': { schema: schemaRef('InvalidRequest') } } },
        '404': noLiveDeployment('Pipeline Not Found, or it has no deployment.'),
        '409': { description: 'A concurrent change; try again.', content: { 'application/json': { schema: schemaRef('Conflict') } } },
        '413': responseRef('PayloadTooLarge'),
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/executions/{execution_id}': {
    get: ownerOp({
      operationId: 'getOwnerExecution',
      summary: 'Any run or API execution of the pipeline: inputs (hidden ones named), outputs, error, node trace and callback attempts',
      parameters: [
        parameterRef('PipelineId'),
        parameterRef('ExecutionId'),
      ],
      responses: {
        '200': { description: 'The execution.', content: { 'application/json': { schema: schemaRef('OwnerExecution') } } },
        '404': OWNER_EXECUTION_NOT_FOUND,
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/executions/{execution_id}/cancel': {
    post: ownerOp({
      operationId: 'cancelOwnerExecution',
      summary: 'Cancel a pending or running run or API execution at once',
      description: 'The same move as a caller\'s cancel: one conditional write, its work stopped, its callback (if any) sent.',
      parameters: [
        parameterRef('PipelineId'),
        parameterRef('ExecutionId'),
      ],
      responses: {
        '200': { description: 'Cancelled: the execution as the owner sees it.', content: { 'application/json': { schema: schemaRef('OwnerExecution') } } },
        '404': OWNER_EXECUTION_NOT_FOUND,
        '409': {
          description: 'Execution already finished, with its status.',
          content: { 'application/json': { schema: schemaRef('ExecutionAlreadyFinished') } },
        },
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/executions/{execution_id}/callback/redeliver': {
    post: ownerOp({
      operationId: 'redeliverCallback',
      summary: 'Send a settled callback again: one new attempt with the same webhook-id',
      description:
        'For a finished execution whose callback was delivered or dead-lettered. One attempt, no retry schedule; receivers deduplicate on `webhook-id`. A repeat while that attempt is owed starts nothing and answers the same. While the callback is still on its retry schedule: its next attempt is sent now instead of at its time (once), and the schedule carries on from it.',
      parameters: [
        parameterRef('PipelineId'),
        parameterRef('ExecutionId'),
      ],
      responses: {
        '202': {
          description: 'The redelivery is queued: the delivery record, outcome `pending`.',
          content: { 'application/json': { schema: schemaRef('CallbackDelivery') } },
        },
        '404': OWNER_EXECUTION_NOT_FOUND,
        '409': {
          description: 'Nothing to redeliver: no callback, or not finished (`detail` says which).',
          content: { 'application/json': { schema: schemaRef('Conflict') } },
        },
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/deployment/executions': {
    get: ownerOp({
      operationId: 'listDeploymentExecutions',
      summary: "The live deployment's API executions, newest first",
      description:
        'Read from an index of the deployment\'s executions (never a scan). With `status`, a page looks at a bounded number of executions and may hold fewer than `limit`; follow `next_cursor` until it is null.',
      parameters: [
        parameterRef('PipelineId'),
        { name: 'status', in: 'query', required: false, schema: schemaRef('ExecutionStatus') },
        {
          name: 'since',
          in: 'query',
          required: false,
          schema: { type: 'string' },
          description: 'Only executions created at or after this ISO 8601 time.',
        },
        ...PAGE_PARAMETERS,
      ],
      responses: {
        '200': { description: 'A page of executions.', content: { 'application/json': { schema: schemaRef('ExecutionList') } } },
        '400': {
          description: 'Invalid Request: a bad status, since, limit or cursor.',
          content: { 'application/json': { schema: schemaRef('InvalidRequest') } },
        },
        '404': noLiveDeployment('Pipeline Not Found, or it is not published.'),
      },
    }),
  },
  '/v1/pipelines/{pipeline_id}/deployment/usage': {
    get: ownerOp({
      operationId: 'getDeploymentUsage',
      summary: "The live deployment's finished executions by status, with p50/p95 durations, over the last hour and day",
      description:
        'Kept as counters per five-minute bucket, written once per finished execution; percentiles are the upper bound of the duration bin they fall in.',
      parameters: [
        parameterRef('PipelineId'),
      ],
      responses: {
        '200': { description: 'Usage.', content: { 'application/json': { schema: schemaRef('Usage') } } },
        '404': noLiveDeployment('Pipeline Not Found, or it is not published.'),
      },
    }),
  },
  '/v1/secrets': {
    get: ownerOp({
      operationId: 'listSecrets',
      summary: "Every owner secret's name and when it was set, never a value",
      responses: {
        '200': { description: 'The secrets, by name.', content: { 'application/json': { schema: schemaRef('SecretList') } } },
      },
    }),
  },
  '/v1/secrets/{name}': {
    put: ownerOp({
      operationId: 'setSecret',
      summary: 'Create or replace an owner secret',
      description: 'Pipelines reference it as `{{secrets.NAME}}` in an http node\'s url and header values and `$secrets.NAME` in its body. The value is stored sealed and never returned.',
      parameters: [parameterRef('SecretName')],
      requestBody: { required: true, content: { 'application/json': { schema: schemaRef('SecretValue') } } },
      responses: {
        '200': { description: 'Set (created or replaced).', content: { 'application/json': { schema: schemaRef('SecretSummary') } } },
        '400': {
          description: 'Invalid Request: a bad name or body (the value is never repeated).',
          content: { 'application/json': { schema: schemaRef('InvalidRequest') } },
        },
        '413': responseRef('PayloadTooLarge'),
      },
    }),
    delete: ownerOp({
      operationId: 'deleteSecret',
      summary: 'Delete an owner secret; runs that reference it then fail naming it',
      parameters: [parameterRef('SecretName')],
      responses: {
        '204': { description: 'Deleted.' },
        '400': { description: 'Invalid Request: a bad name.', content: { 'application/json': { schema: schemaRef('InvalidRequest') } } },
        '404': { description: 'Secret Not Found.', content: { 'application/json': { schema: schemaRef('NotFoundSecret') } } },
      },
    }),
  },
};

const OWNER_RESPONSES: Record<string, JsonSchema> = {
  OwnerUnauthorized: {
    description:
      'Missing or wrong owner credentials (`Unauthorized`): locally the owner token; on AWS an unsigned request, or an IAM identity that may not invoke this route (API Gateway\'s ACCESS_DENIED, answered 401 with `reason` and `detail` empty).',
    headers: { 'WWW-Authenticate': { description: 'Always `Bearer` on the local runtime.', required: true, schema: { const: 'Bearer' } } },
    content: jsonContent(schemaRef('Unauthorized')),
  },
  OwnerForbidden: {
    description: 'AWS: the IAM signature was refused (invalid or expired).',
    content: jsonContent(schemaRef('Forbidden')),
  },
  PipelineNotFound: { description: 'Pipeline Not Found.', content: jsonContent(schemaRef('NotFoundPipeline')) },
};

const OWNER_PARAMETERS: Record<string, JsonSchema> = {
  PipelineId: { name: 'pipeline_id', in: 'path', required: true, schema: schemaRef('PipelineId') },
  RunId: { name: 'run_id', in: 'path', required: true, schema: schemaRef('Uuid'), description: 'A run id; anything else answers 404.' },
  SecretName: { name: 'name', in: 'path', required: true, schema: schemaRef('SecretName'), description: "The secret's name, as pipelines reference it." },
  ConsumerId: { name: 'consumer_id', in: 'path', required: true, schema: schemaRef('Uuid'), description: 'A consumer id; anything else answers 404.' },
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
  'The whole service: the caller API (a deployment\'s API key) and the owner API (IAM on AWS, a bearer token on the local runtime).',
  '',
  '- Paths are relative to the base URL, stage and any prefix included; a trailing slash is always optional. The base URL is `PIPEGATE_PUBLIC_URL` when the service is configured with one; otherwise, on AWS, API Gateway\'s host and stage, and on the local runtime the request\'s Host header (and `PIPEGATE_BASE_PATH`).',
  '- Every error is JSON `{ "error": <message>, "detail"?: <explanation> }` plus named fields.',
  '- Timestamps are ISO 8601 UTC with milliseconds and `Z`.',
  '- The local runtime also answers `GET /health` with 200 `{"status":"ok"}`, without credentials.',
  '- Each deployment describes its own request and response at `GET /v1/deployments/{deployment_id}/openapi.json`.',
].join('\n');

export function serviceOpenApi() {
  const paths = { ...callerPaths(), ...DOCS_PATHS, ...assetPaths(), ...formPaths(), ...OWNER_PATHS };
  const available = {
    securitySchemes: { ...CALLER_SECURITY_SCHEMES, ...OWNER_SECURITY_SCHEMES },
    parameters: { ...CALLER_PARAMETERS, ...OWNER_PARAMETERS },
    responses: { ...CALLER_RESPONSES, ...OWNER_RESPONSES },
    schemas: { ...CALLER_SCHEMAS, ...SCHEMAS },
  };
  const used = reachableComponents(paths, available);
  // Keep the components' declared order (readers browse them), but only those a path reaches.
  const pick = (kind: keyof typeof available) => Object.fromEntries(Object.entries(available[kind]).filter(([name]) => used[kind]?.[name] !== undefined));
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
export const serviceOpenApiText = (): string => `${JSON.stringify(serviceOpenApi(), null, 2)}\n`;
