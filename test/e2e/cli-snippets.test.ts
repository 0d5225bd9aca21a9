/**
 * The snippets `pipegate publish` prints, as printed, for a deployment with an input of every
 * value type (string, integer, float, boolean, reference, asset): the CLI (a real process) pushes,
 * runs and publishes it; the curl block under "Try it" (the key's export, then the command) runs
 * through a shell and gets 202, and the execution completes; the Python block runs with the key in
 * the environment and prints the completed outputs; the TypeScript block is the one the service's
 * own document for the deployment gives (test/e2e/generated-client.test.ts compiles and runs that
 * for a deployment of every value type). The CLI builds its snippets from the publish answer, not
 * from the served document, so this is what holds the two to the same text.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { deploymentSnippets } from '../../functions/core/snippets';
import type { PipelineDefinition } from '../../functions/core/types';
import { runCli, type CliRun } from '../support/cli';
import { png } from '../support/media';
import { startTestRuntime, type TestRuntime } from '../support/runtime';

const exec = promisify(execFile);

const EVERY_TYPE: PipelineDefinition = {
  description: 'An input of every value type',
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    times: { type: 'input', value_type: 'integer', value: 2 },
    ratio: { type: 'input', value_type: 'float', value: 0.5 },
    loud: { type: 'input', value_type: 'boolean', value: true },
    page: { type: 'input', value_type: 'reference', value: 'https://example.com/parcels/1' },
    photo: {
      type: 'input',
      value_type: 'asset',
      value: `data:image/png;base64,${png(2, 2).toString('base64')}`,
      media_types: ['image/png'],
    },
    text: {
      type: 'transform',
      inputs: ['name', 'times', 'ratio', 'loud', 'page', 'photo'],
      expression: "name & ' ' & $string(times) & ' ' & $string(ratio) & ' ' & $string(loud) & ' ' & $string(page) & ' ' & photo.media_type",
    },
    message: { type: 'output', from: 'text' },
  },
};
const EXPECTED = 'world 2 0.5 true https://example.com/parcels/1 image/png';

let rt: TestRuntime;
let work: string;

const pg = (args: string[]): Promise<CliRun> =>
  runCli(args, { cwd: work, env: { PIPEGATE_URL: rt.url, PIPEGATE_OWNER_TOKEN: rt.ownerToken, NO_COLOR: '1' } });

async function ok(args: string[]): Promise<string> {
  const r = await pg(args);
  if (r.code !== 0) throw new Error(`pipegate ${args.join(' ')} exited ${String(r.code)}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** The block printed under "Try it": from the key's line (its export, or the reminder of it) to the end. */
function tryIt(out: string): string {
  const at = out.search(/^(?:# )?export PIPEGATE_API_KEY=/m);
  if (at < 0) throw new Error(`no "Try it" block in:\n${out}`);
  return out.slice(at);
}

let key = '';
let deploymentId = '';

beforeAll(async () => {
  rt = await startTestRuntime();
  work = mkdtempSync(join(tmpdir(), 'pipegate-cli-snippets-'));
  writeFileSync(join(work, 'every.json'), JSON.stringify(EVERY_TYPE));
});

afterAll(async () => {
  await rt?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

it('curl: the first publish prints the key and the command; pasted into a shell as printed, it gets 202 and the execution completes', async () => {
  await ok(['push', 'every.json']);
  await ok(['run', 'every']);
  const out = await ok(['publish', 'every']);
  key = /^ *API key +(\S+)$/m.exec(out)?.[1] ?? '';
  deploymentId = /^ *deployment +(\S+)$/m.exec(out)?.[1] ?? '';
  const block = tryIt(out);
  expect(block.split('\n')[0]).toBe(`export PIPEGATE_API_KEY=${key}`);

  // The block unchanged; curl wrapped to add the status line after the body, so the 202 is seen, not inferred.
  const withStatus = `curl() { command curl -w '\\n%{http_code}' "$@"; }\n${block}`;
  const pasted = await exec('sh', ['-c', withStatus], { env: { PATH: process.env.PATH ?? '' } });
  const [body, code] = pasted.stdout.trim().split('\n');
  expect(code).toBe('202');
  const accepted = JSON.parse(body ?? '') as { status: string; execution_id: string; deployment_id: string };
  expect(accepted).toMatchObject({ status: 'queued', deployment_id: deploymentId });
  const done = await rt.waitForExecution(accepted.execution_id, key);
  expect(done.status).toBe('completed');
  const result = await rt.caller('GET', `/v1/deployments/executions/${accepted.execution_id}/result/`, key);
  expect(result.body.response_data).toEqual({ message: { value: EXPECTED, value_type: 'RAW' } });
});

it('python: the block publish --snippet python prints runs with the key in the environment and prints the completed outputs', async () => {
  const out = await ok(['publish', 'every', '--snippet', 'python']);
  const code = tryIt(out);
  const ran = await exec('python3', ['-c', code], { env: { PATH: process.env.PATH ?? '', PIPEGATE_API_KEY: key } });
  expect(ran.stdout.trim()).toBe(`completed {'message': {'value': '${EXPECTED}', 'value_type': 'RAW'}}`);
});

it("typescript: the block publish --snippet typescript prints is the one the deployment's own document gives", async () => {
  const out = await ok(['publish', 'every', '--snippet', 'typescript']);
  const printed = tryIt(out).split('\n').slice(1).join('\n').trimEnd();
  const doc = await rt.caller('GET', `/v1/deployments/${deploymentId}/openapi.json`, key);
  expect(doc.status).toBe(200);
  expect(printed).toBe(deploymentSnippets(doc.body).typescript);
});
