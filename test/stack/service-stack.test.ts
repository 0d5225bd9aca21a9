import { readFileSync } from 'node:fs';
import { Template } from 'aws-cdk-lib/assertions';
import type { CfnElement } from 'aws-cdk-lib';
import { GATEWAY_RESPONSES, gatewayResponseFromTemplate } from '../../lib/gateway-responses';
import { QUEUES, type QueueName } from '../../lib/queues';
import {
  ROUTES,
  STREAMED_ROUTE_TIMEOUT_SECONDS,
  WORKERS,
  routeHandlers,
  type Answer,
  type FunctionName,
  type Route,
  type SchemaName,
} from '../../lib/routes';
import { MAIN_TABLE } from '../../lib/tables';
import {
  ACCESS,
  accessFor,
  allFunctionNames,
  bundleExternals,
  OWNER_SECRETS_KMS_ACTIONS,
  type FunctionAccess,
} from '../../lib/stacks/permissions';
import { ASL_PATH, ASL_SUBSTITUTIONS } from '../../lib/stacks/service-stack';
import { buildTestApp, crossStackRef, asArray, outputsOf, refOf, resourcesOf, type Resources } from './stack-fixture';
import { unauthorizedBody } from '../../functions/core/errors';
import { isPlainObject } from '../../functions/core/values';
import { EXPRESS_MAX_EXECUTION_TIMEOUT_MS, taskRunLambdaTimeoutSeconds } from '../../lib/workflow-budget';
import { CLASS_SHARES, classOf, concurrencyPlan, DEFAULT_MAX_ACCOUNT_SHARE, minimumReservation, waitersBound } from '../../lib/concurrency';
import { parseSettings } from '../../lib/stacks/settings';
import { ASSUMPTIONS } from '../../bench/prices';
import { fixedMonthlyCosts } from '../../bench/aws-calls';
import type { Template as SynthTemplate } from '../../lib/synth/assembly';
import { reserving as reservingEdit } from '../synth/synth-helpers';
import { WORKFLOW_TYPES } from '../../functions/core/workflow-type';
import { validateDefinition } from '../../functions/core/pipeline';
import { taskRun } from '../../functions/services/tasks.service';
import { anExecution, testDeps } from '../support/fakes';
import { memoryStores } from '../support/memory-stores';

// Prepare: one app for the whole file (building it is the slow part).
const built = buildTestApp();
const service = Template.fromStack(built.service);
const stateful = Template.fromStack(built.stateful);
const svc = resourcesOf(service);
const data = resourcesOf(stateful);

const logicalId = (el: unknown): string => built.service.getLogicalId(el as CfnElement);
const fnId = (name: string): string => logicalId(built.service.fn(name).fn.node.defaultChild);
const roleId = (name: string): string => logicalId(built.service.fn(name).role.node.defaultChild);
const tableId = built.stateful.getLogicalId(built.stateful.table.node.defaultChild as CfnElement);
const bucketId = built.stateful.getLogicalId(built.stateful.bucket.node.defaultChild as CfnElement);
/** A deploy that reserves: `-c reservedConcurrency=900` (built once, when a test asks). */
const RESERVING = 900;
let reservingBuilt: ReturnType<typeof buildTestApp> | undefined;
const reservingApp = () => (reservingBuilt ??= buildTestApp({ reservedConcurrency: RESERVING }));
const queueId = (q: QueueName): string => built.stateful.getLogicalId(built.stateful.queues[q].queue.node.defaultChild as CfnElement);

/** A readable name for a policy resource: stateful:<id>, service:<id>, or the literal. */
function label(x: unknown): string {
  if (typeof x === 'string') return x;
  const remote = crossStackRef(x, stateful);
  if (remote) return `stateful:${remote}`;
  const local = refOf(x);
  if (local) return `service:${local}`;
  if (isPlainObject(x) && Array.isArray(x['Fn::Join'])) {
    const parts = (x['Fn::Join'] as unknown[])[1];
    return asArray(parts).map(label).join('');
  }
  return JSON.stringify(x);
}

interface Statement {
  actions: string[];
  resources: string[];
}

/** A role's statements; those with a Condition only when `conditioned` (the wait bound's, see below). */
function statementsOf(role: string, resources: Resources = svc, conditioned = false): Statement[] {
  const out: Statement[] = [];
  for (const r of Object.values(resources)) {
    if (r.Type !== 'AWS::IAM::Policy') continue;
    const roles = asArray(r.Properties?.Roles).map(refOf);
    if (!roles.includes(role)) continue;
    const doc = r.Properties?.PolicyDocument as {
      Statement: { Action: unknown; Resource: unknown; Effect: string; Condition?: unknown }[];
    };
    for (const s of doc.Statement) {
      expect(s.Effect).toBe('Allow');
      if ((s.Condition !== undefined) !== conditioned) continue;
      out.push({ actions: asArray(s.Action).map(String), resources: asArray(s.Resource).map(label) });
    }
  }
  return out;
}

const actionsOn = (stmts: Statement[], prefix: string): string[] =>
  [...new Set(stmts.flatMap((s) => s.actions.filter((a) => a.startsWith(prefix))))].sort();
const resourcesFor = (stmts: Statement[], action: string): string[] =>
  [...new Set(stmts.filter((s) => s.actions.includes(action)).flatMap((s) => s.resources))].sort();

/** Path of an API Gateway resource, walking PathPart up to the root. */
function resourcePath(id: string): string {
  const r = svc[id];
  if (!r || r.Type !== 'AWS::ApiGateway::Resource') return '';
  const parentId = refOf(r.Properties?.ParentId);
  const parent = parentId && svc[parentId]?.Type === 'AWS::ApiGateway::Resource' ? resourcePath(parentId) : '';
  return `${parent}/${String(r.Properties?.PathPart)}`;
}

const methods = Object.values(svc)
  .filter((r) => r.Type === 'AWS::ApiGateway::Method')
  .map((r) => ({ props: r.Properties ?? {}, path: resourcePath(refOf(r.Properties?.ResourceId) ?? '') }));

describe('API routes from lib/routes.ts', () => {
  const authorizerId = Object.entries(svc).find(([, r]) => r.Type === 'AWS::ApiGateway::Authorizer')?.[0];

  it('has exactly one method per route, and no other but the not-found mock', () => {
    // Assess
    expect(methods.map((m) => `${String(m.props.HttpMethod)} ${m.path}`).sort()).toEqual(
      [...ROUTES.map((r) => `${r.method} ${r.path}`), 'ANY /{proxy+}'].sort(),
    );
  });

  it.each(ROUTES.map((r) => [r.method, r.path, r]))('%s %s: authorization and integration', (_m, _p, route) => {
    // Act
    const m = methods.find((x) => x.props.HttpMethod === route.method && x.path === route.path);
    // Assess
    expect(m).toBeDefined();
    if (route.auth === 'apiKey') {
      expect(m?.props.AuthorizationType).toBe('CUSTOM');
      expect(refOf(m?.props.AuthorizerId)).toBe(authorizerId);
    } else if (route.auth === 'none') {
      // Only the docs page and its static files (nothing of a deployment), asset links, whose
      // URL is a signed capability checked by the function itself, web forms, whose link is,
      // and a wait node's resume URL, whose token is.
      expect([
        'deployment-docs',
        'asset-get',
        'form-page',
        'form-execute',
        'form-execution',
        'form-upload',
        'form-events',
        'resume',
      ]).toContain(route.handler);
      expect(m?.props.AuthorizationType).toBe('NONE');
      expect(m?.props.AuthorizerId).toBeUndefined();
    } else {
      expect(route.auth).toBe('owner');
      expect(m?.props.AuthorizationType).toBe('AWS_IAM');
      expect(m?.props.AuthorizerId).toBeUndefined();
    }
    expect(m?.props.ApiKeyRequired ?? false).toBe(false);
    const integration = m?.props.Integration as { Type: string; Uri: unknown; ResponseTransferMode?: string; TimeoutInMillis?: number };
    expect(integration.Type).toBe('AWS_PROXY');
    expect(JSON.stringify(integration.Uri)).toContain(`"${fnId(route.handler)}"`);
    if (route.streams) {
      // Streamed: Lambda's InvokeWithResponseStream path, and room for a long download.
      expect(integration.ResponseTransferMode).toBe('STREAM');
      expect(JSON.stringify(integration.Uri)).toContain('/2021-11-15/functions/');
      expect(JSON.stringify(integration.Uri)).toContain('/response-streaming-invocations');
      expect(integration.TimeoutInMillis).toBe(STREAMED_ROUTE_TIMEOUT_SECONDS * 1000);
      expect(svc[fnId(route.handler)]?.Properties?.Timeout).toBe(STREAMED_ROUTE_TIMEOUT_SECONDS);
    } else {
      expect(integration.ResponseTransferMode ?? 'BUFFERED').toBe('BUFFERED');
      expect(JSON.stringify(integration.Uri)).toContain('/2015-03-31/functions/');
    }
  });

  it('streams every route that may wait, or whose answer is events (or MCP messages), bytes or a read of execution values', () => {
    // Prepare: a value-carrying answer buffered again would fail past Lambda's 6 MB
    // (test/e2e/large-results.test.ts); a wait may outlast a buffered integration.
    const VALUES: readonly SchemaName[] = [
      'ExecutionFinished',
      'ExecutionResult',
      'FormExecution',
      'Run',
      'RunList',
      'OwnerExecution',
      'ExecutionList',
    ];
    const shapesOf = (a: Answer): readonly SchemaName[] =>
      typeof a === 'string' || a.shape === undefined ? [] : typeof a.shape === 'string' ? [a.shape] : a.shape;
    const mustStream = (r: Route): boolean =>
      r.method === 'HEAD'
        ? ROUTES.some((g) => g.method === 'GET' && g.path === r.path && mustStream(g))
        : r.waits === true ||
          Object.entries(r.answers).some(
            ([status, a]) =>
              status.startsWith('2') &&
              typeof a === 'object' &&
              (a.events !== undefined ||
                a.media === 'bytes' ||
                a.media === 'mcp' ||
                (r.method === 'GET' && shapesOf(a).some((s) => VALUES.includes(s)))),
          );

    // Act
    const buffered = ROUTES.filter((r) => mustStream(r) && r.streams !== true).map((r) => `${r.method} ${r.path}`);

    // Assess: the rule reaches the routes it was written for, and each of them streams.
    expect(ROUTES.filter(mustStream).map((r) => `${r.method} ${r.handler}`)).toEqual(
      expect.arrayContaining([
        'GET asset-get',
        'HEAD asset-get',
        'POST execute',
        'GET execution-result',
        'GET run-get',
        'GET execution-events',
        'POST deployment-mcp',
      ]),
    );
    expect(buffered).toEqual([]);
  });

  it('answers paths with no route 404 from a mock at the root, reaching no function', () => {
    // Assess
    const proxy = Object.entries(svc).find(([, r]) => r.Type === 'AWS::ApiGateway::Resource' && r.Properties?.PathPart === '{proxy+}');
    expect(proxy).toBeDefined();
    const method = Object.values(svc).find(
      (r) => r.Type === 'AWS::ApiGateway::Method' && JSON.stringify(r.Properties?.ResourceId).includes(`"${proxy?.[0]}"`),
    );
    expect(method?.Properties).toMatchObject({ HttpMethod: 'ANY', AuthorizationType: 'NONE' });
    const integration = method?.Properties?.Integration as {
      Type: string;
      IntegrationResponses: { StatusCode: string; ResponseTemplates: Record<string, string> }[];
    };
    expect(integration.Type).toBe('MOCK');
    expect(integration.IntegrationResponses[0]).toMatchObject({
      StatusCode: '404',
      ResponseTemplates: { 'application/json': '{"error":"Not Found"}' },
    });
  });

  it('calls the authorizer function on every request: REQUEST type, no identity source, no cache', () => {
    // Assess
    const auth = svc[authorizerId ?? '']?.Properties ?? {};
    expect(auth.Type).toBe('REQUEST');
    expect(auth.AuthorizerResultTtlInSeconds).toBe(0);
    expect(auth).not.toHaveProperty('IdentitySource');
    expect(JSON.stringify(auth.AuthorizerUri)).toContain(`"${fnId(WORKERS.authorizer)}"`);
  });

  it('answers with contract-shaped bodies where API Gateway responds by itself', () => {
    // Prepare
    const expected: Record<string, { status?: string; body: string; headers?: Record<string, string> }> = {
      UNAUTHORIZED: {
        status: '401',
        body: JSON.stringify(unauthorizedBody('apiKey')),
        headers: { 'gatewayresponse.header.WWW-Authenticate': "'Api-Key'" },
      },
      // The authorizer's Deny carries the reason in its context; API Gateway substitutes it here.
      ACCESS_DENIED: {
        status: '401',
        body: '{"error":"Unauthorized","reason":"$context.authorizer.reason","detail":"$context.authorizer.detail"}',
        headers: { 'gatewayresponse.header.WWW-Authenticate': "'Api-Key'" },
      },
      AUTHORIZER_CONFIGURATION_ERROR: {
        status: '503',
        body: '{"error":"Service Unavailable","request_id":"$context.requestId"}',
        headers: { 'gatewayresponse.header.Retry-After': "'1'" },
      },
      AUTHORIZER_FAILURE: {
        status: '503',
        body: '{"error":"Service Unavailable","request_id":"$context.requestId"}',
        headers: { 'gatewayresponse.header.Retry-After': "'1'" },
      },
      THROTTLED: { status: '429', body: '{"error":"Too Many Requests"}', headers: { 'gatewayresponse.header.Retry-After': "'1'" } },
      INTEGRATION_FAILURE: {
        status: '503',
        body: '{"error":"Service Unavailable","request_id":"$context.requestId"}',
        headers: { 'gatewayresponse.header.Retry-After': "'1'" },
      },
      MISSING_AUTHENTICATION_TOKEN: {
        status: '401',
        body: JSON.stringify(unauthorizedBody('ownerSigV4')),
        headers: { 'gatewayresponse.header.WWW-Authenticate': "'AWS4-HMAC-SHA256'" },
      },
      REQUEST_TOO_LARGE: {
        status: '413',
        body: '{"error":"Payload Too Large","detail":"the request body must be at most 10485760 bytes (10 MiB)"}',
      },
      DEFAULT_4XX: { body: '{"error":$context.error.messageString}' },
      DEFAULT_5XX: { body: '{"error":"Internal Error","request_id":"$context.requestId"}' },
    };
    // Act
    const actual = Object.fromEntries(
      Object.values(svc)
        .filter((r) => r.Type === 'AWS::ApiGateway::GatewayResponse')
        .map((r) => [r.Properties?.ResponseType, r.Properties]),
    ) as Record<string, Record<string, unknown>>;
    // Assess
    expect(Object.keys(actual).sort()).toEqual(Object.keys(expected).sort());
    for (const [type, e] of Object.entries(expected)) {
      const body = (actual[type]?.ResponseTemplates as Record<string, string>)['application/json'] ?? '';
      expect(body).toBe(e.body);
      if (!body.includes('$context')) expect(() => JSON.parse(body)).not.toThrow();
      expect(actual[type]?.StatusCode).toBe(e.status);
      expect(actual[type]?.ResponseParameters).toEqual(e.headers);
    }
  });

  it('declares exactly the gateway responses of lib/gateway-responses.ts, which the local gateway renders', () => {
    // Act
    const declared = Object.values(svc)
      .filter((r) => r.Type === 'AWS::ApiGateway::GatewayResponse')
      .map((r) => gatewayResponseFromTemplate(r.Properties ?? {}));
    // Assess
    const byType = <T extends { type: string }>(xs: readonly T[]) => [...xs].sort((a, b) => a.type.localeCompare(b.type));
    expect(byType(declared)).toEqual(byType(GATEWAY_RESPONSES));
  });

  it('logs access as JSON, traces, and throttles the stage', () => {
    // Assess
    const stage = Object.values(svc).find((r) => r.Type === 'AWS::ApiGateway::Stage')?.Properties ?? {};
    expect(stage.StageName).toBe(built.settings.stageName);
    expect(stage.TracingEnabled).toBe(true);
    const format = (stage.AccessLogSetting as { Format: string }).Format;
    const sample = JSON.parse(format.replace(/\$context\.error\.messageString/g, '"x"')) as Record<string, string>;
    expect(sample.requestId).toBe('$context.requestId');
    expect(format).not.toMatch(/header/i);
    // A path can carry a capability (an asset link's token, a resume URL's): only the route's template is logged.
    expect(sample.resourcePath).toBe('$context.resourcePath');
    expect(format).not.toMatch(/\$context\.(path|requestOverride|domainPrefix)\b/);
    expect(stage.MethodSettings).toEqual([
      expect.objectContaining({
        ResourcePath: '/*',
        HttpMethod: '*',
        ThrottlingRateLimit: built.settings.throttleRateLimit,
        ThrottlingBurstLimit: built.settings.throttleBurstLimit,
      }),
    ]);
  });
});

describe('functions', () => {
  const functions = Object.entries(svc).filter(([, r]) => r.Type === 'AWS::Lambda::Function');

  it('deploys one function for every route handler and worker', () => {
    // Assess
    const names = functions.map(([, r]) => String(r.Properties?.Description).replace(/^pipegate /, '')).sort();
    // ... and the upload-cors and concurrency-check custom resources' (test/stack/upload-cors.test.ts, concurrency-check.test.ts).
    expect(names).toEqual([...new Set([...routeHandlers(), ...Object.values(WORKERS), 'upload-cors', 'concurrency-check'])].sort());
    expect(Object.keys(ACCESS).sort()).toEqual(allFunctionNames().sort());
  });

  it.each([...functions, ...Object.entries(data).filter(([, r]) => r.Type === 'AWS::Lambda::Function')])(
    '%s runs Node 22 or newer on arm64 with active tracing',
    (_id, r) => {
      // Assess
      const runtime = String(r.Properties?.Runtime);
      expect(runtime).toMatch(/^nodejs\d+\.x$/);
      expect(Number(/\d+/.exec(runtime)?.[0])).toBeGreaterThanOrEqual(22);
      expect(r.Properties?.Architectures).toEqual(['arm64']);
      expect(r.Properties?.TracingConfig).toEqual({ Mode: 'Active' });
      expect(r.Properties?.MemorySize).toBe(256);
    },
  );

  it('gives every function the configuration names lib/config.ts reads', () => {
    for (const name of allFunctionNames()) {
      // Act
      const env = (svc[fnId(name)]?.Properties?.Environment as { Variables: Record<string, unknown> }).Variables;
      // Assess
      expect(label(env.PIPEGATE_TABLE)).toBe(`stateful:${tableId}`);
      expect(label(env.PIPEGATE_EXECUTIONS_QUEUE_URL)).toBe(`stateful:${queueId('executions')}`);
      expect(label(env.PIPEGATE_CALLBACKS_QUEUE_URL)).toBe(`stateful:${queueId('callbacks')}`);
      expect(env.PIPEGATE_SECRET_ARN).toBeDefined();
      expect(label(env.PIPEGATE_BUCKET)).toBe(`stateful:${bucketId}`);
      expect(env.PIPEGATE_EXECUTION_TIMEOUT_MS).toBe(String(built.settings.executionTimeoutMs));
      expect(env.NODE_OPTIONS).toBe('--enable-source-maps');
      expect(Object.keys(env).filter((k) => k.startsWith('POWERTOOLS_'))).toEqual([]);
      // Both machines' ARNs to the functions that start or stop executions, and no other.
      expect('PIPEGATE_EXPRESS_STATE_MACHINE_ARN' in env).toBe(ACCESS[name]?.states.length !== 0);
      expect('PIPEGATE_STANDARD_STATE_MACHINE_ARN' in env).toBe(ACCESS[name]?.states.length !== 0);
      expect('PIPEGATE_STATE_MACHINE_ARN' in env).toBe(false);
    }
  });

  it("gives task-run a step's longest, which fits an Express execution whatever the execution time-out", () => {
    // Assess: the default time-out is Standard's to keep; Express executions are held within their allowance.
    expect(built.settings.executionTimeoutMs).toBeGreaterThan(EXPRESS_MAX_EXECUTION_TIMEOUT_MS);
    const taskRunTimeout = Number(svc[fnId(WORKERS.taskRun)]?.Properties?.Timeout);
    expect(taskRunTimeout).toBe(taskRunLambdaTimeoutSeconds());
    expect(taskRunTimeout).toBeLessThanOrEqual(300);
  });
});

describe('least privilege, from lib/stacks/permissions.ts', () => {
  const expectedDynamo = (a: FunctionAccess): string[] =>
    [...a.table.map((x) => `dynamodb:${x}`), ...(a.query.length > 0 ? ['dynamodb:Query'] : [])].sort();

  it.each(Object.entries(ACCESS) as [FunctionName, FunctionAccess][])(
    '%s gets exactly its table, queue, secret and state-machine access',
    (name, access) => {
      // Act
      const stmts = statementsOf(roleId(name));
      // Assess: item actions on the table; Query only on the targets listed (an index by name, or the table).
      expect(actionsOn(stmts, 'dynamodb:')).toEqual(expectedDynamo(access));
      for (const a of access.table) expect(resourcesFor(stmts, `dynamodb:${a}`)).toEqual([`stateful:${tableId}`]);
      const queried = access.query.map((t) => (t === 'table' ? `stateful:${tableId}` : `stateful:${tableId}/index/${t}`));
      expect(resourcesFor(stmts, 'dynamodb:Query')).toEqual(queried.sort());
      for (const t of access.query) expect(['table', ...MAIN_TABLE.indexes.map((x) => x.name)]).toContain(t);
      // Queues: sends only where listed; consuming only the queue of its event source.
      expect(resourcesFor(stmts, 'sqs:SendMessage')).toEqual(access.send.map((q) => `stateful:${queueId(q)}`).sort());
      expect(resourcesFor(stmts, 'sqs:ReceiveMessage')).toEqual(access.consumes ? [`stateful:${queueId(access.consumes)}`] : []);
      expect(actionsOn(stmts, 'sqs:').filter((a) => a !== 'sqs:SendMessage').length > 0).toBe(access.consumes !== undefined);
      // Secret and state machine.
      expect(actionsOn(stmts, 'secretsmanager:')).toEqual(access.secret ? ['secretsmanager:GetSecretValue'] : []);
      expect(actionsOn(stmts, 'states:')).toEqual(access.states.map((s) => `states:${s}`).sort());
      // The owner secrets' key, only under a condition on the encryption context (test/stack/owner-secrets-key.test.ts).
      expect(actionsOn(stmts, 'kms:')).toEqual([]);
      expect(actionsOn(statementsOf(roleId(name), svc, true), 'kms:')).toEqual(
        access.ownerSecrets.map((a) => OWNER_SECRETS_KMS_ACTIONS[a]).sort(),
      );
      // Nothing beyond those services, its own log group and X-Ray.
      const services = new Set(stmts.flatMap((s) => s.actions.map((a) => a.split(':')[0])));
      for (const s of services) expect(['dynamodb', 'sqs', 'secretsmanager', 'states', 'kms', 'logs', 'xray']).toContain(s);
      expect(resourcesFor(stmts, 'logs:PutLogEvents')).toEqual([`service:${logicalId(built.service.fn(name).logGroup.node.defaultChild)}`]);
      for (const s of stmts) if (s.resources.includes('*')) expect(s.actions.every((a) => a.startsWith('xray:'))).toBe(true);
    },
  );

  it.each(Object.entries(ACCESS) as [FunctionName, FunctionAccess][])(
    '%s gets exactly the object policies its entry lists, and bundles the S3 client only if it writes',
    (name, access) => {
      // Act
      const attached = asArray(svc[roleId(name)]?.Properties?.ManagedPolicyArns ?? []).map(label);
      const policyIds = Object.fromEntries(
        Object.entries(built.stateful.objectPolicies).map(([a, p]) => [
          `stateful:${built.stateful.getLogicalId(p.node.defaultChild as CfnElement)}`,
          a,
        ]),
      );
      // Assess
      expect(
        attached
          .filter((l) => l in policyIds)
          .map((l) => policyIds[l])
          .sort(),
      ).toEqual([...access.objects].sort());
      // Reads are signed requests (functions/adapters/object-reads.ts): the S3 client is for writes
      // alone, an upload's presigned PUT among them.
      const writes = (['delete', 'caller-execution', 'owner-run', 'multipart-abort', 'owner-upload', 'caller-upload'] as const).some((o) =>
        access.objects.includes(o),
      );
      expect(bundleExternals(name).includes('@aws-sdk/client-s3')).toBe(!writes);
      expect(bundleExternals(name).includes('@aws-sdk/s3-request-presigner')).toBe(!writes);
      expect(bundleExternals(name)).toContain('@aws-sdk/client-secrets-manager');
    },
  );

  /** The S3 statements of the customer-managed policies (beside the bucket) attached to a function's role. */
  function objectStatementsOf(name: string): Statement[] {
    const attached = asArray(svc[roleId(name)]?.Properties?.ManagedPolicyArns ?? []).map(label);
    const inStateful = (x: unknown): string =>
      isPlainObject(x) && Array.isArray(x['Fn::Join'])
        ? asArray((x['Fn::Join'] as unknown[])[1])
            .map((p) => (refOf(p) === bucketId ? 'bucket' : String(p)))
            .join('')
        : refOf(x) === bucketId
          ? 'bucket'
          : JSON.stringify(x);
    return attached
      .filter((l) => l.startsWith('stateful:'))
      .flatMap(
        (l) =>
          (data[l.slice('stateful:'.length)]?.Properties?.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] })
            .Statement,
      )
      .map((st) => ({ actions: asArray(st.Action).map(String), resources: asArray(st.Resource).map(inStateful) }));
  }

  it.each([
    ['upload-create', 'bucket/d/*/u/*'],
    ['form-upload', 'bucket/d/*/u/*'],
    ['pipeline-upload', 'bucket/p/*/u/*'],
  ])('%s, which presigns uploads, may PutObject on %s alone: a URL it signs can write no other key', (name, keys) => {
    // Act
    const s3 = [...statementsOf(roleId(name)), ...objectStatementsOf(name)].filter((st) => st.actions.some((a) => a.startsWith('s3:')));
    // Assess
    expect(s3).toEqual([{ actions: ['s3:PutObject'], resources: [keys] }]);
  });

  it('lets each function that writes objects write its own key families alone (the rest read at most)', () => {
    // Act: every S3 action but the reads (GetObject, and ListBucket for 404s), per function.
    const reads = ['s3:GetObject', 's3:ListBucket'];
    const writes = Object.fromEntries(
      allFunctionNames()
        .map(
          (name) =>
            [
              name,
              [...statementsOf(roleId(name)), ...objectStatementsOf(name)]
                .map((st) => ({
                  actions: st.actions.filter((a) => a.startsWith('s3:') && !reads.includes(a)).sort(),
                  resources: [...st.resources].sort(),
                }))
                .filter((st) => st.actions.length > 0)
                .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
            ] as const,
        )
        .filter(([, st]) => st.length > 0),
    );
    // Assess
    const put = (...resources: string[]) => ({ actions: ['s3:PutObject'], resources });
    const deletes = { actions: ['s3:DeleteObject'], resources: ['bucket/d/*', 'bucket/p/*'] };
    expect(writes).toEqual({
      // Inline assets and large values, under the API execution it creates.
      execute: [put('bucket/d/*/e/*')],
      'form-execute': [put('bucket/d/*/e/*')],
      // An MCP tools/call is an execute: its inline and fetched files, under the execution.
      'deployment-mcp': [put('bucket/d/*/e/*')],
      // The same, under the owner's run it creates.
      'run-start': [put('bucket/p/*/r/*')],
      // An event too large for its node's item, under the execution it resumes (an API execution's or a run's).
      resume: [put('bucket/d/*/e/*'), put('bucket/p/*/r/*')],
      // Outputs and large values of whichever it runs, binary answers streamed in parts.
      'task-run': [
        { actions: ['s3:AbortMultipartUpload'], resources: ['bucket/d/*/e/*', 'bucket/p/*/r/*'] },
        put('bucket/d/*/e/*'),
        put('bucket/p/*/r/*'),
      ],
      // Presigned upload URLs.
      'upload-create': [put('bucket/d/*/u/*')],
      'form-upload': [put('bucket/d/*/u/*')],
      'pipeline-upload': [put('bucket/p/*/u/*')],
      'deployment-delete': [deletes],
      sweeper: [deletes],
    });
  });

  it('lets only the sweeper and a deployment delete remove objects', () => {
    // Assess
    expect(
      allFunctionNames()
        .filter((n) => accessFor(n).objects.includes('delete'))
        .sort(),
    ).toEqual(['deployment-delete', WORKERS.sweeper].sort());
  });

  it("lets only the runner start executions (on both machines), and only the cancels (caller's, owner's, an MCP client's tasks/cancel) and a resume's wake (the older workflow) stop them, on Standard alone", () => {
    // Act
    const starters = allFunctionNames().filter((n) => actionsOn(statementsOf(roleId(n)), 'states:StartExecution').length > 0);
    const stoppers = allFunctionNames().filter((n) => actionsOn(statementsOf(roleId(n)), 'states:StopExecution').length > 0);
    // Assess
    expect(starters).toEqual([WORKERS.runner]);
    expect(stoppers.sort()).toEqual(['deployment-mcp', 'execution-cancel', 'owner-execution-cancel', 'resume']);
    const express = logicalId(built.service.stateMachines.express.node.defaultChild);
    const standard = logicalId(built.service.stateMachines.standard.node.defaultChild);
    expect(resourcesFor(statementsOf(roleId(WORKERS.runner)), 'states:StartExecution')).toEqual(
      [`service:${express}`, `service:${standard}`].sort(),
    );
    // Express executions have no StopExecution: no grant names them.
    for (const stopper of stoppers) {
      expect(resourcesFor(statementsOf(roleId(stopper)), 'states:StopExecution')).toEqual([
        `arn:aws:states:${built.service.region}:${built.service.account}:execution:service:${standard}:*`,
      ]);
    }
  });

  it('lets a function update only the partition keys it owns (claimed uploads), and bounds waiting callers only where it reserves', () => {
    // Prepare: the default reserves nothing; a reserving deploy bounds its waiting routes' callers.
    const reserving = resourcesOf(Template.fromStack(reservingApp().service));
    const plan = concurrencyPlan(allFunctionNames(), RESERVING);
    for (const name of allFunctionNames()) {
      const waits = ROUTES.some((r) => r.handler === name && r.waits);
      for (const [resources, bounded] of [
        [svc, false],
        [reserving, true],
      ] as const) {
        const extra = statementsOf(roleId(name), resources, true);
        const keys = [...accessFor(name).updateKeys, ...(waits && bounded ? ['WAITERS#*'] : [])];
        expect(extra.flatMap((s) => s.actions).filter((a) => !a.startsWith('kms:'))).toEqual(
          keys.length > 0 ? ['dynamodb:UpdateItem'] : [],
        );
        const env = (resources[fnId(name)]?.Properties?.Environment as { Variables: Record<string, string> }).Variables;
        expect(env.PIPEGATE_MAX_WAITERS).toBe(waits && bounded ? String(waitersBound(plan.reserved[name] ?? 0)) : undefined);
      }
    }
    const policies = (r: Resources) =>
      Object.values(r)
        .filter((x) => x.Type === 'AWS::IAM::Policy')
        .map((x) => JSON.stringify(x.Properties));
    expect(policies(reserving).some((p) => p.includes('"dynamodb:LeadingKeys":["WAITERS#*"]'))).toBe(true);
    expect(policies(reserving).some((p) => p.includes('"dynamodb:LeadingKeys":["UPLOAD#*","LIMIT#*","USAGE#*","WAITERS#*"]'))).toBe(true);
    expect(policies(svc).some((p) => p.includes('WAITERS#'))).toBe(false);
  });

  it("lets every caller route spend its key's limits (counters and usage only), and the authorizer record a consumer's last use", () => {
    const limited = (name: string) =>
      Object.values(svc)
        .filter((r) => r.Type === 'AWS::IAM::Policy' && asArray(r.Properties?.Roles).map(refOf).includes(roleId(name)))
        .map((r) =>
          JSON.stringify(
            (r.Properties?.PolicyDocument as { Statement: { Condition?: unknown }[] }).Statement.filter((st) => st.Condition !== undefined),
          ),
        )
        .join();
    // execution-cancel may update any item already (it moves executions).
    for (const r of ROUTES.filter((x) => x.auth === 'apiKey' && !accessFor(x.handler).table.includes('UpdateItem'))) {
      expect(limited(r.handler)).toContain('"LIMIT#*","USAGE#*"');
    }
    expect(limited('authorizer')).toContain('["DEPLOYMENT#*"]');
    expect(limited('authorizer')).not.toContain('LIMIT#');
    // The consumers' owner routes: their items, a Query of the deployment's partition, the pepper.
    const consumers = JSON.stringify(statementsOf(roleId('deployment-consumers')));
    for (const action of ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query', 'secretsmanager:GetSecretValue'])
      expect(consumers).toContain(action);
    expect(consumers).not.toContain('dynamodb:DeleteItem');
  });

  it('keeps read-only functions from writing', () => {
    for (const name of [
      'execution-status',
      'execution-result',
      'deployment-contract',
      'deployment-openapi',
      'pipeline-list',
      'run-get',
      'deployment-executions',
      'deployment-usage',
      'owner-execution-get',
    ]) {
      const actions = actionsOn(statementsOf(roleId(name)), '');
      expect(actions).not.toContain('dynamodb:PutItem');
      expect(actions).not.toContain('dynamodb:UpdateItem');
      expect(actions).not.toContain('sqs:SendMessage');
    }
  });
});

describe('the MCP server function (deployment-mcp)', () => {
  const name = 'deployment-mcp';

  it("holds an execute's grants, a cancel's, and nothing else", () => {
    // Act
    const plain = statementsOf(roleId(name))
      .filter((st) => !st.actions.every((a) => a.startsWith('logs:') || a.startsWith('xray:')))
      .map((st) => ({ actions: [...st.actions].sort(), resources: [...st.resources].sort() }))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    const conditioned = statementsOf(roleId(name), svc, true).map((st) => st.actions);
    const machine = logicalId(built.service.stateMachines.standard.node.defaultChild);
    // Assess: the records an execute writes and a cancel moves, the executions queue (submit) and
    // the callbacks queue (a cancel owes its callback), the key material (links), StopExecution.
    expect(actionsOn(plain, 'dynamodb:')).toEqual(['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
    expect(resourcesFor(plain, 'dynamodb:GetItem')).toEqual([`stateful:${tableId}`]);
    expect(resourcesFor(plain, 'sqs:SendMessage')).toEqual(
      [`stateful:${queueId('callbacks')}`, `stateful:${queueId('executions')}`].sort(),
    );
    expect(actionsOn(plain, 'secretsmanager:')).toEqual(['secretsmanager:GetSecretValue']);
    expect(resourcesFor(plain, 'states:StopExecution')).toEqual([
      `arn:aws:states:${built.service.region}:${built.service.account}:execution:service:${machine}:*`,
    ]);
    expect(actionsOn(plain, 'dynamodb:Query')).toEqual([]);
    expect(actionsOn(plain, 'states:StartExecution')).toEqual([]);
    expect(conditioned).toEqual([['dynamodb:UpdateItem']]);
    // Its updates: claimed uploads and the key's limits; the wait bound's counters too when the deploy reserves.
    const policiesOf = (r: Resources, role: string) =>
      Object.values(r)
        .filter((x) => x.Type === 'AWS::IAM::Policy' && asArray(x.Properties?.Roles).map(refOf).includes(role))
        .map((x) => JSON.stringify(x.Properties));
    const reserving = reservingApp();
    const rroleId = reserving.service.getLogicalId(reserving.service.fn(name).role.node.defaultChild as CfnElement);
    expect(policiesOf(svc, roleId(name)).some((p) => p.includes('"dynamodb:LeadingKeys":["UPLOAD#*","LIMIT#*","USAGE#*"]'))).toBe(true);
    expect(
      policiesOf(resourcesOf(Template.fromStack(reserving.service)), rroleId).some((p) =>
        p.includes('"dynamodb:LeadingKeys":["UPLOAD#*","LIMIT#*","USAGE#*","WAITERS#*"]'),
      ),
    ).toBe(true);
    expect(accessFor(name).objects).toEqual(['read', 'caller-execution']);
  });

  it('serves both methods of the MCP URL streamed, behind the key authorizer, with its share of the waiting routes', () => {
    const reserving = reservingApp();
    const id = reserving.service.getLogicalId(reserving.service.fn(name).fn.node.defaultChild as CfnElement);
    const fn = resourcesOf(Template.fromStack(reserving.service))[id]?.Properties ?? {};
    expect(fn.Timeout).toBe(STREAMED_ROUTE_TIMEOUT_SECONDS);
    const env = (fn.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(JSON.stringify(env.PIPEGATE_API_URL)).toContain('execute-api');
    const plan = concurrencyPlan(allFunctionNames(), RESERVING);
    expect(classOf(name)).toBe('waiting');
    expect(Number(fn.ReservedConcurrentExecutions)).toBe(plan.reserved[name]);
    expect(plan.reserved[name]).toBeGreaterThan(0);
    expect(env.PIPEGATE_MAX_WAITERS).toBe(String(waitersBound(plan.reserved[name] ?? 0)));
    const routes = ROUTES.filter((r) => r.handler === name);
    expect(routes.map((r) => `${r.method} ${r.path}`).sort()).toEqual([
      'GET /v1/deployments/{deployment_id}/mcp',
      'POST /v1/deployments/{deployment_id}/mcp',
    ]);
    for (const r of routes) expect([r.auth, r.streams]).toEqual(['apiKey', true]);
  });
});

describe('the two state machines from lib/state-machine.asl.json', () => {
  const machines = WORKFLOW_TYPES.map((type) => {
    const id = logicalId(built.service.stateMachines[type].node.defaultChild);
    return { type, id, props: svc[id]?.Properties ?? {} };
  });

  it('are exactly two: one Express, one Standard', () => {
    // Assess
    const all = Object.values(svc).filter((r) => r.Type === 'AWS::StepFunctions::StateMachine');
    expect(all.map((r) => r.Properties?.StateMachineType).sort()).toEqual(['EXPRESS', 'STANDARD']);
    expect(machines.map((m) => [m.type, m.props.StateMachineType])).toEqual([
      ['express', 'EXPRESS'],
      ['standard', 'STANDARD'],
    ]);
  });

  it.each(machines)('$type is the shared ASL document with the three task functions substituted', ({ props }) => {
    // Prepare
    const shared = JSON.parse(readFileSync(ASL_PATH, 'utf8')) as unknown;
    // Act
    const deployed = JSON.parse(String(props.DefinitionString)) as unknown;
    const subs = props.DefinitionSubstitutions as Record<string, unknown>;
    // Assess
    expect(deployed).toEqual(shared);
    expect(Object.keys(subs).sort()).toEqual(['TaskFailArn', 'TaskRunArn', 'TaskStartArn']);
    expect(refOf(subs.TaskStartArn)).toBe(fnId('task-start'));
    expect(refOf(subs.TaskRunArn)).toBe(fnId('task-run'));
    expect(refOf(subs.TaskFailArn)).toBe(fnId('task-fail'));
    // Every placeholder in the document has a substitution, and no more.
    const placeholders = [...String(props.DefinitionString).matchAll(/\$\{(\w+)\}/g)].map((m) => m[1]);
    expect([...new Set(placeholders)].sort()).toEqual(Object.keys(ASL_SUBSTITUTIONS).sort());
  });

  it.each(machines)('$type logs failed executions (ERROR, with their data) to a log group of its own, and traces', ({ props }) => {
    // Assess
    expect(props.LoggingConfiguration).toMatchObject({ Level: 'ERROR', IncludeExecutionData: true });
    expect(props.TracingConfiguration).toEqual({ Enabled: true });
    const groups = machines.map(
      (m) => (m.props.LoggingConfiguration as { Destinations: { CloudWatchLogsLogGroup: { LogGroupArn: unknown } }[] }).Destinations,
    );
    expect(new Set(groups.map((g) => JSON.stringify(g))).size).toBe(2);
  });

  it('logs every event of both with stateMachineLogLevel=ALL', () => {
    const all = buildTestApp({ stateMachineLogLevel: 'ALL' });
    const found = Object.values(resourcesOf(Template.fromStack(all.service))).filter((r) => r.Type === 'AWS::StepFunctions::StateMachine');
    expect(found).toHaveLength(2);
    for (const machine of found)
      expect(machine.Properties?.LoggingConfiguration).toMatchObject({ Level: 'ALL', IncludeExecutionData: true });
    expect(() => parseSettings({ stateMachineLogLevel: 'DEBUG' })).toThrow(/stateMachineLogLevel/);
  });

  it.each(machines)('$type has a role of its own, which may invoke the three task functions and nothing else', ({ props }) => {
    // Act
    const role = refOf(props.RoleArn) ?? '';
    const stmts = statementsOf(role);
    // Assess
    expect(role).not.toBe('');
    expect(machines.map((m) => refOf(m.props.RoleArn)).filter((r) => r === role)).toHaveLength(1);
    expect(resourcesFor(stmts, 'lambda:InvokeFunction')).toEqual(
      ['task-start', 'task-run', 'task-fail'].map((n) => `service:${fnId(n)}`).sort(),
    );
    expect(actionsOn(stmts, 'lambda:')).toEqual(['lambda:InvokeFunction']);
    expect(actionsOn(stmts, '').filter((a) => !/^(lambda|logs|xray):/.test(a))).toEqual([]);
  });
});

/**
 * Waiting holds nothing: a delay past a second, or the time between polls of a job, is a Wait
 * state of the state machine, never a Lambda that sleeps. The step that meets such a node
 * records it and answers `wait` with the seconds to the next one due; the document's AfterStep
 * sends that answer to a Wait state reading those seconds, which then goes back to RunNodes.
 */
describe('waiting is a Wait state, never a sleeping Lambda', () => {
  type State = { Type: string; Next?: string; SecondsPath?: string; Choices?: { Variable: string; StringEquals?: string; Next: string }[] };
  const doc = JSON.parse(readFileSync(ASL_PATH, 'utf8')) as { States: Record<string, State> };
  const waitOf = () => {
    const choice = doc.States.AfterStep;
    const rule = choice?.Choices?.find((c) => c.Variable === '$.run.next' && c.StringEquals === 'wait');
    return { rule, state: rule ? doc.States[rule.Next] : undefined };
  };

  it("sends a step's `wait` answer to a Wait state that waits the answer's seconds and steps again", () => {
    const { rule, state } = waitOf();
    expect(doc.States.RunNodes?.Next).toBe('AfterStep');
    expect(rule).toBeDefined();
    expect(state).toEqual({ Type: 'Wait', SecondsPath: '$.run.seconds', Next: 'RunNodes' });
    // No Task state but the three, and none of them is given a sleep.
    expect(
      Object.entries(doc.States)
        .filter(([, x]) => x.Type === 'Task')
        .map(([n]) => n)
        .sort(),
    ).toEqual(['MarkFailed', 'MarkRunning', 'RunNodes']);
  });

  it.each([
    ['a delay of 2 s', { type: 'delay', inputs: ['x'], ms: 2_000 }, 2],
    [
      'a poll every 5 s',
      {
        type: 'http',
        method: 'POST',
        url: 'https://jobs.example/v1/jobs',
        inputs: ['x'],
        poll: { url: "'https://jobs.example/v1/jobs/' & id", every_ms: 5_000, done: "status = 'done'" },
      },
      5,
    ],
  ])('parks the step for %s and answers the seconds the Wait state reads', async (_what, node, seconds) => {
    // Prepare: the step runs the node to its first wait (the poll's submit answered at once).
    const d = testDeps(memoryStores(), {
      http: async () => ({
        status: 202,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'j1', status: 'queued' }),
      }),
    });
    const checked = validateDefinition({
      nodes: { x: { type: 'input', value_type: 'string', value: 'a' }, n: node, out: { type: 'output', from: 'n' } },
    });
    if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
    const def = checked.definition;
    const version = await d.pipelines.push('waits', def, 'h-waits', new Date().toISOString());
    const e = anExecution({
      pipeline_id: 'waits',
      version: version.version,
      status: 'running',
      started_at: new Date().toISOString(),
      workflow: 'standard',
    });
    await d.executions.create(e);
    // Act
    const answer = await taskRun(d, e.execution_id);
    // Assess: the step did not sleep through the wait: it recorded the node waiting and handed the
    // state machine the seconds its Wait state reads (a sleeping step would have answered done).
    expect(answer).toMatchObject({ status: 'running', next: 'wait', seconds });
    const records = await d.steps.load(e);
    expect(records.get('n')?.state).toBe('waiting');
    expect(records.has('out')).toBe(false);
    const { state } = waitOf();
    expect(state?.SecondsPath).toBe('$.run.seconds');
    expect((await d.executions.get(e.execution_id, new Date()))?.waiting).toContain('"n"');
  });
});

describe('queue event sources', () => {
  it.each(Object.values(QUEUES))('$id is consumed with its batch size and partial batch failures', (def) => {
    // Act
    const mappings = Object.values(svc).filter(
      (r) => r.Type === 'AWS::Lambda::EventSourceMapping' && label(r.Properties?.EventSourceArn) === `stateful:${queueId(def.id)}`,
    );
    // Assess
    expect(mappings).toHaveLength(1);
    const m = mappings[0]?.Properties ?? {};
    expect(m.BatchSize).toBe(def.batchSize);
    expect(m.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
    const consumer = refOf(m.FunctionName) ?? '';
    const timeout = Number(svc[consumer]?.Properties?.Timeout);
    expect(timeout).toBe(def.consumerTimeoutSeconds);
    const visibility = Number(data[queueId(def.id)]?.Properties?.VisibilityTimeout);
    expect(visibility).toBeGreaterThanOrEqual(6 * timeout);
  });
});

describe('concurrency budget, from lib/concurrency.ts', () => {
  const reserving = reservingApp();
  const rsvc = resourcesOf(Template.fromStack(reserving.service));
  const plan = concurrencyPlan(allFunctionNames(), RESERVING);
  const rid = (name: string): string => reserving.service.getLogicalId(reserving.service.fn(name).fn.node.defaultChild as CfnElement);
  const reservedOf = (name: string): unknown => rsvc[rid(name)]?.Properties?.ReservedConcurrentExecutions;
  const checkOf = (r: Resources) => Object.entries(r).find(([, x]) => x.Type === 'Custom::PipegateConcurrencyCheck');

  it('reserves nothing by default, so the stack deploys on any account (a new one has 10 units)', () => {
    // Assess
    const fns = Object.values(svc).filter((r) => r.Type === 'AWS::Lambda::Function');
    expect(built.settings.reservedConcurrency).toBe(0);
    expect(fns.some((r) => r.Properties?.ReservedConcurrentExecutions !== undefined)).toBe(false);
    const mappings = Object.values(svc).filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping');
    expect(mappings.some((m) => m.Properties?.ScalingConfig !== undefined)).toBe(false);
    // The check is there, with nothing to check.
    expect(checkOf(svc)?.[1].Properties).toMatchObject({ Requested: 0, Reserved: 0 });
  });

  it('reserves each function its share of reservedConcurrency, and never more than it in all', () => {
    // Assess
    const total = allFunctionNames().reduce((n, name) => n + Number(reservedOf(name)), 0);
    for (const name of allFunctionNames()) expect(reservedOf(name)).toBe(plan.reserved[name]);
    expect(total).toBe(plan.total);
    expect(total).toBeLessThanOrEqual(RESERVING);
    // The public-facing authorizer and the waiting routes are never left to the shared pool.
    expect(Number(reservedOf(WORKERS.authorizer))).toBeGreaterThan(0);
    expect(Number(reservedOf('execute'))).toBeGreaterThan(0);
  });

  it("makes every reserving function wait for the deploy-time check of the account, which is told the plan's total", () => {
    // Prepare
    const [checkId, check] = checkOf(rsvc) ?? [];
    // Assess: the check runs before any function that reserves is created or updated.
    expect(check?.Properties).toMatchObject({
      Requested: RESERVING,
      Reserved: plan.total,
      MaxAccountShare: DEFAULT_MAX_ACCOUNT_SHARE,
      Least: minimumReservation(allFunctionNames()),
    });
    for (const name of allFunctionNames()) {
      expect(asArray((rsvc[rid(name)] as { DependsOn?: unknown }).DependsOn)).toContain(checkId);
    }
    // Its function reads the account's settings and nothing else of Lambda.
    const fn = refOf(check?.Properties?.ServiceToken) ?? '';
    const role = refOf(rsvc[fn]?.Properties?.Role) ?? '';
    const lambdaActions = statementsOf(role, rsvc).flatMap((s) => s.actions.filter((a) => a.startsWith('lambda:')));
    expect(lambdaActions).toEqual(['lambda:GetAccountSettings']);
    expect(rsvc[fn]?.Properties?.ReservedConcurrentExecutions).toBeUndefined();
  });

  it("gives the event streams, asset downloads and the web form's routes shares of their own, sized to what they hold", () => {
    // Assess: a stream is held for a whole execution, so its share is the viewers at once.
    expect(classOf('execution-events')).toBe('stream');
    // The web form's stream draws on the stream share, apart from API callers' streams.
    expect(classOf('form-events')).toBe('stream');
    for (const f of ['form-page', 'form-execute', 'form-execution', 'form-upload']) expect(classOf(f)).toBe('form');
    expect(classOf('asset-get')).toBe('download');
    expect(classOf('run-events')).toBe('owner');
    const rest = RESERVING - minimumReservation(allFunctionNames());
    // The two streams together hold the whole share (and each its least), but for rounding down.
    const streams = Number(reservedOf('execution-events')) + Number(reservedOf('form-events'));
    expect(streams).toBeLessThanOrEqual(2 + Math.floor((rest * CLASS_SHARES.stream) / 100));
    expect(streams).toBeGreaterThanOrEqual(1 + Math.floor((rest * CLASS_SHARES.stream) / 100));
    expect(Number(reservedOf('asset-get'))).toBe(1 + Math.floor((rest * CLASS_SHARES.download) / 100));
    expect(Number(reservedOf('form-events'))).toBeGreaterThan(Number(reservedOf('form-execution')));
    const form = ['form-page', 'form-execute', 'form-execution', 'form-upload'].reduce((n, f) => n + Number(reservedOf(f)), 0);
    expect(form).toBeLessThanOrEqual(4 + Math.floor((rest * CLASS_SHARES.form) / 100));
    // More than an "other caller route" gets: streams, downloads and form runs do not share its few.
    expect(Number(reservedOf('execution-events'))).toBeGreaterThan(Number(reservedOf('execution-cancel')) * 5);
    expect(Number(reservedOf('asset-get'))).toBeGreaterThan(Number(reservedOf('execution-cancel')) * 5);
    expect(Number(reservedOf('form-execute'))).toBeGreaterThan(Number(reservedOf('execution-cancel')));
    expect(Object.values(CLASS_SHARES).reduce((a, b) => a + b, 0)).toBe(100);
  });

  it.each(Object.values(QUEUES))("$id event source polls with at most its consumer's reservation", (def) => {
    const m = Object.values(rsvc).find(
      (r) =>
        r.Type === 'AWS::Lambda::EventSourceMapping' &&
        crossStackRef(r.Properties?.EventSourceArn, Template.fromStack(reserving.stateful)) ===
          reserving.stateful.getLogicalId(reserving.stateful.queues[def.id].queue.node.defaultChild as CfnElement),
    );
    const max = (m?.Properties?.ScalingConfig as { MaximumConcurrency?: number } | undefined)?.MaximumConcurrency;
    expect(max).toBe(plan.queueMaxConcurrency[def.id]);
    expect(max).toBeLessThanOrEqual(Number(rsvc[refOf(m?.Properties?.FunctionName) ?? '']?.Properties?.ReservedConcurrentExecutions));
  });

  it('synthesizes what the start:synth suites emulate by editing the default template (test/synth/synth-helpers.ts reserving)', () => {
    // Prepare: the default template, edited as -c reservedConcurrency=900 would make it.
    const edited = structuredClone(svc) as unknown as SynthTemplate['Resources'];
    reservingEdit(RESERVING)({ Resources: edited });
    const edit = edited as unknown as Resources;
    /** What the plan decides in a template: reservations, dependencies, wait bounds, their grants, pollers, the check. */
    const planOf = (r: Resources) =>
      Object.entries(r)
        .filter(([, x]) =>
          ['AWS::Lambda::Function', 'AWS::Lambda::EventSourceMapping', 'Custom::PipegateConcurrencyCheck'].includes(x.Type),
        )
        .map(([id, x]) => ({
          id,
          reserved: x.Properties?.ReservedConcurrentExecutions,
          dependsOn: [(x as { DependsOn?: unknown }).DependsOn ?? []].flat().sort(),
          waiters: (x.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.PIPEGATE_MAX_WAITERS,
          bounded:
            x.Type === 'AWS::Lambda::Function'
              ? JSON.stringify(
                  statementsOf(refOf(x.Properties?.Role) ?? '', r, true).filter((st) => st.actions.includes('dynamodb:UpdateItem')),
                )
              : undefined,
          scaling: x.Properties?.ScalingConfig,
          check: x.Type === 'Custom::PipegateConcurrencyCheck' ? x.Properties : undefined,
        }));
    // Assess
    expect(planOf(edit)).toEqual(planOf(rsvc));
  });

  it('refuses, at synth, a figure too small to plan, and the retired accountConcurrency with what replaces it', () => {
    const least = minimumReservation(allFunctionNames());
    expect(() => concurrencyPlan(allFunctionNames(), least - 1)).toThrow(/reservedConcurrency/);
    expect(parseSettings({ reservedConcurrency: '0' }).reservedConcurrency).toBe(0);
    expect(() => parseSettings({ reservedConcurrency: String(least - 1) })).toThrow(
      new RegExp(`reservedConcurrency: must be 0 .* at least ${least}`),
    );
    expect(() => parseSettings({ accountConcurrency: '1000' })).toThrow(/accountConcurrency is retired.*reservedConcurrency/);
    expect(() => buildTestApp({ accountConcurrency: 1000 })).toThrow(/accountConcurrency is retired/);
  });
});

describe('custom resources and schedules', () => {
  it('gives every custom resource of both stacks a ServiceTimeout, so a handler that dies before answering fails the deploy in minutes, not an hour', () => {
    // Act
    const custom = [...Object.values(svc), ...Object.values(data)].filter((r) => r.Type.startsWith('Custom::'));
    // Assess
    expect(custom.map((r) => r.Type).sort()).toEqual([
      'Custom::PipegateConcurrencyCheck',
      'Custom::PipegateSecretInit',
      'Custom::PipegateSecretInit',
      'Custom::PipegateUploadCors',
    ]);
    for (const r of custom) expect(Number(r.Properties?.ServiceTimeout)).toBe(300);
  });

  it("counts in the cost model's fixed charges what the stacks create: alarms, secrets, keys, polled queues, web ACL rules", () => {
    // Act
    const all = [...Object.values(svc), ...Object.values(data)];
    const count = (type: string) => all.filter((r) => r.Type === type).length;
    const acl = all.find((r) => r.Type === 'AWS::WAFv2::WebACL');
    // Assess
    expect(count('AWS::CloudWatch::Alarm')).toBe(ASSUMPTIONS.alarms);
    expect(count('AWS::SecretsManager::Secret')).toBe(2);
    expect(count('AWS::KMS::Key')).toBe(1);
    expect(count('AWS::Lambda::EventSourceMapping')).toBe(ASSUMPTIONS.polledQueues);
    expect(count('AWS::WAFv2::WebACL')).toBe(1);
    expect((acl?.Properties?.Rules as unknown[]).length).toBe(ASSUMPTIONS.wafRules);
    expect(fixedMonthlyCosts().map((f) => f.perMonth)).toContain('2 secrets (key material, pepper)');
  });

  it("lets no failed sweeper pass be retried by Lambda's asynchronous retries, which would overlap the next passes", () => {
    // Act
    const configs = Object.values(svc).filter((r) => r.Type === 'AWS::Lambda::EventInvokeConfig');
    // Assess
    expect(configs).toHaveLength(1);
    expect(refOf(configs[0]?.Properties?.FunctionName)).toBe(fnId(WORKERS.sweeper));
    expect(configs[0]?.Properties).toMatchObject({ Qualifier: '$LATEST', MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 });
  });
});

describe("Lambda's own log lines", () => {
  it("leaves out Lambda's START, END and REPORT lines by default (system log level WARN, JSON format), and keeps them with lambdaSystemLogLevel=INFO", () => {
    // Act
    const fns = (stack: Record<string, { Type?: string; Properties?: Record<string, unknown> }>) =>
      Object.values(stack).filter((r) => r.Type === 'AWS::Lambda::Function');
    const info = buildTestApp({ lambdaSystemLogLevel: 'INFO' });

    // Assess
    expect(fns(svc).length).toBeGreaterThan(30);
    for (const r of fns(svc)) expect(r.Properties?.LoggingConfig).toMatchObject({ LogFormat: 'JSON', SystemLogLevel: 'WARN' });
    for (const r of fns(resourcesOf(Template.fromStack(info.service))))
      expect(r.Properties?.LoggingConfig).toMatchObject({ LogFormat: 'JSON', SystemLogLevel: 'INFO' });
    expect(() => parseSettings({ lambdaSystemLogLevel: 'ERROR' })).toThrow(/lambdaSystemLogLevel/);
  });
});

describe('alarms and outputs', () => {
  it('alarms on failed executions of both machines, timed-out Express ones, and 5xx answers', () => {
    // Assess
    const alarms = Object.values(svc).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    const metrics = alarms.map((r) => `${String(r.Properties?.Namespace)}/${String(r.Properties?.MetricName)}`);
    expect(metrics).toEqual(
      expect.arrayContaining(['AWS/States/ExecutionsFailed', 'AWS/States/ExecutionsTimedOut', 'AWS/ApiGateway/5XXError']),
    );
    const on = (metric: string) =>
      alarms
        .filter((r) => r.Properties?.MetricName === metric)
        .map((r) => refOf((r.Properties?.Dimensions as { Value: unknown }[] | undefined)?.[0]?.Value))
        .sort();
    const [express, standard] = WORKFLOW_TYPES.map((t) => logicalId(built.service.stateMachines[t].node.defaultChild));
    expect(on('ExecutionsFailed')).toEqual([express, standard].sort());
    expect(on('ExecutionsTimedOut')).toEqual([express]);
  });

  it('runs the sweeper every minute from an EventBridge rule, and alarms on its errors', () => {
    // Assess: the rule targets the sweeper function, and only it.
    const rules = Object.values(svc).filter((r) => r.Type === 'AWS::Events::Rule');
    expect(rules).toHaveLength(1);
    expect(rules[0]?.Properties?.ScheduleExpression).toBe('rate(1 minute)');
    const targets = asArray(rules[0]?.Properties?.Targets) as { Arn: unknown }[];
    expect(targets.map((t) => JSON.stringify(t.Arn))).toEqual([JSON.stringify({ 'Fn::GetAtt': [fnId(WORKERS.sweeper), 'Arn'] })]);
    const invokes = Object.values(svc).filter(
      (r) => r.Type === 'AWS::Lambda::Permission' && r.Properties?.Principal === 'events.amazonaws.com',
    );
    expect(invokes.map((r) => JSON.stringify(r.Properties?.FunctionName))).toEqual([
      JSON.stringify({ 'Fn::GetAtt': [fnId(WORKERS.sweeper), 'Arn'] }),
    ]);
    const alarm = Object.values(svc).find(
      (r) =>
        r.Type === 'AWS::CloudWatch::Alarm' &&
        r.Properties?.MetricName === 'Errors' &&
        JSON.stringify(r.Properties?.Dimensions).includes(fnId(WORKERS.sweeper)),
    );
    expect(alarm?.Properties).toMatchObject({ Namespace: 'AWS/Lambda', Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
    // It reads the sweep index: open executions are tracked on AWS.
    const env = svc[fnId(WORKERS.sweeper)]?.Properties?.Environment as { Variables: Record<string, string> };
    expect(env.Variables.PIPEGATE_TRACK_OPEN).toBe('true');
    expect(Number(svc[fnId(WORKERS.sweeper)]?.Properties?.Timeout)).toBeLessThan(60);
  });

  it('outputs what the CLI and operators need, under the stack name Pipegate', () => {
    // Assess
    expect(built.service.stackName).toBe('Pipegate');
    const outputs = outputsOf(service);
    expect(Object.keys(outputs)).toEqual(
      expect.arrayContaining(['ApiUrl', 'Region', 'TableName', 'ExpressStateMachineArn', 'StandardStateMachineArn']),
    );
    // The type is no longer a setting of the stack: each version's executions run on the one they need.
    expect(Object.keys(outputs)).not.toContain('StateMachineType');
    const url = JSON.stringify(outputs.ApiUrl?.Value);
    expect(url).toContain('execute-api');
    expect(url).toContain(`/${built.settings.stageName}"`);
  });
});

describe('docs/aws.md says what the template does', () => {
  const aws = readFileSync(`${__dirname}/../../docs/aws.md`, 'utf8').replace(/\s+/g, ' ');

  it("states the state machine's log level as the default deploy sets it: ERROR, every event only when asked", () => {
    // Act
    const machines = Object.values(svc).filter((r) => r.Type === 'AWS::StepFunctions::StateMachine');
    const levels = machines.map((m) => String((m.Properties?.LoggingConfiguration as { Level?: string } | undefined)?.Level));
    const level = levels[0];
    // Assess
    expect(machines).toHaveLength(2);
    expect(new Set(levels)).toEqual(new Set([parseSettings({}).stateMachineLogLevel]));
    expect(aws).toContain(`| \`stateMachineLogLevel\` | \`${level}\` |`);
    expect(aws).toContain(`logging at level ${level} by default: a failed execution's events, with their data;`);
    expect(aws).toContain(`the state machine logs at ${level} by default`);
  });

  it("states the waiting routes' time-out as the template sets it: they stream, so the streamed one", () => {
    // Act
    const waiting = ROUTES.filter((r) => r.waits);
    const listed = /The waiting routes \(`waits: true` in `lib\/routes\.ts`: ([^)]*)\)/.exec(aws)?.[1] ?? '';
    // Assess
    for (const r of waiting) {
      expect({ handler: r.handler, timeout: svc[fnId(r.handler)]?.Properties?.Timeout }).toEqual({
        handler: r.handler,
        timeout: STREAMED_ROUTE_TIMEOUT_SECONDS,
      });
      if (r.handler !== 'deployment-mcp')
        expect({ handler: r.handler, listed: listed.includes(r.handler) }).toEqual({ handler: r.handler, listed: true });
    }
    expect(aws).toContain(`their integration and Lambda time-outs are the streamed ${STREAMED_ROUTE_TIMEOUT_SECONDS} s`);
    expect(aws).toContain("The MCP server's calls (`waits: true` too)");
  });
});
