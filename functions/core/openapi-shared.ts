/**
 * The caller API's part of OpenAPI, written once: the schemas, parameters, responses and
 * operations that both the whole-service document (docs/openapi.json, built by
 * openapi-service.ts) and every per-deployment document (openapi.ts) are made of, so the two
 * cannot disagree. Error bodies take their messages from the catalog.
 */
import { toJsonSchema, toJsonSchemaDefs, type ConversionConfig } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import { HEADER_VALUES, PARAMETER_VALUES } from './http-shapes';
import { SHAPES, type ShapeName } from './shapes';
import type { Answer, HeaderName, ParameterName, Route, RouteAuth, SchemaName } from './route-types';

export type JsonSchema = Record<string, unknown>;
export type PathItem = Record<string, unknown>;

export const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const responseRef = (name: string) => ({ $ref: `#/components/responses/${name}` });
export const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });
export const jsonContent = (schema: JsonSchema) => ({ 'application/json': { schema } });

export const nullable = (s: JsonSchema) => ({ anyOf: [s, { type: 'null' }] });

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

/** How every schema becomes JSON Schema: the one set of converter settings. */
const CONVERSION = {
  target: 'draft-2020-12',
  typeMode: 'output',
  overrideRef: (c) => `#/components/schemas/${c.referenceId}`,
  // A loose object takes any further key; said outright, since a validator that closes
  // undeclared objects (the conformance tests' does) would otherwise refuse them.
  overrideSchema: (c) => (c.valibotSchema.type === 'loose_object' ? { ...c.jsonSchema, additionalProperties: true } : undefined),
  // Checks with no JSON Schema keyword: `finite` holds for every JSON number, and each
  // `check` is said in its field's description.
  overrideAction: (c) => (c.valibotAction.type === 'finite' || c.valibotAction.type === 'check' ? c.jsonSchema : undefined),
} as const satisfies ConversionConfig;

/**
 * One schema as JSON Schema, in the documents' forms. A schema listed in `components` (by its
 * component name) becomes a `$ref` to that component.
 */
export function jsonSchemaOf(schema: v.GenericSchema, components?: Record<string, v.GenericSchema>): JsonSchema {
  const { $schema: _, $defs: __, ...rest } = toJsonSchema(schema, { ...CONVERSION, ...(components ? { definitions: components } : {}) });
  return tidy(rest) as JsonSchema;
}

/** A parameter's or header's value (http-shapes.ts) as JSON Schema. */
function valueSchema(name: keyof typeof PARAMETER_VALUES | keyof typeof HEADER_VALUES): JsonSchema {
  return jsonSchemaOf(
    name in PARAMETER_VALUES ? PARAMETER_VALUES[name as keyof typeof PARAMETER_VALUES] : HEADER_VALUES[name as keyof typeof HEADER_VALUES],
  );
}

/** An events route's 200: the stream, each event's `data` by its name, `done` holding `doneSchema`. */
export const eventStreamOk = (doneSchema: string) => ({
  description: 'The event stream.',
  content: {
    'text/event-stream': {
      schema: {
        type: 'string',
        description:
          "Server-sent events: `id:`, `event:` (status, node, waiting, output, done) and `data:` (one line of JSON, described by `$defs` under the event's name).",
        $defs: {
          status: schemaRef('StatusEvent'),
          node: schemaRef('NodeEvent'),
          waiting: schemaRef('WaitingEvent'),
          output: schemaRef('OutputEvent'),
          done: schemaRef(doneSchema),
        },
      },
    },
  },
});
/** The `Last-Event-ID` header parameter of an events route. */
export const LAST_EVENT_ID_PARAMETER = {
  name: 'Last-Event-ID',
  in: 'header',
  required: false,
  schema: valueSchema('LastEventId'),
  description: 'The id of the last event received: the stream resumes after it.',
};

/**
 * The named shapes (shapes.ts) as JSON Schema components; a shape used inside another is a
 * `$ref` to it. Converted once per process: the shapes are constants.
 */
export const SCHEMAS: Record<ShapeName, JsonSchema> = Object.fromEntries(
  Object.entries(toJsonSchemaDefs(SHAPES, CONVERSION)).map(([name, schema]) => [name, tidy(schema) as JsonSchema]),
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

/** Every component schema: the shapes, and the submit's finished answer derived from one. */
export const ALL_SCHEMAS: Record<SchemaName, JsonSchema> = { ...SCHEMAS, ExecutionFinished: finishedSchema(SCHEMAS.ExecutionResult) };

/** The parameters routes share, as components (lib/routes.ts `params` names them). */
export const PARAMETER_COMPONENTS = {
  DeploymentId: {
    name: 'deployment_id',
    in: 'path',
    required: true,
    schema: schemaRef('Uuid'),
    description: 'A deployment id; anything else answers 404.',
  },
  ExecutionId: {
    name: 'execution_id',
    in: 'path',
    required: true,
    schema: schemaRef('Uuid'),
    description: 'An execution id; anything else answers 404.',
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    // The execute handler's own check.
    schema: valueSchema('IdempotencyKey'),
    description:
      'The same key and body within 24 hours returns the first 202 and starts nothing; the same key with another body answers 422.',
  },
  PreferWait: {
    name: 'Prefer',
    in: 'header',
    required: false,
    schema: valueSchema('PreferWait'),
    description:
      '`wait=N` (RFC 7240): answer as soon as the execution has finished, or after N seconds with the usual answer. N is capped (60 s locally, 25 s on AWS); a preference that cannot be used (not whole seconds, 0) is ignored, never an error.',
  },
  PipelineId: { name: 'pipeline_id', in: 'path', required: true, schema: schemaRef('PipelineId') },
  RunId: { name: 'run_id', in: 'path', required: true, schema: schemaRef('Uuid'), description: 'A run id; anything else answers 404.' },
  SecretName: {
    name: 'name',
    in: 'path',
    required: true,
    schema: schemaRef('SecretName'),
    description: "The secret's name, as pipelines reference it.",
  },
  ConsumerId: {
    name: 'consumer_id',
    in: 'path',
    required: true,
    schema: schemaRef('Uuid'),
    description: 'A consumer id; anything else answers 404.',
  },
} satisfies Partial<Record<ParameterName, JsonSchema>>;

/** The parameters one route takes, written in place. */
const INLINE_PARAMETERS: Record<Exclude<ParameterName, keyof typeof PARAMETER_COMPONENTS>, JsonSchema> = {
  LastEventId: LAST_EVENT_ID_PARAMETER,
  PageLimit: { name: 'limit', in: 'query', required: false, schema: valueSchema('PageLimit') },
  PageCursor: {
    name: 'cursor',
    in: 'query',
    required: false,
    schema: valueSchema('PageCursor'),
    description: '`next_cursor` of the previous page.',
  },
  Confirm: {
    name: 'confirm',
    in: 'query',
    required: true,
    schema: schemaRef('Uuid'),
    description: 'The deployment id, repeated as confirmation.',
  },
  StatusFilter: { name: 'status', in: 'query', required: false, schema: schemaRef('ExecutionStatus') },
  Since: {
    name: 'since',
    in: 'query',
    required: false,
    schema: valueSchema('Since'),
    description: 'Only executions created at or after this ISO 8601 time.',
  },
  DocsAsset: { name: 'asset', in: 'path', required: true, schema: valueSchema('DocsAsset') },
  FormToken: {
    name: 'form_token',
    in: 'path',
    required: true,
    schema: valueSchema('FormToken'),
    description: 'The token of the form link (`form_url`), as given.',
  },
  FormAsset: { name: 'asset', in: 'path', required: true, schema: valueSchema('FormAsset') },
  AssetToken: {
    name: 'token',
    in: 'path',
    required: true,
    schema: valueSchema('AssetToken'),
    description: 'The token of the link, as given.',
  },
  ResumeToken: {
    name: 'token',
    in: 'path',
    required: true,
    schema: valueSchema('ResumeToken'),
    description: 'The token of the resume URL, as given.',
  },
  Range: { name: 'Range', in: 'header', required: false, schema: valueSchema('Range'), description: 'One `bytes=` range.' },
};

const parameter = (name: ParameterName): JsonSchema =>
  name in PARAMETER_COMPONENTS ? parameterRef(name) : INLINE_PARAMETERS[name as keyof typeof INLINE_PARAMETERS];

/** Every response header an answer documents (lib/routes.ts answers' `headers`); whether it is required is the answer's. */
const HEADERS: Record<HeaderName, { name: string; description: string }> = {
  Location: { name: 'Location', description: 'The status URL.' },
  PreferenceApplied: {
    name: 'Preference-Applied',
    description: 'Present when a `Prefer: wait` was honoured: `wait=<seconds>` actually allowed.',
  },
  RetryAfterPoll: { name: 'Retry-After', description: 'While the execution is open: seconds to wait before polling again.' },
  RetryAfterLimit: { name: 'Retry-After', description: 'Seconds until the limit allows another.' },
  NoStore: { name: 'Cache-Control', description: 'Never cached.' },
  ContentLength: { name: 'Content-Length', description: 'The size in bytes.' },
  ContentDisposition: {
    name: 'Content-Disposition',
    description: '`inline` for images, audio, video, plain text and JSON; `attachment` for anything else.',
  },
  NoSniff: { name: 'X-Content-Type-Options', description: 'Always `nosniff`.' },
  ContentRange: { name: 'Content-Range', description: '`bytes <first>-<last>/<size>`.' },
  ApiKeyChallenge: { name: 'WWW-Authenticate', description: 'Always `Api-Key`.' },
  Allow: { name: 'Allow', description: 'The methods the path takes.' },
  BearerChallenge: { name: 'WWW-Authenticate', description: 'Always `Bearer` on the local runtime.' },
  RetryAfterKeyLimit: { name: 'Retry-After', description: "A key's limit: seconds until it allows again." },
  RetryAfterOutage: { name: 'Retry-After', description: 'Seconds to wait before retrying.' },
  RateLimitPolicy: {
    name: 'RateLimit-Policy',
    description: 'A key with limits: its policies (IETF httpapi draft), e.g. `"rate";q=10;w=1`.',
  },
  RateLimit: { name: 'RateLimit', description: 'A key with limits: what is left of each policy, e.g. `"rate";r=0;t=1`.' },
};

/** An answer's headers by catalogue name (whether each is required is the answer's), as the documents write them. */
export const responseHeaders = (headers: Partial<Record<HeaderName, boolean>>): Record<string, JsonSchema> =>
  Object.fromEntries(
    Object.entries(headers).map(([h, required]) => {
      const { name, description } = HEADERS[h as HeaderName];
      return [name, { description, ...(required ? { required: true } : {}), schema: valueSchema(h as HeaderName) }];
    }),
  );

export const CALLER_PARAMETERS: Record<string, JsonSchema> = {
  DeploymentId: PARAMETER_COMPONENTS.DeploymentId,
  ExecutionId: PARAMETER_COMPONENTS.ExecutionId,
  IdempotencyKey: PARAMETER_COMPONENTS.IdempotencyKey,
  PreferWait: PARAMETER_COMPONENTS.PreferWait,
};

const errorResponse = (description: string, schema: string, headers?: Record<string, JsonSchema>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: jsonContent(schemaRef(schema)),
});

export const CALLER_RESPONSES: Record<string, JsonSchema> = {
  Unauthorized: errorResponse(
    "No usable API key (`Unauthorized`): `reason` says which case (missing, malformed, unknown, revoked, expired, another scheme, two keys, another deployment's key), `detail` what to do.",
    'Unauthorized',
    responseHeaders({ ApiKeyChallenge: true }),
  ),
  DeploymentNotFound: errorResponse('Deployment Not Found.', 'NotFoundDeployment'),
  ExecutionNotFound: errorResponse('Execution Not Found.', 'NotFoundExecution'),
  PayloadTooLarge: errorResponse('Payload Too Large.', 'PayloadTooLarge'),
  TooManyRequests: errorResponse(
    "Too Many Requests: the stage's throttle (AWS), or the key's own rate limit or quota (`limit` says which; `Retry-After` when to retry).",
    'TooManyRequests',
    responseHeaders({ RetryAfterKeyLimit: false, RateLimitPolicy: false, RateLimit: false }),
  ),
  InternalError: errorResponse('Internal Error.', 'InternalError'),
  ServiceUnavailable: errorResponse('Service Unavailable: retry later.', 'ServiceUnavailable', responseHeaders({ RetryAfterOutage: true })),
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

/** What every route taking a body answers to a body that is not JSON. */
const NOT_JSON: Answer = {
  description: 'Unsupported Media Type: a non-empty body with a content type other than JSON.',
  shape: 'UnsupportedMediaType',
};

const SECURITY: Record<RouteAuth, unknown[]> = {
  apiKey: [{ ApiKeyHeader: [] }, { ApiKeyAuthorization: [] }],
  owner: [{ OwnerBearer: [] }, { AwsSigV4: [] }],
  none: [],
};

/** The answers a route gives for its credentials (the owners' components are in openapi-service.ts). */
const CREDENTIAL_RESPONSES: Record<RouteAuth, Record<string, JsonSchema>> = {
  apiKey: { '401': responseRef('Unauthorized') },
  owner: { '401': responseRef('OwnerUnauthorized'), '403': responseRef('OwnerForbidden') },
  none: {},
};

const tagOf = (r: Route): string => (r.auth === 'owner' ? 'owners' : r.path.startsWith('/v1/forms/') ? 'forms' : 'callers');

const TEXT = { schema: { type: 'string' } };
const MEDIA = {
  html: { 'text/html': TEXT },
  file: { 'text/javascript': TEXT, 'text/css': TEXT },
  // The asset's own media type is the answer's Content-Type; octet-stream stands for all of them.
  bytes: { 'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } },
  // MCP's Streamable HTTP: the answers to one request as server-sent events (`data:` one
  // JSON-RPC message each), or as one JSON message.
  mcp: {
    'text/event-stream': {
      schema: {
        type: 'string',
        description: 'Server-sent events, each `data:` one JSON-RPC message: notifications (progress), then the response.',
      },
    },
    'application/json': { schema: schemaRef('McpMessage') },
  },
};

export interface RoutePathOptions {
  /** A per-deployment document: the paths name this deployment instead of taking `deployment_id`. */
  deploymentId?: string;
  /** Component names to use instead of the general ones (a deployment's own request and result). */
  rename?: Partial<Record<SchemaName, string>>;
  /** A request body that works as it is, by the body's shape: "try it" starts from it. */
  examples?: Partial<Record<SchemaName, unknown>>;
}

/**
 * The documents' paths, built from the route table: each route's operation as lib/routes.ts
 * declares it, its bodies and answers as references to the shapes.
 */
export function routePaths(routes: readonly Route[], o: RoutePathOptions = {}): Record<string, PathItem> {
  const named = (s: SchemaName) => schemaRef(o.rename?.[s] ?? s);
  const answer = (a: Answer): JsonSchema => {
    if (typeof a === 'string') return responseRef(a);
    const shapes = a.shape === undefined ? [] : typeof a.shape === 'string' ? [a.shape] : a.shape;
    const json = shapes.length === 1 ? named(shapes[0] as SchemaName) : { [a.overlapping ? 'anyOf' : 'oneOf']: shapes.map(named) };
    const headers = Object.entries(responseHeaders(a.headers ?? {}));
    return {
      description: a.description,
      ...(headers.length ? { headers: Object.fromEntries(headers) } : {}),
      ...(a.events !== undefined ? eventStreamOk(o.rename?.[a.events] ?? a.events) : {}),
      ...(a.media !== undefined ? { content: MEDIA[a.media] } : shapes.length ? { content: jsonContent(json) } : {}),
      ...(a.events !== undefined ? { description: a.description } : {}),
    };
  };
  const paths: Record<string, PathItem> = {};
  for (const r of routes) {
    // The table's types require an operation; a route added without one (or cast) stops here.
    if (!r.operationId || !r.summary || r.answers === undefined || Object.keys(r.answers).length === 0) {
      throw new Error(`route ${r.method} ${r.path} has no operation: give it operationId, summary and answers in lib/routes.ts`);
    }
    const path = o.deploymentId === undefined ? r.path : r.path.replace('{deployment_id}', o.deploymentId);
    const parameters = (r.params ?? []).filter((p) => !(p === 'DeploymentId' && o.deploymentId !== undefined)).map(parameter);
    const example = r.body === undefined ? undefined : o.examples?.[r.body.shape];
    const operation = {
      tags: [tagOf(r)],
      operationId: r.operationId,
      summary: r.summary,
      ...(r.description === undefined ? {} : { description: r.description }),
      security: SECURITY[r.auth],
      ...(parameters.length ? { parameters } : {}),
      ...(r.body === undefined
        ? {}
        : {
            requestBody: {
              required: r.body.optional !== true,
              ...(r.body.description === undefined ? {} : { description: r.body.description }),
              content: { 'application/json': { schema: named(r.body.shape), ...(example === undefined ? {} : { example }) } },
            },
          }),
      // A route's own answer (a form's 429) takes the place of the shared one. Every route that
      // takes a body answers 415 to one sent as anything but JSON (core/json-body.ts).
      responses: {
        ...CREDENTIAL_RESPONSES[r.auth],
        ...EVERY_ROUTE_RESPONSES,
        ...(r.body === undefined ? {} : { '415': answer(NOT_JSON) }),
        ...Object.fromEntries(Object.entries(r.answers).map(([status, a]) => [status, answer(a)])),
      },
    };
    (paths[path] ??= {})[r.method.toLowerCase()] = operation;
  }
  return paths;
}

/**
 * The components a document's paths reach, following references through components, so a
 * document carries no unused component (linters flag those) and nothing it needs is missing.
 */
export function reachableComponents(
  roots: unknown,
  available: Record<string, Record<string, unknown>>,
): Record<string, Record<string, unknown>> {
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

/**
 * Every component schema in the order the whole-service document lists them: first those the
 * caller routes reach (the shapes in their declared order, then the submit's finished answer),
 * then the rest. Which shapes are the callers' follows from the routes, never from where a
 * shape sits in SHAPES.
 */
export function orderedSchemas(callerRoutes: readonly Route[]): Record<string, JsonSchema> {
  const reached =
    reachableComponents(routePaths(callerRoutes), { parameters: CALLER_PARAMETERS, responses: CALLER_RESPONSES, schemas: ALL_SCHEMAS })
      .schemas ?? {};
  const caller = (Object.keys(SHAPES) as ShapeName[]).filter((name) => reached[name] !== undefined);
  return {
    ...Object.fromEntries(caller.map((name) => [name, SCHEMAS[name]])),
    ExecutionFinished: ALL_SCHEMAS.ExecutionFinished,
    ...SCHEMAS,
  };
}
