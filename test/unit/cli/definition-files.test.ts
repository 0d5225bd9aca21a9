/**
 * `@path` values of asset inputs in pipeline files: read relative to the file, sent as a data
 * URI by push and apply, refused past the definition's asset limit (naming it and the file),
 * and shown by `apply --dry-run` without their bytes.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFINITION_ASSET_MAX_BYTES } from '../../../functions/core/assets';
import { resolveDefinitionFiles } from '../../../lib/cli/definition-files';
import type { CliIO } from '../../../lib/cli/output';
import { runCli } from '../../../lib/cli/program';
import { png } from '../../support/media';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pipegate-def-files-'));
  mkdirSync(join(dir, 'pipelines', 'assets'), { recursive: true });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const pipelineFile = (value: unknown) =>
  JSON.stringify({
    nodes: {
      photo: { type: 'input', value_type: 'asset', value, media_types: ['image/png'] },
      name: { type: 'input', value_type: 'string', value: '@ada' },
      out: { type: 'output', from: 'photo' },
    },
  });

/** A PNG of exactly `size` bytes. */
const pngOf = (size: number) => Buffer.concat([png(1, 1), Buffer.alloc(size - png(1, 1).length)]);

async function cli(args: string[]) {
  const calls: { method: string; path: string; body: unknown }[] = [];
  let stdout = '';
  let stderr = '';
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    calls.push({
      method: init?.method ?? 'GET',
      path: url.pathname,
      body: typeof init?.body === 'string' ? (JSON.parse(init.body) as unknown) : undefined,
    });
    if (init?.method === 'PUT') return Response.json({ pipeline_id: 'photo', version: 1, created: true });
    return Response.json({ error: 'Pipeline Not Found' }, { status: 404 });
  }) as typeof fetch;
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { PIPEGATE_URL: 'http://127.0.0.1:3999', PIPEGATE_OWNER_TOKEN: 'pgo_test' },
    cwd: dir,
    fetch: fakeFetch,
  };
  const code = await runCli(args, io, {});
  return { code, stdout, stderr, calls };
}

describe('resolveDefinitionFiles', () => {
  it("replaces an asset input's @path (relative to the file) with a data URI, leaving other inputs and values alone", () => {
    // Prepare
    const bytes = png(3, 3);
    writeFileSync(join(dir, 'pipelines', 'assets', 'cat.png'), bytes);
    const doc = JSON.parse(pipelineFile('@assets/cat.png')) as { nodes: Record<string, { value: unknown }> };

    // Act
    const r = resolveDefinitionFiles(doc, join(dir, 'pipelines'));

    // Assess
    expect(r.problems).toStrictEqual([]);
    expect(r.files).toStrictEqual([{ input: 'photo', shown: 'assets/cat.png', bytes: bytes.length, mediaType: 'image/png' }]);
    const nodes = (r.doc as typeof doc).nodes;
    expect(nodes.photo?.value).toBe(`data:image/png;base64,${bytes.toString('base64')}`);
    expect(nodes.name?.value).toBe('@ada');
    // The parsed document itself is left as it was.
    expect(doc.nodes.photo?.value).toBe('@assets/cat.png');
  });

  it('takes a file of exactly the limit and refuses one byte more, naming the limit and the file', () => {
    // Prepare
    writeFileSync(join(dir, 'at.png'), pngOf(DEFINITION_ASSET_MAX_BYTES));
    writeFileSync(join(dir, 'over.png'), pngOf(DEFINITION_ASSET_MAX_BYTES + 1));

    // Act
    const at = resolveDefinitionFiles(JSON.parse(pipelineFile('@at.png')), dir);
    const over = resolveDefinitionFiles(JSON.parse(pipelineFile('@over.png')), dir);

    // Assess
    expect(at.problems).toStrictEqual([]);
    expect(over.problems).toStrictEqual([
      {
        path: 'nodes.photo.value',
        reason: `@over.png is ${DEFINITION_ASSET_MAX_BYTES + 1} bytes; an asset input's value in a definition holds at most 65536 bytes (64 KiB); send larger files with each execution (pipegate execute <deployment> --input <id>=@<file>)`,
      },
    ]);
  });

  it('lists a missing file, a directory and an empty file as problems of the value', () => {
    // Prepare
    writeFileSync(join(dir, 'empty.png'), '');
    const problem = (value: string) => resolveDefinitionFiles(JSON.parse(pipelineFile(value)), dir).problems[0]?.reason;

    // Act, Assess
    expect(problem('@gone.png')).toBe('@gone.png: no such file: gone.png');
    expect(problem('@pipelines')).toBe('@pipelines is a directory; give a file');
    expect(problem('@empty.png')).toBe('@empty.png is empty; an asset needs at least one byte');
    expect(problem('@')).toMatch(/^give a file after @/);
  });
});

describe('push and apply with @path values', () => {
  it('push sends the data URI; a file too large is a usage error naming the file and the limit', async () => {
    // Prepare
    const bytes = png(2, 2);
    writeFileSync(join(dir, 'pipelines', 'assets', 'cat.png'), bytes);
    writeFileSync(join(dir, 'pipelines', 'assets', 'big.png'), pngOf(DEFINITION_ASSET_MAX_BYTES + 1));
    writeFileSync(join(dir, 'pipelines', 'photo.json'), pipelineFile('@assets/cat.png'));
    writeFileSync(join(dir, 'pipelines', 'big.json'), pipelineFile('@assets/big.png'));

    // Act
    const ok = await cli(['push', 'pipelines/photo.json']);
    const big = await cli(['push', 'pipelines/big.json']);

    // Assess
    expect(ok.code).toBe(0);
    expect(ok.calls[0]?.body).toMatchObject({ nodes: { photo: { value: `data:image/png;base64,${bytes.toString('base64')}` } } });
    expect(big.code).toBe(2);
    expect(big.stderr).toContain(
      "nodes.photo.value: @assets/big.png is 65537 bytes; an asset input's value in a definition holds at most 65536 bytes (64 KiB)",
    );
    expect(big.calls).toHaveLength(0);
  });

  it('apply --dry-run names each file and its size, never its bytes', async () => {
    // Prepare
    const bytes = png(5, 5);
    writeFileSync(join(dir, 'pipelines', 'assets', 'cat.png'), bytes);
    writeFileSync(join(dir, 'pipelines', 'photo.json'), pipelineFile('@assets/cat.png'));

    // Act
    const human = await cli(['apply', 'pipelines/photo.json', '--dry-run']);
    const json = await cli(['apply', 'pipelines/photo.json', '--dry-run', '--json']);

    // Assess
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`    files    photo ← assets/cat.png (${bytes.length} bytes)`);
    const b64 = bytes.toString('base64');
    expect(human.stdout + human.stderr).not.toContain(b64);
    expect(json.stdout).not.toContain(b64);
    expect((JSON.parse(json.stdout) as { pipelines: { files: unknown }[] }).pipelines[0]?.files).toStrictEqual([
      { input: 'photo', path: 'assets/cat.png', bytes: bytes.length },
    ]);
    expect(human.calls.every((c) => c.method === 'GET')).toBe(true);
  });

  it('apply lists a file over the limit as a problem of its pipeline file', async () => {
    // Prepare
    writeFileSync(join(dir, 'pipelines', 'assets', 'big.png'), pngOf(DEFINITION_ASSET_MAX_BYTES + 1));
    writeFileSync(join(dir, 'pipelines', 'big.json'), pipelineFile('@assets/big.png'));

    // Act
    const r = await cli(['apply', 'pipelines/big.json', '--dry-run']);

    // Assess
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toContain('@assets/big.png is 65537 bytes');
    expect(r.calls).toHaveLength(0);
  });
});
