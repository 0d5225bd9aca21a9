/**
 * docs/openapi.json, the whole-service OpenAPI 3.1 document: structurally sound, exactly the
 * route table, every error of the catalog where it can happen, and the bodies the views build
 * (and every per-deployment document) conform to it.
 */
import fc from 'fast-check';
import { callerContract, readiness } from '../../../functions/core/contract';
import { ERRORS, type ErrorName } from '../../../functions/core/errors';
import { deploymentOpenApi, FORM_NOTE } from '../../../functions/core/openapi';
import { routePaths } from '../../../functions/core/openapi-shared';
import { TERMINAL } from '../../../functions/core/transitions';
import type { ContractInput, ContractOutput, Execution, RawValue } from '../../../functions/core/types';
import { acceptedBody, ownerExecutionBody, resultBody, runBody, statusBody } from '../../../functions/core/views';
import { CALLER_ROUTES, DEPLOYMENT_ROUTES, ROUTES, type Route } from '../../../lib/routes';
import {
  createValidator,
  describeErrors,
  isObject,
  loadServiceDocument,
  operations,
  resolvePointer,
  schemaCompiler,
  structuralProblems,
  type JsonObject,
} from '../../support/openapi';

const doc = loadServiceDocument();
const clone = (): JsonObject => JSON.parse(JSON.stringify(doc)) as JsonObject;
const BASE = 'http://127.0.0.1:3000';

describe('structure', () => {
  it('is a structurally valid OpenAPI 3.1 document whose schemas all compile (Ajv, strict)', () => {
    // Act
    const problems = structuralProblems(doc);

    // Assess
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(problems).toEqual([]);
  });

  it.each<[string, (d: JsonObject) => void, RegExp]>([
    ['a wrong version', (d) => (d.openapi = '3.0.3'), /openapi must be 3\.1/],
    [
      'a dangling $ref',
      (d) => ((resolvePointer(d, '#/components/schemas/Run') as JsonObject).properties = { run_id: { $ref: '#/components/schemas/Nope' } }),
      /does not resolve/,
    ],
    [
      'a misspelt schema type',
      (d) => ((resolvePointer(d, '#/components/schemas/Uuid') as JsonObject).type = 'strin'),
      /do(es)? not compile.*Uuid/,
    ],
    [
      'an unknown schema keyword',
      (d) => ((resolvePointer(d, '#/components/schemas/Uuid') as JsonObject).formt = 'uuid'),
      /does not compile/,
    ],
    [
      'a response without a description',
      (d) => delete (resolvePointer(d, '#/paths/~1v1~1pipelines/get/responses/200') as JsonObject).description,
      /needs a description/,
    ],
    [
      'an undeclared path parameter',
      (d) =>
        ((resolvePointer(d, '#/paths/~1v1~1pipelines~1{pipeline_id}~1runs~1{run_id}/get') as JsonObject).parameters = [
          { $ref: '#/components/parameters/PipelineId' },
        ]),
      /\{run_id\} is not declared/,
    ],
    [
      'an unknown security scheme',
      (d) => ((resolvePointer(d, '#/paths/~1v1~1pipelines/get') as JsonObject).security = [{ Nope: [] }]),
      /unknown security scheme Nope/,
    ],
    [
      'a bad status key',
      (d) => ((resolvePointer(d, '#/paths/~1v1~1pipelines/get/responses') as JsonObject)['2000'] = { description: 'x' }),
      /not a status code/,
    ],
  ])('finds %s', (_what, mutate, expected) => {
    // Prepare
    const broken = clone();
    mutate(broken);

    // Act
    const problems = structuralProblems(broken);

    // Assess
    expect(problems.join('\n')).toMatch(expected);
  });
});

describe('paths', () => {
  it('cover exactly the route table: every route and method, nothing else', () => {
    // Act
    const documented = operations(doc)
      .map((o) => `${o.method} ${o.template}`)
      .sort();

    // Assess
    expect(documented).toEqual(ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });

  it("are the table's operations: each route's operationId, summary, body and answers as lib/routes.ts declares them", () => {
    for (const r of ROUTES) {
      // Act
      const op = operations(doc).find((o) => o.method === r.method && o.template === r.path)?.operation as JsonObject;

      // Assess
      expect([op.operationId, op.summary, op.description]).toEqual([r.operationId, r.summary, r.description]);
      expect(Object.keys(op.responses as JsonObject)).toEqual(expect.arrayContaining(Object.keys(r.answers)));
      expect(
        (op.requestBody as { content?: { 'application/json': { schema: unknown } } } | undefined)?.content?.['application/json'].schema,
      ).toEqual(r.body === undefined ? undefined : { $ref: `#/components/schemas/${r.body.shape}` });
    }
  });

  it('refuse a route without its operation, naming it', () => {
    // Prepare
    const route = ROUTES[0] as Route;
    const bare = { method: route.method, path: route.path, handler: route.handler, auth: route.auth } as Route;

    // Act / Assess
    expect(() => routePaths([bare])).toThrow(`route ${route.method} ${route.path} has no operation`);
    expect(() => routePaths([{ ...route, answers: {} }])).toThrow(/has no operation/);
    expect(() => routePaths([route])).not.toThrow();
  });

  it("give each deployment's document exactly the routes a deployment key opens", () => {
    expect(CALLER_ROUTES).toEqual(ROUTES.filter((r) => r.auth === 'apiKey'));
  });

  it('ask for the credentials each route takes: API keys for callers, bearer or SigV4 for owners', () => {
    // Prepare
    const byAuth = {
      apiKey: [{ ApiKeyHeader: [] }, { ApiKeyAuthorization: [] }],
      owner: [{ OwnerBearer: [] }, { AwsSigV4: [] }],
      none: [],
    };

    // Act
    const security = ROUTES.map((r) => {
      const op = operations(doc).find((o) => o.method === r.method && o.template === r.path);
      return [r.auth, op?.operation.security ?? []];
    });

    // Assess
    expect(doc.security).toBeUndefined();
    for (const [auth, sec] of security) expect(sec).toEqual(byAuth[auth as keyof typeof byAuth]);
    const schemes = resolvePointer(doc, '#/components/securitySchemes') as JsonObject;
    expect(schemes.ApiKeyHeader).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
    expect(schemes.ApiKeyAuthorization).toMatchObject({ type: 'apiKey', in: 'header', name: 'Authorization' });
    expect(schemes.OwnerBearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes.AwsSigV4).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'Authorization',
      'x-amazon-apigateway-authtype': 'awsSigv4',
    });
  });
});

/** Every `status message` pair a route's responses name with a fixed `error`. */
function documentedErrors(method: string, path: string): string[] {
  const op = operations(doc).find((o) => o.method === method && o.template === path);
  const out = new Set<string>();
  const collect = (status: string, schema: unknown, depth = 0): void => {
    if (!isObject(schema) || depth > 8) return;
    if (typeof schema.$ref === 'string') collect(status, resolvePointer(doc, schema.$ref), depth + 1);
    for (const k of ['oneOf', 'anyOf']) {
      const list = schema[k];
      if (Array.isArray(list)) for (const s of list) collect(status, s, depth + 1);
    }
    const error = isObject(schema.properties) ? schema.properties.error : undefined;
    if (isObject(error) && typeof error.const === 'string') out.add(`${status} ${error.const}`);
  };
  for (const [status, raw] of Object.entries((op?.operation.responses ?? {}) as JsonObject)) {
    const r = isObject(raw) && typeof raw.$ref === 'string' ? resolvePointer(doc, raw.$ref) : raw;
    const content = isObject(r) && isObject(r.content) ? r.content : {};
    for (const media of Object.values(content)) if (isObject(media)) collect(status, media.schema);
  }
  return [...out].sort();
}

const pairs = (...names: ErrorName[]): string[] => names.map((n) => `${ERRORS[n].status} ${ERRORS[n].message}`);
const EVERY_ROUTE: ErrorName[] = ['Unauthorized', 'TooManyRequests', 'InternalError', 'ServiceUnavailable'];

// contract §5 for callers, section 7 (and the catalog) for owners. A second statement of each
// route's errors, kept by hand on purpose: an answer dropped from lib/routes.ts fails here.
const EXPECTED_ERRORS: Record<string, ErrorName[]> = {
  'POST /v1/deployments/{deployment_id}/executions': [
    'InvalidInputStructure',
    'MissingCallbackUrl',
    'DeploymentNotFound',
    'PayloadTooLarge',
    'UnsupportedMediaType',
    'InvalidInput',
    'InvalidCallbackUrl',
    'IdempotencyKeyReused',
  ],
  'POST /v1/deployments/{deployment_id}/uploads': ['InvalidInputStructure', 'DeploymentNotFound', 'InvalidInput', 'PayloadTooLarge'],
  'GET /v1/deployments/executions/{execution_id}/status': ['ExecutionNotFound'],
  'GET /v1/deployments/executions/{execution_id}/events': ['ExecutionNotFound'],
  'GET /v1/deployments/executions/{execution_id}/result': ['ExecutionNotFound', 'ExecutionNotCompleted'],
  'POST /v1/deployments/executions/{execution_id}/cancel': ['ExecutionNotFound', 'ExecutionAlreadyFinished'],
  'GET /v1/deployments/{deployment_id}': ['DeploymentNotFound'],
  'GET /v1/deployments/{deployment_id}/openapi.json': ['DeploymentNotFound'],
  // The MCP transport's own refusals are JSON-RPC error objects, not the catalog's bodies.
  'POST /v1/deployments/{deployment_id}/mcp': ['Forbidden', 'DeploymentNotFound', 'PayloadTooLarge'],
  'GET /v1/deployments/{deployment_id}/mcp': ['MethodNotAllowed', 'DeploymentNotFound'],
  'GET /v1/deployments/{deployment_id}/docs': ['DeploymentNotFound'],
  'GET /v1/docs/{asset}': ['RouteNotFound'],
  'GET /v1/assets/{token}': ['AssetNotFound', 'AssetLinkExpired', 'RangeNotSatisfiable'],
  'POST /v1/resume/{token}': [
    'InvalidRequest',
    'ResumeNotFound',
    'ResumeAlreadyUsed',
    'ResumeGone',
    'PayloadTooLarge',
    'UnsupportedMediaType',
  ],
  'HEAD /v1/assets/{token}': ['AssetNotFound', 'AssetLinkExpired', 'RangeNotSatisfiable'],
  // Its 404 is a page for the person who followed the link (HTML), not a catalog error body.
  'GET /v1/forms/{form_token}': [],
  'GET /v1/forms/{form_token}/files/{asset}': ['RouteNotFound'],
  'POST /v1/forms/{form_token}/executions': [
    'FormNotFound',
    'InvalidInputStructure',
    'MissingCallbackUrl',
    'PayloadTooLarge',
    'UnsupportedMediaType',
    'InvalidInput',
    'InvalidCallbackUrl',
  ],
  'GET /v1/forms/{form_token}/executions/{execution_id}': ['FormNotFound', 'ExecutionNotFound'],
  'GET /v1/forms/{form_token}/executions/{execution_id}/events': ['FormNotFound', 'ExecutionNotFound'],
  'POST /v1/forms/{form_token}/uploads': ['FormNotFound', 'InvalidInputStructure', 'InvalidInput', 'PayloadTooLarge'],
  'GET /v1/pipelines': [],
  'PUT /v1/pipelines/{pipeline_id}': ['InvalidDefinition', 'PayloadTooLarge'],
  'GET /v1/pipelines/{pipeline_id}': ['PipelineNotFound'],
  'POST /v1/pipelines/{pipeline_id}/runs': ['InvalidRequest', 'PipelineNotFound', 'PayloadTooLarge'],
  'POST /v1/pipelines/{pipeline_id}/uploads': ['InvalidRequest', 'PipelineNotFound', 'PayloadTooLarge'],
  'GET /v1/pipelines/{pipeline_id}/runs': ['InvalidRequest', 'PipelineNotFound'],
  'GET /v1/pipelines/{pipeline_id}/runs/{run_id}': ['RunNotFound'],
  'GET /v1/pipelines/{pipeline_id}/runs/{run_id}/events': ['RunNotFound'],
  'GET /v1/pipelines/{pipeline_id}/deployment': ['PipelineNotFound'],
  'PUT /v1/pipelines/{pipeline_id}/deployment': [
    'InvalidRequest',
    'PipelineNotFound',
    'PublishNoSuccessfulRun',
    'PublishLatestRunFailed',
    'PublishNoInputsOrOutputs',
    'Conflict',
    'PayloadTooLarge',
  ],
  'DELETE /v1/pipelines/{pipeline_id}/deployment': ['ConfirmationRequired', 'PipelineNotFound', 'DeploymentNotFound'],
  'POST /v1/pipelines/{pipeline_id}/deployment/keys': [
    'InvalidRequest',
    'PipelineNotFound',
    'DeploymentNotFound',
    'Conflict',
    'PayloadTooLarge',
  ],
  'POST /v1/pipelines/{pipeline_id}/deployment/consumers': [
    'InvalidRequest',
    'PipelineNotFound',
    'DeploymentNotFound',
    'Conflict',
    'PayloadTooLarge',
  ],
  'GET /v1/pipelines/{pipeline_id}/deployment/consumers': ['PipelineNotFound', 'DeploymentNotFound'],
  'PATCH /v1/pipelines/{pipeline_id}/deployment/consumers/{consumer_id}': [
    'InvalidRequest',
    'PipelineNotFound',
    'DeploymentNotFound',
    'ConsumerNotFound',
    'Conflict',
    'PayloadTooLarge',
  ],
  'DELETE /v1/pipelines/{pipeline_id}/deployment/consumers/{consumer_id}': [
    'PipelineNotFound',
    'DeploymentNotFound',
    'ConsumerNotFound',
    'Conflict',
  ],
  'POST /v1/pipelines/{pipeline_id}/deployment/consumers/{consumer_id}/keys': [
    'InvalidRequest',
    'PipelineNotFound',
    'DeploymentNotFound',
    'ConsumerNotFound',
    'Conflict',
    'PayloadTooLarge',
  ],
  'PUT /v1/pipelines/{pipeline_id}/deployment/limits': [
    'InvalidRequest',
    'PipelineNotFound',
    'DeploymentNotFound',
    'Conflict',
    'PayloadTooLarge',
  ],
  'GET /v1/pipelines/{pipeline_id}/executions/{execution_id}': ['ExecutionNotFound'],
  'POST /v1/pipelines/{pipeline_id}/executions/{execution_id}/cancel': ['ExecutionNotFound', 'ExecutionAlreadyFinished'],
  'POST /v1/pipelines/{pipeline_id}/executions/{execution_id}/callback/redeliver': ['ExecutionNotFound', 'Conflict'],
  'GET /v1/pipelines/{pipeline_id}/deployment/executions': ['InvalidRequest', 'PipelineNotFound', 'DeploymentNotFound'],
  'GET /v1/pipelines/{pipeline_id}/deployment/usage': ['PipelineNotFound', 'DeploymentNotFound'],
  'GET /v1/secrets': [],
  'PUT /v1/secrets/{name}': ['InvalidRequest', 'PayloadTooLarge'],
  'DELETE /v1/secrets/{name}': ['InvalidRequest', 'SecretNotFound'],
};

describe('errors', () => {
  it('list, per route, exactly the errors the service can answer there, with the catalog messages', () => {
    for (const r of ROUTES) {
      // Prepare
      const key = `${r.method} ${r.path}`;
      const expected = EXPECTED_ERRORS[key];

      // Act
      const documented = documentedErrors(r.method, r.path);

      // Assess: a new route's errors are listed above.
      expect({ route: key, listedInExpectedErrors: expected !== undefined }).toEqual({ route: key, listedInExpectedErrors: true });
      // Routes without credentials (the docs page) never answer 401.
      const every = r.auth === 'none' ? EVERY_ROUTE.filter((e) => e !== 'Unauthorized') : EVERY_ROUTE;
      // Every route that takes a body answers 415 to one that is not JSON (core/json-body.ts),
      // in the catalog's words unless it says its own (the MCP server's JSON-RPC error).
      const notJson: ErrorName[] = r.body === undefined || r.answers['415'] !== undefined ? [] : ['UnsupportedMediaType'];
      const errors = [...new Set([...every, ...(expected ?? []), ...notJson])];
      expect({ route: key, errors: documented }).toEqual({ route: key, errors: pairs(...errors).sort() });
    }
  });

  it('cover the whole catalog except what only the gateway answers, outside any route', () => {
    // Prepare
    const documented = new Set(ROUTES.flatMap((r) => documentedErrors(r.method, r.path)));
    // 404 Not Found / 405 for unknown paths and methods, and 403 from IAM (its message varies:
    // documented as any string).
    // A path that is not percent-encoded UTF-8 and headers past the server's limit are answered
    // before any route is known.
    const outsideRoutes: ErrorName[] = ['RouteNotFound', 'MethodNotAllowed', 'Forbidden', 'BadRequest', 'RequestHeaderFieldsTooLarge'];

    // Act
    const missing = (Object.keys(ERRORS) as ErrorName[]).filter((n) => !outsideRoutes.includes(n) && !documented.has(pairs(n)[0] ?? ''));

    // Assess
    expect(missing).toEqual([]);
  });

  it('send WWW-Authenticate with every 401 and Retry-After with every 503', () => {
    for (const { template, method, operation } of operations(doc)) {
      const responses = operation.responses as JsonObject;
      const unavailable = resolvePointer(doc, (responses['503'] as JsonObject).$ref as string) as JsonObject;
      expect({ at: `${method} ${template}`, header: (unavailable.headers as JsonObject)['Retry-After'] }).toMatchObject({
        header: { required: true },
      });
      // The docs page and its files take no credentials, so they never answer 401.
      if (responses['401'] === undefined && (operation.security as unknown[] | undefined)?.length === 0) continue;
      const unauthorized = resolvePointer(doc, (responses['401'] as JsonObject).$ref as string) as JsonObject;
      expect({ at: `${method} ${template}`, header: (unauthorized.headers as JsonObject)['WWW-Authenticate'] }).toMatchObject({
        header: { required: true },
      });
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The bodies the service builds conform, whatever the record holds.

const schemas = schemaCompiler(doc, { closed: true });
const conforms = (name: string, body: unknown): string => {
  const validate = schemas.named(name);
  return validate(body) ? '' : `${name}: ${describeErrors(validate)} in ${JSON.stringify(body)}`;
};

const iso = fc
  .date({ min: new Date('2000-01-01T00:00:00.000Z'), max: new Date('2100-01-01T00:00:00.000Z'), noInvalidDate: true })
  .map((d) => d.toISOString());
const nodeId = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,10}$/);
const raw: fc.Arbitrary<RawValue> = fc.oneof(fc.string(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean());
const status = fc.constantFrom<Execution['status']>('pending', 'running', 'completed', 'failed', 'cancelled');

const execution: fc.Arbitrary<Execution> = fc
  .record({
    execution_id: fc.uuid({ version: 4 }),
    deployment_id: fc.uuid({ version: 4 }),
    kind: fc.constantFrom<Execution['kind']>('run', 'api'),
    pipeline_id: fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}$/),
    version: fc.integer({ min: 1, max: 1000 }),
    status,
    inputs: fc.dictionary(nodeId, raw),
    outputs: fc.dictionary(nodeId, raw),
    startedBeforeCancel: fc.boolean(),
    created: iso,
    started: iso,
    completed: iso,
    error: fc.option(fc.string(), { nil: null }),
    callback: fc.option(fc.webUrl({ withQueryParameters: true }), { nil: null }),
    delivery: fc.option(
      fc.record({
        webhook_id: fc.string({ minLength: 1 }),
        attempts: fc.nat(20),
        outcome: fc.constantFrom('pending' as const, 'delivered' as const, 'dead_lettered' as const),
        last_status: fc.option(fc.integer({ min: 100, max: 599 }), { nil: null }),
        last_error: fc.option(fc.string(), { nil: null }),
        last_attempt_at: fc.option(iso, { nil: null }),
        next_attempt_at: fc.option(iso, { nil: null }),
      }),
      { nil: null },
    ),
  })
  .map((x) => {
    const terminal = (TERMINAL as readonly string[]).includes(x.status);
    const started = x.status !== 'pending' && !(x.status === 'cancelled' && !x.startedBeforeCancel);
    const isRun = x.kind === 'run';
    return {
      execution_id: x.execution_id,
      kind: x.kind,
      pipeline_id: x.pipeline_id,
      version: x.version,
      deployment_id: isRun ? null : x.deployment_id,
      status: x.status,
      inputs: x.inputs,
      outputs: x.status === 'completed' ? x.outputs : null,
      visible_outputs: isRun ? null : Object.keys(x.outputs).slice(1),
      callback: isRun ? null : x.callback,
      callback_delivery: isRun || x.callback === null ? null : x.delivery,
      error_message: x.status === 'failed' ? (x.error ?? 'failed') : null,
      created_at: x.created,
      started_at: started ? x.started : null,
      completed_at: terminal ? x.completed : null,
      expires_at: null,
    };
  });

describe('the bodies built by the views conform (property)', () => {
  it('accepted, status, result, run and owner views of any execution', () => {
    fc.assert(
      fc.property(execution, (e) => {
        const problems = [
          e.kind === 'api' ? conforms('Accepted', acceptedBody(BASE, e)) : '',
          e.kind === 'api' ? conforms('ExecutionStatusBody', statusBody(BASE, e)) : '',
          e.kind === 'api' && e.completed_at !== null ? conforms('ExecutionResult', resultBody(e)) : '',
          e.kind === 'run' ? conforms('Run', runBody(e)) : '',
          conforms('OwnerExecution', ownerExecutionBody(e)),
        ].filter((p) => p !== '');
        expect(problems).toEqual([]);
      }),
    );
  });

  const contractInput: fc.Arbitrary<ContractInput> = fc.oneof(
    fc.record({ id: nodeId, value_type: fc.constant('string' as const), value: fc.string(), visible: fc.boolean() }),
    fc.record({ id: nodeId, value_type: fc.constant('integer' as const), value: fc.integer(), visible: fc.boolean() }),
    fc.record({
      id: nodeId,
      value_type: fc.constant('float' as const),
      value: fc.double({ noNaN: true, noDefaultInfinity: true }),
      visible: fc.boolean(),
    }),
    fc.record({ id: nodeId, value_type: fc.constant('boolean' as const), value: fc.boolean(), visible: fc.boolean() }),
    fc.record({ id: nodeId, value_type: fc.constant('reference' as const), value: fc.webUrl(), visible: fc.boolean() }),
  );
  const contractOutput: fc.Arbitrary<ContractOutput> = fc.record(
    { id: nodeId, visible: fc.boolean(), value_type: fc.constantFrom('RAW' as const, 'ASSET' as const) },
    { requiredKeys: ['id', 'visible'] },
  );
  const deployment = fc.record({
    deployment_id: fc.uuid({ version: 4 }),
    pipeline_id: fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}$/),
    version: fc.integer({ min: 1, max: 1000 }),
    revision: fc.integer({ min: 1, max: 1000 }),
    status: fc.constant('live' as const),
    inputs: fc.uniqueArray(contractInput, { selector: (i) => i.id, maxLength: 6 }),
    outputs: fc.uniqueArray(contractOutput, { selector: (o) => o.id, maxLength: 6 }),
    published_at: iso,
    created_at: iso,
  });
  const pointer = fc.option(
    fc.record({ run_id: fc.uuid({ version: 4 }), status, version: fc.integer({ min: 1, max: 1000 }), created_at: iso }),
    { nil: null },
  );

  it('the readiness view and the caller contract of any deployment', () => {
    fc.assert(
      fc.property(
        deployment,
        fc.option(deployment, { nil: null }),
        pointer,
        pointer,
        pointer,
        (d, other, latestRun, latestFinished, lastSuccessful) => {
          const view = readiness({
            pipeline_id: d.pipeline_id,
            latestRun,
            latestFinished,
            lastSuccessful,
            discovered: other === null ? null : { inputs: other.inputs, outputs: other.outputs },
            deployment:
              latestFinished === null
                ? null
                : {
                    ...d,
                    execute_url: `${BASE}/v1/deployments/${d.deployment_id}/executions/`,
                    mcp_url: `${BASE}/v1/deployments/${d.deployment_id}/mcp`,
                  },
          });
          expect([conforms('Readiness', view), conforms('CallerContract', callerContract(d))].filter((p) => p !== '')).toEqual([]);
        },
      ),
    );
  });

  it('every per-deployment OpenAPI document is structurally valid and conforms to OpenApiDocument', () => {
    fc.assert(
      fc.property(deployment, (d) => {
        const generated = deploymentOpenApi(d, BASE, CALLER_ROUTES);
        expect(structuralProblems(generated)).toEqual([]);
        expect(conforms('OpenApiDocument', generated)).toBe('');
      }),
      { numRuns: 40 },
    );
  });
});

describe('a reference input in the per-deployment document', () => {
  it('asks for a URL with value_type REFERENCE, and RAW for the others', () => {
    // Prepare
    const d = {
      deployment_id: '6f1d7c2e-8a43-4b9e-9a57-2d1f0c3b4a51',
      pipeline_id: 'fetch',
      version: 1,
      inputs: [
        { id: 'source', value_type: 'reference' as const, value: 'https://example.com/a.json', visible: true },
        { id: 'limit', value_type: 'integer' as const, value: 3, visible: true },
      ],
      outputs: [{ id: 'out', visible: true }],
      published_at: '2026-11-22T15:00:00.000Z',
    };

    // Act
    const generated = deploymentOpenApi(d, BASE, CALLER_ROUTES) as unknown as JsonObject;
    const input = (id: string) =>
      resolvePointer(generated, `#/components/schemas/DeploymentExecutionRequest/properties/workflow_input/properties/${id}`);

    // Assess
    expect(input('source')).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: ['value', 'value_type'],
      properties: { value: { type: 'string', format: 'uri', default: 'https://example.com/a.json' }, value_type: { const: 'REFERENCE' } },
    });
    expect(input('limit')).toMatchObject({ properties: { value: { type: 'integer', default: 3 }, value_type: { const: 'RAW' } } });
  });
});

describe('wait nodes in the per-deployment document', () => {
  const d = (waits: unknown[]) =>
    ({
      deployment_id: '6f1d7c2e-8a43-4b9e-9a57-2d1f0c3b4a51',
      pipeline_id: 'approve',
      version: 1,
      inputs: [],
      outputs: [{ id: 'out', visible: true }],
      waits,
      published_at: '2026-11-22T15:00:00.000Z',
    }) as Parameters<typeof deploymentOpenApi>[0];
  const approval = {
    id: 'approval',
    visible: true,
    timeout_ms: 60_000,
    label: 'Approve',
    fields: { ok: { value_type: 'boolean' as const, label: 'Looks right' }, n: { value_type: 'integer' as const } },
  };

  it('offers the resume route with the events of the visible waits, and says what they are', () => {
    const generated = deploymentOpenApi(
      d([approval, { id: 'hook', visible: true, timeout_ms: 1000 }]),
      BASE,
      DEPLOYMENT_ROUTES,
    ) as unknown as JsonObject;
    expect(structuralProblems(generated)).toEqual([]);
    expect(resolvePointer(generated, '#/paths/~1v1~1resume~1{token}/post/security')).toEqual([]);
    const body = resolvePointer(generated, '#/components/schemas/DeploymentResumeRequest') as JsonObject;
    expect(body.anyOf).toEqual([
      expect.objectContaining({
        type: 'object',
        additionalProperties: false,
        required: ['ok', 'n'],
        properties: { ok: { type: 'boolean', description: 'Looks right' }, n: expect.objectContaining({ type: 'integer' }) },
      }),
      expect.objectContaining({ type: 'object' }),
    ]);
    expect((generated.info as JsonObject).description).toContain(
      'Wait nodes a caller resumes: `approval` (Approve), for at most 60000 ms; `hook`, for at most 1000 ms.',
    );
  });

  it('offers no resume route when no wait is visible', () => {
    for (const waits of [[], [{ ...approval, visible: false }]]) {
      const generated = deploymentOpenApi(d(waits), BASE, DEPLOYMENT_ROUTES) as unknown as JsonObject;
      expect(Object.keys(generated.paths as JsonObject)).not.toContain('/v1/resume/{token}');
      expect(JSON.stringify(generated)).not.toContain('DeploymentResumeRequest');
    }
  });
});

describe('outputs in the per-deployment document', () => {
  it("types each output by its contract's recorded kind, and an output of an older contract as either", () => {
    // Prepare
    const d = {
      deployment_id: '6f1d7c2e-8a43-4b9e-9a57-2d1f0c3b4a51',
      pipeline_id: 'thumbs',
      version: 2,
      inputs: [{ id: 'n', value_type: 'integer' as const, value: 3, visible: true }],
      outputs: [
        { id: 'caption', visible: true, value_type: 'RAW' as const },
        { id: 'thumbnail', visible: true, value_type: 'ASSET' as const },
        { id: 'older', visible: true },
        { id: 'hidden', visible: false, value_type: 'ASSET' as const },
      ],
      published_at: '2026-11-25T02:00:00.000Z',
    };

    // Act
    const generated = deploymentOpenApi(d, BASE, CALLER_ROUTES) as unknown as JsonObject;
    const data = resolvePointer(generated, '#/components/schemas/DeploymentExecutionResult/properties/response_data/properties');

    // Assess
    expect(data).toEqual({
      caption: { $ref: '#/components/schemas/RawOutputValue' },
      thumbnail: { $ref: '#/components/schemas/AssetOutputValue' },
      older: { $ref: '#/components/schemas/OutputValue' },
    });
    expect(structuralProblems(generated)).toEqual([]);
  });
});

describe('the response validator', () => {
  const validator = createValidator(doc);
  const headers = (h: Record<string, string> = {}) => new Headers({ 'content-type': 'application/json; charset=utf-8', ...h });

  it('matches literal segments before parameters and ignores trailing slashes and queries', () => {
    expect(validator.match('GET', '/v1/deployments/executions/abc/status/')?.template).toBe(
      '/v1/deployments/executions/{execution_id}/status',
    );
    expect(validator.match('GET', '/v1/deployments/abc/openapi.json')?.template).toBe('/v1/deployments/{deployment_id}/openapi.json');
    expect(validator.match('DELETE', '/v1/pipelines/p/deployment?confirm=x')?.template).toBe('/v1/pipelines/{pipeline_id}/deployment');
    expect(validator.match('PATCH', '/v1/pipelines/p')).toBeUndefined();
  });

  it.each<[string, { method: string; path: string; status: number; headers: Headers; text: string }, RegExp]>([
    [
      'an undocumented status',
      { method: 'GET', path: '/v1/pipelines', status: 418, headers: headers(), text: '{}' },
      /status 418 is not documented/,
    ],
    [
      'a missing required field',
      { method: 'GET', path: '/v1/pipelines', status: 200, headers: headers(), text: '{}' },
      /must have required property 'pipelines'/,
    ],
    [
      'a field the document does not describe',
      {
        method: 'POST',
        path: '/v1/pipelines/p/deployment/keys',
        status: 200,
        headers: headers({ 'cache-control': 'no-store' }),
        text: '{"api_key":"pgk_x","extra":1}',
      },
      /must NOT have unevaluated properties/,
    ],
    [
      'another error message',
      { method: 'GET', path: '/v1/pipelines/p', status: 404, headers: headers(), text: '{"error":"Deployment Not Found"}' },
      /must be equal to constant/,
    ],
    [
      'a missing required header',
      { method: 'POST', path: '/v1/deployments/d/executions/', status: 401, headers: headers(), text: '{"error":"Unauthorized"}' },
      /header WWW-Authenticate is missing/,
    ],
    [
      'a body where none is documented',
      { method: 'DELETE', path: '/v1/pipelines/p/deployment', status: 204, headers: headers(), text: '{}' },
      /says no body/,
    ],
    ['an unknown route', { method: 'GET', path: '/v2/nothing', status: 200, headers: headers(), text: '{}' }, /no operation/],
  ])('reports %s', (_what, response, expected) => {
    // Act
    const problems = validator.check(response);

    // Assess
    expect(problems.join('\n')).toMatch(expected);
  });

  it('accepts a conforming response', () => {
    const problems = validator.check({
      method: 'GET',
      path: '/v1/pipelines/p/deployment',
      status: 404,
      headers: headers(),
      text: JSON.stringify({ error: 'Pipeline Not Found' }),
    });
    expect(problems).toEqual([]);
  });
});

describe('a deployment with a web form, in its own document', () => {
  const base = {
    deployment_id: '6f1d7c2e-8a43-4b9e-9a57-2d1f0c3b4a51',
    pipeline_id: 'snap',
    version: 2,
    published_at: '2026-11-22T10:00:00.000Z',
    inputs: [{ id: 'word', value_type: 'string' as const, value: 'hi', visible: true }],
    outputs: [{ id: 'said', visible: true }],
  };
  it('says that a form exists and what its executions mean for this key, only while it is on', () => {
    const about = (d: object) =>
      (deploymentOpenApi({ ...base, ...d }, BASE, CALLER_ROUTES) as unknown as { info: { description: string } }).info.description;
    expect(about({ form: { enabled: true } })).toContain(FORM_NOTE);
    expect(about({ form: { enabled: false } })).not.toContain('web form');
    expect(about({})).not.toContain('web form');
  });
});
