/**
 * The execute and publish requests and the pipeline definition are each declared once, beside
 * their parsers, and documented from that declaration: these tests hold each parser's extra
 * steps (which problem is reported, a null callback's own error, entries of unknown ids, the
 * definition's walk over its nodes) to the document's JSON Schema.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import * as v from 'valibot';
import { applyVisibility, PublishRequest, Visibility } from '../../../functions/core/contract';
import { AppError } from '../../../functions/core/errors';
import { ExecutionRequest, InputValue, parseExecutionRequest } from '../../../functions/core/execution-request';
import { serviceOpenApi } from '../../../functions/core/openapi-service';
import { SCHEMAS } from '../../../functions/core/openapi-shared';
import {
  DEFAULT_HTTP_TIMEOUT_MS,
  DEFAULT_MAX_NODES,
  DELAY_MAX_MS,
  HTTP_METHODS,
  HTTP_TIMEOUT_MAX_MS,
  MAX_DESCRIPTION_LENGTH,
  Node,
  PipelineDefinitionSchema,
  TOP_LEVEL_FIELDS,
  validateDefinition,
} from '../../../functions/core/pipeline';
import { NODE_TYPES, nodeSchemaName } from '../../../functions/core/nodes';
import { SHAPES } from '../../../functions/core/shapes';
import { GATEWAY_RESPONSES } from '../../../lib/gateway-responses';
import type { Contract } from '../../../functions/core/types';
import { thrown } from '../../support/thrown';
import { ROUTES } from '../../../lib/routes';

type Props = { properties: Record<string, Record<string, unknown>> };
const props = (name: keyof typeof SCHEMAS) => (SCHEMAS[name] as Props).properties;
const keys = (o: object) => Object.keys(o).sort();

describe('the pipeline definition: one shape, checked and documented', () => {
  it('is the schema the definition check uses', () => {
    expect(SHAPES.PipelineDefinition).toBe(PipelineDefinitionSchema);
    expect(SHAPES.Node).toBe(Node);
    expect(NODE_TYPES.map((t) => SHAPES[nodeSchemaName(t)])).toEqual(Node.options);
    expect(keys(SHAPES.PipelineDefinition.pipe[0].entries)).toEqual([...TOP_LEVEL_FIELDS].sort());
  });

  it('states the limits and the defaults the engine applies', () => {
    const def = props('PipelineDefinition');
    expect(def.description?.maxLength).toBe(MAX_DESCRIPTION_LENGTH);
    expect(def.nodes?.maxProperties).toBe(DEFAULT_MAX_NODES);
    const http = props('HttpNode');
    expect(http.timeout_ms).toMatchObject({ maximum: HTTP_TIMEOUT_MAX_MS, default: DEFAULT_HTTP_TIMEOUT_MS });
    expect(http.method).toMatchObject({ enum: [...HTTP_METHODS], default: 'GET' });
    expect(props('DelayNode').ms?.maximum).toBe(DELAY_MAX_MS);
  });

  it('accepts nothing its document refuses: the walk adds problems, never takes more', () => {
    const schema = documented('PipelineDefinition');
    // Mostly right, wrong now and then: a field is its good value, or a near miss, or anything.
    const mostly = <T>(ok: fc.Arbitrary<T>, ...near: unknown[]) =>
      fc.oneof(
        { arbitrary: ok as fc.Arbitrary<unknown>, weight: 40 },
        { arbitrary: value, weight: 1 },
        ...near.map((n) => ({ arbitrary: fc.constant(n), weight: 1 })),
      );
    const some = (ok: fc.Arbitrary<unknown>) => fc.oneof({ arbitrary: fc.constant(undefined), weight: 2 }, { arbitrary: ok, weight: 2 });
    const rarely = (x: fc.Arbitrary<unknown>) => fc.oneof({ arbitrary: fc.constant(undefined), weight: 40 }, { arbitrary: x, weight: 1 });
    const ref = (target: string) => mostly(fc.constant(target), 'ghost', 'out', 'b');
    const middle = fc.oneof(
      fc.record({
        type: fc.constant('transform'),
        inputs: mostly(fc.tuple(ref('a'))),
        expression: mostly(fc.constantFrom('a', '$string(a)'), '', ' ', '('),
        if: some(mostly(fc.constant("a != ''"), '', '(')),
        join: some(mostly(fc.constant('any'), 'some', 1)),
        description: some(fc.string({ maxLength: 3 })),
      }),
      fc.record({
        type: fc.constant('map'),
        inputs: mostly(fc.tuple(ref('a')), ['item']),
        items: mostly(fc.constant('[a, a]'), '', '('),
        concurrency: some(mostly(fc.integer({ min: 1, max: 32 }), 0, 33, 1.5)),
        on_item_error: some(mostly(fc.constantFrom('fail', 'skip'), 'ignore')),
        node: mostly(
          fc.oneof(
            fc.record({ type: fc.constant('transform'), expression: mostly(fc.constant('item'), '(') }),
            fc.record({
              type: fc.constant('http'),
              url: mostly(fc.constant('https://x.example/'), '/rel'),
              method: some(fc.constant('POST')),
            }),
          ),
          { type: 'map', items: 'a', node: { type: 'transform', expression: 'item' } },
          { type: 'delay', ms: 1 },
          { type: 'transform', inputs: ['a'], expression: 'a' },
        ),
        if: some(mostly(fc.constant("a != ''"))),
      }),
      fc.record({
        type: fc.constant('http'),
        inputs: some(fc.tuple(ref('a'))),
        method: some(mostly(fc.constant('POST'), 'get')),
        url: mostly(fc.constant('https://x.example/'), '/rel'),
        headers: some(
          fc.dictionary(
            mostly(fc.constant('Accept'), 'bad name', 'constructor', '__proto__') as fc.Arbitrary<string>,
            mostly(fc.constant('v'), 'a\nb'),
            { maxKeys: 2 },
          ),
        ),
        body: some(mostly(fc.constant('a'), '')),
        timeout_ms: some(mostly(fc.integer({ min: 1, max: 30_000 }), 0, 30_001, 1.5)),
      }),
      fc.record({
        type: fc.constant('delay'),
        inputs: mostly(fc.tuple(ref('a')), [], ['a', 'a']),
        ms: mostly(fc.integer({ min: 0, max: 60_000 }), -1, 60_001),
      }),
    );
    const input = mostly(
      fc
        .oneof(
          fc.record({ type: fc.constant('input'), value_type: fc.constant('string'), value: mostly(fc.string({ maxLength: 3 }), 1) }),
          fc.record({ type: fc.constant('input'), value_type: fc.constant('integer'), value: mostly(fc.integer(), 1.5) }),
          fc.record({
            type: fc.constant('input'),
            value_type: fc.constant('asset'),
            value: fc.constant('data:image/png;base64,iVBORw0KGgo='),
            media_types: some(mostly(fc.constant(['image/png']), [], ['image/png', 'image/png'], ['Image/PNG'])),
            max_bytes: some(mostly(fc.integer({ min: 1, max: 10 }), 0)),
          }),
        )
        .chain((n) =>
          fc.record({ x: rarely(value), description: some(mostly(fc.string({ maxLength: 3 }))) }).map((more) => ({ ...n, ...more })),
        ),
    );
    const nodes = fc.record({
      a: input,
      b: mostly(middle),
      out: fc.record({
        type: fc.constant('output'),
        from: mostly(ref('b'), ['b', 'a'], [], ['b', 'b']),
        if: some(mostly(fc.constant("a != ''"))),
        description: some(fc.string({ maxLength: 3 })),
      }),
    });
    const extraId = fc.constantFrom('c', 'constructor', '__proto__', 'execution_id', '9bad', 'x'.repeat(65));
    const definition = mostly(
      fc
        .record({
          nodes: mostly(nodes),
          extra: some(fc.tuple(extraId, middle)),
          description: some(mostly(fc.string({ maxLength: 5 }), 'x'.repeat(2001))),
          retry_interrupted: some(mostly(fc.boolean())),
          x: rarely(value),
        })
        .map(({ extra, nodes: n, ...rest }) => ({
          ...rest,
          nodes:
            Array.isArray(extra) && typeof n === 'object' && n !== null && !Array.isArray(n) ? { ...n, [extra[0] as string]: extra[1] } : n,
        })),
    );
    let accepted = 0;
    fc.assert(
      fc.property(definition, (d) => {
        const received = JSON.parse(JSON.stringify(d) ?? 'null') as unknown;
        const result = validateDefinition(received);
        if (result.ok) {
          accepted += 1;
          expect(schema(received)).toBe(true);
          // What is stored is what was sent: no default written in, nothing dropped.
          expect(result.definition).toEqual(received);
        }
      }),
      { numRuns: 500 },
    );
    // The property says something only if some definitions pass.
    expect(accepted).toBeGreaterThan(0);
  });
});

const contract: Contract = {
  inputs: [
    { id: 'a', value_type: 'string', value: 'x', visible: true },
    { id: 'constructor', value_type: 'integer', value: 1, visible: true },
  ],
  outputs: [{ id: 'o', visible: true }],
};

/**
 * The document's own JSON Schema for a component, as a validator reads it. `format` (a
 * callback's `uri`) is left out: the parsers check URLs after the structure, as 422s.
 */
function documented(name: string): ValidateFunction {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  addFormats(ajv);
  ajv.addSchema({ ...serviceOpenApi(ROUTES), $id: 'urn:pipegate:doc' });
  const validate = ajv.getSchema(`urn:pipegate:doc#/components/schemas/${name}`);
  if (validate === undefined) throw new Error(`no component ${name}`);
  return validate;
}

/** Bodies near the shape: right, and wrong in one place or another. */
const value = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.object(),
);
const ids = fc.constantFrom('a', 'constructor', '__proto__', 'prototype', 'other');
const visibility = fc.oneof(fc.record({ visible: fc.oneof(fc.boolean(), value) }), fc.record({ visible: fc.boolean(), x: value }), value);

describe('the execute request: one shape, parsed and documented', () => {
  const parse = (body: unknown) =>
    parseExecutionRequest({ body: JSON.stringify(body), contentType: 'application/json' }, contract, {
      maxBodyBytes: 262_144,
      maxInputs: 4,
      allowPrivateUrls: false,
    });
  // JSON.stringify drops what JSON cannot hold (undefined); JSON.parse gives back an own
  // `__proto__` key as the service receives it.
  const asReceived = (x: unknown): unknown => JSON.parse(JSON.stringify(x) ?? 'null');

  it('is the schema the parser checks with', () => {
    expect(SHAPES.ExecutionRequest).toBe(ExecutionRequest);
    expect(SHAPES.InputValue).toBe(InputValue);
  });

  it('refuses exactly the structure its document refuses (400), and takes what it documents', () => {
    const schema = documented('ExecutionRequest');
    const entry = fc.oneof(
      fc.record({ value, value_type: fc.constantFrom('RAW', 'REFERENCE', 'ASSET', 'raw') }, { requiredKeys: [] }),
      value,
    );
    const body = fc.oneof(
      fc.record(
        {
          callback: fc.oneof(fc.constant('https://example.com/hook'), value),
          workflow_input: fc.oneof(fc.dictionary(ids, entry), value),
          x: value,
        },
        { requiredKeys: [] },
      ),
      value,
    );
    fc.assert(
      fc.property(body, (b) => {
        const received = asReceived(b);
        let code: string | null = null;
        try {
          parse(received);
        } catch (e) {
          if (!(e instanceof AppError)) throw e;
          code = e.code;
        }
        // Blank or null callbacks, unknown inputs and wrong types are the parser's 4xx beyond
        // the structure; the structure (400 Invalid Input Structure) is the document's.
        const nullCallback = (received as { callback?: unknown } | null)?.callback === null;
        if (schema(received)) expect(code).not.toBe('InvalidInputStructure');
        else expect(code === 'InvalidInputStructure' || (nullCallback && code === 'MissingCallbackUrl')).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

describe('the publish request: one shape, parsed and documented', () => {
  it('is the schema the parser checks with', () => {
    expect(SHAPES.PublishRequest).toBe(PublishRequest);
    expect(SHAPES.Visibility).toBe(Visibility);
  });

  it('refuses what its document refuses and takes what it documents, for known ids', () => {
    const schema = documented('PublishRequest');
    const known = fc.constantFrom('a', 'constructor');
    const body = fc.oneof(
      fc.record(
        {
          inputs: fc.oneof(fc.dictionary(known, visibility), value),
          outputs: fc.oneof(fc.dictionary(fc.constant('o'), visibility), value),
          form: fc.oneof(fc.record({ enabled: fc.boolean(), title: fc.string() }, { requiredKeys: [] }), value),
          x: value,
        },
        { requiredKeys: [] },
      ),
      value,
    );
    fc.assert(
      fc.property(body, (b) => {
        const received = JSON.parse(JSON.stringify(b) ?? 'null') as unknown;
        let refused = false;
        try {
          applyVisibility(contract, received, null);
        } catch (e) {
          if (!(e instanceof AppError)) throw e;
          refused = true;
        }
        // A JSON null is a body, and not the object the document asks for (no body at all is undefined, {}).
        expect(refused).toBe(!schema(received));
      }),
      { numRuns: 500 },
    );
  });

  it('checks every entry, constructor and __proto__ included', () => {
    const problems = (body: string) =>
      thrown(() => applyVisibility(contract, JSON.parse(body), null), AppError).detail as { path: string; reason: string }[];
    expect(problems('{"inputs":{"constructor":{"visible":1}}}')).toEqual([
      { path: 'inputs.constructor.visible', reason: 'must be true or false' },
    ]);
    expect(problems('{"inputs":{"__proto__":{"visible":true}}}')).toEqual([
      { path: 'inputs.__proto__', reason: 'no input node with this id' },
    ]);
    expect(applyVisibility(contract, JSON.parse('{"inputs":{"constructor":{"visible":false}}}'), null).inputs[1]?.visible).toBe(false);
  });
});

describe('request shapes validate at the edge as they are documented', () => {
  it('RotateRequest fills in its documented defaults', () => {
    expect(v.parse(SHAPES.RotateRequest, {})).toEqual({ grace_seconds: 0, credential: 'api_key' });
    expect(props('RotateRequest').grace_seconds?.default).toBe(0);
  });
});

describe('the Unauthorized shape holds every body the gateway answers with', () => {
  it("an API key's refusal, and AWS's ACCESS_DENIED for an owner refused by IAM, whose substitutions are empty", () => {
    const denied = GATEWAY_RESPONSES.find((r) => r.type === 'ACCESS_DENIED');
    const iamRefusal = JSON.parse((denied?.body ?? '').replace(/\$context\.authorizer\.[A-Za-z]+/g, '')) as unknown;
    expect(v.is(SHAPES.Unauthorized, iamRefusal)).toBe(true);
    expect(v.is(SHAPES.Unauthorized, { error: 'Unauthorized', reason: 'revoked', detail: 'this key was replaced' })).toBe(true);
    expect(v.is(SHAPES.Unauthorized, { error: 'Unauthorized', reason: 'guessed' })).toBe(false);
  });
});
