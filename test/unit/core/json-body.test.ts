/**
 * Request bodies as JSON (functions/core/json-body.ts): the media types taken, and the parse that
 * refuses a key held twice by one object, fuzzed against JSON.parse over generated documents.
 */
import fc from 'fast-check';
import { assertJsonMediaType, duplicateKey, isJsonMediaType, ownerRequestBody, parseJson } from '../../../functions/core/json-body';
import { AppError } from '../../../functions/core/errors';

/** Any JSON value; object keys drawn from a small set so that nested objects share them. */
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null)),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'é', 'k"q', '\\', '__proto__', ''), tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** A key written as JSON may be escaped, and still be the same key. */
const escapedKey = (k: string, escape: boolean): string =>
  escape ? `"${[...k].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"` : JSON.stringify(k);

describe('duplicateKey', () => {
  it('finds nothing in any document JSON.stringify writes (no object can hold a key twice there)', () => {
    fc.assert(
      fc.property(json, fc.constantFrom(undefined, 2, '\t'), (value, indent) => {
        expect(duplicateKey(JSON.stringify(value, null, indent))).toBeNull();
      }),
    );
  });

  it('finds a key written twice in one object, however deep and however escaped, and says where', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('x', 'y', 'ü'), { maxLength: 4 }),
        fc.string({ minLength: 1, maxLength: 5 }),
        fc.boolean(),
        json,
        json,
        (path, key, escape, first, second) => {
          // Prepare: {"x": {"y": {<key>: first, <key escaped>: second}}}
          let text = `{ ${JSON.stringify(key)} : ${JSON.stringify(first, null, 1)} ,\n${escapedKey(key, escape)}:${JSON.stringify(second)}}`;
          for (const p of [...path].reverse()) text = `{"z":[{"x":1}],${JSON.stringify(p)}:${text}}`;
          // Act
          const found = duplicateKey(text);
          // Assess
          expect(found).toEqual({ key, at: path.length === 0 ? '(body)' : path.join('.') });
        },
      ),
    );
  });

  it('names the place of a duplicate inside an array by its index', () => {
    expect(duplicateKey('{"nodes":[{"a":1},{"b":1,"b":2}]}')).toEqual({ key: 'b', at: 'nodes[1]' });
    expect(duplicateKey('[{"a":1},{"a":2}]')).toBeNull();
  });
});

describe('parseJson', () => {
  it('gives the value JSON.parse gives for every document without a repeated key', () => {
    fc.assert(
      fc.property(json, fc.constantFrom(undefined, 2, '\t'), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        expect(parseJson(text)).toEqual({ ok: true, value: JSON.parse(text) as unknown });
      }),
    );
  });

  it('says what is wrong, in one line and by place', () => {
    expect(parseJson('{"a":1,"a":2}')).toEqual({
      ok: false,
      path: '(body)',
      reason: 'has the key "a" twice',
      detail: 'body has the key "a" twice',
    });
    expect(parseJson('{"o":{"a":1,"a":2}}')).toMatchObject({ ok: false, path: 'o', detail: 'o has the key "a" twice' });
    expect(parseJson('{')).toMatchObject({ ok: false, path: '(body)', reason: 'body is not valid JSON' });
  });

  it('reads an owner body: none is undefined, JSON null is null, a problem is 400 Invalid Request with its place', () => {
    expect(ownerRequestBody(null)).toBeUndefined();
    expect(ownerRequestBody(' \n')).toBeUndefined();
    expect(ownerRequestBody('null')).toBeNull();
    try {
      ownerRequestBody('{"a":{"b":1,"b":1}}');
      throw new Error('not refused');
    } catch (e) {
      expect(e).toBeInstanceOf(AppError);
      expect((e as AppError).detail).toEqual([{ path: 'a', reason: 'has the key "b" twice' }]);
    }
  });
});

describe('media types', () => {
  it('takes application/json, any +json type and no type at all; refuses the rest of a non-empty body with 415', () => {
    for (const t of [undefined, '', 'application/json', 'Application/JSON; charset=utf-8', 'application/problem+json'])
      expect(isJsonMediaType(t)).toBe(true);
    for (const t of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx'])
      expect(isJsonMediaType(t)).toBe(false);
    expect(() => assertJsonMediaType('{}', 'text/plain')).toThrow(AppError);
    expect(() => assertJsonMediaType(' ', 'text/plain')).not.toThrow();
    expect(() => assertJsonMediaType(null, 'text/plain')).not.toThrow();
  });
});
