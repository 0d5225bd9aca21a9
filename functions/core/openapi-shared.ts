/**
 * The caller API's part of OpenAPI, written once: the schemas, parameters, responses and
 * operations that both the whole-service document (docs/openapi.json, built by
 * openapi-service.ts) and every per-deployment document (openapi.ts) are made of, so the two
 * cannot disagree. Error bodies take their messages from the catalog.
 */
import { toJsonSchemaDefs } from '@valibot/to-json-schema';
import { CALLER_SHAPES, SHAPES, type ShapeName } from './shapes';

export type JsonSchema = Record<string, unknown>;
export type PathItem = Record<string, unknown>;

export const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const responseRef = (name: string) => ({ $ref: `#/components/responses/${name}` });
export const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });
export const jsonContent = (schema: JsonSchema) => ({ 'application/json': { schema } });

export const nullable = (s: JsonSchema) => ({ anyOf: [s, { type: 'null' }] });

/** An events route's 200: the stream, each event's `data` by its name, `done` holding `doneSchema`. */
export const eventStreamOk = (doneSchema: string) => ({
  description: 'The event stream.',
  content: {
    'text/event-stream': {
      schema: {
        type: 'string',
        description: "Server-sent events: `id:`, `event:` (status, node, output, done) and `data:` (one line of JSON, described by `$defs` under the event's name).",
        $defs: { status: schemaRef('StatusEvent'), node: schemaRef('NodeEvent'), output: schemaRef('OutputEvent'), done: schemaRef(doneSchema) },
      },
    },
  },
});
/** The `Last-Event-ID` header parameter of an events route. */
export const LAST_EVENT_ID_PARAMETER = { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', pattern: '^\\d+$' }, description: 'The id of the last event received: the stream resumes after it.' };

const PLAIN_TYPE_KEYS = new Set(['type', 'minimum', 'maximum', 'additionalProperties', 'items', 'format']);

/**
 * What the converter writes, in the forms the documents have always used: a union of plain
 * types (`string | null`) as one `type` list, which generated clients and readers take more
 * easily than an `anyOf`; no `propertyNames: {type: string}` (every JSON key is a string); no
 * empty `properties`, `required` or `items` (they say nothing).
 */
const isEmpty = (x: unknown): boolean => typeof x === 'object' && x !== null && !Array.isArray(x) && Object.keys(x).length === 0;

function tidy(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(tidy);
  if (typeof x !== 'object' || x === null) return x;
  const o = Object.fromEntries(Object.entries(x).map(([k, val]) => [k, tidy(val)])) as JsonSchema;
  for (const k of ['properties', 'items'] as const) if (isEmpty(o[k])) delete o[k];
  if (Array.isArray(o.required) && o.required.length === 0) delete o.required;
  const names = o.propertyNames as JsonSchema | undefined;
  if (names !== undefined && Object.keys(names).length === 1 && names.type === 'string') delete o.propertyNames;
  const members = o.anyOf as JsonSchema[] | undefined;
  if (members !== undefined && members.every((m) => typeof m.type === 'string' && Object.keys(m).every((k) => PLAIN_TYPE_KEYS.has(k)))) {
    const merged: JsonSchema = Object.assign({}, ...members);
    const types = members.map((m) => m.type);
    const { anyOf: _, ...rest } = o;
    // Keywords other than `type` apply to values of their own type only, so merging is exact
    // as long as no two members carry the same keyword.
    const keys = members.flatMap((m) => Object.keys(m).filter((k) => k !== 'type'));
    if (new Set(keys).size === keys.length) return { ...merged, type: types, ...rest };
  }
  return o;
}

/**
 * The named shapes (shapes.ts) as JSON Schema components; a shape used inside another is a
 * `$ref` to it. Converted once per process: the shapes are constants.
 */
export const SCHEMAS: Record<ShapeName, JsonSchema> = Object.fromEntries(
  Object.entries(
    toJsonSchemaDefs(SHAPES, {
      target: 'draft-2020-12',
      typeMode: 'output',
      overrideRef: (c) => `#/components/schemas/${c.referenceId}`,
      // A loose object takes any further key; said outright, since a validator that closes
      // undeclared objects (the conformance tests' does) would otherwise refuse them.
      overrideSchema: (c) => (c.valibotSchema.type === 'loose_object' ? { ...c.jsonSchema, additionalProperties: true } : undefined),
    }),
  ).map(
    ([name, schema]) => [name, tidy(schema) as JsonSchema],
  ),
) as Record<ShapeName, JsonSchema>;

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
  ...Object.fromEntries(CALLER_SHAPES.map((name) => [name, SCHEMAS[name]])),
  ExecutionFinished: finishedSchema(SCHEMAS.ExecutionResult),
};

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
  Unauthorized: errorResponse('No usable API key (`Unauthorized`): `reason` says which case (missing, malformed, unknown, revoked, expired, another scheme, two keys, another deployment\'s key), `detail` what to do.', 'Unauthorized', {
    'WWW-Authenticate': { description: 'Always `Api-Key`.', required: true, schema: { const: 'Api-Key' } },
  }),
  DeploymentNotFound: errorResponse('Deployment Not Found.', 'NotFoundDeployment'),
  ExecutionNotFound: errorResponse('Execution Not Found.', 'NotFoundExecution'),
  PayloadTooLarge: errorResponse('Payload Too Large.', 'PayloadTooLarge'),
  TooManyRequests: errorResponse(
    "Too Many Requests: the stage's throttle (AWS), or the key's own rate limit or quota (`limit` says which; `Retry-After` when to retry).",
    'TooManyRequests',
    {
      'Retry-After': { description: "A key's limit: seconds until it allows again.", schema: { type: 'string', pattern: '^\\d+$' } },
      'RateLimit-Policy': { description: 'A key with limits: its policies (IETF httpapi draft), e.g. `"rate";q=10;w=1`.', schema: { type: 'string' } },
      RateLimit: { description: 'A key with limits: what is left of each policy, e.g. `"rate";r=0;t=1`.', schema: { type: 'string' } },
    },
  ),
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
    '/v1/deployments/executions/{execution_id}/events': {
      get: op(
        {
          operationId: 'getExecutionEvents',
          summary: "An execution's live progress, as server-sent events",
          description: [
            'A `text/event-stream` until the execution is done: first a `retry:` hint, then events, each with an `id:` that orders them:',
            '`status` (StatusEvent), `node` (NodeEvent), `output` (OutputEvent), and last `done`, whose data is exactly the result body of GET result; then the stream closes.',
            'Send `Last-Event-ID` to resume after that event without repeats; a finished execution replays everything at once.',
            'A comment (`: keep-alive`) comes at least every 15 s; a stream closes itself after 14 minutes without `done` (reconnect with Last-Event-ID).',
          ].join(' '),
        },
        {
          '200': eventStreamOk(names.result),
          '404': responseRef('ExecutionNotFound'),
        },
        { parameters: [...execution, LAST_EVENT_ID_PARAMETER] },
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
