/**
 * Ready-to-run examples of calling one deployment (curl, TypeScript with openapi-fetch, Python
 * with requests), read from its own OpenAPI document (openapi.ts): the base URL, the paths,
 * the key header and an example body of the published values all come from there, so the
 * snippets say what the document says. The key is read from `PIPEGATE_API_KEY`, never
 * written into the snippet.
 */
import type { RawValue } from './types';
import type { RequestValueType } from './values';

export interface DeploymentSnippets {
  curl: string;
  typescript: string;
  python: string;
  /** An MCP client's configuration for the deployment's MCP URL (the `mcpServers` JSON most clients read). */
  mcp: string;
}

export const SNIPPET_KEY_VARIABLE = 'PIPEGATE_API_KEY';

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

const REQUEST_VALUE_TYPES: readonly string[] = ['RAW', 'REFERENCE', 'ASSET'] satisfies RequestValueType[];
const isRequestValueType = (x: unknown): x is RequestValueType => typeof x === 'string' && REQUEST_VALUE_TYPES.includes(x);

function at(x: unknown, ...keys: string[]): unknown {
  let v = x;
  for (const k of keys) v = isObj(v) && Object.hasOwn(v, k) ? v[k] : undefined;
  return v;
}

function deref(doc: Obj, x: unknown): unknown {
  const ref = at(x, '$ref');
  return typeof ref === 'string' && ref.startsWith('#/') ? at(doc, ...ref.slice(2).split('/')) : x;
}

interface Operation {
  path: string;
  method: string;
  operation: Obj;
}

function operation(doc: Obj, operationId: string): Operation {
  for (const [path, item] of Object.entries(isObj(doc.paths) ? doc.paths : {})) {
    for (const [method, op] of Object.entries(isObj(item) ? item : {})) {
      if (isObj(op) && op.operationId === operationId) return { path, method: method.toUpperCase(), operation: op };
    }
  }
  throw new Error(`not a pipegate deployment document: no ${operationId} operation`);
}

/**
 * The body that sends every input with its published value (the schema's defaults), each with
 * the `value_type` its schema fixes (RAW, REFERENCE or ASSET: values.ts `requestValueType`), so
 * the body pasted as printed is one the execute route takes.
 */
function exampleBody(doc: Obj, execute: Operation): { workflow_input: Record<string, { value: RawValue; value_type: RequestValueType }> } {
  const schema = deref(doc, at(execute.operation, 'requestBody', 'content', 'application/json', 'schema'));
  const inputs = at(schema, 'properties', 'workflow_input', 'properties');
  const workflow_input: Record<string, { value: RawValue; value_type: RequestValueType }> = {};
  for (const [id, s] of Object.entries(isObj(inputs) ? inputs : {})) {
    const value = at(s, 'properties', 'value', 'default');
    const kind = at(s, 'properties', 'value_type', 'const');
    if (!isRequestValueType(kind)) throw new Error(`not a pipegate deployment document: input '${id}' names no value_type`);
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      workflow_input[id] = { value, value_type: kind };
  }
  return { workflow_input };
}

/** The header the document's API key scheme names (X-API-Key). */
function keyHeader(doc: Obj): string {
  const name = at(doc, 'components', 'securitySchemes', 'ApiKeyHeader', 'name');
  return typeof name === 'string' ? name : 'X-API-Key';
}

/** A string as one shell word, always single-quoted (a quote inside closes, escapes and reopens). */
export const shellQuote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

function python(v: unknown, indent = ''): string {
  if (v === null) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number' || typeof v === 'string') return JSON.stringify(v);
  const inner = `${indent}    `;
  if (Array.isArray(v)) return v.length === 0 ? '[]' : `[\n${v.map((x) => `${inner}${python(x, inner)},`).join('\n')}\n${indent}]`;
  const entries = Object.entries(v as Obj);
  const flat = `{${entries.map(([k, x]) => `${JSON.stringify(k)}: ${python(x)}`).join(', ')}}`;
  if (entries.length === 0 || (flat.length + indent.length <= 88 && !flat.includes('\n'))) return flat;
  return `{\n${entries.map(([k, x]) => `${inner}${JSON.stringify(k)}: ${python(x, inner)},`).join('\n')}\n${indent}}`;
}

/** A TypeScript literal: JSON, with keys unquoted where they may be. */
const typescript = (v: unknown, indent = ''): string => {
  if (!isObj(v)) return JSON.stringify(v);
  const entries = Object.entries(v);
  const inner = `${indent}  `;
  const key = (k: string) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k) ? k : JSON.stringify(k));
  const flat = `{ ${entries.map(([k, x]) => `${key(k)}: ${typescript(x)}`).join(', ')} }`;
  if (entries.length === 0) return '{}';
  if (flat.length + indent.length <= 100 && !flat.includes('\n')) return flat;
  return `{\n${entries.map(([k, x]) => `${inner}${key(k)}: ${typescript(x, inner)},`).join('\n')}\n${indent}}`;
};

/**
 * The snippets for a per-deployment OpenAPI document (as `deploymentOpenApi` builds it and
 * `GET /v1/deployments/{id}/openapi.json` serves it). Throws when the document is not one.
 */
export function deploymentSnippets(document: unknown): DeploymentSnippets {
  if (!isObj(document)) throw new Error('not a pipegate deployment document: not an object');
  const server: unknown = Array.isArray(document.servers) ? document.servers[0] : undefined;
  const base = at(server, 'url');
  if (typeof base !== 'string' || base === '') throw new Error('not a pipegate deployment document: no server URL');
  const execute = operation(document, 'execute');
  const status = operation(document, 'getExecutionStatus');
  const result = operation(document, 'getExecutionResult');
  const openapi = operation(document, 'getDeploymentOpenApi');
  const body = exampleBody(document, execute);
  const header = keyHeader(document);
  const json = JSON.stringify(body);
  const key = SNIPPET_KEY_VARIABLE;

  const curl = [
    `# ${key} holds the deployment's API key. Start an execution:`,
    `curl -sS -X POST ${shellQuote(`${base}${execute.path}`)} \\`,
    `  -H "${header}: $${key}" -H 'Content-Type: application/json' \\`,
    `  -d ${shellQuote(json)}`,
    `# The answer's status_url tells when it has finished; its result_url then holds the outputs:`,
    `# curl -sS -H "${header}: $${key}" <status_url>`,
    `# curl -sS -H "${header}: $${key}" <result_url>`,
  ].join('\n');

  const ts = [
    `// ${key} holds the deployment's API key. Types from this deployment's own document:`,
    `//   curl -sS -H "${header}: $${key}" ${shellQuote(`${base}${openapi.path}`)} -o openapi.json`,
    `//   npm install openapi-fetch && npx openapi-typescript openapi.json -o api.d.ts`,
    `import createClient from 'openapi-fetch';`,
    `import type { paths } from './api';`,
    ``,
    `const client = createClient<paths>({ baseUrl: ${JSON.stringify(base)}, headers: { ${JSON.stringify(header)}: process.env.${key} } });`,
    ``,
    `async function main(): Promise<void> {`,
    `  const started = await client.${execute.method}(${JSON.stringify(execute.path)}, {`,
    `    body: ${typescript(body, '    ')},`,
    `  });`,
    `  if (started.data === undefined) throw new Error(\`refused: \${started.response.status} \${JSON.stringify(started.error)}\`);`,
    `  const params = { path: { execution_id: started.data.execution_id } };`,
    `  for (;;) {`,
    `    const polled = await client.${status.method}(${JSON.stringify(status.path)}, { params });`,
    `    if (polled.data === undefined) throw new Error(\`status: \${polled.response.status} \${JSON.stringify(polled.error)}\`);`,
    `    if (polled.data.status !== 'pending' && polled.data.status !== 'running') break;`,
    `    await new Promise((resolve) => setTimeout(resolve, 500));`,
    `  }`,
    `  const finished = await client.${result.method}(${JSON.stringify(result.path)}, { params });`,
    `  if (finished.data === undefined) throw new Error(\`result: \${finished.response.status} \${JSON.stringify(finished.error)}\`);`,
    `  if (finished.data.error_message !== null) console.error(finished.data.error_message);`,
    `  console.log(finished.data.status, JSON.stringify(finished.data.response_data));`,
    `}`,
    ``,
    `main().catch((e: unknown) => {`,
    `  console.error(e);`,
    `  process.exitCode = 1;`,
    `});`,
  ].join('\n');

  const py = [
    `# ${key} holds the deployment's API key.`,
    `import os`,
    `import time`,
    ``,
    `import requests`,
    ``,
    `HEADERS = {${JSON.stringify(header)}: os.environ[${JSON.stringify(key)}]}`,
    ``,
    `accepted = requests.post(`,
    `    ${JSON.stringify(`${base}${execute.path}`)},`,
    `    json=${python(body, '    ')},`,
    `    headers=HEADERS,`,
    `    timeout=30,`,
    `)`,
    `accepted.raise_for_status()`,
    `execution = accepted.json()`,
    `while True:`,
    `    status = requests.get(execution["status_url"], headers=HEADERS, timeout=30)`,
    `    status.raise_for_status()`,
    `    if status.json()["status"] not in ("pending", "running"):`,
    `        break`,
    `    time.sleep(0.5)`,
    `result = requests.get(execution["result_url"], headers=HEADERS, timeout=30)`,
    `result.raise_for_status()`,
    `if result.json()["error_message"] is not None:`,
    `    print(result.json()["error_message"])`,
    `print(result.json()["status"], result.json()["response_data"])`,
  ].join('\n');

  return { curl, typescript: ts, python: py, mcp: mcpSnippet(document, base) };
}

/**
 * The deployment as an MCP server in a client's configuration: the `mcpServers` entry most
 * clients read (Claude Desktop and Code, Cursor, Windsurf; VS Code calls the object `servers`),
 * its URL from the document's MCP operation and the key as `Authorization: Bearer`, read from
 * PIPEGATE_API_KEY where the client expands variables (`${VAR}`), never written in.
 */
function mcpSnippet(document: Obj, base: string): string {
  const mcp = operation(document, 'mcp');
  const url = `${base}${mcp.path}`;
  const name = serverName(document);
  const config = { mcpServers: { [name]: { type: 'http', url, headers: { Authorization: `Bearer \${${SNIPPET_KEY_VARIABLE}}` } } } };
  return [
    `// An MCP client's configuration (Streamable HTTP). ${SNIPPET_KEY_VARIABLE} holds the deployment's API key`,
    `// (or write the key in its place where your client does not expand variables):`,
    JSON.stringify(config, null, 2),
    `// Claude Code: claude mcp add --transport http ${name} ${shellQuote(url)} --header "Authorization: Bearer $${SNIPPET_KEY_VARIABLE}"`,
  ].join('\n');
}

/** The server's name in a client's list: the pipeline the document describes (its description says which). */
function serverName(document: Obj): string {
  const described = /^Pipeline (\S+),/.exec(String(at(document, 'info', 'description')))?.[1];
  return described ?? 'pipegate';
}
