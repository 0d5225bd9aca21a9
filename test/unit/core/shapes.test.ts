/**
 * Three request bodies keep a hand-written parser beside their shape (the execute request, the
 * definition, the publish request: each walks its maps itself to list every problem or to
 * choose between a 400 and a 422). These tests hold each parser to the fields and limits its
 * shape documents, so the two cannot drift.
 */
import * as v from 'valibot';
import { applyVisibility } from '../../../functions/core/contract';
import { AppError } from '../../../functions/core/errors';
import { parseExecutionRequest } from '../../../functions/core/execution-request';
import { SCHEMAS } from '../../../functions/core/openapi-shared';
import {
  DEFAULT_HTTP_TIMEOUT_MS,
  DEFAULT_MAX_NODES,
  DELAY_MAX_MS,
  HTTP_METHODS,
  HTTP_TIMEOUT_MAX_MS,
  MAX_DESCRIPTION_LENGTH,
  NODE_FIELDS,
  TOP_LEVEL_FIELDS,
} from '../../../functions/core/pipeline';
import { SHAPES } from '../../../functions/core/shapes';
import { GATEWAY_RESPONSES } from '../../../lib/gateway-responses';
import type { Contract } from '../../../functions/core/types';
import { thrown } from '../../support/thrown';

type Props = { properties: Record<string, Record<string, unknown>> };
const props = (name: keyof typeof SCHEMAS) => (SCHEMAS[name] as Props).properties;
const keys = (o: object) => Object.keys(o).sort();

describe('the definition check and the PipelineDefinition shape', () => {
  it('take the same top-level fields and the same fields per node type', () => {
    expect(keys(SHAPES.PipelineDefinition.pipe[0].entries)).toEqual([...TOP_LEVEL_FIELDS].sort());
    const documented = Object.fromEntries(SHAPES.Node.options.map((o) => {
      const { entries } = ('pipe' in o ? o.pipe[0] : o) as { entries: v.ObjectEntries & { type: v.LiteralSchema<string, undefined> } };
      return [entries.type.literal, keys(entries)];
    }));
    expect(documented).toEqual(Object.fromEntries(Object.entries(NODE_FIELDS).map(([t, f]) => [t, [...f].sort()])));
  });

  it('state the same limits', () => {
    const def = props('PipelineDefinition');
    expect(def.description?.maxLength).toBe(MAX_DESCRIPTION_LENGTH);
    expect(def.nodes?.maxProperties).toBe(DEFAULT_MAX_NODES);
    const http = props('HttpNode');
    expect(http.timeout_ms).toMatchObject({ maximum: HTTP_TIMEOUT_MAX_MS, default: DEFAULT_HTTP_TIMEOUT_MS });
    expect(http.method?.enum).toEqual([...HTTP_METHODS]);
    expect(props('DelayNode').ms?.maximum).toBe(DELAY_MAX_MS);
  });
});

const contract: Contract = { inputs: [{ id: 'a', value_type: 'string', value: 'x', visible: true }], outputs: [{ id: 'o', visible: true }] };

describe('the execute parser and the ExecutionRequest shape', () => {
  const parse = (body: unknown) => parseExecutionRequest({ body: JSON.stringify(body), contentType: 'application/json' }, contract, { maxBodyBytes: 262_144, maxInputs: 4, allowPrivateUrls: false });
  const samples: Record<string, unknown> = { callback: 'https://example.com/hook', workflow_input: { a: { value: 'y', value_type: 'RAW' } } };

  it('accept every documented field and refuse any other', () => {
    const fields = keys(SHAPES.ExecutionRequest.pipe[0].entries);
    expect(fields).toEqual(keys(samples));
    for (const f of fields) expect(() => parse({ [f]: samples[f] })).not.toThrow();
    expect(thrown(() => parse({ extra: 1 }), AppError).detail).toMatch(/not a known field/);
  });

  it('accept the documented value types of an input value', () => {
    expect(SHAPES.InputValue.entries.value_type.pipe[0].options).toEqual(['RAW', 'REFERENCE', 'ASSET']);
    expect(thrown(() => parse({ workflow_input: { a: { value: 'y', value_type: 'OTHER' } } }), AppError).detail).toMatch(/RAW, REFERENCE, ASSET/);
  });
});

describe('the publish parser and the PublishRequest shape', () => {
  it('accept every documented field and refuse any other', () => {
    const fields = keys(SHAPES.PublishRequest.pipe[0].entries);
    for (const f of fields) expect(() => applyVisibility(contract, { [f]: {} }, null)).not.toThrow();
    expect(() => applyVisibility(contract, { extra: {} }, null)).toThrow(AppError);
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
