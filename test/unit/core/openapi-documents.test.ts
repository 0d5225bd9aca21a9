/**
 * The two OpenAPI documents come from one source: docs/openapi.json is exactly what
 * `npm run openapi` writes, a deployment's document is made of the same parts (so the two
 * cannot disagree), both pass Redocly's recommended rules and swagger-parser's validation.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { deploymentOpenApi, type DeploymentDocumentSource } from '../../../functions/core/openapi';
import { serviceOpenApi, serviceOpenApiText } from '../../../functions/core/openapi-service';
import { SERVICE_OPENAPI_FILE, isObject, operations, resolvePointer, type JsonObject } from '../../support/openapi';
import { CALLER_ROUTES, ROUTES } from '../../../lib/routes';

const DEPLOYMENT: DeploymentDocumentSource = {
  deployment_id: '0b0c1e4e-7d3c-4a57-9a51-0d7b8a2f6c11',
  pipeline_id: 'greet',
  version: 3,
  published_at: '2026-11-22T10:00:00.000Z',
  inputs: [
    { id: 'name', value_type: 'string', value: "O'Brien", visible: true },
    { id: 'times', value_type: 'integer', value: 2, visible: true },
    { id: 'ratio', value_type: 'float', value: 0.5, visible: true },
    { id: 'loud', value_type: 'boolean', value: false, visible: true },
    { id: 'secret', value_type: 'string', value: 'x', visible: false },
    { id: 'photo', value_type: 'asset', value: 'data:image/png;base64,iVBORw0KGgo=', media_types: ['image/png'], visible: true },
  ],
  outputs: [
    { id: 'message', visible: true },
    { id: 'debug', visible: false },
  ],
};

const service = serviceOpenApi(ROUTES) as unknown as JsonObject;
const deployment = deploymentOpenApi(
  DEPLOYMENT,
  'https://abc123.execute-api.eu-west-1.amazonaws.com/api',
  CALLER_ROUTES,
) as unknown as JsonObject;
const byId = (doc: JsonObject) => new Map(operations(doc).map((o) => [String(o.operation.operationId), o]));

describe('docs/openapi.json', () => {
  it('is exactly the generated whole-service document (run `npm run openapi` after changing the source)', () => {
    expect(readFileSync(SERVICE_OPENAPI_FILE, 'utf8')).toBe(serviceOpenApiText(ROUTES));
  });
});

describe("a deployment's document and the whole-service document agree", () => {
  it('every component they both name is the same', () => {
    // Prepare
    const differing: string[] = [];
    const components = deployment.components as Record<string, JsonObject>;

    // Act
    for (const [kind, entries] of Object.entries(components)) {
      for (const [name, value] of Object.entries(entries)) {
        const other = resolvePointer(service, `#/components/${kind}/${name}`);
        if (other === undefined) continue;
        if (JSON.stringify(other) !== JSON.stringify(value)) differing.push(`${kind}.${name}`);
      }
    }

    // Assess
    expect(differing).toEqual([]);
    expect(Object.keys(components.schemas ?? {})).toEqual(
      expect.arrayContaining(['Accepted', 'ExecutionStatusBody', 'ExecutionNotCompleted', 'CallerContract']),
    );
  });

  it('every caller operation is there, with the same id, summary, security and responses', () => {
    // Prepare
    const theirs = byId(service);

    // Act
    const ours = [...byId(deployment).entries()].map(([id, o]) => {
      const s = theirs.get(id);
      // The deployment's own request and result schemas stand in for the general ones.
      const mine = JSON.stringify([o.operation.summary, o.operation.security, o.operation.responses]).replaceAll(
        '/DeploymentExecution',
        '/Execution',
      );
      return { id, same: s !== undefined && mine === JSON.stringify([s.operation.summary, s.operation.security, s.operation.responses]) };
    });

    // Assess
    expect(ours.map((o) => o.id).sort()).toEqual(CALLER_ROUTES.map((r) => r.operationId).sort());
    expect(ours.filter((o) => !o.same)).toEqual([]);
  });

  it('offers the uploads route only to a deployment with a visible asset input', () => {
    // Prepare
    const plain = { ...DEPLOYMENT, inputs: DEPLOYMENT.inputs.filter((i) => i.value_type !== 'asset') };

    // Act
    const ids = [...byId(deploymentOpenApi(plain, 'https://example.com/api', CALLER_ROUTES) as unknown as JsonObject).keys()];

    // Assess
    expect(ids).not.toContain('createUpload');
    expect([...byId(deployment).keys()]).toContain('createUpload');
  });

  it('names this deployment in its paths, with no trailing slash, and its own base URL', () => {
    const paths = Object.keys(deployment.paths as JsonObject);
    expect(paths.filter((p) => p.endsWith('/'))).toEqual([]);
    expect(paths).toEqual(
      expect.arrayContaining([
        `/v1/deployments/${DEPLOYMENT.deployment_id}/executions`,
        `/v1/deployments/${DEPLOYMENT.deployment_id}`,
        `/v1/deployments/${DEPLOYMENT.deployment_id}/openapi.json`,
      ]),
    );
    expect(deployment.servers).toEqual([{ url: 'https://abc123.execute-api.eu-west-1.amazonaws.com/api' }]);
  });

  it('types the visible inputs (published values as defaults) and outputs, and nothing hidden', () => {
    const request = resolvePointer(deployment, '#/components/schemas/DeploymentExecutionRequest/properties/workflow_input') as JsonObject;
    const result = resolvePointer(deployment, '#/components/schemas/DeploymentExecutionResult/properties/response_data') as JsonObject;
    expect(request.additionalProperties).toBe(false);
    expect(
      Object.fromEntries(
        Object.entries(request.properties as Record<string, JsonObject>).map(([id, s]) => [id, resolvePointer(s, '#/properties/value')]),
      ),
    ).toEqual({
      name: { type: 'string', default: "O'Brien" },
      // Safe integers, as the execute parser checks them (values.ts).
      times: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991, default: 2 },
      ratio: { type: 'number', default: 0.5 },
      loud: { type: 'boolean', default: false },
      photo: { type: 'string', default: 'data:image/png;base64,iVBORw0KGgo=', description: expect.stringContaining('/uploads/') },
    });
    expect(Object.keys(result.properties as JsonObject)).toEqual(['message']);
    expect(result.additionalProperties).toBe(false);
  });

  it('declares what callers meet: 409 bodies with status, string details, response headers, the Idempotency-Key rule', () => {
    const schema = (name: string) => resolvePointer(deployment, `#/components/schemas/${name}`) as JsonObject;
    expect(schema('ExecutionNotCompleted')).toMatchObject({
      required: ['error', 'status'],
      properties: { status: { enum: ['pending', 'running'] } },
    });
    expect(schema('ExecutionAlreadyFinished')).toMatchObject({ required: ['error', 'status'] });
    expect(schema('InvalidInput')).toMatchObject({ properties: { detail: { type: 'string' } } });
    const execute = byId(deployment).get('execute')?.operation as JsonObject;
    expect(resolvePointer(execute, '#/responses/202/headers/Location')).toMatchObject({ required: true });
    expect(resolvePointer(deployment, '#/components/responses/Unauthorized/headers/WWW-Authenticate')).toMatchObject({ required: true });
    expect(resolvePointer(deployment, '#/components/responses/ServiceUnavailable/headers/Retry-After')).toMatchObject({ required: true });
    expect(resolvePointer(deployment, '#/components/parameters/IdempotencyKey/schema')).toMatchObject({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x21-\\x7e]+$',
    });
    for (const { operation } of operations(deployment)) expect(Object.keys(operation.responses as JsonObject)).toContain('429');
  });

  it('types the paths of a served document, so generated clients see them', () => {
    expect(resolvePointer(service, '#/components/schemas/OpenApiDocument/properties/paths/additionalProperties')).toMatchObject({
      type: 'object',
    });
  });
});

const exec = promisify(execFile);
const REDOCLY = join(__dirname, '..', '..', '..', 'node_modules', '.bin', 'redocly');

interface RedoclyProblem {
  ruleId: string;
  severity: string;
  message: string;
  location?: { pointer?: string; source?: { ref?: string } }[];
}

describe('linters and validators nobody here wrote', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'pipegate-openapi-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("both documents pass Redocly's recommended rules with no error and no warning", async () => {
    // Prepare
    const files = { service: join(dir, 'service.json'), deployment: join(dir, 'deployment.json') };
    writeFileSync(files.service, JSON.stringify(service));
    writeFileSync(files.deployment, JSON.stringify(deployment));

    // Act: the CLI exits 1 on errors; its JSON report lists every problem either way.
    const run = await exec(process.execPath, [REDOCLY, 'lint', '--extends=recommended', '--format=json', files.service, files.deployment], {
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      maxBuffer: 16 * 1024 * 1024,
    }).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }));
    // One pretty-printed report per file, back to back: each ends with a `}` at column 0.
    const reports = run.stdout
      .slice(run.stdout.indexOf('{'))
      .split(/\n\}(?=\s*\{)/)
      .map(
        (part, i, all) =>
          JSON.parse(i < all.length - 1 ? `${part}\n}` : part) as {
            totals: { errors: number; warnings: number };
            problems: RedoclyProblem[];
          },
      );

    // Assess: one warning each is by design. GET on the MCP URL has no 2XX: the MCP transport
    // prescribes 405 from a server that opens no server-initiated stream.
    const byDesign = (p: RedoclyProblem) =>
      p.ruleId === 'operation-2xx-response' && /~1mcp\/get\/responses$/.test(p.location?.[0]?.pointer ?? '');
    const problems = reports
      .flatMap((r) => r.problems)
      .filter((p) => !byDesign(p))
      .map((p) => `${p.severity} ${p.ruleId} ${p.location?.[0]?.source?.ref ?? ''}${p.location?.[0]?.pointer ?? ''}: ${p.message}`);
    expect(problems).toEqual([]);
    expect(reports.map((r) => r.problems.filter(byDesign).length)).toEqual([1, 1]);
    expect(reports.map((r) => r.totals)).toEqual([
      expect.objectContaining({ errors: 0, warnings: 1 }),
      expect.objectContaining({ errors: 0, warnings: 1 }),
    ]);
  });

  it.each([
    ['whole-service', service],
    ['per-deployment', deployment],
  ])('swagger-parser validates the %s document', async (_name, doc) => {
    // swagger-parser dereferences in place: hand it a copy.
    const copy = JSON.parse(JSON.stringify(doc)) as JsonObject;
    await expect(SwaggerParser.validate(copy as never)).resolves.toEqual(expect.objectContaining({ openapi: '3.1.0' }));
  });

  it('swagger-parser refuses a broken document (the check can fail)', async () => {
    const broken = JSON.parse(JSON.stringify(deployment)) as JsonObject;
    const paths = broken.paths as JsonObject;
    const first = Object.values(paths)[0];
    if (isObject(first) && isObject(first.post)) first.post.responses = { '202': { $ref: '#/components/responses/Nope' } };
    await expect(SwaggerParser.validate(broken as never)).rejects.toThrow();
  });
});
