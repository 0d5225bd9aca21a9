import fc from 'fast-check';
import { assertBodySize } from '../../../functions/core/body-size';
import { AppError } from '../../../functions/core/errors';
import { sortedJson } from '../../../functions/core/canonical';
import { parseExecutionRequest } from '../../../functions/core/execution-request';
import type { Contract } from '../../../functions/core/types';
import { thrown } from '../../support/thrown';

const contract: Contract = {
  inputs: [
    { id: 'name', value_type: 'string', value: 'world', visible: true },
    { id: 'times', value_type: 'integer', value: 1, visible: true },
    { id: 'ratio', value_type: 'float', value: 0.5, visible: true },
    { id: 'loud', value_type: 'boolean', value: false, visible: true },
    { id: 'secret', value_type: 'string', value: 'hidden', visible: false },
    { id: 'source', value_type: 'reference', value: 'https://example.com/data.json', visible: true },
  ],
  outputs: [{ id: 'message', visible: true }],
};

const opts = { maxBodyBytes: 1024, maxInputs: 4, allowPrivateUrls: false };
const JSON_TYPE = 'application/json';

const parse = (body: string | null, contentType: string | undefined = JSON_TYPE, o = opts) =>
  parseExecutionRequest({ body, contentType }, contract, o);
const parseJson = (body: unknown, o = opts) => parse(JSON.stringify(body), JSON_TYPE, o);

const appError = (fn: () => unknown): AppError => thrown(fn, AppError);

const published = { name: 'world', times: 1, ratio: 0.5, loud: false, secret: 'hidden', source: 'https://example.com/data.json' };

describe('parseExecutionRequest: accepted requests', () => {
  it.each([
    ['a null body', null],
    ['an empty body', ''],
    ['a whitespace-only body', ' \r\n\t '],
  ])('treats %s as {} with published values', (_name, body) => {
    // Act
    const result = parse(body, undefined);

    // Assess
    expect(result).toEqual({
      callback: null,
      inputs: published,
      assets: {},
      requestHash: parse('{}').requestHash,
    });
  });

  it('overrides published values with the given ones, including falsy ones', () => {
    // Act
    const result = parseJson({
      workflow_input: {
        name: { value: '', value_type: 'RAW' },
        times: { value: 0, value_type: 'RAW' },
        ratio: { value: 2, value_type: 'RAW' },
        loud: { value: true, value_type: 'RAW' },
      },
    });

    // Assess
    expect(result.inputs).toEqual({ name: '', times: 0, ratio: 2, loud: true, secret: 'hidden', source: 'https://example.com/data.json' });
  });

  it('takes a REFERENCE URL for a reference input and hands it on as a string', () => {
    // Act
    const result = parseJson({
      workflow_input: { source: { value: 'https://data.example.org/v1/items?page=2', value_type: 'REFERENCE' } },
    });

    // Assess
    expect(result.inputs.source).toBe('https://data.example.org/v1/items?page=2');
  });

  it('allows a loopback reference only when private URLs are allowed, and the metadata address never', () => {
    // Prepare
    const local = { ...opts, allowPrivateUrls: true };
    const loopback = { workflow_input: { source: { value: 'http://127.0.0.1:8080/x', value_type: 'REFERENCE' } } };
    const metadata = { workflow_input: { source: { value: 'http://[fd00:ec2::254]/', value_type: 'REFERENCE' } } };

    // Act
    const allowed = parseJson(loopback, local);
    const refused = appError(() => parseJson(loopback));
    const metadataRefused = appError(() => parseJson(metadata, local));

    // Assess
    expect(allowed.inputs.source).toBe('http://127.0.0.1:8080/x');
    expect(refused.code).toBe('InvalidInput');
    expect(metadataRefused.code).toBe('InvalidInput');
    expect(metadataRefused.detail).toBe("input 'source' is not an allowed URL: address fd00:ec2::254 is not allowed");
  });

  it('returns the callback URL', () => {
    // Act
    const result = parseJson({ callback: 'https://hooks.example.com/pipegate?x=1' });

    // Assess
    expect(result.callback).toBe('https://hooks.example.com/pipegate?x=1');
  });

  it('allows a loopback callback only when private URLs are allowed', () => {
    // Prepare
    const body = { callback: 'http://127.0.0.1:8080/hook' };

    // Act
    const allowed = parseJson(body, { ...opts, allowPrivateUrls: true });
    const refused = appError(() => parseJson(body));

    // Assess
    expect(allowed.callback).toBe('http://127.0.0.1:8080/hook');
    expect(refused.code).toBe('InvalidCallbackUrl');
    expect(refused.status).toBe(422);
    expect(typeof refused.detail).toBe('string');
  });

  it.each([
    undefined,
    '',
    'application/json',
    'Application/JSON; charset=utf-8',
    'application/vnd.pipegate+json',
    'application/merge-patch+json ; charset=UTF-8',
  ])('accepts content type %p', (contentType) => {
    // Act
    const result = parse('{"workflow_input":{"name":{"value":"Ada","value_type":"RAW"}}}', contentType);

    // Assess
    expect(result.inputs.name).toBe('Ada');
  });

  it('hashes equal requests equally, whatever their whitespace and key order', () => {
    // Prepare
    const a = '{"callback":"https://h.example.com/","workflow_input":{"name":{"value":"Ada","value_type":"RAW"}}}';
    const b = '{ "workflow_input": { "name": { "value_type": "RAW", "value": "Ada" } },\n  "callback": "https://h.example.com/" }';
    const c = '{"callback":"https://h.example.com/","workflow_input":{"name":{"value":"Bob","value_type":"RAW"}}}';

    // Act
    const [ha, hb, hc] = [a, b, c].map((body) => parse(body).requestHash);

    // Assess
    expect(ha).toMatch(/^[0-9a-f]{64}$/);
    expect(hb).toBe(ha);
    expect(hc).not.toBe(ha);
  });

  it('writes canonical JSON with sorted keys at every level', () => {
    // Act
    const text = sortedJson({ b: [{ z: 1, a: null }], a: 'x' });

    // Assess
    expect(text).toBe('{"a":"x","b":[{"a":null,"z":1}]}');
  });
});

describe('parseExecutionRequest: refusals', () => {
  it('refuses a body over the limit in UTF-8 bytes, before anything else', () => {
    // Prepare: 400 characters of 3 bytes each is over 1024 bytes though under 1024 characters.
    const body = `not json ${'€'.repeat(400)}`;

    // Act
    const error = appError(() => parse(body));

    // Assess
    expect(body.length).toBeLessThan(opts.maxBodyBytes);
    expect(error.code).toBe('PayloadTooLarge');
    expect(error.status).toBe(413);
  });

  it('accepts a body of exactly the limit', () => {
    // Prepare
    const body = `{}${' '.repeat(opts.maxBodyBytes - 2)}`;

    // Act
    assertBodySize(Buffer.byteLength(body), { maxBodyBytes: opts.maxBodyBytes });
    const result = parse(body);

    // Assess
    expect(result.inputs).toEqual(published);
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', 'multipart/form-data; boundary=x'])(
    'refuses a non-empty body of type %s with 415, even when it is not JSON',
    (contentType) => {
      // Act
      const error = appError(() => parse('name=Ada', contentType));

      // Assess
      expect(error.code).toBe('UnsupportedMediaType');
      expect(error.status).toBe(415);
    },
  );

  it('ignores the content type of an empty body', () => {
    // Act
    const result = parse('', 'text/plain');

    // Assess
    expect(result.callback).toBeNull();
  });

  it.each([
    ['invalid JSON', '{"workflow_input":', 'body is not valid JSON'],
    ['an array', '[]', 'body must be an object'],
    ['a string', '"hello"', 'body must be an object'],
    ['null', 'null', 'body must be an object'],
    ['an unknown top-level field', '{"inputs":{}}', 'inputs is not a known field'],
    ['__proto__ at the top level', '{"__proto__":{}}', '__proto__ is not a known field'],
    ['workflow_input not an object', '{"workflow_input":[]}', 'workflow_input must be an object'],
    ['workflow_input null', '{"workflow_input":null}', 'workflow_input must be an object'],
    ['a value object that is not an object', '{"workflow_input":{"name":"Ada"}}', 'workflow_input.name must be an object'],
    ['a value object without value', '{"workflow_input":{"name":{"value_type":"RAW"}}}', 'workflow_input.name.value is required'],
    ['a value object without value_type', '{"workflow_input":{"name":{"value":"Ada"}}}', 'workflow_input.name.value_type is required'],
    [
      'a value object with extra fields',
      '{"workflow_input":{"name":{"value":"Ada","value_type":"RAW","x":1}}}',
      'workflow_input.name.x is not a known field',
    ],
    [
      'an unknown value_type',
      '{"workflow_input":{"name":{"value":"Ada","value_type":"raw"}}}',
      'workflow_input.name.value_type must be one of RAW, REFERENCE, ASSET',
    ],
    [
      'an object value',
      '{"workflow_input":{"name":{"value":{},"value_type":"RAW"}}}',
      'workflow_input.name.value must be a string, a finite number or a boolean',
    ],
    [
      'a null value',
      '{"workflow_input":{"name":{"value":null,"value_type":"RAW"}}}',
      'workflow_input.name.value must be a string, a finite number or a boolean',
    ],
    [
      'an infinite value',
      '{"workflow_input":{"times":{"value":1e999,"value_type":"RAW"}}}',
      'workflow_input.times.value must be a string, a finite number or a boolean',
    ],
    ['a constructor entry that is malformed', '{"workflow_input":{"constructor":[]}}', 'workflow_input.constructor must be an object'],
    ['a callback that is not a string', '{"callback":42}', 'callback must be a string'],
  ])('refuses %s with 400 Invalid Input Structure', (_name, body, detail) => {
    // Act
    const error = appError(() => parse(body));

    // Assess
    expect(error.code).toBe('InvalidInputStructure');
    expect(error.status).toBe(400);
    expect(error.detail).toBe(detail);
  });

  it.each([
    ['null', null],
    ['empty', ''],
    ['blank', '  \t'],
  ])('refuses a %s callback with 400 Missing Callback URL', (_name, callback) => {
    // Act
    const error = appError(() => parseJson({ callback }));

    // Assess
    expect(error.code).toBe('MissingCallbackUrl');
    expect(error.status).toBe(400);
  });

  it.each([
    ['a relative URL', '/hook'],
    ['a non-http scheme', 'ftp://files.example.com/hook'],
    ['a javascript URL', 'javascript:alert(1)'],
    ['credentials in the URL', 'https://user:pw@hooks.example.com/'],
    ['the metadata address', 'http://169.254.169.254/latest/meta-data/'],
    ['a private address', 'http://10.1.2.3/hook'],
    ['localhost', 'http://localhost:3000/hook'],
  ])('refuses %s with 422 Invalid Callback URL', (_name, callback) => {
    // Act
    const error = appError(() => parseJson({ callback }));

    // Assess
    expect(error.code).toBe('InvalidCallbackUrl');
    expect(error.status).toBe(422);
    expect(error.detail).toEqual(expect.any(String));
  });

  it.each([
    ['an unknown input', { nope: { value: 'x', value_type: 'RAW' } }, "unknown input 'nope'"],
    ['a hidden input, answered like an unknown one', { secret: { value: 'x', value_type: 'RAW' } }, "unknown input 'secret'"],
    [
      'a REFERENCE value for a string input',
      { name: { value: 'https://example.com/', value_type: 'REFERENCE' } },
      "input 'name' takes value_type RAW (its type is string), got REFERENCE",
    ],
    [
      'a RAW value for a reference input',
      { source: { value: 'https://example.com/', value_type: 'RAW' } },
      "input 'source' takes value_type REFERENCE (its type is reference), got RAW",
    ],
    [
      'a relative reference',
      { source: { value: '/data.json', value_type: 'REFERENCE' } },
      "input 'source' must be an absolute http or https URL",
    ],
    [
      'a reference that is a number',
      { source: { value: 5, value_type: 'REFERENCE' } },
      "input 'source' must be an absolute http or https URL",
    ],
    [
      'a file: reference',
      { source: { value: 'file:///etc/passwd', value_type: 'REFERENCE' } },
      "input 'source' must be an absolute http or https URL",
    ],
    // URL parsing would take these (it trims and adds the slashes); the document's pattern does not.
    [
      'a reference after a space',
      { source: { value: ' https://example.com/', value_type: 'REFERENCE' } },
      "input 'source' must be an absolute http or https URL",
    ],
    [
      'a reference without its slashes',
      { source: { value: 'https:example.com', value_type: 'REFERENCE' } },
      "input 'source' must be an absolute http or https URL",
    ],
    [
      'a reference to a private address',
      { source: { value: 'http://10.0.0.7/x?token=t', value_type: 'REFERENCE' } },
      "input 'source' is not an allowed URL: address 10.0.0.7 is not allowed",
    ],
    [
      'a reference to the metadata address',
      { source: { value: 'http://169.254.169.254/latest/', value_type: 'REFERENCE' } },
      'address 169.254.169.254 is not allowed',
    ],
    [
      'an ASSET value for a string input',
      { name: { value: 'a', value_type: 'ASSET' } },
      "input 'name' takes value_type RAW (its type is string), got ASSET",
    ],
    ['a number for a string input', { name: { value: 5, value_type: 'RAW' } }, "input 'name' must be a string"],
    [
      'a string for an integer input',
      { times: { value: '5', value_type: 'RAW' } },
      "input 'times' must be a whole number (its type is integer)",
    ],
    [
      'a fraction for an integer input',
      { times: { value: 1.5, value_type: 'RAW' } },
      "input 'times' must be a whole number (its type is integer)",
    ],
    [
      'a string for a float input',
      { ratio: { value: '0.5', value_type: 'RAW' } },
      "input 'ratio' must be a finite number (its type is float)",
    ],
    [
      'a string for a boolean input',
      { loud: { value: 'true', value_type: 'RAW' } },
      "input 'loud' must be true or false (its type is boolean)",
    ],
  ])('refuses %s with 422 Invalid Input', (_name, workflow_input, detail) => {
    // Act
    const error = appError(() => parseJson({ workflow_input }));

    // Assess
    expect(error.code).toBe('InvalidInput');
    expect(error.status).toBe(422);
    expect(error.detail).toEqual(expect.stringContaining(detail));
  });

  it('refuses more inputs than allowed', () => {
    // Prepare
    const workflow_input = Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((id) => [id, { value: 1, value_type: 'RAW' }]));

    // Act
    const error = appError(() => parseJson({ workflow_input }));

    // Assess
    expect(error.code).toBe('InvalidInput');
    expect(error.detail).toEqual(expect.stringContaining('at most 4'));
  });

  it('reports a structural problem before a semantic one, wherever it appears', () => {
    // Prepare: the 422 problems (unknown input, bad callback) come first in the body.
    const body = {
      callback: 'ftp://x',
      workflow_input: { nope: { value: 1, value_type: 'RAW' }, name: { value: 'Ada' } },
    };

    // Act
    const error = appError(() => parseJson(body));

    // Assess
    expect(error.code).toBe('InvalidInputStructure');
    expect(error.detail).toBe('workflow_input.name.value_type is required');
  });

  it('reports a missing callback before an invalid input', () => {
    // Act
    const error = appError(() => parseJson({ callback: '', workflow_input: { nope: { value: 1, value_type: 'RAW' } } }));

    // Assess
    expect(error.code).toBe('MissingCallbackUrl');
  });
});

describe('parseExecutionRequest: fuzzed', () => {
  const onlyAppErrors = (run: () => unknown) => {
    try {
      run();
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
    }
  };
  const contentTypes = fc.option(
    fc.oneof(fc.constantFrom('application/json', 'text/plain', 'application/ld+json; charset=utf-8'), fc.string()),
    {
      nil: undefined,
    },
  );

  it('returns or throws an AppError for arbitrary strings', () => {
    fc.assert(
      fc.property(fc.option(fc.string({ unit: 'grapheme' }), { nil: null }), contentTypes, (body, contentType) => {
        onlyAppErrors(() => parseExecutionRequest({ body, contentType }, contract, opts));
      }),
    );
  });

  it('returns or throws an AppError for arbitrary JSON bodies', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (value, allowPrivateUrls) => {
        onlyAppErrors(() => parseJson(value, { ...opts, maxBodyBytes: 1_000_000, allowPrivateUrls }));
      }),
    );
  });

  it('returns or throws an AppError for request-shaped bodies', () => {
    const rawValue = fc.oneof(fc.string(), fc.double(), fc.integer(), fc.boolean(), fc.constant(null), fc.object());
    const valueObject = fc.oneof(
      fc.record({ value: rawValue, value_type: fc.constantFrom('RAW', 'REFERENCE', 'ASSET', 'raw') }, { requiredKeys: [] }),
      fc.jsonValue(),
    );
    const body = fc.record(
      {
        callback: fc.oneof(fc.webUrl(), fc.string(), fc.constant(null), fc.integer()),
        workflow_input: fc.dictionary(fc.constantFrom('name', 'times', 'ratio', 'loud', 'secret', 'other', 'constructor'), valueObject),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(body, (b) => {
        try {
          const result = parseJson(b, { ...opts, maxBodyBytes: 1_000_000 });
          expect(Object.keys(result.inputs)).toEqual(contract.inputs.map((i) => i.id));
          expect(result.inputs.secret).toBe('hidden');
        } catch (e) {
          if (!(e instanceof AppError)) throw e;
        }
      }),
    );
  });
});
