/**
 * The snippets `pipegate publish` (and the docs page) show are read from the deployment's own
 * document: its base URL, paths, key header and published values, quoted so a shell and
 * Python read back exactly the body the document describes. (test/e2e/generated-client runs
 * all three against a live runtime.)
 */
import { execFileSync } from 'node:child_process';
import { deploymentOpenApi } from '../../../functions/core/openapi';
import { deploymentSnippets, shellQuote } from '../../../functions/core/snippets';
import { CALLER_ROUTES } from '../../../lib/routes';

const ID = '0b0c1e4e-7d3c-4a57-9a51-0d7b8a2f6c11';
const BASE = 'https://abc123.execute-api.eu-west-1.amazonaws.com/api';
const PIPELINE = 'greet';
const doc = deploymentOpenApi(
  {
    deployment_id: ID,
    pipeline_id: 'greet',
    version: 1,
    published_at: '2026-11-22T10:00:00.000Z',
    inputs: [
      { id: 'name', value_type: 'string', value: 'O\'Brien says "hi" $HOME `x`', visible: true },
      { id: 'loud', value_type: 'boolean', value: true, visible: true },
      { id: 'times', value_type: 'integer', value: 3, visible: true },
      { id: 'hidden', value_type: 'string', value: 'no', visible: false },
    ],
    outputs: [{ id: 'message', visible: true }],
  },
  BASE,
  CALLER_ROUTES,
);
const BODY = {
  workflow_input: {
    name: { value: 'O\'Brien says "hi" $HOME `x`', value_type: 'RAW' },
    loud: { value: true, value_type: 'RAW' },
    times: { value: 3, value_type: 'RAW' },
  },
};

it('quotes every shell word, single quotes inside safely', () => {
  expect(shellQuote('https://x.test/v1/a-b/executions/')).toBe(`'https://x.test/v1/a-b/executions/'`);
  expect(shellQuote('{"a":1}')).toBe(`'{"a":1}'`);
  expect(shellQuote("it's")).toBe(`'it'\\''s'`);
});

describe('deploymentSnippets', () => {
  const s = deploymentSnippets(doc);

  it('curl: posts the published values to the execute URL with the key from the environment; a shell reads the body back exactly', () => {
    // Prepare
    const dataLine = s.curl.split('\n').find((l) => l.trimStart().startsWith('-d ')) ?? '';

    // Act: let a shell unquote the argument.
    const unquoted = execFileSync('sh', ['-c', `printf '%s' ${dataLine.trim().slice(3)}`], { encoding: 'utf8' });

    // Assess
    expect(JSON.parse(unquoted)).toEqual(BODY);
    expect(s.curl).toContain(`'${BASE}/v1/deployments/${ID}/executions'`);
    expect(s.curl).toContain('-H "X-API-Key: $PIPEGATE_API_KEY"');
    expect(s.curl).not.toContain('hidden');
  });

  it('TypeScript: openapi-fetch on the typed execute, status and result paths', () => {
    expect(s.typescript).toContain(`createClient<paths>({ baseUrl: ${JSON.stringify(BASE)}`);
    expect(s.typescript).toContain(`client.POST(${JSON.stringify(`/v1/deployments/${ID}/executions`)}`);
    expect(s.typescript).toContain('client.GET("/v1/deployments/executions/{execution_id}/status"');
    expect(s.typescript).toContain('client.GET("/v1/deployments/executions/{execution_id}/result"');
    expect(s.typescript).toContain(`/v1/deployments/${ID}/openapi.json`);
    expect(s.typescript).not.toContain('hidden');
  });

  it('Python: valid Python whose body literal is the published values', () => {
    // Act: Python itself evaluates the json= literal.
    const literal = /json=([\s\S]*?),\n {4}headers=/.exec(s.python)?.[1] ?? '';
    const evaluated = execFileSync(
      'python3',
      [
        '-c',
        'import ast, json, sys; src = sys.stdin.read(); ast.parse(src.split("\\0")[0]); print(json.dumps(ast.literal_eval(src.split("\\0")[1])))',
      ],
      {
        input: `${s.python}\0${literal}`,
        encoding: 'utf8',
      },
    );

    // Assess
    expect(JSON.parse(evaluated)).toEqual(BODY);
    expect(s.python).toContain(`os.environ["PIPEGATE_API_KEY"]`);
  });

  it("MCP: a client's configuration for the deployment's MCP URL, the key as a Bearer token from the environment", () => {
    // Act: the JSON part is JSON.
    const json = s.mcp
      .split('\n')
      .filter((l) => !l.startsWith('//'))
      .join('\n');
    // Assess
    expect(JSON.parse(json)).toEqual({
      mcpServers: {
        [PIPELINE]: { type: 'http', url: `${BASE}/v1/deployments/${ID}/mcp`, headers: { Authorization: 'Bearer ${PIPEGATE_API_KEY}' } },
      },
    });
    expect(s.mcp).toContain(
      `claude mcp add --transport http ${PIPELINE} '${BASE}/v1/deployments/${ID}/mcp' --header "Authorization: Bearer $PIPEGATE_API_KEY"`,
    );
  });

  it('sends each input with the value_type its type takes: REFERENCE for a reference, ASSET for an asset, RAW for the rest', () => {
    // Prepare
    const photo = 'data:image/png;base64,iVBORw0KGgo=';
    const typed = deploymentOpenApi(
      {
        deployment_id: ID,
        pipeline_id: 'all',
        version: 1,
        published_at: '2026-11-22T10:00:00.000Z',
        inputs: [
          { id: 'ratio', value_type: 'float', value: 0.5, visible: true },
          { id: 'page', value_type: 'reference', value: 'https://example.com/a', visible: true },
          { id: 'photo', value_type: 'asset', value: photo, visible: true, media_types: ['image/png'] },
        ],
        outputs: [{ id: 'out', visible: true }],
      },
      BASE,
      CALLER_ROUTES,
    );

    // Act
    const curl = deploymentSnippets(typed).curl;
    const dataLine = curl.split('\n').find((l) => l.trimStart().startsWith('-d ')) ?? '';
    const unquoted = execFileSync('sh', ['-c', `printf '%s' ${dataLine.trim().slice(3)}`], { encoding: 'utf8' });

    // Assess
    expect(JSON.parse(unquoted)).toEqual({
      workflow_input: {
        ratio: { value: 0.5, value_type: 'RAW' },
        page: { value: 'https://example.com/a', value_type: 'REFERENCE' },
        photo: { value: photo, value_type: 'ASSET' },
      },
    });
    expect(deploymentSnippets(typed).typescript).toContain('value_type: "ASSET"');
    expect(deploymentSnippets(typed).python).toContain('"value_type": "REFERENCE"');
  });

  it('refuses what is not a deployment document', () => {
    expect(() => deploymentSnippets({ openapi: '3.1.0', paths: {} })).toThrow(/no server URL/);
    expect(() => deploymentSnippets({ servers: [{ url: BASE }], paths: {} })).toThrow(/no execute operation/);
    expect(() => deploymentSnippets('nope')).toThrow(/not an object/);
  });
});
