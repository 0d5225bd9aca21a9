/**
 * OpenAPI 3.1 documents in tests: a structural check (what a document must hold to be usable:
 * operations, responses, parameters, security, resolvable references, schemas that compile)
 * and a response validator that finds the operation a request landed on and checks the
 * status, the required headers and the body against it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { isPlainObject } from '../../functions/core/values';

export type JsonObject = Record<string, unknown>;

export const SERVICE_OPENAPI_FILE = join(__dirname, '..', '..', 'docs', 'openapi.json');

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

const SCHEMA_ID = 'urn:pipegate:openapi';
const STATUS_KEY = /^(?:[1-5](?:\d\d|XX)|default)$/;
const SECURITY_TYPES = ['apiKey', 'http', 'mutualTLS', 'oauth2', 'openIdConnect'];
const PARAMETER_PLACES = ['query', 'header', 'path', 'cookie'];

export const isObject = (x: unknown): x is JsonObject => isPlainObject(x);

export function loadServiceDocument(): JsonObject {
  return JSON.parse(readFileSync(SERVICE_OPENAPI_FILE, 'utf8')) as JsonObject;
}

/** The value a local reference (`#/a/b`) points at, or undefined. */
export function resolvePointer(doc: JsonObject, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let at: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (!isObject(at) || !Object.hasOwn(at, key)) return undefined;
    at = at[key];
  }
  return at;
}

/** Follows `$ref` objects (responses, parameters, headers) to what they name. */
function deref(doc: JsonObject, x: unknown): unknown {
  let at = x;
  for (let hops = 0; isObject(at) && typeof at.$ref === 'string' && hops < 10; hops += 1) at = resolvePointer(doc, at.$ref);
  return at;
}

const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'dependentSchemas'];
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const SCHEMA_ONES = ['items', 'additionalProperties', 'unevaluatedProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames'];

/**
 * A copy of a schema with its sub-schemas rewritten by `fn` (applied bottom-up). Only schema
 * positions are visited, so values under const, enum, default or examples stay as written.
 */
function mapSchema(schema: unknown, fn: (s: JsonObject) => JsonObject): unknown {
  if (!isObject(schema)) return schema;
  const out: JsonObject = { ...schema };
  for (const k of SCHEMA_MAPS) {
    const m = out[k];
    if (isObject(m)) out[k] = Object.fromEntries(Object.entries(m).map(([name, s]) => [name, mapSchema(s, fn)]));
  }
  for (const k of SCHEMA_LISTS) {
    const l = out[k];
    if (Array.isArray(l)) out[k] = l.map((s) => mapSchema(s, fn));
  }
  for (const k of SCHEMA_ONES) if (isObject(out[k])) out[k] = mapSchema(out[k], fn);
  return fn(out);
}

const absoluteRefs = (s: JsonObject): JsonObject =>
  typeof s.$ref === 'string' && s.$ref.startsWith('#/components/schemas/')
    ? { ...s, $ref: `${SCHEMA_ID}#/$defs/${s.$ref.slice('#/components/schemas/'.length)}` }
    : s;

/**
 * Objects that list their properties but say nothing about others are closed, so a field the
 * service sends and the document does not describe is caught. (A client must still tolerate
 * new fields; the test holds the document to describing every one the service sends.)
 */
const closeObjects = (s: JsonObject): JsonObject =>
  isObject(s.properties) && !('additionalProperties' in s) && !('unevaluatedProperties' in s) && !('patternProperties' in s)
    ? { ...s, unevaluatedProperties: false }
    : s;

export interface SchemaCompiler {
  /** Compiles a schema taken from the document (its `#/components/schemas/…` references resolve). */
  compile(schema: unknown): ValidateFunction;
  /** Compiles `#/components/schemas/<name>`. */
  named(name: string): ValidateFunction;
}

/**
 * Ajv (JSON Schema 2020-12, OpenAPI 3.1's dialect) over a document's schemas. Strict mode, so a
 * misspelt keyword or a keyword on the wrong type fails to compile instead of passing silently.
 */
export function schemaCompiler(doc: JsonObject, opts: { closed?: boolean } = {}): SchemaCompiler {
  const rewrite = (s: JsonObject): JsonObject => (opts.closed ? closeObjects(absoluteRefs(s)) : absoluteRefs(s));
  const ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
  addFormats(ajv);
  // Annotations OpenAPI 3.1 adds to JSON Schema.
  for (const keyword of ['example', 'discriminator', 'xml', 'externalDocs']) ajv.addKeyword({ keyword });
  const components = isObject(doc.components) ? doc.components : {};
  const schemas = isObject(components.schemas) ? components.schemas : {};
  ajv.addSchema({ $id: SCHEMA_ID, $defs: Object.fromEntries(Object.entries(schemas).map(([k, s]) => [k, mapSchema(s, rewrite)])) });
  const cache = new Map<unknown, ValidateFunction>();
  const compile = (schema: unknown): ValidateFunction => {
    const hit = cache.get(schema);
    if (hit) return hit;
    const fn = ajv.compile(mapSchema(schema, rewrite) as JsonObject);
    cache.set(schema, fn);
    return fn;
  };
  return { compile, named: (name) => compile({ $ref: `#/components/schemas/${name}` }) };
}

export interface OperationRef {
  method: string;
  template: string;
  operation: JsonObject;
  pathItem: JsonObject;
}

export function operations(doc: JsonObject): OperationRef[] {
  const out: OperationRef[] = [];
  const paths = isObject(doc.paths) ? doc.paths : {};
  for (const [template, item] of Object.entries(paths)) {
    if (!isObject(item)) continue;
    for (const method of HTTP_METHODS) {
      const operation = item[method];
      if (isObject(operation)) out.push({ method: method.toUpperCase(), template, operation, pathItem: item });
    }
  }
  return out;
}

function walk(x: unknown, at: string, visit: (node: JsonObject, at: string) => void): void {
  if (Array.isArray(x)) x.forEach((v, i) => walk(v, `${at}/${i}`, visit));
  else if (isObject(x)) {
    visit(x, at);
    for (const [k, v] of Object.entries(x)) walk(v, `${at}/${k}`, visit);
  }
}

const templateParams = (template: string): string[] => [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] ?? '');

/**
 * Everything that keeps a document from being a usable OpenAPI 3.1 description: an empty
 * list means none was found. Checks the version and info, every operation (unique id, at
 * least one response, status keys, descriptions, media types with schemas, parameters that
 * match the path template, security requirements naming defined schemes), every security
 * scheme, every `$ref`, and compiles every schema with Ajv in strict mode.
 */
export function structuralProblems(input: unknown): string[] {
  if (!isObject(input)) return ['the document is not an object'];
  const doc = input;
  const problems: string[] = [];
  if (typeof doc.openapi !== 'string' || !/^3\.1\.\d+$/.test(doc.openapi))
    problems.push(`openapi must be 3.1.x, got ${JSON.stringify(doc.openapi)}`);
  const info = doc.info;
  if (!isObject(info) || typeof info.title !== 'string' || typeof info.version !== 'string')
    problems.push('info needs a title and a version (strings)');
  if (!isObject(doc.paths)) problems.push('paths must be an object');

  walk(doc, '#', (node, at) => {
    if (typeof node.$ref === 'string' && resolvePointer(doc, node.$ref) === undefined)
      problems.push(`${at}: $ref ${node.$ref} does not resolve`);
  });

  const components = isObject(doc.components) ? doc.components : {};
  const schemes = isObject(components.securitySchemes) ? components.securitySchemes : {};
  for (const [name, raw] of Object.entries(schemes)) {
    const s = deref(doc, raw);
    if (!isObject(s) || typeof s.type !== 'string' || !SECURITY_TYPES.includes(s.type)) {
      problems.push(`securitySchemes.${name}: type must be one of ${SECURITY_TYPES.join(', ')}`);
    } else if (s.type === 'apiKey' && (typeof s.name !== 'string' || !['query', 'header', 'cookie'].includes(String(s.in)))) {
      problems.push(`securitySchemes.${name}: an apiKey scheme needs a name and in (query, header or cookie)`);
    } else if (s.type === 'http' && typeof s.scheme !== 'string') {
      problems.push(`securitySchemes.${name}: an http scheme needs a scheme`);
    }
  }
  const checkSecurity = (req: unknown, at: string) => {
    if (req === undefined) return;
    if (!Array.isArray(req)) {
      problems.push(`${at}: security must be a list`);
      return;
    }
    for (const alternative of req) {
      if (!isObject(alternative)) problems.push(`${at}: each security requirement must be an object`);
      else
        for (const name of Object.keys(alternative))
          if (!Object.hasOwn(schemes, name)) problems.push(`${at}: unknown security scheme ${name}`);
    }
  };
  checkSecurity(doc.security, 'security');

  let compiler: SchemaCompiler | undefined;
  try {
    compiler = schemaCompiler(doc);
  } catch (e) {
    problems.push(`components.schemas do not compile: ${(e as Error).message}`);
  }
  const compiles = (schema: unknown, at: string) => {
    if (!compiler) return;
    try {
      compiler.compile(schema);
    } catch (e) {
      problems.push(`${at}: schema does not compile: ${(e as Error).message}`);
    }
  };
  const schemas = isObject(components.schemas) ? components.schemas : {};
  for (const name of Object.keys(schemas)) compiles({ $ref: `#/components/schemas/${name}` }, `components.schemas.${name}`);

  const checkContent = (content: unknown, at: string) => {
    if (content === undefined) return;
    if (!isObject(content) || Object.keys(content).length === 0) {
      problems.push(`${at}: content must map media types to media type objects`);
      return;
    }
    for (const [type, media] of Object.entries(content)) {
      if (!/^[\w.+-]+\/[\w.+*-]+$/.test(type)) problems.push(`${at}: ${type} is not a media type`);
      if (!isObject(media) || media.schema === undefined) problems.push(`${at}.${type}: needs a schema`);
      else compiles(media.schema, `${at}.${type}.schema`);
    }
  };

  const ids = new Set<string>();
  for (const { method, template, operation, pathItem } of operations(doc)) {
    const at = `${method} ${template}`;
    if (!template.startsWith('/')) problems.push(`${at}: a path must start with /`);
    if (typeof operation.operationId === 'string') {
      if (ids.has(operation.operationId)) problems.push(`${at}: operationId ${operation.operationId} is used twice`);
      ids.add(operation.operationId);
    }
    checkSecurity(operation.security, at);

    const params = [
      ...(Array.isArray(pathItem.parameters) ? pathItem.parameters : []),
      ...(Array.isArray(operation.parameters) ? operation.parameters : []),
    ].map((x) => deref(doc, x));
    const seen = new Set<string>();
    for (const param of params) {
      if (!isObject(param) || typeof param.name !== 'string' || !PARAMETER_PLACES.includes(String(param.in))) {
        problems.push(`${at}: a parameter needs a name and in (query, header, path or cookie)`);
        continue;
      }
      const key = `${String(param.in)}:${param.name}`;
      if (seen.has(key)) problems.push(`${at}: parameter ${key} is declared twice`);
      seen.add(key);
      if ((param.schema === undefined) === (param.content === undefined))
        problems.push(`${at}: parameter ${key} needs exactly one of schema or content`);
      if (param.schema !== undefined) compiles(param.schema, `${at} parameter ${key}`);
      if (param.in === 'path' && param.required !== true) problems.push(`${at}: path parameter ${param.name} must be required`);
      if (param.in === 'path' && !templateParams(template).includes(param.name))
        problems.push(`${at}: path parameter ${param.name} is not in the path`);
    }
    for (const name of templateParams(template)) {
      if (!seen.has(`path:${name}`)) problems.push(`${at}: path parameter {${name}} is not declared`);
    }

    if (operation.requestBody !== undefined) {
      const rb = deref(doc, operation.requestBody);
      if (!isObject(rb) || rb.content === undefined) problems.push(`${at}: requestBody needs content`);
      else checkContent(rb.content, `${at} requestBody`);
    }

    const responses = operation.responses;
    if (!isObject(responses) || Object.keys(responses).length === 0) {
      problems.push(`${at}: needs at least one response`);
      continue;
    }
    for (const [status, raw] of Object.entries(responses)) {
      const rat = `${at} ${status}`;
      if (!STATUS_KEY.test(status)) problems.push(`${rat}: not a status code, a range (4XX) or default`);
      const r = deref(doc, raw);
      if (!isObject(r) || typeof r.description !== 'string') {
        problems.push(`${rat}: a response needs a description`);
        continue;
      }
      checkContent(r.content, rat);
      if (r.headers !== undefined) {
        if (!isObject(r.headers)) problems.push(`${rat}: headers must be an object`);
        else {
          for (const [name, h] of Object.entries(r.headers)) {
            const hd = deref(doc, h);
            if (!isObject(hd) || hd.schema === undefined) problems.push(`${rat}: header ${name} needs a schema`);
            else compiles(hd.schema, `${rat} header ${name}`);
          }
        }
      }
    }
  }
  return problems;
}

export interface ObservedResponse {
  method: string;
  /** The request path as sent, with any query string; the base URL's own path is stripped by the validator. */
  path: string;
  status: number;
  headers: Headers;
  text: string;
}

export interface OpenApiValidator {
  /** The operation a request lands on: literal segments win over parameters, as in the gateway. */
  match(method: string, path: string): OperationRef | undefined;
  /** Every way the response disagrees with the document; empty when it conforms. */
  check(r: ObservedResponse): string[];
}

/**
 * A validator for responses. `basePath` is the prefix the document's paths are relative to;
 * `closed` holds bodies to fields the document describes (see closeObjects).
 */
export function createValidator(doc: JsonObject, opts: { basePath?: string; closed?: boolean } = {}): OpenApiValidator {
  const compiler = schemaCompiler(doc, { closed: opts.closed ?? true });
  const ops = operations(doc).map((o) => ({
    ...o,
    segments: o.template
      .replace(/(.)\/$/, '$1')
      .split('/')
      .slice(1),
  }));

  const match = (method: string, rawPath: string): OperationRef | undefined => {
    let path = rawPath.split('?')[0] ?? '';
    if (opts.basePath && path.startsWith(opts.basePath)) path = path.slice(opts.basePath.length);
    if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
    const segments = path
      .split('/')
      .slice(1)
      .map((s) => decodeURIComponent(s));
    let best: (typeof ops)[number] | undefined;
    let bestLiterals = -1;
    for (const o of ops) {
      if (o.method !== method.toUpperCase() || o.segments.length !== segments.length) continue;
      let literals = 0;
      const fits = o.segments.every((seg, i) => {
        const actual = segments[i] ?? '';
        if (/^\{[^}]+\}$/.test(seg)) return actual !== '';
        literals += 1;
        return seg === actual;
      });
      if (fits && literals > bestLiterals) {
        best = o;
        bestLiterals = literals;
      }
    }
    return best;
  };

  const check = (r: ObservedResponse): string[] => {
    const op = match(r.method, r.path);
    if (!op) return [`${r.method} ${r.path}: no operation in the document`];
    const at = `${op.method} ${op.template} → ${r.status}`;
    const responses = isObject(op.operation.responses) ? op.operation.responses : {};
    const key = [String(r.status), `${String(r.status)[0]}XX`, 'default'].find((k) => Object.hasOwn(responses, k));
    if (key === undefined) return [`${at}: status ${r.status} is not documented (documented: ${Object.keys(responses).join(', ')})`];
    const response = deref(doc, responses[key]);
    if (!isObject(response)) return [`${at}: the response object does not resolve`];

    const problems: string[] = [];
    const headers = isObject(response.headers) ? response.headers : {};
    for (const [name, raw] of Object.entries(headers)) {
      const h = deref(doc, raw);
      if (!isObject(h)) continue;
      const value = r.headers.get(name);
      if (value === null) {
        if (h.required === true) problems.push(`${at}: header ${name} is missing`);
        continue;
      }
      const validate = compiler.compile(h.schema);
      if (!validate(value)) problems.push(`${at}: header ${name}=${JSON.stringify(value)}: ${describeErrors(validate)}`);
    }

    const content = isObject(response.content) ? response.content : undefined;
    // HTTP: a HEAD answer has no body; its status and headers are what GET's would be.
    if (r.method.toUpperCase() === 'HEAD') {
      if (r.text !== '') problems.push(`${at}: a HEAD answer has a body: ${JSON.stringify(r.text.slice(0, 200))}`);
      return problems;
    }
    if (content === undefined) {
      if (r.text !== '') problems.push(`${at}: the document says no body, got ${JSON.stringify(r.text.slice(0, 200))}`);
      return problems;
    }
    const contentType = (r.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    const media = content[contentType];
    if (!isObject(media))
      return [...problems, `${at}: content type ${JSON.stringify(contentType)} is not documented (${Object.keys(content).join(', ')})`];
    let body: unknown = r.text;
    if (contentType.endsWith('json')) {
      try {
        body = JSON.parse(r.text);
      } catch {
        return [...problems, `${at}: the body is not JSON: ${JSON.stringify(r.text.slice(0, 200))}`];
      }
    }
    const validate = compiler.compile(media.schema);
    if (!validate(body)) problems.push(`${at}: ${describeErrors(validate)} in ${JSON.stringify(body).slice(0, 400)}`);
    return problems;
  };

  return { match, check };
}

export function describeErrors(validate: ValidateFunction): string {
  return (validate.errors ?? [])
    .map(
      (e) =>
        `${e.instancePath || '(body)'} ${e.message ?? 'is invalid'}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''}`,
    )
    .join('; ');
}
