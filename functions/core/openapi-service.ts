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
  callerPaths,
  detailSchema,
  errorSchema,
  jsonContent,
  parameterRef,
  nullable,
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

const problems = { type: 'array', minItems: 1, items: schemaRef('Problem'), description: 'Every problem found, each with its path and reason.' };

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
          '404': { description: 'Asset Not Found: the link was never issued or was altered, its deployment was deleted, or the object is gone.', content: jsonContent(errorSchema('AssetNotFound', 'No asset at this link.', { detail: detailSchema })) },
          '410': {
            description: 'Asset Link Expired: read the result again for a fresh link.',
            content: jsonContent(errorSchema('AssetLinkExpired', 'The link expired.', { detail: detailSchema, expired_at: { type: 'string', format: 'date-time' } }, ['expired_at'])),
          },
          '416': { description: 'Range Not Satisfiable.', content: jsonContent(errorSchema('RangeNotSatisfiable', 'The range starts past the end.', { detail: detailSchema })) },
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
        'For a finished execution whose callback was delivered or dead-lettered. One attempt, no retry schedule; receivers deduplicate on `webhook-id`. A repeat while that attempt is owed starts nothing and answers the same.',
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
          description: 'Nothing to redeliver: no callback, not finished, or still on its retry schedule (`detail` says which).',
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

const OWNER_SCHEMAS: Record<string, JsonSchema> = {
  NotFound: errorSchema('RouteNotFound', 'Nothing is served at this path.'),
  PipelineId: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,62}$' },
  Problem: {
    type: 'object',
    required: ['path', 'reason'],
    properties: { path: { type: 'string' }, reason: { type: 'string' } },
    additionalProperties: false,
  },
  PipelineDefinition: {
    type: 'object',
    additionalProperties: false,
    required: ['nodes'],
    properties: {
      description: { type: 'string', maxLength: 2000 },
      nodes: {
        type: 'object',
        minProperties: 1,
        maxProperties: 64,
        propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$', not: { enum: ['execution_id', '__proto__'] } },
        additionalProperties: schemaRef('Node'),
      },
    },
    description: 'Checked whole on push: unknown types or fields, bad ids, missing references, cycles, type mismatches and JSONata syntax errors are all listed.',
  },
  Node: {
    oneOf: [
      schemaRef('InputNode'),
      schemaRef('OutputNode'),
      schemaRef('TransformNode'),
      schemaRef('HttpNode'),
      schemaRef('DelayNode'),
    ],
  },
  InputNode: {
    type: 'object',
    required: ['type', 'value_type', 'value'],
    properties: {
      type: { const: 'input' },
      value_type: schemaRef('InputValueType'),
      value: schemaRef('RawValue'),
      description: { type: 'string' },
    },
    additionalProperties: false,
    description: 'An input: the request key. `value` must match `value_type`.',
  },
  OutputNode: {
    type: 'object',
    required: ['type', 'from'],
    properties: { type: { const: 'output' }, from: schemaRef('NodeId'), description: { type: 'string' } },
    additionalProperties: false,
    description: 'An output: the response key. Its value must be a string, a finite number or a boolean.',
  },
  TransformNode: {
    type: 'object',
    required: ['type', 'inputs', 'expression'],
    properties: {
      type: { const: 'transform' },
      inputs: { type: 'array', items: schemaRef('NodeId') },
      expression: { type: 'string', minLength: 1, description: 'JSONata, evaluated over `{ <input id>: value }`.' },
      description: { type: 'string' },
    },
    additionalProperties: false,
  },
  HttpNode: {
    type: 'object',
    required: ['type', 'url'],
    properties: {
      type: { const: 'http' },
      inputs: { type: 'array', items: schemaRef('NodeId') },
      method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], default: 'GET' },
      // No `format: uri`: `{{secrets.NAME}}` is not URI syntax until it is substituted.
      url: {
        type: 'string',
        description: 'Absolute http(s) URL, checked by the address guard when connecting. May hold owner secret references, `{{secrets.NAME}}`, substituted when the node runs.',
      },
      headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'Header values may hold owner secret references, `{{secrets.NAME}}`.' },
      body: { type: 'string', description: 'JSONata over `inputs`; its result is sent as JSON. Not allowed with GET. `$secrets.NAME` reads an owner secret.' },
      timeout_ms: { type: 'integer', minimum: 1, maximum: 30000, default: 10000 },
      description: { type: 'string' },
    },
    additionalProperties: false,
    description: 'Its value is the parsed JSON (or text) response; a non-2xx response fails the node.',
  },
  DelayNode: {
    type: 'object',
    required: ['type', 'inputs', 'ms'],
    properties: {
      type: { const: 'delay' },
      inputs: { type: 'array', items: schemaRef('NodeId'), minItems: 1, maxItems: 1 },
      ms: { type: 'integer', minimum: 0, maximum: 60000 },
      description: { type: 'string' },
    },
    additionalProperties: false,
  },
  PushResult: {
    type: 'object',
    required: ['pipeline_id', 'version', 'created'],
    properties: {
      pipeline_id: schemaRef('PipelineId'),
      version: { type: 'integer', minimum: 1 },
      created: { type: 'boolean' },
      warnings: {
        type: 'array',
        minItems: 1,
        items: schemaRef('Problem'),
        description: 'Present when the definition references owner secrets that are not set: each reference and where it is. Runs fail naming the secret until it is set.',
      },
    },
  },
  SecretName: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$' },
  SecretValue: {
    type: 'object',
    required: ['value'],
    properties: { value: { type: 'string', minLength: 1, maxLength: 4096 } },
    additionalProperties: false,
  },
  SecretSummary: {
    type: 'object',
    required: ['name', 'updated_at'],
    properties: { name: schemaRef('SecretName'), updated_at: schemaRef('Timestamp') },
    additionalProperties: false,
    description: 'An owner secret: its name and when it was last set. Its value is never returned.',
  },
  SecretList: {
    type: 'object',
    required: ['secrets'],
    properties: { secrets: { type: 'array', items: schemaRef('SecretSummary') } },
    additionalProperties: false,
  },
  PipelineSummary: {
    type: 'object',
    required: ['pipeline_id', 'version', 'description', 'deployment_id', 'created_at', 'updated_at'],
    properties: {
      pipeline_id: schemaRef('PipelineId'),
      version: { type: 'integer', minimum: 1 },
      description: { type: ['string', 'null'] },
      deployment_id: nullable(schemaRef('Uuid')),
      created_at: schemaRef('Timestamp'),
      updated_at: schemaRef('Timestamp'),
    },
  },
  PipelineList: {
    type: 'object',
    required: ['pipelines'],
    properties: { pipelines: { type: 'array', items: schemaRef('PipelineSummary'), description: 'Sorted by pipeline id.' } },
  },
  Pipeline: {
    type: 'object',
    required: ['pipeline_id', 'version', 'description', 'definition', 'deployment_id', 'created_at', 'updated_at'],
    properties: {
      pipeline_id: schemaRef('PipelineId'),
      version: { type: 'integer', minimum: 1, description: 'The latest version.' },
      description: { type: ['string', 'null'] },
      definition: schemaRef('PipelineDefinition'),
      deployment_id: nullable(schemaRef('Uuid')),
      created_at: schemaRef('Timestamp'),
      updated_at: schemaRef('Timestamp'),
    },
  },
  RunRequest: {
    type: 'object',
    additionalProperties: false,
    properties: {
      inputs: {
        type: 'object',
        additionalProperties: schemaRef('RawValue'),
        description: 'Overrides of input node values, by id.',
      },
    },
  },
  RunAccepted: {
    type: 'object',
    required: ['run_id', 'version', 'status', 'status_url'],
    properties: {
      run_id: schemaRef('Uuid'),
      version: { type: 'integer', minimum: 1 },
      status: { const: 'pending' },
      status_url: { type: 'string', format: 'uri' },
    },
  },
  Run: {
    type: 'object',
    required: ['run_id', 'pipeline_id', 'version', 'status', 'inputs', 'outputs', 'error_message', 'created_at', 'started_at', 'completed_at', 'completion_duration'],
    properties: {
      run_id: schemaRef('Uuid'),
      pipeline_id: schemaRef('PipelineId'),
      version: { type: 'integer', minimum: 1 },
      status: schemaRef('ExecutionStatus'),
      inputs: { type: 'object', additionalProperties: schemaRef('RawValue'), description: 'The effective input values.' },
      outputs: {
        type: ['object', 'null'],
        additionalProperties: schemaRef('RawValue'),
        description: 'Every output by id once completed; null before and otherwise.',
      },
      error_message: { type: ['string', 'null'] },
      created_at: schemaRef('Timestamp'),
      started_at: nullable(schemaRef('Timestamp')),
      completed_at: nullable(schemaRef('Timestamp')),
      completion_duration: { type: ['integer', 'null'], minimum: 0 },
    },
  },
  RunList: {
    type: 'object',
    required: ['runs', 'next_cursor'],
    properties: {
      runs: { type: 'array', items: schemaRef('Run'), description: 'Newest first.' },
      next_cursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last page.' },
    },
  },
  DeliveryAttempt: {
    type: 'object',
    required: ['at', 'duration_ms', 'status', 'error', 'redelivery'],
    properties: {
      at: schemaRef('Timestamp'),
      duration_ms: { type: 'integer', minimum: 0 },
      status: { type: ['integer', 'null'], description: "The receiver's HTTP status; null when no answer came (see error)." },
      error: { type: ['string', 'null'] },
      redelivery: { type: 'boolean', description: 'Sent because the owner asked (redeliver), not by the retry schedule.' },
    },
  },
  CallbackDelivery: {
    type: 'object',
    required: ['webhook_id', 'attempts', 'outcome', 'last_status', 'last_error', 'last_attempt_at', 'next_attempt_at', 'redelivery', 'log'],
    properties: {
      redelivery: { type: 'boolean', description: "An owner's redelivery is owed (one attempt)." },
      log: { type: 'array', items: schemaRef('DeliveryAttempt'), description: 'The latest attempts (up to 20), oldest first; `attempts` counts them all.' },
      webhook_id: { type: 'string' },
      attempts: { type: 'integer', minimum: 0 },
      outcome: { type: 'string', enum: ['pending', 'delivered', 'dead_lettered'] },
      last_status: { type: ['integer', 'null'] },
      last_error: { type: ['string', 'null'] },
      last_attempt_at: nullable(schemaRef('Timestamp')),
      next_attempt_at: nullable(schemaRef('Timestamp')),
    },
  },
  NodeTrace: {
    type: 'object',
    required: ['node', 'type', 'outcome', 'started_at', 'completed_at', 'duration_ms', 'error', 'http_status', 'preview'],
    properties: {
      node: schemaRef('NodeId'),
      type: { type: 'string', enum: ['input', 'transform', 'http', 'delay', 'output'] },
      outcome: {
        type: 'string',
        enum: ['completed', 'failed', 'stopped', 'not_run'],
        description: 'stopped: the execution ended (failed elsewhere, timed out, cancelled) while this node was busy; not_run: it never started.',
      },
      started_at: nullable(schemaRef('Timestamp')),
      completed_at: nullable(schemaRef('Timestamp')),
      duration_ms: { type: ['integer', 'null'], minimum: 0 },
      error: { type: ['string', 'null'], description: 'Why the node failed (redacted, at most 500 characters).' },
      http_status: { type: ['integer', 'null'], description: "An http node's upstream status, when it answered with one that failed the node." },
      preview: {
        type: ['string', 'null'],
        description: "The node's value as JSON text, cut at 200 characters; owner secrets and credential-looking tokens are redacted.",
      },
    },
  },
  FailedNode: {
    type: 'object',
    required: ['node', 'type', 'error', 'http_status'],
    properties: {
      node: schemaRef('NodeId'),
      type: { type: 'string', enum: ['input', 'transform', 'http', 'delay', 'output'] },
      error: { type: ['string', 'null'] },
      http_status: { type: ['integer', 'null'] },
    },
  },
  ExecutionSummary: {
    type: 'object',
    required: ['execution_id', 'status', 'created_at', 'started_at', 'completed_at', 'completion_duration', 'error_message', 'callback'],
    properties: {
      execution_id: schemaRef('Uuid'),
      status: schemaRef('ExecutionStatus'),
      created_at: schemaRef('Timestamp'),
      started_at: nullable(schemaRef('Timestamp')),
      completed_at: nullable(schemaRef('Timestamp')),
      completion_duration: { type: ['integer', 'null'], minimum: 0 },
      error_message: { type: ['string', 'null'] },
      callback: {
        anyOf: [
          {
            type: 'object',
            required: ['outcome', 'attempts', 'last_status', 'last_error'],
            properties: {
              outcome: { type: 'string', enum: ['pending', 'delivered', 'dead_lettered'] },
              attempts: { type: 'integer', minimum: 0 },
              last_status: { type: ['integer', 'null'] },
              last_error: { type: ['string', 'null'] },
            },
          },
          { type: 'null' },
        ],
        description: 'How its callback went; null without one.',
      },
    },
  },
  ExecutionList: {
    type: 'object',
    required: ['pipeline_id', 'deployment_id', 'executions', 'next_cursor'],
    properties: {
      pipeline_id: schemaRef('PipelineId'),
      deployment_id: schemaRef('Uuid'),
      executions: { type: 'array', items: schemaRef('ExecutionSummary'), description: 'Newest first.' },
      next_cursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last page.' },
    },
  },
  UsageWindow: {
    type: 'object',
    required: ['from', 'to', 'total', 'by_status', 'p50_ms', 'p95_ms'],
    properties: {
      from: schemaRef('Timestamp'),
      to: schemaRef('Timestamp'),
      total: { type: 'integer', minimum: 0, description: 'Finished executions in the window.' },
      by_status: {
        type: 'object',
        required: ['completed', 'failed', 'cancelled'],
        properties: {
          completed: { type: 'integer', minimum: 0 },
          failed: { type: 'integer', minimum: 0 },
          cancelled: { type: 'integer', minimum: 0 },
        },
      },
      p50_ms: { type: ['integer', 'null'], description: 'Upper bound (ms) of the duration bin holding the median; null without executions.' },
      p95_ms: { type: ['integer', 'null'], description: 'Upper bound (ms) of the duration bin holding the 95th percentile; null without executions.' },
    },
  },
  Usage: {
    type: 'object',
    required: ['pipeline_id', 'deployment_id', 'last_hour', 'last_day'],
    properties: {
      pipeline_id: schemaRef('PipelineId'),
      deployment_id: schemaRef('Uuid'),
      last_hour: schemaRef('UsageWindow'),
      last_day: schemaRef('UsageWindow'),
    },
  },
  OwnerExecution: {
    type: 'object',
    required: ['run_id', 'execution_id', 'kind', 'pipeline_id', 'deployment_id', 'version', 'status', 'inputs', 'hidden_inputs', 'outputs', 'visible_outputs', 'error_message', 'callback', 'callback_delivery', 'failed_node', 'trace', 'trace_truncated', 'created_at', 'started_at', 'completed_at', 'completion_duration'],
    properties: {
      hidden_inputs: { type: 'array', items: schemaRef('NodeId'), description: 'Input ids callers can neither see nor set (their published value was used).' },
      failed_node: { ...nullable(schemaRef('FailedNode')), description: 'The node whose failure ended the execution; null otherwise.' },
      trace: {
        anyOf: [
          { type: 'array', items: schemaRef('NodeTrace') },
          { type: 'null' },
        ],
        description: 'What every node did, in dependency order; null until the execution has run.',
      },
      trace_truncated: { type: 'boolean', description: 'Previews or errors were cut further to keep the record within its size limit.' },
      run_id: schemaRef('Uuid'),
      execution_id: schemaRef('Uuid'),
      kind: { type: 'string', enum: ['run', 'api'] },
      pipeline_id: schemaRef('PipelineId'),
      deployment_id: nullable(schemaRef('Uuid')),
      version: { type: 'integer', minimum: 1 },
      status: schemaRef('ExecutionStatus'),
      inputs: { type: 'object', additionalProperties: schemaRef('RawValue') },
      outputs: { type: ['object', 'null'], additionalProperties: schemaRef('RawValue') },
      visible_outputs: {
        type: ['array', 'null'],
        items: schemaRef('NodeId'),
        description: 'Output ids the caller sees; null for runs.',
      },
      error_message: { type: ['string', 'null'] },
      callback: { type: ['string', 'null'], description: 'The callback URL without its query string.' },
      callback_delivery: nullable(schemaRef('CallbackDelivery')),
      created_at: schemaRef('Timestamp'),
      started_at: nullable(schemaRef('Timestamp')),
      completed_at: nullable(schemaRef('Timestamp')),
      completion_duration: { type: ['integer', 'null'], minimum: 0 },
    },
  },
  ContractInput: {
    type: 'object',
    required: ['id', 'value_type', 'value', 'visible'],
    properties: {
      id: schemaRef('NodeId'),
      value_type: schemaRef('InputValueType'),
      value: schemaRef('RawValue'),
      visible: { type: 'boolean' },
    },
  },
  ContractOutput: {
    type: 'object',
    required: ['id', 'visible'],
    properties: { id: schemaRef('NodeId'), visible: { type: 'boolean' } },
  },
  Contract: {
    type: 'object',
    required: ['inputs', 'outputs'],
    properties: {
      inputs: { type: 'array', items: schemaRef('ContractInput') },
      outputs: { type: 'array', items: schemaRef('ContractOutput') },
    },
  },
  RunSummary: {
    type: 'object',
    required: ['run_id', 'status', 'version'],
    properties: {
      run_id: schemaRef('Uuid'),
      status: schemaRef('ExecutionStatus'),
      version: { type: 'integer', minimum: 1 },
    },
  },
  Deployment: {
    type: 'object',
    required: ['deployment_id', 'version', 'published_at', 'execute_url', 'inputs', 'outputs'],
    properties: {
      deployment_id: schemaRef('Uuid'),
      version: { type: 'integer', minimum: 1, description: 'The published version.' },
      published_at: schemaRef('Timestamp'),
      execute_url: { type: 'string', format: 'uri' },
      inputs: { type: 'array', items: schemaRef('ContractInput') },
      outputs: { type: 'array', items: schemaRef('ContractOutput') },
    },
  },
  NewDeployment: {
    type: 'object',
    required: ['deployment_id', 'version', 'published_at', 'execute_url', 'inputs', 'outputs', 'api_key', 'signing_secret'],
    properties: {
      deployment_id: schemaRef('Uuid'),
      version: { type: 'integer', minimum: 1 },
      published_at: schemaRef('Timestamp'),
      execute_url: { type: 'string', format: 'uri' },
      inputs: { type: 'array', items: schemaRef('ContractInput') },
      outputs: { type: 'array', items: schemaRef('ContractOutput') },
      api_key: { type: 'string', pattern: '^pgk_', description: 'Shown this once; only its hash is stored.' },
      signing_secret: { type: 'string', pattern: '^whsec_', description: 'Signs callbacks; shown this once.' },
    },
    description: 'The first publish: the deployment with its API key and callback signing secret.',
  },
  Readiness: {
    type: 'object',
    required: ['pipeline_id', 'state', 'publishable', 'latest_run', 'counts', 'published_at', 'discovered', 'deployment'],
    properties: {
      pipeline_id: schemaRef('PipelineId'),
      state: {
        type: 'string',
        enum: ['run_required', 'not_published', 'live', 'needs_publish'],
        description: 'run_required: no successful run. not_published: a successful run, no deployment. live: the latest finished run used the published version. needs_publish: it used another version.',
      },
      publishable: { type: 'boolean' },
      latest_run: nullable(schemaRef('RunSummary')),
      counts: {
        type: 'object',
        required: ['inputs', 'outputs'],
        properties: { inputs: { type: 'integer', minimum: 0 }, outputs: { type: 'integer', minimum: 0 } },
      },
      published_at: nullable(schemaRef('Timestamp')),
      discovered: nullable(schemaRef('Contract')),
      deployment: nullable(schemaRef('Deployment')),
    },
  },
  PublishRequest: {
    type: 'object',
    additionalProperties: false,
    description: 'Visibility per entry; an entry not mentioned keeps the visibility it had (visible on a first publish).',
    properties: {
      inputs: { type: 'object', additionalProperties: schemaRef('Visibility') },
      outputs: { type: 'object', additionalProperties: schemaRef('Visibility') },
    },
  },
  Visibility: { type: 'object', required: ['visible'], properties: { visible: { type: 'boolean' } }, additionalProperties: false },
  RotateRequest: {
    type: 'object',
    additionalProperties: false,
    properties: {
      grace_seconds: { type: 'integer', minimum: 0, maximum: 604800, default: 0, description: 'How long the old credential keeps working.' },
      credential: { type: 'string', enum: ['api_key', 'signing_secret'], default: 'api_key' },
    },
  },
  RotateResult: {
    oneOf: [
      { type: 'object', required: ['api_key'], properties: { api_key: { type: 'string', pattern: '^pgk_' } } },
      { type: 'object', required: ['signing_secret'], properties: { signing_secret: { type: 'string', pattern: '^whsec_' } } },
    ],
    description: 'The new credential, shown this once.',
  },
  Forbidden: {
    type: 'object',
    description: 'AWS: API Gateway refused the owner\'s IAM signature (Forbidden, or the signature problem it found).',
    required: ['error'],
    properties: { error: { type: 'string' } },
    additionalProperties: false,
  },
  NotFoundPipeline: errorSchema('PipelineNotFound', 'No pipeline with this id.'),
  NotFoundRun: errorSchema('RunNotFound', 'No run with this id in this pipeline.'),
  NotFoundSecret: errorSchema('SecretNotFound', 'No owner secret with this name.'),
  InvalidDefinition: errorSchema('InvalidDefinition', 'The definition (or the pipeline id) was refused; `detail` lists every problem.', { detail: problems }, ['detail']),
  InvalidRequest: errorSchema('InvalidRequest', 'The request body or query was refused; `detail` lists every problem.', { detail: problems }, ['detail']),
  ConfirmationRequired: errorSchema('ConfirmationRequired', 'Delete without `?confirm=` naming the deployment id.', { detail: detailSchema }, ['detail']),
  PublishNoSuccessfulRun: errorSchema('PublishNoSuccessfulRun', 'Publish refused: no run of this pipeline has succeeded. While a run is still going, `detail` says so and how to wait for it, and `latest_run` names it.', { detail: detailSchema, latest_run: schemaRef('RunSummary') }),
  PublishLatestRunFailed: errorSchema('PublishLatestRunFailed', 'Publish refused: the most recent finished run did not succeed.', { latest_run: schemaRef('RunSummary') }, ['latest_run']),
  PublishNoInputsOrOutputs: errorSchema('PublishNoInputsOrOutputs', 'Publish refused: the version of the latest run has no Input and no Output nodes.'),
  Conflict: errorSchema('Conflict', 'A concurrent publish, rotation or delete changed the deployment; try again.', { detail: detailSchema }, ['detail']),
};

const OWNER_RESPONSES: Record<string, JsonSchema> = {
  OwnerUnauthorized: {
    description: 'Local runtime: missing or wrong owner token (`Unauthorized`).',
    headers: { 'WWW-Authenticate': { description: 'Always `Bearer` on the local runtime.', required: true, schema: { const: 'Bearer' } } },
    content: jsonContent(schemaRef('Unauthorized')),
  },
  OwnerForbidden: {
    description: 'AWS: the IAM signature was refused or the identity may not invoke this route.',
    content: jsonContent(schemaRef('Forbidden')),
  },
  PipelineNotFound: { description: 'Pipeline Not Found.', content: jsonContent(schemaRef('NotFoundPipeline')) },
};

const OWNER_PARAMETERS: Record<string, JsonSchema> = {
  PipelineId: { name: 'pipeline_id', in: 'path', required: true, schema: schemaRef('PipelineId') },
  RunId: { name: 'run_id', in: 'path', required: true, schema: schemaRef('Uuid'), description: 'A run id; anything else answers 404.' },
  SecretName: { name: 'name', in: 'path', required: true, schema: schemaRef('SecretName'), description: "The secret's name, as pipelines reference it." },
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
  const paths = { ...callerPaths(), ...DOCS_PATHS, ...assetPaths(), ...OWNER_PATHS };
  const available = {
    securitySchemes: { ...CALLER_SECURITY_SCHEMES, ...OWNER_SECURITY_SCHEMES },
    parameters: { ...CALLER_PARAMETERS, ...OWNER_PARAMETERS },
    responses: { ...CALLER_RESPONSES, ...OWNER_RESPONSES },
    schemas: { ...CALLER_SCHEMAS, ...OWNER_SCHEMAS },
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
