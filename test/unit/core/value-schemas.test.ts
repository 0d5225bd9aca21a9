/**
 * Each input value type's schema (values.ts) is what the execute parser checks a value with and
 * what a deployment's document says of it: a value the document takes passes the parser's value
 * check, and one it refuses gets the 400 or 422 the parser has always given, in its words. What
 * the document cannot say is named in its description and allowed for here: a reference's host
 * and address guard, an asset's forms.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import fc from 'fast-check';
import { AppError } from '../../../functions/core/errors';
import { parseExecutionRequest } from '../../../functions/core/execution-request';
import { validateDefinition } from '../../../functions/core/pipeline';
import { deploymentOpenApi, type DeploymentDocumentSource } from '../../../functions/core/openapi';
import type { InputValueType } from '../../../functions/core/types';
import { INPUT_VALUE_TYPES, isRawValue, matchesValueType, requestValueType } from '../../../functions/core/values';
import { CALLER_ROUTES } from '../../../lib/routes';

/** One visible input per type, its id the type's name. */
const PUBLISHED: Record<InputValueType, unknown> = {
  string: 'x',
  integer: 1,
  float: 0.5,
  boolean: true,
  reference: 'https://example.com/a.json',
  asset: 'data:image/png;base64,iVBORw0KGgo=',
};
const DEPLOYMENT = {
  deployment_id: '6f1d7c2e-8a43-4b9e-9a57-2d1f0c3b4a51',
  pipeline_id: 'every-type',
  version: 1,
  published_at: '2026-11-25T08:00:00.000Z',
  inputs: INPUT_VALUE_TYPES.map((t) => ({ id: t, value_type: t, value: PUBLISHED[t], visible: true })),
  outputs: [{ id: 'o', visible: true }],
} as DeploymentDocumentSource;

/**
 * The document's request schema as a validator reads it. `format` is an annotation in JSON
 * Schema 2020-12 (validators do not assert it by default): a reference's form is its pattern,
 * plus the host its description names.
 */
function documented(): ValidateFunction {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ ...deploymentOpenApi(DEPLOYMENT, 'https://x.example/api', CALLER_ROUTES), $id: 'urn:pipegate:deployment' });
  const validate = ajv.getSchema('urn:pipegate:deployment#/components/schemas/DeploymentExecutionRequest');
  if (validate === undefined) throw new Error('no DeploymentExecutionRequest');
  return validate;
}

type Outcome = { ok: true } | { ok: false; code: string; detail: unknown };
function parse(body: unknown): Outcome {
  try {
    parseExecutionRequest(
      { body: JSON.stringify(body), contentType: 'application/json' },
      { inputs: DEPLOYMENT.inputs, outputs: DEPLOYMENT.outputs },
      { maxBodyBytes: 262_144, maxInputs: 8, allowPrivateUrls: false },
    );
    return { ok: true };
  } catch (e) {
    if (!(e instanceof AppError)) throw e;
    return { ok: false, code: e.code, detail: e.detail };
  }
}

/** The words a caller has always read for a RAW value of the wrong type (the tests of the parser check them too). */
const WRONG_TYPE: Record<Exclude<InputValueType, 'asset'>, string> = {
  string: "input 'string' must be a string (its type is string)",
  integer: "input 'integer' must be a whole number (its type is integer)",
  float: "input 'float' must be a finite number (its type is float)",
  boolean: "input 'boolean' must be true or false (its type is boolean)",
  reference: "input 'reference' must be an absolute http or https URL",
};
const ASSET_NOT_STRING = "input 'asset' must be base64, a base64 data URI or an upload's value (a string)";

const namesHost = (s: string): boolean => URL.canParse(s) && new URL(s).hostname !== '';

/** Values of every JSON kind, and near each type's edges. */
const anyValue = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.object(),
);
const NEAR: Record<InputValueType, fc.Arbitrary<unknown>> = {
  string: fc.oneof(fc.string(), fc.constant('')),
  integer: fc.oneof(
    fc.constantFrom(2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, -(2 ** 53), 2 ** 60, 1e21, 1.5, -0, 0, '1'),
    fc.maxSafeInteger(),
    fc.integer({ min: 2 ** 53, max: 2 ** 62 }),
  ),
  float: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(1e308, -1e-308, '0.5')),
  boolean: fc.constantFrom(true, false, 'true', 0, 1),
  reference: fc.oneof(
    fc.webUrl(),
    fc.constantFrom(
      'HTTPS://EXAMPLE.COM/A',
      ' http://example.com/',
      'http:example.com',
      'http:/example.com',
      'http:\\\\example.com',
      'http://',
      'https:///example.com',
      'http:///',
      'ftp://example.com/',
      'http://127.0.0.1/',
      'http://169.254.169.254/latest',
      'http://user:pw@example.com/',
      'http://[::1]/',
      'http://a b.example/',
      'http://example.com:99999/',
      'https://bücher.example/',
    ),
    fc.string().map((s) => `http://${s}`),
    fc.string().map((s) => `https:${s}`),
  ),
  asset: fc.oneof(
    fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString('base64')),
    fc.uint8Array({ maxLength: 40 }).map((b) => `data:image/png;base64,${Buffer.from(b).toString('base64')}`),
    fc.uuid().map((u) => `upload:${u}`),
    fc.constantFrom('upload:x', 'data:,hi', 'not base64!', ''),
  ),
};
const typed = fc
  .constantFrom(...INPUT_VALUE_TYPES)
  .chain((type) => fc.record({ type: fc.constant(type), value: fc.oneof(NEAR[type], anyValue) }));

describe("an input value type's schema is the parser's check and the document's word", () => {
  const validate = documented();
  // JSON.parse gives back what the service receives (-0 becomes 0, undefined keys vanish).
  const asReceived = (x: unknown): unknown => JSON.parse(JSON.stringify(x));

  it('for every type: what the document takes passes the value check, what it refuses gets the 400 or 422 of today', () => {
    fc.assert(
      fc.property(typed, ({ type, value }) => {
        const body = asReceived({ workflow_input: { [type]: { value, value_type: requestValueType(type) } } });
        const sent = (body as { workflow_input: Record<string, { value: unknown }> }).workflow_input[type]?.value;
        const accepted = validate(body);
        const got = parse(body);
        if (!isRawValue(sent)) {
          // Not a string, number or boolean: the structure, for every type alike.
          expect(accepted).toBe(false);
          expect(got).toMatchObject({ ok: false, code: 'InvalidInputStructure' });
        } else if (type === 'asset') {
          // A string is an asset value to the document; which form it is, is the parser's 422.
          if (accepted) expect(got.ok || got.code === 'InvalidInput').toBe(true);
          else expect(got).toEqual({ ok: false, code: 'InvalidInput', detail: ASSET_NOT_STRING });
        } else if (!accepted) {
          expect(got).toEqual({ ok: false, code: 'InvalidInput', detail: WRONG_TYPE[type] });
        } else if (type === 'reference' && !namesHost(sent as string)) {
          // The pattern holds but no host is named: the rule its description states.
          expect(got).toEqual({ ok: false, code: 'InvalidInput', detail: WRONG_TYPE.reference });
        } else if (type === 'reference') {
          // The address guard, after the form; its description names it.
          if (!got.ok)
            expect(got).toMatchObject({
              code: 'InvalidInput',
              detail: expect.stringMatching(/^input 'reference' is not an allowed URL: /),
            });
        } else {
          expect(got).toEqual({ ok: true });
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("a definition's or run's value check (matchesValueType) takes what the document's value schema takes", () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const doc = deploymentOpenApi(DEPLOYMENT, 'https://x.example/api', CALLER_ROUTES) as unknown as {
      components: { schemas: Record<string, unknown> };
    };
    const valueOf = (t: InputValueType) =>
      ajv.compile(
        (
          doc.components.schemas.DeploymentExecutionRequest as {
            properties: { workflow_input: { properties: Record<string, { properties: { value: object } }> } };
          }
        ).properties.workflow_input.properties[t]?.properties.value ?? {},
      );
    const documentedValue = Object.fromEntries(INPUT_VALUE_TYPES.map((t) => [t, valueOf(t)])) as Record<InputValueType, ValidateFunction>;
    fc.assert(
      fc.property(typed, ({ type, value }) => {
        const x = asReceived(value);
        const takes = documentedValue[type](x);
        // A definition keeps an asset as a data URI only: narrower than a request's string.
        if (type === 'asset') expect(!matchesValueType(type, x) || takes).toBe(true);
        else if (type === 'reference') expect(matchesValueType(type, x)).toBe(takes && namesHost(x as string));
        else expect(matchesValueType(type, x)).toBe(takes);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("a reference's form is the same in a definition", () => {
  const problems = (nodes: Record<string, unknown>) => {
    const r = validateDefinition({ nodes });
    return r.ok ? [] : r.problems;
  };

  it.each([' https://example.com/', 'https:example.com', 'https://'])(
    'refuses %j as a reference input value and as an http node url',
    (url) => {
      expect(problems({ src: { type: 'input', value_type: 'reference', value: url }, out: { type: 'output', from: 'src' } })).toEqual([
        {
          path: 'nodes.src.value',
          reason: expect.stringMatching(/^must be an absolute http or https URL because value_type is reference/),
        },
      ]);
      expect(problems({ call: { type: 'http', url }, out: { type: 'output', from: 'call' } })).toEqual([
        { path: 'nodes.call.url', reason: 'must be an absolute http:// or https:// URL' },
      ]);
    },
  );

  it('takes one in any case, and an http node url with a secret placeholder', () => {
    expect(
      problems({ src: { type: 'input', value_type: 'reference', value: 'HTTPS://Example.com/a' }, out: { type: 'output', from: 'src' } }),
    ).toEqual([]);
    expect(
      problems({ call: { type: 'http', url: 'https://example.com/{{secrets.token}}/x' }, out: { type: 'output', from: 'call' } }),
    ).toEqual([]);
  });
});
