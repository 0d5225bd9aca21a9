/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, its CLI as published)
 * against deployments' MCP endpoints on the local runtime. Every server scenario that applies
 * to a server of one tool passes; the rest are listed with why they do not apply, and the list
 * is held to the suite's own, so a scenario a later version adds is not silently skipped.
 *
 * The suite's client sends no credentials, so it talks to each endpoint through a proxy that
 * adds the key (as an MCP client configured with it would), and the runtime's public URL is the
 * proxy's: the address clients use, which the DNS-rebinding scenario needs the server to know.
 */
import { execFileSync } from 'node:child_process';
import type { PipelineDefinition } from '../../functions/core/types';
import { startTestServer, type TestServer } from '../support/http-server';
import { CONFORMANCE_CLI, mcpUrlOf, runConformance, startAuthProxy, type AuthProxy, type ConformanceCheck } from '../support/mcp';
import { greeting, startTestRuntime, type Published, type TestRuntime } from '../support/runtime';

/** Scenarios that do not apply to a deployment's server, and why. */
const NOT_APPLICABLE: Record<string, string> = {
  'logging-set-level': 'no logging capability: a deployment sends its progress as notifications/progress, not log messages',
  'tools-call-with-logging': 'no logging capability (as above)',
  'completion-complete': 'completions are for prompt and resource-template arguments; the server has neither',
  'tools-call-image': "a fixture tool answering image content; a deployment's files are resource_link content with a signed URL",
  'tools-call-audio': 'a fixture tool answering audio content (as above)',
  'tools-call-embedded-resource': 'a fixture tool answering an embedded resource (as above)',
  'tools-call-mixed-content': 'a fixture tool answering text, image and embedded resource together (as above)',
  'tools-call-sampling':
    'the server asks the client for nothing: a pipeline runs on its own, and a stateless server could not hold a request to the client',
  'tools-call-elicitation': 'no elicitation (as above)',
  'elicitation-sep1034-defaults': 'no elicitation (as above)',
  'elicitation-sep1330-enums': 'no elicitation (as above)',
  'json-schema-2020-12':
    "a fixture tool whose inputSchema carries `$defs.address`; a deployment's inputs are flat values. Its other two checks ($schema kept, additionalProperties false) are asserted below",
  'resources-list': 'no resources',
  'resources-read-text': 'no resources',
  'resources-read-binary': 'no resources',
  'resources-templates-read': 'no resources',
  'resources-subscribe': 'no resources',
  'resources-unsubscribe': 'no resources',
  'prompts-list': 'no prompts',
  'prompts-get-simple': 'no prompts',
  'prompts-get-with-args': 'no prompts',
  'prompts-get-embedded-resource': 'no prompts',
  'prompts-get-with-image': 'no prompts',
};

/**
 * Scenarios that apply, each run against the deployment named for it: the suite calls fixture
 * tools by name, and a deployment's tool is its pipeline id with `-` as `_`.
 */
const APPLIES: Record<string, string> = {
  'server-initialize': 'conformance-greeting',
  ping: 'conformance-greeting',
  'tools-list': 'conformance-greeting',
  'tools-call-simple-text': 'test-simple-text',
  'tools-call-error': 'test-error-handling',
  'tools-call-with-progress': 'test-tool-with-progress',
  'server-sse-polling': 'conformance-greeting',
  'server-sse-multiple-streams': 'conformance-greeting',
  'dns-rebinding-protection': 'conformance-greeting',
};

/**
 * What passing leaves as warnings (SHOULDs of SEP-1699): a stateless server has no session id
 * and no event store, so it sends no priming event and no `retry:` to resume a stream with.
 */
const EXPECTED_WARNINGS: Record<string, string[]> = {
  'server-sse-polling': ['server-sse-polling-session', 'server-sse-priming-event', 'server-sse-retry-field'],
  'server-sse-multiple-streams': ['server-sse-multiple-streams-session'],
};

let rt: TestRuntime;
let proxy: AuthProxy;
let upstream: TestServer;
let failing = false;
const deployments = new Map<string, Published>();

beforeAll(async () => {
  upstream = await startTestServer((_req, res) => {
    res.writeHead(failing ? 500 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ word: 'ok' }));
  });
  let target = '';
  proxy = await startAuthProxy(() => target, {});
  rt = await startTestRuntime({ env: { ...process.env, PIPEGATE_PUBLIC_URL: proxy.url } });
  target = rt.url;
  const fails: PipelineDefinition = {
    description: 'Fails once published: its upstream answers 500',
    nodes: {
      call: { type: 'http', url: `${upstream.origin}/word` },
      word: { type: 'transform', inputs: ['call'], expression: 'call.word' },
      out: { type: 'output', from: 'word' },
    },
  };
  const defs: Record<string, PipelineDefinition> = {
    'conformance-greeting': greeting,
    'test-simple-text': greeting,
    'test-tool-with-progress': greeting,
    'test-error-handling': fails,
    'json-schema-2020-12-tool': greeting,
  };
  for (const [id, def] of Object.entries(defs)) deployments.set(id, await rt.publishPipeline(id, def));
  failing = true;
});

afterAll(async () => {
  await proxy?.close();
  await rt?.cleanup();
  await upstream?.close();
});

/** One scenario against the deployment `pipeline`, its key added by the proxy. */
async function run(scenario: string, pipeline: string): Promise<ConformanceCheck[]> {
  const p = deployments.get(pipeline);
  if (!p) throw new Error(`no deployment ${pipeline}`);
  proxy.headers.authorization = `Bearer ${p.apiKey}`;
  return runConformance(mcpUrlOf(proxy.url, p.deploymentId).href, scenario);
}

const outcome = (checks: ConformanceCheck[]) => checks.map((c) => `${c.id}: ${c.status}${c.errorMessage ? ` (${c.errorMessage})` : ''}`);

it('covers every server scenario the suite has: each applies, or is listed with why not', () => {
  const listed = execFileSync(process.execPath, [CONFORMANCE_CLI, 'list', '--server'], { encoding: 'utf8' })
    .split('\n')
    .map((l) => /^\s+- (\S+)/.exec(l)?.[1])
    .filter((s): s is string => s !== undefined);
  expect(listed.length).toBeGreaterThan(20);
  expect([...listed].sort()).toEqual([...Object.keys(APPLIES), ...Object.keys(NOT_APPLICABLE)].sort());
});

it.each(Object.entries(APPLIES))('passes %s', async (scenario, pipeline) => {
  const checks = await run(scenario, pipeline);
  expect(checks.length).toBeGreaterThan(0);
  expect(outcome(checks.filter((c) => c.status === 'FAILURE'))).toEqual([]);
  expect(checks.some((c) => c.status === 'SUCCESS') || scenario in EXPECTED_WARNINGS).toBe(true);
  expect(checks.filter((c) => c.status === 'WARNING').map((c) => c.id)).toEqual(EXPECTED_WARNINGS[scenario] ?? []);
});

it("keeps json-schema-2020-12's applicable checks: the tool's inputSchema says its dialect and closes its properties", async () => {
  const checks = await run('json-schema-2020-12', 'json-schema-2020-12-tool');
  const status = Object.fromEntries(checks.map((c) => [c.id, c.status]));
  expect(status).toEqual({
    'json-schema-2020-12-tool-found': 'SUCCESS',
    'json-schema-2020-12-$schema': 'SUCCESS',
    'json-schema-2020-12-additionalProperties': 'SUCCESS',
    // The fixture's nested definition, which a deployment's flat inputs do not have.
    'json-schema-2020-12-$defs': 'FAILURE',
  });
});
