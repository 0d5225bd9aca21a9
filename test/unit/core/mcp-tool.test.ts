/**
 * A deployment as an MCP tool, pure (functions/core/mcp-tool.ts): the tool from the contract and
 * the graph, a call's arguments as an execute request (fuzzed: nothing it passes on is refused
 * by the execute parser for its shape, and every refusal names the argument), results, tasks
 * and progress as the protocol carries them.
 */
import fc from 'fast-check';
import { AppError } from '../../../functions/core/errors';
import { parseExecutionRequest } from '../../../functions/core/execution-request';
import {
  callRequestOf,
  callResult,
  invalidArgumentOf,
  isInvalidArgument,
  progressSteps,
  shownNodes,
  stillRunning,
  taskOf,
  TOOL_NAME_PATTERN,
  toolAnnotations,
  toolDefinition,
  toolName,
  type CallRequest,
} from '../../../functions/core/mcp-tool';
import { PIPELINE_ID_PATTERN } from '../../../functions/core/ids';
import { deploymentOpenApi } from '../../../functions/core/openapi';
import { CALLER_ROUTES } from '../../../lib/routes';
import type { NodeProgress } from '../../../functions/core/progress';
import type { Deployment, PipelineDefinition } from '../../../functions/core/types';
import { executionUrls } from '../../../functions/core/views';

const dep: Pick<Deployment, 'deployment_id' | 'pipeline_id' | 'version' | 'inputs' | 'outputs'> = {
  deployment_id: '0b0c1e4e-7d3c-4a57-9a51-0d7b8a2f6c11',
  pipeline_id: 'photo-caption',
  version: 4,
  inputs: [
    { id: 'name', value_type: 'string', value: 'world', visible: true },
    { id: 'times', value_type: 'integer', value: 2, visible: true },
    { id: 'site', value_type: 'reference', value: 'https://example.com/', visible: true },
    { id: 'photo', value_type: 'asset', value: 'data:image/png;base64,iVBORw0KGgo=', visible: true, media_types: ['image/png'] },
    { id: 'token', value_type: 'string', value: 'hidden-value', visible: false },
  ],
  outputs: [
    { id: 'caption', visible: true, value_type: 'RAW' },
    { id: 'thumb', visible: true, value_type: 'ASSET' },
    { id: 'old', visible: true },
    { id: 'debug', visible: false, value_type: 'RAW' },
  ],
};
const def: PipelineDefinition = {
  description: 'Captions a photo',
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world', label: 'Who', description: 'Who is in it.' },
    times: { type: 'input', value_type: 'integer', value: 2 },
    site: { type: 'input', value_type: 'reference', value: 'https://example.com/' },
    photo: { type: 'input', value_type: 'asset', value: 'data:image/png;base64,iVBORw0KGgo=' },
    token: { type: 'input', value_type: 'string', value: 'hidden-value', description: 'planted-hidden-description' },
    look: { type: 'http', url: 'https://api.example/look', inputs: ['photo'] },
    caption: { type: 'output', from: 'look' },
    thumb: { type: 'output', from: 'photo' },
    old: { type: 'output', from: 'name' },
    debug: { type: 'output', from: 'token' },
  },
};

describe('the tool', () => {
  it('is named after the pipeline, in the spec’s alphabet, one to one', () => {
    expect(toolName('photo-caption')).toBe('photo_caption');
    fc.assert(
      fc.property(fc.stringMatching(PIPELINE_ID_PATTERN), fc.stringMatching(PIPELINE_ID_PATTERN), (a, b) => {
        expect(toolName(a)).toMatch(TOOL_NAME_PATTERN);
        if (a !== b) expect(toolName(a)).not.toBe(toolName(b));
      }),
    );
  });

  it('takes the visible inputs as plain values with their published defaults, and nothing of the hidden ones', () => {
    const tool = toolDefinition(dep, def);
    expect(tool.name).toBe('photo_caption');
    expect(tool.description).toMatch(/^Captions a photo\n\nRuns version 4 of the pipegate pipeline photo-caption\./);
    expect(tool.inputSchema).toMatchObject({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      additionalProperties: false,
      properties: {
        name: { title: 'Who', type: 'string', default: 'world', description: 'Who is in it. Left out: the published value.' },
        times: { type: 'integer', default: 2 },
        site: { type: 'string', format: 'uri', default: 'https://example.com/' },
        photo: { type: 'string' },
      },
    });
    expect(Object.keys(tool.inputSchema.properties as object)).toEqual(['name', 'times', 'site', 'photo']);
    expect((tool.inputSchema.properties as Record<string, { description: string }>).photo?.description).toContain('image/png');
    expect(tool.inputSchema).not.toHaveProperty('required');
    expect(JSON.stringify(tool)).not.toMatch(/token|hidden-value|planted-hidden-description|debug/);
  });

  it("gives each argument the schema the deployment's OpenAPI document gives that input's value (its words and default aside)", () => {
    // Prepare: an input of every value type, and the deployment's own document.
    const every: typeof dep = {
      ...dep,
      inputs: [
        { id: 's', value_type: 'string', value: 'w', visible: true },
        { id: 'i', value_type: 'integer', value: 2, visible: true },
        { id: 'f', value_type: 'float', value: 0.5, visible: true },
        { id: 'b', value_type: 'boolean', value: true, visible: true },
        { id: 'r', value_type: 'reference', value: 'https://example.com/', visible: true },
        { id: 'a', value_type: 'asset', value: 'data:image/png;base64,iVBORw0KGgo=', visible: true, media_types: ['image/png'] },
      ],
    };
    type Schema = Record<string, unknown>;
    const doc = deploymentOpenApi({ ...every, published_at: '2026-11-22T10:00:00.000Z' }, 'https://api.example', CALLER_ROUTES) as Schema;
    const resolve = (x: Schema): Schema =>
      typeof x.$ref === 'string'
        ? resolve(
            x.$ref
              .split('/')
              .slice(1)
              .reduce<Schema>((o, k) => o[k] as Schema, doc),
          )
        : x;
    const execute = Object.entries(doc.paths as Record<string, { post?: Schema }>).find(([p]) => p.endsWith('/executions'))?.[1].post;
    const request = resolve(
      ((execute?.requestBody as Schema).content as Record<string, { schema: Schema }>)['application/json']?.schema as Schema,
    );
    const workflowInput = resolve((request.properties as Record<string, Schema>).workflow_input as Schema);
    const keywords = ({ title: _t, description: _d, default: _v, ...rest }: Schema) => rest;

    // Act
    const tool = toolDefinition(every, { nodes: {} });

    // Assess
    const args = tool.inputSchema.properties as Record<string, Schema>;
    expect(Object.keys(args)).toEqual(['s', 'i', 'f', 'b', 'r', 'a']);
    for (const [id, input] of Object.entries(workflowInput.properties as Record<string, Schema>)) {
      const value = resolve((resolve(input).properties as Record<string, Schema>).value as Schema);
      expect({ id, schema: keywords(args[id] as Schema) }).toEqual({ id, schema: keywords(value) });
    }
  });

  it('answers the visible outputs, values and file links as the contract recorded them, none required', () => {
    const out = toolDefinition(dep, def).outputSchema as unknown as {
      properties: Record<string, Record<string, unknown>>;
      required?: unknown;
    };
    expect(Object.keys(out.properties)).toEqual(['caption', 'thumb', 'old']);
    expect(out.properties.caption).toEqual({ type: ['string', 'number', 'boolean'] });
    expect(out.properties.thumb).toMatchObject({ type: 'object', required: ['url', 'media_type', 'bytes', 'expires_at'] });
    expect(out.properties.old).toHaveProperty('anyOf');
    expect(out.required).toBeUndefined();
  });

  it.each([
    ['no http node', {}, { readOnlyHint: true, idempotentHint: false, openWorldHint: false }],
    ['a GET (the default method)', { a: { type: 'http', url: 'https://x.example/' } }, { readOnlyHint: true, openWorldHint: true }],
    [
      'a POST',
      { a: { type: 'http', url: 'https://x.example/' }, b: { type: 'http', method: 'POST', url: 'https://x.example/' } },
      { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
    ],
  ] as const)('derives its hints from the graph: %s', (_name, nodes, expected) => {
    expect(toolAnnotations({ nodes: nodes as PipelineDefinition['nodes'] })).toMatchObject(expected);
  });
});

describe("a call's arguments", () => {
  const contract = { inputs: dep.inputs, outputs: dep.outputs };
  const limits = { maxBodyBytes: 256 * 1024, maxInputs: 64, allowPrivateUrls: false };

  it('become value objects of their inputs’ kinds; a file given as a URL is to be fetched; null is left out', () => {
    const r = callRequestOf(dep, { name: 'Ada', times: 3, site: 'https://a.example/x', photo: 'https://img.example/p.png', token: null });
    expect(isInvalidArgument(r)).toBe(true);
    const ok = callRequestOf(dep, {
      name: 'Ada',
      times: null,
      site: 'https://a.example/x',
      photo: 'https://img.example/p.png',
    }) as CallRequest;
    expect(ok.workflowInput).toEqual({
      name: { value: 'Ada', value_type: 'RAW' },
      site: { value: 'https://a.example/x', value_type: 'REFERENCE' },
    });
    expect(ok.assetUrls).toEqual({ photo: 'https://img.example/p.png' });
    expect(callRequestOf(dep, { photo: 'data:image/png;base64,iVBORw0KGgo=' })).toMatchObject({
      workflowInput: { photo: { value: 'data:image/png;base64,iVBORw0KGgo=', value_type: 'ASSET' } },
    });
  });

  it('refuse a hidden input like an unknown one, and anything that is not an object of names', () => {
    expect(callRequestOf(dep, { token: 'x' })).toEqual({
      message: "unknown argument 'token'; the arguments are: name, times, site, photo",
      argument: 'token',
    });
    expect(callRequestOf(dep, [1])).toEqual({ message: 'arguments must be an object of input ids to values', argument: null });
    expect(callRequestOf(dep, undefined)).toEqual({ workflowInput: {}, assetUrls: {} });
  });

  it('are refused by the execute parser in its words, naming the argument', () => {
    const r = callRequestOf(dep, { times: 'twice' }) as CallRequest;
    let thrown: unknown;
    try {
      parseExecutionRequest(
        { body: JSON.stringify({ workflow_input: r.workflowInput }), contentType: 'application/json' },
        contract,
        limits,
      );
    } catch (e) {
      thrown = e;
    }
    expect(invalidArgumentOf(thrown)).toEqual({
      message: "argument 'times' must be a whole number (its type is integer)",
      argument: 'times',
    });
    expect(invalidArgumentOf(new AppError('InvalidInput', 'at most 64 inputs may be given, got 65'))).toEqual({
      message: 'at most 64 inputs may be given, got 65',
      argument: null,
    });
    expect(invalidArgumentOf(new AppError('ExecutionNotFound'))).toBeNull();
    expect(invalidArgumentOf(new Error('boom'))).toBeNull();
  });

  it('fuzzed: whatever they pass on, the parser takes or refuses naming an argument that exists, never its structure', () => {
    const value = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.webUrl());
    const names = fc.constantFrom('name', 'times', 'site', 'photo', 'token', 'other', '__proto__', 'constructor');
    fc.assert(
      fc.property(fc.dictionary(names, value, { maxKeys: 5 }), (args) => {
        const r = callRequestOf(dep, args);
        if (isInvalidArgument(r)) {
          expect(r.argument === null || Object.hasOwn(args, r.argument)).toBe(true);
          return;
        }
        try {
          parseExecutionRequest(
            { body: JSON.stringify({ workflow_input: r.workflowInput }), contentType: 'application/json' },
            contract,
            limits,
          );
        } catch (e) {
          expect(e).toBeInstanceOf(AppError);
          expect((e as AppError).code).toBe('InvalidInput');
          const bad = invalidArgumentOf(e);
          expect(bad?.argument).toBeDefined();
          expect(Object.keys(r.workflowInput)).toContain(bad?.argument);
          expect(bad?.message).toMatch(/^argument '/);
        }
      }),
    );
  });
});

describe('answers', () => {
  const urls = executionUrls('https://api.example', 'e1');
  const link = {
    value: 'https://api.example/v1/assets/t',
    value_type: 'ASSET' as const,
    media_type: 'image/png',
    bytes: 68,
    expires_at: '2026-11-28T00:00:00.000Z',
  };

  it('a completed execution: its outputs structured, as JSON text, and each file as a resource_link', () => {
    const r = callResult(
      {
        status: 'completed',
        execution_id: 'e1',
        error_message: null,
        response_data: { caption: { value: 'a cat', value_type: 'RAW' }, thumb: link },
      },
      urls,
    );
    expect(r.isError).toBeUndefined();
    expect(r.structuredContent).toEqual({
      caption: 'a cat',
      thumb: { url: link.value, media_type: 'image/png', bytes: 68, expires_at: link.expires_at },
    });
    expect(r.content[0]).toEqual({ type: 'text', text: JSON.stringify(r.structuredContent) });
    expect(r.content[1]).toMatchObject({ type: 'resource_link', uri: link.value, name: 'thumb', mimeType: 'image/png', size: 68 });
    expect(r._meta['pipegate/execution']).toEqual({ execution_id: 'e1', status: 'completed', ...urls });
  });

  it("a list of files (a map's): each file in its place, null where an item failed, a resource_link per file", () => {
    const r = callResult(
      {
        status: 'completed',
        execution_id: 'e1',
        error_message: null,
        response_data: {
          gallery: {
            value: ['https://api.example/v1/assets/a', null, 'https://api.example/v1/assets/c'],
            value_type: 'ASSET',
            media_type: ['image/png', null, 'image/jpeg'],
            bytes: [10, null, 30],
            expires_at: link.expires_at,
          },
        },
      },
      urls,
    );
    expect(r.structuredContent).toEqual({
      gallery: [
        { url: 'https://api.example/v1/assets/a', media_type: 'image/png', bytes: 10, expires_at: link.expires_at },
        null,
        { url: 'https://api.example/v1/assets/c', media_type: 'image/jpeg', bytes: 30, expires_at: link.expires_at },
      ],
    });
    expect(r.content.slice(1)).toEqual([
      expect.objectContaining({ type: 'resource_link', uri: 'https://api.example/v1/assets/a', name: 'gallery-1', size: 10 }),
      expect.objectContaining({ type: 'resource_link', uri: 'https://api.example/v1/assets/c', name: 'gallery-3', mimeType: 'image/jpeg' }),
    ]);
  });

  it("a failed or cancelled one: isError with the caller's reason and no structured content", () => {
    const failed = callResult(
      { status: 'failed', execution_id: 'e1', error_message: "Node 'look' failed: upstream answered 500", response_data: {} },
      urls,
    );
    expect([failed.isError, failed.structuredContent, failed.content]).toEqual([
      true,
      undefined,
      [{ type: 'text', text: "Execution e1 failed: Node 'look' failed: upstream answered 500" }],
    ]);
    expect(callResult({ status: 'cancelled', execution_id: 'e1', error_message: null, response_data: {} }, urls).content).toEqual([
      { type: 'text', text: 'Execution e1 was cancelled.' },
    ]);
  });

  it('one still running: not an error, no outputs yet, where to follow it', () => {
    const r = stillRunning({ execution_id: 'e1', status: 'running' }, urls, 25);
    expect([r.isError, r.structuredContent]).toEqual([undefined, {}]);
    expect(r.content[0]?.text).toContain(`still running after 25 s`);
    expect(r.content[0]?.text).toContain(urls.status_url);
    expect(callResult({ status: 'pending', execution_id: 'e1', error_message: null, response_data: {} }, urls).structuredContent).toEqual(
      {},
    );
  });

  it('an execution as a task: its id, its status as a task’s, its retention as the time to live', () => {
    const e = { execution_id: 'e1', created_at: '2026-11-27T10:00:00.000Z', started_at: '2026-11-27T10:00:01.000Z', completed_at: null };
    expect(taskOf({ ...e, status: 'pending' }, 1000, null)).toEqual({
      taskId: 'e1',
      status: 'working',
      ttl: 1000,
      createdAt: e.created_at,
      lastUpdatedAt: e.started_at,
      pollInterval: 1000,
      statusMessage: 'execution pending',
    });
    const failed = taskOf({ ...e, status: 'failed', completed_at: '2026-11-27T10:00:02.000Z' }, 1000, "Node 'look' failed");
    expect(failed).toMatchObject({
      status: 'failed',
      lastUpdatedAt: '2026-11-27T10:00:02.000Z',
      statusMessage: "execution failed: Node 'look' failed",
    });
    expect(failed).not.toHaveProperty('pollInterval');
    expect(taskOf({ ...e, status: 'cancelled' }, 1000, null).status).toBe('cancelled');
    // Waiting for the caller's event: still working (nothing to elicit), the URL in the message.
    const waiting = [{ node_id: 'approval', resume_url: 'https://api.example/v1/resume/w1.x', expires_at: '2026-11-28T10:00:00.000Z' }];
    expect(taskOf({ ...e, status: 'running' }, 1000, null, waiting)).toMatchObject({
      status: 'working',
      statusMessage:
        'execution running; it waits for an event at wait node approval: POST a JSON object to https://api.example/v1/resume/w1.x (no key; once; until 2026-11-28T10:00:00.000Z)',
    });
  });
});

describe('progress', () => {
  const at = (node: string, type: NodeProgress['type'], state: NodeProgress['state'], t: number): NodeProgress => ({
    node,
    type,
    state,
    at: t,
  });
  const progress = [
    at('name', 'input', 'started', 1),
    at('name', 'input', 'finished', 2),
    at('token', 'input', 'finished', 2),
    at('look', 'http', 'started', 3),
    at('look', 'http', 'failed', 9),
    at('debug', 'output', 'finished', 10),
  ];
  const shown = shownNodes(def, dep);

  it('counts the nodes a caller sees, one step per node that ended, never a hidden one', () => {
    expect([...shown].sort()).toEqual(['caption', 'look', 'name', 'old', 'photo', 'site', 'thumb', 'times']);
    expect(progressSteps(progress, shown, true, 0)).toEqual([
      { progress: 1, total: 8, message: 'input node name finished (1 of 8 steps)' },
      { progress: 2, total: 8, message: 'http node look failed (2 of 8 steps)' },
    ]);
    expect(progressSteps(progress, shown, true, 1)).toHaveLength(1);
  });

  it('names no node with node detail off', () => {
    expect(progressSteps(progress, shown, false, 0).map((s) => s.message)).toEqual(['1 of 8 steps done', '2 of 8 steps done']);
  });

  it('fuzzed: steps only ever grow, by one, within the total, whatever order the events come in', () => {
    const ids = [...Object.keys(def.nodes)];
    const event = fc.record({
      node: fc.constantFrom(...ids),
      state: fc.constantFrom('started', 'finished', 'failed') as fc.Arbitrary<NodeProgress['state']>,
    });
    fc.assert(
      fc.property(fc.array(event, { maxLength: 40 }), (events) => {
        const steps = progressSteps(
          events.map((e, i) => ({ ...e, type: 'transform', at: i })),
          shown,
          true,
          0,
        );
        steps.forEach((s, i) => expect([s.progress, s.total]).toEqual([i + 1, shown.size]));
      }),
    );
  });
});
