import fc from 'fast-check';
import { EXIT, UsageError } from '../../../lib/cli/errors';
import { inputTypesOf, parseInputs, parseValue, splitAssignments, type InputValueType } from '../../../lib/cli/inputs';
import { thrown } from '../../support/thrown';

const usageError = (fn: () => unknown): UsageError => thrown(fn, UsageError);

describe('--input values are read by the input type', () => {
  it.each<[InputValueType, string, unknown]>([
    ['string', 'Ada', 'Ada'],
    ['string', '42', '42'],
    ['string', '', ''],
    ['string', 'a=b', 'a=b'],
    ['integer', '42', 42],
    ['integer', '-7', -7],
    ['integer', '+3', 3],
    ['float', '1.5', 1.5],
    ['float', '2', 2],
    ['float', '-.25', -0.25],
    ['float', '1e3', 1000],
    ['boolean', 'true', true],
    ['boolean', 'FALSE', false],
    ['reference', 'https://example.com/a.json?x=1', 'https://example.com/a.json?x=1'],
  ])('%s %j → %j', (type, text, expected) => {
    // Act
    const value = parseValue('x', type, text);

    // Assess
    expect(value).toStrictEqual(expected);
  });

  it.each<[InputValueType, string]>([
    ['integer', '1.5'],
    ['integer', 'abc'],
    ['integer', ''],
    ['integer', '0x10'],
    ['integer', '1e3'],
    ['integer', '99999999999999999999'],
    ['float', 'abc'],
    ['float', ''],
    ['float', 'Infinity'],
    ['float', 'NaN'],
    ['float', '0x10'],
    ['float', '1e400'],
    ['boolean', 'yes'],
    ['boolean', '1'],
    ['boolean', ''],
    ['reference', 'example.com/a.json'],
    ['reference', 'ftp://example.com/a'],
  ])('%s %j is a usage error naming the input and the type', (type, text) => {
    // Act
    const e = usageError(() => parseValue('count', type, text));

    // Assess
    expect(e.exitCode).toBe(EXIT.usage);
    expect(e.message).toContain('count');
    expect(e.message).toContain(type);
  });

  it('reads back every safe integer as written (property)', () => {
    fc.assert(
      fc.property(fc.maxSafeInteger(), (n) => {
        expect(parseValue('n', 'integer', String(n))).toBe(n);
      }),
    );
  });

  it('reads back every finite double from its shortest text (property)', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => {
        // Prepare: JS prints tiny and huge numbers as 1e-7 / 1e+21, which the reader accepts.
        const text = String(x);

        // Act
        const read = parseValue('x', 'float', text);

        // Assess
        expect(Object.is(read, x) || (read === 0 && x === 0)).toBe(true);
      }),
    );
  });

  it('keeps any text for a string input (property)', () => {
    fc.assert(fc.property(fc.string(), (s) => expect(parseValue('s', 'string', s)).toBe(s)));
  });
});

describe('--input k=v assignments', () => {
  it('split at the first "=" so values may hold "="', () => {
    // Act
    const pairs = splitAssignments(['expr=a=b', 'name=', ' spaced =x']);

    // Assess
    expect(pairs).toEqual([
      ['expr', 'a=b'],
      ['name', ''],
      ['spaced', 'x'],
    ]);
  });

  it.each([['name'], ['=Ada']])('refuse %j', (pair) => {
    // Act
    const e = usageError(() => splitAssignments([pair]));

    // Assess
    expect(e.message).toContain(pair);
  });

  it('refuse the same id twice', () => {
    // Act
    const e = usageError(() => splitAssignments(['name=a', 'name=b']));

    // Assess
    expect(e.message).toMatch(/name .*more than once/);
  });

  it('parse every value by its type', () => {
    // Prepare
    const types = new Map<string, InputValueType>([
      ['name', 'string'],
      ['times', 'integer'],
      ['loud', 'boolean'],
    ]);

    // Act
    const values = parseInputs(['times=3', 'loud=true', 'name=007'], types);

    // Assess
    expect(values).toStrictEqual({ times: 3, loud: true, name: '007' });
  });

  it('refuse an unknown id and list the inputs there are', () => {
    // Prepare
    const types = new Map<string, InputValueType>([['name', 'string']]);

    // Act
    const e = usageError(() => parseInputs(['nme=Ada'], types));

    // Assess
    expect(e.message).toContain('no input "nme"');
    expect(e.hint).toContain('name (string)');
  });

  it('say so when the pipeline takes no inputs at all', () => {
    // Act
    const e = usageError(() => parseInputs(['a=1'], new Map()));

    // Assess
    expect(e.hint).toBe('this pipeline takes no inputs');
  });
});

describe('input types of a definition', () => {
  it('are the input nodes, in order, ignoring other nodes and junk', () => {
    // Prepare
    const def = {
      nodes: {
        b: { type: 'input', value_type: 'integer', value: 1 },
        t: { type: 'transform', inputs: ['b'], expression: 'b' },
        a: { type: 'input', value_type: 'boolean', value: true },
        odd: { type: 'input', value_type: 'date', value: 'x' },
        junk: 7,
      },
    };

    // Act
    const types = inputTypesOf(def);

    // Assess
    expect([...types]).toEqual([
      ['b', 'integer'],
      ['a', 'boolean'],
    ]);
    expect(inputTypesOf(null).size).toBe(0);
  });
});
