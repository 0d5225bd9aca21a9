/**
 * The documents are never looser than the server: a value the service document allows for
 * `since` (an RFC 3339 date-time) or for an upload's `media_type` (its pattern) is one the server
 * takes; a fuzz of the whole API met both answering 400 to values the documents allowed.
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { serviceOpenApi } from '../../../functions/core/openapi-service';
import { parseUploadRequest } from '../../../functions/core/upload-request';
import { sinceOf } from '../../../functions/services/owner-executions.service';

type Json = Record<string, unknown>;
const doc = serviceOpenApi() as unknown as Json;
const ajv = new Ajv2020({ strict: false });
addFormats(ajv);

const components = (doc.components as Json).schemas as Record<string, Json>;
const sinceParameter = () => {
  const paths = doc.paths as Record<string, Record<string, { parameters?: Json[] }>>;
  const list = paths['/v1/pipelines/{pipeline_id}/deployment/executions']?.get?.parameters ?? [];
  const ref = list.map((p) => (typeof p.$ref === 'string' ? (resolve(p.$ref) as Json) : p)).find((p) => p.name === 'since');
  if (!ref) throw new Error('no since parameter');
  return ref.schema as Json;
};
function resolve(ref: string): unknown {
  return ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((o, k) => (o as Json)[k], doc);
}

const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));

/** RFC 3339 date-times as a client may write them: either case, any fraction, any offset, leap seconds. */
const rfc3339 = fc
  .tuple(
    fc.integer({ min: 1970, max: 2999 }),
    fc.integer({ min: 1, max: 12 }),
    fc.integer({ min: 1, max: 28 }),
    two(23),
    two(59),
    fc.oneof(two(59), fc.constant('60')),
    fc.option(fc.stringMatching(/^[0-9]{1,9}$/), { nil: undefined }),
    fc.oneof(
      fc.constantFrom('Z', 'z'),
      fc.tuple(fc.constantFrom('+', '-'), two(23), two(59)).map(([s, h, m]) => `${s}${h}:${m}`),
    ),
    fc.constantFrom('T', 't'),
  )
  .map(
    ([y, mo, d, h, mi, s, frac, zone, t]) =>
      `${y}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')}${t}${h}:${mi}:${s}${frac === undefined ? '' : `.${frac}`}${zone}`,
  );

describe('since', () => {
  it('is documented as an RFC 3339 date-time', () => {
    expect(sinceParameter()).toMatchObject({ type: 'string', format: 'date-time' });
  });

  it('is taken by the server whenever the document allows it', () => {
    const allowed = ajv.compile(sinceParameter());
    fc.assert(
      fc.property(rfc3339, (s) => {
        fc.pre(allowed(s));
        expect(sinceOf(s)).toBeDefined();
      }),
      { numRuns: 2_000 },
    );
  });

  it('reads a leap second as the second before it, and refuses what names no time', () => {
    expect(sinceOf('2026-12-31T23:59:60Z')).toBe('2026-12-31T23:59:59.000Z');
    expect(sinceOf('2026-11-22t15:00:00z')).toBe('2026-11-22T15:00:00.000Z');
    expect(sinceOf('yesterday')).toBeUndefined();
  });
});

describe("an upload's media_type", () => {
  const schema = (components.UploadRequest?.properties as Json).media_type as Json;
  const allowed = ajv.compile(schema);

  it('is documented with the pattern the server checks', () => {
    expect(schema).toMatchObject({ type: 'string', pattern: expect.any(String) as unknown });
  });

  it('is taken by the server whenever the document allows it', () => {
    fc.assert(
      fc.property(fc.stringMatching(new RegExp(schema.pattern as string)), (mediaType) => {
        fc.pre(allowed(mediaType));
        expect(parseUploadRequest(JSON.stringify({ media_type: mediaType, bytes: 1 })).media_type).toBe(mediaType.toLowerCase());
      }),
      { numRuns: 1_000 },
    );
  });

  it('refuses in the document what the server refuses', () => {
    for (const bad of ['image', 'image/', '/png', 'image/png/x', 'image/*', 'ima ge/png', '-image/png', 'a'.repeat(128) + '/png'])
      expect({ bad, allowed: allowed(bad) }).toEqual({ bad, allowed: false });
  });
});
