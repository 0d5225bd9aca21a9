/**
 * The caller API's part of OpenAPI, written once: the schemas, parameters, responses and
 * operations that both the whole-service document (docs/openapi.json, built by
 * openapi-service.ts) and every per-deployment document (openapi.ts) are made of, so the two
 * cannot disagree. Error bodies take their messages from the catalog.
 */
import { ERRORS, type ErrorName } from './errors';
import { UPLOAD_SCHEMAS } from './openapi-uploads';
import { STATUSES, TERMINAL } from './transitions';

export type JsonSchema = Record<string, unknown>;
export type PathItem = Record<string, unknown>;

export const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const responseRef = (name: string) => ({ $ref: `#/components/responses/${name}` });
export const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });
export const jsonContent = (schema: JsonSchema) => ({ 'application/json': { schema } });

export const detailSchema = { type: 'string', minLength: 1 };

/** An error body: `error` is the catalog's message, nothing else but the named fields. */
export function errorSchema(name: ErrorName, description: string, fields: Record<string, JsonSchema> = {}, required: string[] = []): JsonSchema {
  return {
    type: 'object',
    description,
    required: ['error', ...required],
    properties: { error: { const: ERRORS[name].message }, ...fields },
    additionalProperties: false,
  };
}

export const nullable = (s: JsonSchema) => ({ anyOf: [s, { type: 'null' }] });

/**
 * The submit's answer when it waited and the execution finished: the result plus the
 * execution's URLs. One object schema rather than an allOf, so that generated clients get one
 * plain type and a validator holding objects to their listed fields accepts it.
 */
export function finishedSchema(result: JsonSchema): JsonSchema {
  const r = result as { required: string[]; properties: Record<string, JsonSchema> };
  return {
    ...result,
    description: 'The result, answered to the submit itself: the execution finished within `Prefer: wait=N`.',
    required: [...r.required, 'status_url', 'result_url'],
    properties: { ...r.properties, status_url: { type: 'string', format: 'uri' }, result_url: { type: 'string', format: 'uri' } },
  };
}

export const CALLER_SCHEMAS: Record<string, JsonSchema> = {
  ...UPLOAD_SCHEMAS,
  Uuid: { type: 'string', format: 'uuid' },
  Timestamp: {
    type: 'string',
    format: 'date-time',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
    description: 'ISO 8601 UTC with milliseconds and `Z`.',
  },
  NodeId: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$' },
  RawValue: { type: ['string', 'number', 'boolean'], description: 'A string, a finite number or a boolean.' },
  InputValueType: {
    type: 'string',
    enum: ['string', 'integer', 'float', 'boolean', 'reference', 'asset'],
    description: '`reference`: an absolute http(s) URL; callers send it with value_type REFERENCE and nodes receive it as a string. `asset`: a file; callers send it with value_type ASSET (base64, a data URI, or an upload).',
  },
  ExecutionStatus: {
    type: 'string',
    enum: [...STATUSES],
    description: 'pending → running → completed | failed | cancelled, and pending → cancelled; nothing else.',
  },
  ExecutionRequest: {
    type: 'object',
    description: 'An empty body means `{}`. Inputs not given take their published value; hidden inputs cannot be set.',
    additionalProperties: false,
    properties: {
      callback: {
        type: 'string',
        format: 'uri',
        description:
          'Absolute http(s) URL that receives a signed POST (Standard Webhooks) when the execution ends. null, empty or blank: 400 Missing Callback URL.',
      },
      workflow_input: { type: 'object', additionalProperties: schemaRef('InputValue'), description: 'Keyed by input id.' },
    },
  },
  InputValue: {
    type: 'object',
    additionalProperties: false,
    required: ['value', 'value_type'],
    properties: {
      value: schemaRef('RawValue'),
      value_type: {
        type: 'string',
        enum: ['RAW', 'REFERENCE', 'ASSET'],
        description:
          'RAW for string, integer, float and boolean inputs; REFERENCE (an absolute http(s) URL that passes the address guard) for reference inputs. ASSET is not supported yet and answers 422.',
      },
    },
  },
  Accepted: {
    type: 'object',
    required: ['status', 'status_url', 'result_url', 'deployment_id', 'execution_id'],
    properties: {
      status: { const: 'queued' },
      status_url: { type: 'string', format: 'uri' },
      result_url: { type: 'string', format: 'uri' },
      deployment_id: schemaRef('Uuid'),
      execution_id: schemaRef('Uuid'),
    },
  },
  ExecutionStatusBody: {
    type: 'object',
    required: ['status', 'execution_id', 'deployment_id', 'result_url', 'created_at', 'started_at', 'completed_at', 'completion_duration', 'error_message'],
    properties: {
      status: schemaRef('ExecutionStatus'),
      execution_id: schemaRef('Uuid'),
      deployment_id: schemaRef('Uuid'),
      result_url: { type: 'string', format: 'uri' },
      created_at: schemaRef('Timestamp'),
      started_at: nullable(schemaRef('Timestamp')),
      completed_at: nullable(schemaRef('Timestamp')),
      completion_duration: {
        type: ['integer', 'null'],
        minimum: 0,
        description: 'Milliseconds from started_at to completed_at (0 when cancelled before it started); null until terminal.',
      },
      error_message: { type: ['string', 'null'] },
    },
  },
  OutputValue: {
    type: 'object',
    required: ['value', 'value_type'],
    properties: { value: schemaRef('RawValue'), value_type: { const: 'RAW' } },
    additionalProperties: false,
  },
  ExecutionResult: {
    type: 'object',
    required: ['status', 'execution_id', 'deployment_id', 'completion_duration', 'output_artifacts', 'error_message', 'response_data'],
    properties: {
      status: { type: 'string', enum: [...TERMINAL] },
      execution_id: schemaRef('Uuid'),
      deployment_id: schemaRef('Uuid'),
      // A result exists only once terminal, so its duration is always known.
      completion_duration: { type: 'integer', minimum: 0, description: 'Milliseconds from started_at to completed_at (0 when cancelled before it started).' },
      output_artifacts: { type: 'array', maxItems: 0, description: 'Always empty.' },
      error_message: { type: ['string', 'null'] },
      response_data: { type: 'object', additionalProperties: schemaRef('OutputValue'), description: 'Visible outputs by id; `{}` unless completed.' },
    },
  },
  CallerContract: {
    type: 'object',
    required: ['deployment_id', 'inputs', 'outputs'],
    properties: {
      deployment_id: schemaRef('Uuid'),
      inputs: {
        type: 'array',
        items: {
          type: 'object',
          required: ['id', 'value_type', 'value'],
          properties: {
            id: schemaRef('NodeId'),
            value_type: schemaRef('InputValueType'),
            value: schemaRef('RawValue'),
            media_types: { type: 'array', items: { type: 'string' }, description: 'Asset inputs: the media types accepted (sniffed from the bytes); absent: any.' },
            max_bytes: { type: 'integer', minimum: 1, description: 'Asset inputs: the largest file accepted; absent: up to the inline and upload limits.' },
          },
        },
        description: 'Visible inputs with their published values.',
      },
      outputs: {
        type: 'array',
        items: { type: 'object', required: ['id'], properties: { id: schemaRef('NodeId') } },
        description: 'Visible outputs.',
      },
    },
  },
  OpenApiDocument: {
    type: 'object',
    description: "An OpenAPI 3.1 document of one deployment's request and response.",
    required: ['openapi', 'info', 'paths'],
    properties: {
      openapi: { type: 'string', pattern: '^3\\.1\\.\\d+$' },
      info: {
        type: 'object',
        required: ['title', 'version'],
        properties: { title: { type: 'string' }, version: { type: 'string' } },
        additionalProperties: true,
      },
      servers: {
        type: 'array',
        items: { type: 'object', required: ['url'], properties: { url: { type: 'string' } }, additionalProperties: true },
      },
      paths: { type: 'object', description: 'Path items by path.', additionalProperties: { type: 'object', additionalProperties: true } },
      components: { type: 'object', additionalProperties: true },
    },
    additionalProperties: true,
  },

  Unauthorized: errorSchema('Unauthorized', 'Missing or wrong credentials; `detail` says which forms are accepted.', { detail: detailSchema }),
  NotFoundDeployment: errorSchema('DeploymentNotFound', 'Unknown or deleted deployment, or the key of another deployment.'),
  NotFoundExecution: errorSchema('ExecutionNotFound', 'Unknown or expired execution, or one of another deployment (or pipeline).'),
  InvalidInputStructure: errorSchema(
    'InvalidInputStructure',
    'The body is not JSON, not an object, has an unknown field, or a malformed `workflow_input` or value object; also a malformed Idempotency-Key.',
    { detail: detailSchema },
    ['detail'],
  ),
  InvalidInput: errorSchema(
    'InvalidInput',
    'Input id unknown or hidden, a value of the wrong type, a value_type that does not fit the input (REFERENCE for a RAW input or the reverse), a reference that is not an absolute http(s) URL or is refused by the address guard, ASSET (not supported yet), or too many inputs.',
    { detail: detailSchema },
    ['detail'],
  ),
  MissingCallbackUrl: errorSchema('MissingCallbackUrl', '`callback` present but null, empty or blank.', { detail: detailSchema }),
  InvalidCallbackUrl: errorSchema('InvalidCallbackUrl', '`callback` not an absolute http(s) URL, or to a blocked address.', { detail: detailSchema }),
  IdempotencyKeyReused: errorSchema('IdempotencyKeyReused', 'The same Idempotency-Key was used with a different body.', { detail: detailSchema }),
  PayloadTooLarge: errorSchema('PayloadTooLarge', 'The body is larger than the limit (256 KiB by default).', { detail: detailSchema }),
  UnsupportedMediaType: errorSchema('UnsupportedMediaType', 'A non-empty body with a content type other than JSON.', { detail: detailSchema }),
  ExecutionNotCompleted: errorSchema(
    'ExecutionNotCompleted',
    'The result was fetched before the execution finished.',
    { status: { type: 'string', enum: ['pending', 'running'] } },
    ['status'],
  ),
  ExecutionAlreadyFinished: errorSchema(
    'ExecutionAlreadyFinished',
    'Cancel of an execution that already finished.',
    { status: { type: 'string', enum: [...TERMINAL] } },
    ['status'],
  ),
  TooManyRequests: errorSchema('TooManyRequests', 'Throttled (AWS stage throttling).'),
  ServiceUnavailable: errorSchema('ServiceUnavailable', 'The store is unreachable for a moment; retry after `Retry-After` seconds.', { detail: detailSchema }),
  InternalError: errorSchema('InternalError', 'Anything unexpected. No internals are shown; `request_id` finds the log line.', { request_id: { type: 'string' } }, [
    'request_id',
  ]),
  GatewayError: {
    type: 'object',
    description: 'The gateway could not get an answer from the function (a crash or its time-out).',
    required: ['error', 'request_id'],
    properties: { error: { type: 'string', enum: [ERRORS.InternalError.message, 'Gateway Timeout'] }, request_id: { type: 'string' } },
    additionalProperties: false,
  },
};

CALLER_SCHEMAS.ExecutionFinished = finishedSchema(CALLER_SCHEMAS.ExecutionResult ?? {});

export const CALLER_PARAMETERS: Record<string, JsonSchema> = {
  DeploymentId: { name: 'deployment_id', in: 'path', required: true, schema: schemaRef('Uuid'), description: 'A deployment id; anything else answers 404.' },
  ExecutionId: { name: 'execution_id', in: 'path', required: true, schema: schemaRef('Uuid'), description: 'An execution id; anything else answers 404.' },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    // The execute handler's own check: 1 to 255 printable ASCII characters, no spaces.
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
    description: 'The same key and body within 24 hours returns the first 202 and starts nothing; the same key with another body answers 422.',
  },
  PreferWait: {
    name: 'Prefer',
    in: 'header',
    required: false,
    schema: { type: 'string', examples: ['wait=20'] },
    description:
      '`wait=N` (RFC 7240): answer as soon as the execution has finished, or after N seconds with the usual answer. N is capped (60 s locally, 25 s on AWS); a preference that cannot be used (not whole seconds, 0) is ignored, never an error.',
  },
};

/** Response headers of the caller routes that wait (`Prefer: wait`) or hint at a poll interval. */
const PREFERENCE_APPLIED = {
  'Preference-Applied': {
    description: 'Present when a `Prefer: wait` was honoured: `wait=<seconds>` actually allowed.',
    schema: { type: 'string', pattern: '^wait=\\d+$' },
  },
};
const RETRY_AFTER_HINT = {
  'Retry-After': {
    description: 'While the execution is open: seconds to wait before polling again.',
    schema: { type: 'string', pattern: '^\\d+$' },
  },
};

const errorResponse = (description: string, schema: string, headers?: Record<string, JsonSchema>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: jsonContent(schemaRef(schema)),
});

export const CALLER_RESPONSES: Record<string, JsonSchema> = {
  Unauthorized: errorResponse('Missing or wrong API key (`Unauthorized`).', 'Unauthorized', {
    'WWW-Authenticate': { description: 'Always `Api-Key`.', required: true, schema: { const: 'Api-Key' } },
  }),
  DeploymentNotFound: errorResponse('Deployment Not Found.', 'NotFoundDeployment'),
  ExecutionNotFound: errorResponse('Execution Not Found.', 'NotFoundExecution'),
  PayloadTooLarge: errorResponse('Payload Too Large.', 'PayloadTooLarge'),
  TooManyRequests: errorResponse('Too Many Requests (AWS stage throttling).', 'TooManyRequests'),
  InternalError: errorResponse('Internal Error.', 'InternalError'),
  ServiceUnavailable: errorResponse('Service Unavailable: retry later.', 'ServiceUnavailable', {
    'Retry-After': { description: 'Seconds to wait before retrying.', required: true, schema: { type: 'string', pattern: '^\\d+$' } },
  }),
  GatewayError: errorResponse('The function failed or timed out behind the gateway.', 'GatewayError'),
};

export const CALLER_SECURITY_SCHEMES: Record<string, JsonSchema> = {
  ApiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: "The deployment's API key (`pgk_…`)." },
  ApiKeyAuthorization: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description: '`Authorization: Api-Key <key>`: the same key, in the Authorization header.',
  },
};

/** What every route may also answer: throttling, an unexpected failure, a store outage, the gateway's own failure. */
export const EVERY_ROUTE_RESPONSES = {
  '429': responseRef('TooManyRequests'),
  '500': responseRef('InternalError'),
  '503': responseRef('ServiceUnavailable'),
  '5XX': responseRef('GatewayError'),
};

const CALLER_SECURITY = [{ ApiKeyHeader: [] }, { ApiKeyAuthorization: [] }];

export interface CallerSchemaNames {
  /** The request body of execute. */
  request: string;
  /** The 200 body of result. */
  result: string;
  /** The 200 body of execute: the result and the execution's URLs (see finishedSchema). */
  finished: string;
  /** A request body that works as it is (a deployment's published values): "try it" starts from it. */
  requestExample?: unknown;
}

/**
 * The caller operations. With a deployment id the paths name that deployment (a
 * per-deployment document); without, they take it as the `deployment_id` parameter.
 */
export function callerPaths(deploymentId?: string, names: CallerSchemaNames = { request: 'ExecutionRequest', result: 'ExecutionResult', finished: 'ExecutionFinished' }): Record<string, PathItem> {
  const dep = deploymentId ?? '{deployment_id}';
  const depParam = deploymentId === undefined ? [parameterRef('DeploymentId')] : [];
  const op = (o: { operationId: string; summary: string; description?: string }, responses: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    tags: ['callers'],
    ...o,
    security: CALLER_SECURITY,
    ...extra,
    responses: { ...responses, '401': responseRef('Unauthorized'), ...EVERY_ROUTE_RESPONSES },
  });
  const ok = (description: string, schema: string, headers?: Record<string, unknown>) => ({ description, ...(headers ? { headers } : {}), content: jsonContent(schemaRef(schema)) });
  const oneOf = (description: string, ...schemas: string[]) => ({
    description,
    content: jsonContent(schemas.length === 1 ? schemaRef(schemas[0] ?? '') : { oneOf: schemas.map(schemaRef) }),
  });
  const execution = [parameterRef('ExecutionId')];
  return {
    [`/v1/deployments/${dep}/executions`]: {
      post: op(
        { operationId: 'execute', summary: 'Start an execution of a deployment' },
        {
          '200': {
            description: 'Only with `Prefer: wait=N`: the execution finished within N seconds; its result and URLs.',
            headers: { Location: { description: 'The status URL.', required: true, schema: { type: 'string', format: 'uri' } }, ...PREFERENCE_APPLIED },
            content: jsonContent(schemaRef(names.finished)),
          },
          '202': {
            description: 'Accepted and queued (with `Prefer: wait=N`: not finished within N seconds).',
            headers: { Location: { description: 'The status URL.', required: true, schema: { type: 'string', format: 'uri' } }, ...PREFERENCE_APPLIED },
            content: jsonContent(schemaRef('Accepted')),
          },
          '400': oneOf('Invalid Input Structure, or Missing Callback URL.', 'InvalidInputStructure', 'MissingCallbackUrl'),
          '404': responseRef('DeploymentNotFound'),
          '413': responseRef('PayloadTooLarge'),
          '415': oneOf('Unsupported Media Type.', 'UnsupportedMediaType'),
          '422': oneOf('Invalid Input, Invalid Callback URL, or Idempotency Key Reused.', 'InvalidInput', 'InvalidCallbackUrl', 'IdempotencyKeyReused'),
        },
        {
          parameters: [...depParam, parameterRef('IdempotencyKey'), parameterRef('PreferWait')],
          requestBody: {
            required: false,
            description: 'Optional; an empty body means `{}`.',
            content: { 'application/json': { schema: schemaRef(names.request), ...(names.requestExample === undefined ? {} : { example: names.requestExample }) } },
          },
        },
      ),
    },
    '/v1/deployments/executions/{execution_id}/status': {
      get: op(
        { operationId: 'getExecutionStatus', summary: "An execution's status" },
        {
          '200': ok('The status (with `Prefer: wait=N`: once terminal, or after N seconds).', 'ExecutionStatusBody', { ...RETRY_AFTER_HINT, ...PREFERENCE_APPLIED }),
          '404': responseRef('ExecutionNotFound'),
        },
        { parameters: [...execution, parameterRef('PreferWait')] },
      ),
    },
    '/v1/deployments/executions/{execution_id}/result': {
      get: op(
        { operationId: 'getExecutionResult', summary: "An execution's result, once it has finished" },
        {
          '200': ok('The result (visible outputs only).', names.result, PREFERENCE_APPLIED),
          '404': responseRef('ExecutionNotFound'),
          '409': {
            ...oneOf('Execution not completed (with `Prefer: wait=N`: not within N seconds), with its current status.', 'ExecutionNotCompleted'),
            headers: { 'Retry-After': { ...RETRY_AFTER_HINT['Retry-After'], required: true }, ...PREFERENCE_APPLIED },
          },
        },
        { parameters: [...execution, parameterRef('PreferWait')] },
      ),
    },
    '/v1/deployments/executions/{execution_id}/cancel': {
      post: op(
        { operationId: 'cancelExecution', summary: 'Cancel a pending or running execution at once' },
        {
          '200': ok('Cancelled: the status.', 'ExecutionStatusBody'),
          '404': responseRef('ExecutionNotFound'),
          '409': oneOf('Execution already finished, with its status.', 'ExecutionAlreadyFinished'),
        },
        { parameters: execution },
      ),
    },
    [`/v1/deployments/${dep}`]: {
      get: op(
        { operationId: 'getDeploymentContract', summary: 'The visible contract: input ids, types and published values; output ids' },
        { '200': ok('The visible contract.', 'CallerContract'), '404': responseRef('DeploymentNotFound') },
        depParam.length ? { parameters: depParam } : {},
      ),
    },
    [`/v1/deployments/${dep}/uploads`]: {
      post: op(
        { operationId: 'createUpload', summary: 'A presigned PUT for a file too large to send inline', description: 'PUT exactly `bytes` bytes to `upload_url` with `headers`, then send `asset` as an asset input\'s value.' },
        {
          '201': ok('The upload URL and the asset value to send.', 'UploadAnswer'),
          '400': oneOf('Invalid Input Structure.', 'InvalidInputStructure'),
          '404': responseRef('DeploymentNotFound'),
          '413': responseRef('PayloadTooLarge'),
          '422': oneOf('Invalid Input: no asset input takes this type and size.', 'InvalidInput'),
        },
        {
          ...(depParam.length ? { parameters: depParam } : {}),
          requestBody: { required: true, content: { 'application/json': { schema: schemaRef('UploadRequest') } } },
        },
      ),
    },
    [`/v1/deployments/${dep}/openapi.json`]: {
      get: op(
        { operationId: 'getDeploymentOpenApi', summary: "This deployment's API as an OpenAPI 3.1 document" },
        { '200': ok('The OpenAPI document.', 'OpenApiDocument'), '404': responseRef('DeploymentNotFound') },
        depParam.length ? { parameters: depParam } : {},
      ),
    },
  };
}

/**
 * The components a document's paths reach, following references through components, so a
 * document carries no unused component (linters flag those) and nothing it needs is missing.
 */
export function reachableComponents(roots: unknown, available: Record<string, Record<string, unknown>>): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  const visit = (x: unknown): void => {
    if (Array.isArray(x)) x.forEach(visit);
    else if (typeof x === 'object' && x !== null) {
      const ref = (x as { $ref?: unknown }).$ref;
      if (typeof ref === 'string') {
        const m = /^#\/components\/([^/]+)\/([^/]+)$/.exec(ref);
        const kind = m?.[1] ?? '';
        const name = m?.[2] ?? '';
        const target = available[kind]?.[name];
        if (target !== undefined && out[kind]?.[name] === undefined) {
          (out[kind] ??= {})[name] = target;
          visit(target);
        }
      }
      for (const v of Object.values(x)) visit(v);
    }
  };
  visit(roots);
  return out;
}
