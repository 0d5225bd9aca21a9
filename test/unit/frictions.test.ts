/**
 * Small things an owner trips over, each pinned: where a bad JSON file goes wrong, what an
 * http node's failure says, how the CLI finds a runtime on another port, what 401 and 413
 * bodies explain, and the hints and help text the CLI prints.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bodyExcerpt, HTTP_ERROR_EXCERPT_CHARS, runPipeline } from '../../functions/core/engine';
import { assertBodySize, bodyLimitDetail } from '../../functions/core/body-size';
import { unauthorizedBody, UNAUTHORIZED_DETAIL } from '../../functions/core/errors';
import { parseExecutionRequest } from '../../functions/core/execution-request';
import type { PipelineDefinition } from '../../functions/core/types';
import { resolveConnection } from '../../lib/cli/connection';
import { firstJsonErrorOffset, parseJsonWithPosition } from '../../lib/cli/json-position';
import type { CliIO } from '../../lib/cli/output';
import { runCli } from '../../lib/cli/program';

describe('JSON files with a mistake', () => {
  it.each([
    ['{"a":1,}', 'line 1, column 8'],
    ['{\n  "a": 1\n  "b": 2\n}', 'line 3, column 3'],
    ['{\n  "a": tru\n}', 'line 2, column 11'],
    ['{"a": 1} x', 'line 1, column 10'],
    ['{"nodes": ', 'line 1, column 11'],
  ])('%j is reported at %s', (text, where) => {
    // Act
    const thrown = (() => {
      try {
        parseJsonWithPosition(text);
        return null;
      } catch (e) {
        return (e as Error).message;
      }
    })();

    // Assess
    expect(thrown).toMatch(new RegExp(`^${where}: `));
  });

  it('finds no mistake in valid JSON', () => {
    expect(firstJsonErrorOffset('{"a": [1, -2.5e3, true, null, "x\\u0041"]}')).toBeNull();
  });
});

describe('an http node that gets an error answer', () => {
  const def = (headers: Record<string, string>): PipelineDefinition => ({
    nodes: {
      call: { type: 'http', url: 'https://api.example.com/v1/charge?api_key=qs-secret-123', headers },
      out: { type: 'output', from: 'call' },
    },
  });

  it('keeps the status and a short excerpt of the body, without what it sent as credentials', async () => {
    // Prepare
    const body = `{"error":"card declined","echo":"Bearer hdr-secret-456","key":"qs-secret-123","token":"abc"}\n${'x'.repeat(500)}`;

    // Act
    const r = await runPipeline(
      def({ authorization: 'Bearer hdr-secret-456' }),
      {},
      {
        http: async () => ({ status: 402, headers: {}, body }),
        timeoutMs: 5_000,
      },
    );

    // Assess
    expect(r.status).toBe('failed');
    const message = r.status === 'failed' ? r.error_message : '';
    expect(message).toMatch(/^Node 'call' failed: HTTP 402 from https:\/\/api\.example\.com\/v1\/charge: \{"error":"card declined"/);
    expect(message).not.toMatch(/hdr-secret-456|qs-secret-123|"abc"/);
    expect(message.length).toBeLessThan(HTTP_ERROR_EXCERPT_CHARS + 120);
  });

  it('cuts excerpts to one line and redacts token-shaped text', () => {
    expect(bodyExcerpt('line one\n\tline two')).toBe('line one line two');
    expect(bodyExcerpt(`password=hunter22 id ${'A'.repeat(40)}`)).toBe('password=[redacted] id [redacted]');
    expect(bodyExcerpt('ab '.repeat(HTTP_ERROR_EXCERPT_CHARS))).toHaveLength(HTTP_ERROR_EXCERPT_CHARS + 1);
  });
});

describe('caller errors that explain themselves', () => {
  const contract = {
    inputs: [
      { id: 'name', value_type: 'string' as const, value: 'x', visible: true },
      { id: 'secret_mode', value_type: 'boolean' as const, value: false, visible: false },
    ],
    outputs: [],
  };
  const limits = { maxBodyBytes: 1024, maxInputs: 32, allowPrivateUrls: true };

  it('an unknown input lists the visible ones only', () => {
    const body = JSON.stringify({ workflow_input: { nmae: { value: 'a', value_type: 'RAW' } } });
    expect(() => parseExecutionRequest({ body, contentType: 'application/json' }, contract, limits)).toThrow(
      expect.objectContaining({ detail: "unknown input 'nmae'; the inputs are: name" }),
    );
  });

  it('413 states the limit', () => {
    expect(() => assertBodySize(2000, { maxBodyBytes: 1024 })).toThrow(
      expect.objectContaining({ status: 413, detail: 'the request body must be at most 1024 bytes (1 KiB)' }),
    );
    expect(bodyLimitDetail(262_144)).toBe('the request body must be at most 262144 bytes (256 KiB)');
  });

  it('401 bodies name the accepted forms and nothing about the key given', () => {
    expect(unauthorizedBody('apiKey')).toEqual({ error: 'Unauthorized', detail: UNAUTHORIZED_DETAIL.apiKey });
    expect(UNAUTHORIZED_DETAIL.apiKey).toMatch(/X-API-Key: <key>.*Authorization: Api-Key <key>/);
    expect(UNAUTHORIZED_DETAIL.ownerToken).toMatch(/Authorization: Bearer <owner token>/);
    // Gateway response bodies are templates on AWS.
    for (const text of Object.values(UNAUTHORIZED_DETAIL)) expect(text).not.toMatch(/[$#]/);
  });
});

describe('the CLI', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'pipegate-frictions-'));
    mkdirSync(join(dir, 'data'));
    writeFileSync(join(dir, 'data', 'runtime-url'), 'http://127.0.0.1:4321\n');
    writeFileSync(join(dir, 'data', 'owner-token'), 'pgo_x\n');
    mkdirSync(join(dir, 'remote'));
    writeFileSync(join(dir, 'remote', 'runtime-url'), 'https://example.com\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('finds a local runtime on another port from the URL it recorded in PIPEGATE_DATA_DIR', async () => {
    const found = await resolveConnection({}, { PIPEGATE_DATA_DIR: 'data' }, dir);
    expect(found.baseUrl).toBe('http://127.0.0.1:4321');
    // Only a loopback URL is taken from the file: the owner token goes there.
    expect((await resolveConnection({}, { PIPEGATE_DATA_DIR: 'remote' }, dir)).baseUrl).toBe('http://127.0.0.1:3000');
    expect((await resolveConnection({ url: 'http://127.0.0.1:9' }, { PIPEGATE_DATA_DIR: 'data' }, dir)).baseUrl).toBe('http://127.0.0.1:9');
  });

  async function cli(args: string[], answer: (path: string) => [number, unknown]) {
    let stdout = '';
    let stderr = '';
    const io: CliIO = {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      env: { PIPEGATE_URL: 'http://127.0.0.1:3999', PIPEGATE_OWNER_TOKEN: 'pgo_t' },
      cwd: dir,
      fetch: (async (input: string | URL | Request) => {
        const [status, body] = answer(new URL(String(input)).pathname);
        return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
      }) as typeof fetch,
      sleep: async () => undefined,
    };
    const code = await runCli(args, io, {});
    return { code, stdout, stderr };
  }

  it('hints that a pipeline id was given where a deployment id belongs', async () => {
    const r = await cli(['execute', 'greeting', '--key', 'pgk_x'], () => [404, { error: 'Deployment Not Found' }]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'hint: "greeting" looks like a pipeline id; execute takes the deployment id (a UUID), which pipegate status greeting shows',
    );
  });

  it('names the real pipeline in its hints', async () => {
    const r = await cli(['publish', 'shop-api'], () => [
      409,
      { error: 'To deploy the workflow, there must be at least one successful execution.' },
    ]);
    expect(r.stderr).toContain('hint: run it until a run succeeds: pipegate run shop-api');
    const d = await cli(['keys', 'rotate', 'shop-api'], () => [404, { error: 'Deployment Not Found' }]);
    expect(d.stderr).toContain('pipegate publish shop-api');
  });

  it("shows the global options and no empty defaults in every command's help", async () => {
    for (const command of ['run', 'execute', 'publish', 'runs', 'apply']) {
      const r = await cli([command, '--help'], () => [599, {}]);
      expect({ command, code: r.code }).toEqual({ command, code: 0 });
      expect(r.stdout).toMatch(/Global Options:[\s\S]*--json[\s\S]*/);
      expect(r.stdout).toMatch(/--url <url>/);
      expect(r.stdout).not.toContain('(default: [])');
    }
    expect((await cli(['runs', '--help'], () => [599, {}])).stdout).toContain('(default: 20)');
  });
});
