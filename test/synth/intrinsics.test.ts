import fc from 'fast-check';
import { IntrinsicError, resolve, type PhysicalResource, type ResolveContext } from '../../lib/synth/intrinsics';

const RESOURCES: Record<string, PhysicalResource> = {
  Table: { ref: 'Stack-Table', attributes: { Arn: 'arn:aws:dynamodb:us-east-1:123456789012:table/Stack-Table' } },
  Queue: { ref: 'http://127.0.0.1:1/123456789012/Stack-Queue', attributes: { Arn: 'arn:aws:sqs:us-east-1:123456789012:Stack-Queue' } },
};

const ctx = (over: Partial<ResolveContext> = {}): ResolveContext => ({
  stackName: 'Stack',
  account: '123456789012',
  region: 'us-east-1',
  partition: 'aws',
  urlSuffix: 'amazonaws.com',
  resource: (id) => RESOURCES[id],
  parameters: { Stage: 'api', Zones: ['a', 'b'] },
  mappings: { Regions: { 'us-east-1': { Short: 'use1' } } },
  importValue: (name) => (name === 'Shared-TableName' ? 'Other-Table' : undefined),
  stackOutput: (stack, output) => (stack === 'Other' && output === 'QueueArn' ? 'arn:aws:sqs:us-east-1:123456789012:Other-Q' : undefined),
  ...over,
});

const errorOf = (value: unknown, c = ctx()): IntrinsicError => {
  try {
    resolve(value, c);
  } catch (err) {
    if (err instanceof IntrinsicError) return err;
    throw err;
  }
  throw new Error(`resolved ${JSON.stringify(value)} without an error`);
};

describe('the intrinsic resolver', () => {
  it('resolves Ref to resources, parameters and pseudo parameters', () => {
    // Act
    const out = resolve(
      ['Table', 'Stage', 'AWS::AccountId', 'AWS::Region', 'AWS::Partition', 'AWS::URLSuffix', 'AWS::StackName'].map((r) => ({ Ref: r })),
      ctx(),
    );
    // Assess
    expect(out).toEqual(['Stack-Table', 'api', '123456789012', 'us-east-1', 'aws', 'amazonaws.com', 'Stack']);
  });

  it('resolves Fn::GetAtt in its list and its dotted form', () => {
    // Act / Assess
    expect(resolve({ 'Fn::GetAtt': ['Queue', 'Arn'] }, ctx())).toBe('arn:aws:sqs:us-east-1:123456789012:Stack-Queue');
    expect(resolve({ 'Fn::GetAtt': 'Table.Arn' }, ctx())).toBe(RESOURCES.Table?.attributes.Arn);
  });

  it('resolves Fn::Sub in both forms, with ${!Literal} left literal', () => {
    // Act
    const plain = resolve({ 'Fn::Sub': 'arn:${AWS::Partition}:x:${AWS::Region}:${AWS::AccountId}:${Table}/${Queue.Arn}/${!Keep}' }, ctx());
    const withVars = resolve({ 'Fn::Sub': ['${Name}-${Stage}', { Name: { Ref: 'Table' } }] }, ctx());
    // Assess
    expect(plain).toBe(`arn:aws:x:us-east-1:123456789012:Stack-Table/${RESOURCES.Queue?.attributes.Arn}/\${Keep}`);
    expect(withVars).toBe('Stack-Table-api');
  });

  it('resolves Join, Select, Split, FindInMap, Base64, ImportValue and GetStackOutput', () => {
    // Act
    const out = resolve(
      {
        join: { 'Fn::Join': ['/', [{ Ref: 'Table' }, 'index', 'gsi1']] },
        joinList: { 'Fn::Join': [',', { Ref: 'Zones' }] },
        select: { 'Fn::Select': [3, { 'Fn::Split': [':', { 'Fn::GetAtt': ['Queue', 'Arn'] }] }] },
        map: { 'Fn::FindInMap': ['Regions', { Ref: 'AWS::Region' }, 'Short'] },
        b64: { 'Fn::Base64': 'hi' },
        imported: { 'Fn::ImportValue': 'Shared-TableName' },
        output: { 'Fn::GetStackOutput': { StackName: 'Other', Region: 'us-east-1', OutputName: 'QueueArn' } },
      },
      ctx(),
    );
    // Assess
    expect(out).toEqual({
      join: 'Stack-Table/index/gsi1',
      joinList: 'a,b',
      select: 'us-east-1',
      map: 'use1',
      b64: 'aGk=',
      imported: 'Other-Table',
      output: 'arn:aws:sqs:us-east-1:123456789012:Other-Q',
    });
  });

  it('drops a property or list entry that is AWS::NoValue', () => {
    // Act / Assess
    expect(resolve({ a: 1, b: { Ref: 'AWS::NoValue' }, c: [1, { Ref: 'AWS::NoValue' }, 2] }, ctx())).toEqual({ a: 1, c: [1, 2] });
  });

  it('throws with the path for what it cannot resolve', () => {
    // Act / Assess
    expect(errorOf({ x: [{ y: { 'Fn::If': ['C', 1, 2] } }] }).path).toBe('$.x[0].y.Fn::If');
    expect(errorOf({ a: { Ref: 'Missing' } }).message).toMatch(/^\$\.a\.Ref: Ref to Missing/);
    expect(errorOf({ 'Fn::GetAtt': ['Table', 'StreamArn'] }).message).toMatch(/Table has no attribute StreamArn/);
    expect(errorOf({ 'Fn::ImportValue': 'Nope' }).message).toMatch(/no stack exports Nope/);
    expect(errorOf({ 'Fn::GetStackOutput': { StackName: 'Other', Region: 'eu-west-1', OutputName: 'QueueArn' } }).message).toMatch(
      /another region/,
    );
    expect(errorOf({ 'Fn::Select': [5, ['a']] }).message).toMatch(/out of range/);
    expect(errorOf({ Ref: 'AWS::NotAThing' }).message).toMatch(/unknown pseudo parameter/);
    expect(errorOf({ 'Fn::Join': ['', [{ Ref: 'Zones' }]] }).message).toMatch(/joined value must be a string/);
  });

  describe('fuzzed', () => {
    // Plain JSON: no one-key object whose key is Ref or Fn::*.
    const plainKey = fc.string({ maxLength: 8 }).filter((k) => k !== 'Ref' && !k.startsWith('Fn::') && k !== '__proto__');
    const plain = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.string(),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(plainKey, tie('value'), { maxKeys: 4 }),
      ),
    })).value;

    it('leaves values without intrinsics as they are', () => {
      fc.assert(fc.property(plain, (v) => expect(resolve(v, ctx())).toEqual(v)));
    });

    it('selects from a split exactly what was joined', () => {
      // Single characters: a longer delimiter can overlap the parts' own ends ("-" + "--" + "-a")
      const delimiter = fc.constantFrom(':', '/', ',', '|');
      fc.assert(
        fc.property(delimiter, fc.array(fc.string(), { minLength: 1, maxLength: 6 }), fc.nat(), (d, raw, n) => {
          // Prepare: parts that do not contain the delimiter.
          const parts = raw.map((p) => p.split(d).join(''));
          const i = n % parts.length;
          // Act
          const out = resolve({ 'Fn::Select': [i, { 'Fn::Split': [d, { 'Fn::Join': [d, parts] }] }] }, ctx());
          // Assess
          expect(out).toBe(parts[i]);
        }),
      );
    });

    it('substitutes nothing in a template without ${ and keeps ${!x} literal', () => {
      fc.assert(
        fc.property(
          fc.string().filter((s) => !s.includes('${')),
          fc.stringMatching(/^[A-Za-z0-9]{1,8}$/),
          (text, name) => {
            expect(resolve({ 'Fn::Sub': text }, ctx())).toBe(text);
            expect(resolve({ 'Fn::Sub': `${text}\${!${name}}` }, ctx())).toBe(`${text}\${${name}}`);
          },
        ),
      );
    });

    it('names the path of an unknown function wherever it sits', () => {
      fc.assert(
        fc.property(fc.array(fc.oneof(fc.nat(3), fc.stringMatching(/^[a-z]{1,5}$/)), { maxLength: 5 }), (steps) => {
          // Prepare: nest { "Fn::Nope": 1 } under the steps (numbers index lists, strings key objects).
          let value: unknown = { 'Fn::Nope': 1 };
          let expected = '.Fn::Nope';
          for (const step of [...steps].reverse()) {
            if (typeof step === 'number') {
              const arr: unknown[] = Array.from({ length: step }, () => 'pad');
              arr.push(value);
              value = arr;
              expected = `[${step}]${expected}`;
            } else {
              value = { [step]: value };
              expected = `.${step}${expected}`;
            }
          }
          // Act / Assess
          expect(errorOf(value).path).toBe(`$${expected}`);
        }),
      );
    });
  });
});
