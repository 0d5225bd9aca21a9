import fc from 'fast-check';
import {
  canonicalDefinition,
  contentHash,
  inputNodeIds,
  nodeDependencies,
  outputNodeIds,
  topologicalOrder,
  validateDefinition,
} from '../../../functions/core/pipeline';
import type { PipelineDefinition, Problem } from '../../../functions/core/types';
import { MAX_LABEL_LENGTH } from '../../../functions/core/definition-schema';

const greeting = () => ({
  description: 'Greets someone',
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    greeting: { type: 'transform', inputs: ['name'], expression: "'Hello, ' & name & '!'" },
    message: { type: 'output', from: 'greeting' },
  },
});

const everyType = () => ({
  nodes: {
    who: { type: 'input', value_type: 'string', value: 'Ada', description: 'who to greet' },
    count: { type: 'input', value_type: 'integer', value: 3 },
    ratio: { type: 'input', value_type: 'float', value: 2 },
    loud: { type: 'input', value_type: 'boolean', value: false },
    call: {
      type: 'http',
      inputs: ['who', 'count'],
      method: 'POST',
      url: 'https://api.example.com/v1/greet?lang=en',
      headers: { 'X-Trace': 'abc', accept: 'application/json' },
      body: '{"who": who, "n": count}',
      timeout_ms: 30000,
    },
    plain: { type: 'http', url: 'http://localhost:8080/ping' },
    pause: { type: 'delay', inputs: ['call'], ms: 0 },
    shout: { type: 'transform', inputs: ['pause', 'loud', 'ratio'], expression: 'loud ? $uppercase(pause.text) : pause.text' },
    constant: { type: 'transform', inputs: [], expression: '42' },
    text: { type: 'output', from: 'shout' },
    pong: { type: 'output', from: 'plain', description: 'raw ping answer' },
  },
});

/** Validates and returns the problems (failing the test when the definition passes). */
function problemsOf(input: unknown, limits?: { maxNodes: number }): Problem[] {
  const result = validateDefinition(input, limits);
  if (result.ok) throw new Error('expected the definition to be rejected');
  return result.problems;
}

function withNode(id: string, node: unknown, base: Record<string, unknown> = greeting().nodes) {
  return { nodes: { ...base, [id]: node } };
}

describe('validateDefinition: valid definitions', () => {
  it('accepts the greeting example and returns it unchanged', () => {
    // Act
    const result = validateDefinition(greeting());

    // Assess
    expect(result).toEqual({ ok: true, definition: greeting() });
  });

  it('accepts every node type with every optional field', () => {
    // Act
    const result = validateDefinition(everyType());

    // Assess
    expect(result).toEqual({ ok: true, definition: everyType() });
  });

  it('keeps the declaration order of the nodes', () => {
    // Act
    const result = validateDefinition(everyType());

    // Assess
    expect(result.ok && Object.keys(result.definition.nodes)).toEqual(Object.keys(everyType().nodes));
  });

  it('accepts exactly the maximum number of nodes', () => {
    // Prepare
    const nodes = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`n${i}`, { type: 'input', value_type: 'integer', value: i }]));

    // Act
    const result = validateDefinition({ nodes });

    // Assess
    expect(result.ok).toBe(true);
  });
});

describe('validateDefinition: the top level', () => {
  it.each([
    ['null', null, 'null'],
    ['an array', [], 'an array'],
    ['a string', 'nodes', 'a string'],
    ['a number', 7, 'a number'],
  ])('rejects %s as a whole', (_label, input, got) => {
    expect(problemsOf(input)).toEqual([{ path: '', reason: `a definition must be an object with a "nodes" field, got ${got}` }]);
  });

  it('lists every unknown top-level field', () => {
    expect(problemsOf({ ...greeting(), publish: {}, 'odd key': 1 })).toEqual([
      { path: 'publish', reason: 'unknown field; a definition holds only description, retry_interrupted, timeout_ms, nodes' },
      { path: '["odd key"]', reason: 'unknown field; a definition holds only description, retry_interrupted, timeout_ms, nodes' },
    ]);
  });

  it('takes retry_interrupted as a boolean, keeps it, and counts it in the content', () => {
    expect(problemsOf({ ...greeting(), retry_interrupted: 'no' })).toEqual([
      { path: 'retry_interrupted', reason: 'must be true or false, got a string' },
    ]);
    const off = validateDefinition({ ...greeting(), retry_interrupted: false });
    expect(off.ok && off.definition.retry_interrupted).toBe(false);
    const plain = validateDefinition(greeting());
    expect(plain.ok && Object.hasOwn(plain.definition, 'retry_interrupted')).toBe(false);
    if (!off.ok || !plain.ok) throw new Error('valid definitions');
    expect(contentHash(off.definition)).not.toBe(contentHash(plain.definition));
  });

  it('checks the description', () => {
    expect(problemsOf({ ...greeting(), description: 5 })).toEqual([{ path: 'description', reason: 'must be a string' }]);
    expect(problemsOf({ ...greeting(), description: 'x'.repeat(2001) })).toEqual([
      { path: 'description', reason: 'must be at most 2000 characters long' },
    ]);
    expect(validateDefinition({ ...greeting(), description: 'x'.repeat(2000) }).ok).toBe(true);
  });

  it('requires nodes to be a non-empty object within the limit', () => {
    expect(problemsOf({})).toEqual([{ path: 'nodes', reason: 'is required: an object of nodes keyed by node id' }]);
    expect(problemsOf({ nodes: [] })).toEqual([{ path: 'nodes', reason: 'must be an object of nodes keyed by node id, got an array' }]);
    expect(problemsOf({ nodes: {} })).toEqual([{ path: 'nodes', reason: 'must hold at least one node' }]);
    expect(problemsOf(greeting(), { maxNodes: 2 })).toEqual([{ path: 'nodes', reason: 'holds 3 nodes; at most 2 are allowed' }]);
  });

  it('allows 64 nodes by default and no more', () => {
    // Prepare
    const nodes = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`n${i}`, { type: 'input', value_type: 'integer', value: i }]));

    // Act
    const problems = problemsOf({ nodes });

    // Assess
    expect(problems).toEqual([{ path: 'nodes', reason: 'holds 65 nodes; at most 64 are allowed' }]);
  });
});

describe('validateDefinition: node ids and types', () => {
  const input = { type: 'input', value_type: 'string', value: 'v' };

  it.each(['1abc', 'a-b', 'a b', '', 'é', 'x'.repeat(65)])('rejects the node id %j', (id) => {
    expect(problemsOf({ nodes: { [id]: input } })).toEqual([
      {
        path: expect.stringMatching(/^nodes/),
        reason:
          'invalid node id: it must start with a letter or an underscore, hold only letters, digits and underscores, and be at most 64 characters long',
      },
    ]);
  });

  it.each(['a', '_', 'A_1', '_private', 'x'.repeat(64)])('accepts the node id %j', (id) => {
    expect(validateDefinition({ nodes: { [id]: input } }).ok).toBe(true);
  });

  it('reserves execution_id and __proto__', () => {
    // Prepare: JSON.parse makes __proto__ an own key, as a pushed body would.
    const parsed: unknown = JSON.parse(
      '{"nodes": {"execution_id": {"type": "input", "value_type": "string", "value": "v"}, "__proto__": {"type": "input", "value_type": "string", "value": "v"}}}',
    );

    // Act
    const problems = problemsOf(parsed);

    // Assess
    expect(problems).toEqual([
      { path: 'nodes.execution_id', reason: "'execution_id' is a reserved name and cannot be a node id" },
      { path: 'nodes.__proto__', reason: "'__proto__' is a reserved name and cannot be a node id" },
    ]);
  });

  it('reports an unknown type once, without a cascade about its other fields', () => {
    expect(problemsOf(withNode('odd', { type: 'webhook', url: 5, whatever: true }))).toEqual([
      { path: 'nodes.odd.type', reason: "unknown node type 'webhook'; expected one of input, output, transform, http, delay, map" },
    ]);
  });

  it('requires a type, and a node to be an object', () => {
    expect(problemsOf(withNode('odd', { value: 1 }))).toEqual([
      { path: 'nodes.odd.type', reason: 'is required: one of input, output, transform, http, delay, map' },
    ]);
    expect(problemsOf(withNode('odd', 'input'))).toEqual([
      { path: 'nodes.odd', reason: 'must be an object describing the node, got a string' },
    ]);
    expect(problemsOf(withNode('odd', { type: 3 }))).toEqual([
      { path: 'nodes.odd.type', reason: 'unknown node type a number; expected one of input, output, transform, http, delay, map' },
    ]);
  });

  it('reports every unknown field of a node', () => {
    expect(problemsOf(withNode('extra', { ...input, colour: 'red', size: 2 }))).toEqual([
      {
        path: 'nodes.extra.colour',
        reason: 'unknown field for an input node; allowed: type, value_type, value, media_types, max_bytes, label, description',
      },
      {
        path: 'nodes.extra.size',
        reason: 'unknown field for an input node; allowed: type, value_type, value, media_types, max_bytes, label, description',
      },
    ]);
  });
});

describe('validateDefinition: input nodes', () => {
  it.each([
    ['string', 'text', true],
    ['string', 1, false],
    ['integer', 3, true],
    ['integer', -0, true],
    ['integer', 1.5, false],
    ['integer', '3', false],
    ['float', 2, true],
    ['float', 2.5, true],
    ['float', true, false],
    ['boolean', false, true],
    ['boolean', 'true', false],
    ['reference', 'https://example.com/data.json', true],
    ['reference', 'http://127.0.0.1:8080/x', true],
    ['reference', 'example.com/data.json', false],
    ['reference', 'mailto:a@example.com', false],
    ['reference', 5, false],
  ])('value_type %s with value %j: valid = %s', (valueType, value, valid) => {
    expect(validateDefinition({ nodes: { v: { type: 'input', value_type: valueType, value } } }).ok).toBe(valid);
  });

  it('explains a value that does not match its type', () => {
    expect(problemsOf({ nodes: { n: { type: 'input', value_type: 'integer', value: 1.5 } } })).toEqual([
      { path: 'nodes.n.value', reason: 'must be a whole number because value_type is integer; got 1.5' },
    ]);
    expect(problemsOf({ nodes: { s: { type: 'input', value_type: 'string', value: false } } })).toEqual([
      { path: 'nodes.s.value', reason: 'must be a string because value_type is string; got false' },
    ]);
  });

  it('requires value_type and value of the allowed kinds', () => {
    expect(problemsOf({ nodes: { v: { type: 'input', value_type: 'date', value: 'x' } } })).toEqual([
      { path: 'nodes.v.value_type', reason: 'must be one of string, integer, float, boolean, reference, asset' },
    ]);
    expect(problemsOf({ nodes: { v: { type: 'input', value_type: 'string' } } })).toEqual([
      { path: 'nodes.v.value', reason: 'is required' },
    ]);
    expect(problemsOf({ nodes: { v: { type: 'input', value_type: 'string', value: null } } })).toEqual([
      { path: 'nodes.v.value', reason: 'must be a string, a finite number or a boolean' },
    ]);
    expect(problemsOf({ nodes: { v: { type: 'input', value_type: 'string', value: 'x', description: 1 } } })).toEqual([
      { path: 'nodes.v.description', reason: 'must be a string' },
    ]);
  });
});

describe('validateDefinition: references', () => {
  it('requires an output to name an existing node that is not an output', () => {
    expect(problemsOf(withNode('out2', { type: 'output', from: 'nowhere' }))).toEqual([
      { path: 'nodes.out2.from', reason: "refers to node 'nowhere', which does not exist" },
    ]);
    expect(problemsOf(withNode('out2', { type: 'output', from: 'message' }))).toEqual([
      { path: 'nodes.out2.from', reason: "refers to 'message', an output node; output nodes cannot feed other nodes" },
    ]);
    expect(problemsOf(withNode('out2', { type: 'output' }))).toEqual([{ path: 'nodes.out2.from', reason: 'is required' }]);
  });

  it('checks every transform input and points at its index', () => {
    expect(
      problemsOf(withNode('t', { type: 'transform', inputs: ['name', 'missing', 't', 'message', 'name', 7], expression: 'name' })),
    ).toEqual([
      { path: 'nodes.t.inputs[5]', reason: 'must be a node id (a string)' },
      { path: 'nodes.t.inputs[1]', reason: "refers to node 'missing', which does not exist" },
      { path: 'nodes.t.inputs[2]', reason: "a node cannot take its own value ('t')" },
      { path: 'nodes.t.inputs[3]', reason: "refers to 'message', an output node; output nodes cannot feed other nodes" },
      { path: 'nodes.t.inputs[4]', reason: "lists 'name' more than once" },
    ]);
    expect(problemsOf(withNode('t', { type: 'transform', inputs: 'name', expression: 'name' }))).toEqual([
      { path: 'nodes.t.inputs', reason: 'must be a list of node ids' },
    ]);
  });

  it('spells out cycles', () => {
    // Prepare
    const nodes = {
      seed: { type: 'input', value_type: 'integer', value: 1 },
      a: { type: 'transform', inputs: ['seed', 'c'], expression: 'c' },
      b: { type: 'transform', inputs: ['a'], expression: 'a' },
      c: { type: 'http', inputs: ['b'], url: 'https://x.example/' },
      p: { type: 'transform', inputs: ['q'], expression: 'q' },
      q: { type: 'delay', inputs: ['p'], ms: 1 },
      after: { type: 'transform', inputs: ['b'], expression: 'b' },
    };

    // Act
    const problems = problemsOf({ nodes });

    // Assess
    expect(problems).toEqual([
      { path: 'nodes.a', reason: 'cycle: a → b → c → a' },
      { path: 'nodes.p', reason: 'cycle: p → q → p' },
    ]);
  });
});

describe('validateDefinition: transform, http and delay nodes', () => {
  it('reports JSONata compile errors with their position', () => {
    expect(problemsOf(withNode('t', { type: 'transform', inputs: ['name'], expression: 'name &' }))).toEqual([
      { path: 'nodes.t.expression', reason: 'invalid JSONata at position 6: Unexpected end of expression' },
    ]);
    expect(problemsOf(withNode('t', { type: 'transform', inputs: [], expression: '  ' }))).toEqual([
      { path: 'nodes.t.expression', reason: 'must not be empty' },
    ]);
    expect(problemsOf(withNode('t', { type: 'transform', inputs: [] }))).toEqual([{ path: 'nodes.t.expression', reason: 'is required' }]);
  });

  it('checks method, url, headers, body and timeout of http nodes', () => {
    // Prepare
    const node = {
      type: 'http',
      method: 'FETCH',
      url: 'ftp://files.example/x',
      headers: { 'Bad Header': 'x', good: 5, split: 'a\r\nb' },
      body: '{',
      timeout_ms: 30001,
    };

    // Act
    const problems = problemsOf(withNode('h', node));

    // Assess
    expect(problems).toEqual([
      { path: 'nodes.h.method', reason: 'must be one of GET, POST, PUT, PATCH, DELETE' },
      { path: 'nodes.h.url', reason: 'must be an absolute http:// or https:// URL' },
      { path: 'nodes.h.headers["Bad Header"]', reason: 'is not a valid HTTP header name' },
      { path: 'nodes.h.headers.good', reason: 'header values must be strings' },
      { path: 'nodes.h.headers.split', reason: 'header values cannot hold line breaks or NUL characters' },
      { path: 'nodes.h.timeout_ms', reason: 'must be at most 30000 ms' },
      { path: 'nodes.h.body', reason: expect.stringMatching(/^invalid JSONata at position \d+: /) },
    ]);
  });

  it.each([
    [{ url: '/relative/path' }, 'nodes.h.url', 'must be an absolute http:// or https:// URL'],
    [{ url: 'https://x.example/', timeout_ms: 0 }, 'nodes.h.timeout_ms', 'must be at least 1 ms'],
    [{ url: 'https://x.example/', timeout_ms: 1.5 }, 'nodes.h.timeout_ms', 'must be a whole number'],
    [{ url: 'https://x.example/', body: '{"a": 1}' }, 'nodes.h.body', 'a GET request cannot carry a body; use POST, PUT, PATCH or DELETE'],
    [{ url: 'https://x.example/', headers: ['a'] }, 'nodes.h.headers', 'must be an object of header names to values'],
    [{ url: 'https://x.example/', inputs: ['ghost'] }, 'nodes.h.inputs[0]', "refers to node 'ghost', which does not exist"],
  ])('rejects the http node %j', (fields, path, reason) => {
    expect(problemsOf(withNode('h', { type: 'http', ...fields }))).toEqual([{ path, reason }]);
  });

  it('checks delay nodes', () => {
    expect(problemsOf(withNode('d', { type: 'delay', inputs: ['name', 'greeting'], ms: 10 }))).toEqual([
      { path: 'nodes.d.inputs', reason: 'must list exactly one node id' },
    ]);
    expect(problemsOf(withNode('d', { type: 'delay', inputs: [], ms: 10 }))).toEqual([
      { path: 'nodes.d.inputs', reason: 'must list exactly one node id' },
    ]);
    expect(problemsOf(withNode('d', { type: 'delay', inputs: ['name'], ms: 86_400_001 }))).toEqual([
      { path: 'nodes.d.ms', reason: 'must be at most 86400000 ms' },
    ]);
    expect(problemsOf(withNode('d', { type: 'delay', inputs: ['name'], ms: -1 }))).toEqual([
      { path: 'nodes.d.ms', reason: 'must be at least 0 ms' },
    ]);
    expect(problemsOf(withNode('d', { type: 'delay', inputs: ['gone'], ms: 1 }))).toEqual([
      { path: 'nodes.d.inputs[0]', reason: "refers to node 'gone', which does not exist" },
    ]);
    expect(validateDefinition(withNode('d', { type: 'delay', inputs: ['name'], ms: 86_400_000 })).ok).toBe(true);
  });
});

describe('validateDefinition: many problems at once', () => {
  it('lists every problem with its path', () => {
    // Prepare
    const input = {
      description: ['not', 'text'],
      nodes: {
        age: { type: 'input', value_type: 'integer', value: 'ten' },
        'bad-id': { type: 'output', from: 'age' },
        calc: { type: 'transform', inputs: ['age', 'ghost'], expression: '$sum(' },
        wait: { type: 'delay', inputs: ['calc'], ms: 'soon' },
        report: { type: 'output', from: 'wait', extra: 1 },
      },
      version: 2,
    };

    // Act
    const problems = problemsOf(input);

    // Assess
    expect(problems.map((p) => p.path)).toEqual([
      'version',
      'description',
      'nodes.age.value',
      'nodes["bad-id"]',
      'nodes.calc.expression',
      'nodes.wait.ms',
      'nodes.report.extra',
      'nodes.calc.inputs[1]',
    ]);
    for (const p of problems) expect(p.reason.length).toBeGreaterThan(5);
  });
});

describe('validateDefinition: never throws', () => {
  const wellFormed = (result: ReturnType<typeof validateDefinition>) => {
    if (result.ok) return;
    expect(result.problems.length).toBeGreaterThan(0);
    for (const p of result.problems) {
      expect(typeof p.path).toBe('string');
      expect(typeof p.reason).toBe('string');
      expect(p.reason).not.toMatch(/could not be read/);
    }
  };

  it('on anything at all', () => {
    fc.assert(
      fc.property(
        fc.anything({
          withBigInt: true,
          withMap: true,
          withSet: true,
          withDate: true,
          withTypedArray: true,
          withSparseArray: true,
          withNullPrototype: true,
        }),
        (input) => {
          wellFormed(validateDefinition(input));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('on any JSON value, also as the nodes or a node', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom('whole', 'nodes', 'node'), (value, where) => {
        const input = where === 'whole' ? value : where === 'nodes' ? { nodes: value } : { nodes: { n: value } };
        wellFormed(validateDefinition(input));
      }),
      { numRuns: 500 },
    );
  });

  /** Every location in a JSON tree, as the list of keys leading to it. */
  function locations(value: unknown, at: (string | number)[] = []): (string | number)[][] {
    const here = [at];
    // Array.from visits holes too: mutations can leave sparse arrays behind.
    if (Array.isArray(value)) return here.concat(...Array.from(value, (v: unknown, i) => locations(v, [...at, i])));
    if (typeof value === 'object' && value !== null) {
      return here.concat(...Object.entries(value).map(([k, v]) => locations(v, [...at, k])));
    }
    return here;
  }

  type Mutation = { pick: number; op: 'set' | 'delete' | 'rename' | 'add'; value: unknown; key: string };

  function mutate(root: unknown, { pick, op, value, key }: Mutation): unknown {
    const copy: unknown = structuredClone(root);
    const all = locations(copy).filter((path) => path.length > 0);
    const path = all[pick % all.length];
    if (!path) return copy;
    let parent: unknown = copy;
    for (const k of path.slice(0, -1)) parent = (parent as Record<string | number, unknown>)[k];
    const last = path[path.length - 1] as string | number;
    const container = parent as Record<string | number, unknown>;
    if (op === 'set') container[last] = value;
    else if (op === 'delete') {
      if (Array.isArray(container)) container.splice(Number(last), 1);
      else delete container[last];
    } else if (op === 'rename' && !Array.isArray(container)) {
      container[key] = container[last];
      delete container[last];
    } else if (op === 'add' && typeof container[last] === 'object' && container[last] !== null) {
      (container[last] as Record<string, unknown>)[key] = value;
    }
    return copy;
  }

  const mutationArb: fc.Arbitrary<Mutation> = fc.record({
    pick: fc.nat(),
    op: fc.constantFrom('set', 'delete', 'rename', 'add'),
    value: fc.oneof(
      fc.jsonValue(),
      fc.constantFrom(
        'input',
        'output',
        'transform',
        'http',
        'delay',
        'name',
        'greeting',
        'message',
        'who',
        '1 +',
        '$x',
        'https://a.example/',
      ),
    ),
    key: fc.oneof(fc.string(), fc.constantFrom('type', 'inputs', 'from', 'value', 'expression', 'url', 'ms', 'body', 'execution_id')),
  });

  it('on random mutations of valid definitions', () => {
    fc.assert(
      fc.property(fc.constantFrom(greeting(), everyType()), fc.array(mutationArb, { minLength: 1, maxLength: 5 }), (base, mutations) => {
        const input = mutations.reduce<unknown>((acc, m) => mutate(acc, m), base);
        const result = validateDefinition(input);
        wellFormed(result);
        if (result.ok) {
          // Whatever passes is stable: validating the output again gives the same definition.
          expect(validateDefinition(result.definition)).toEqual(result);
        }
      }),
      {
        numRuns: 500,
        examples: [
          [
            greeting(),
            [
              { pick: 171145402, op: 'add', value: '', key: '2' },
              { pick: 0, op: 'set', value: [], key: 'type' },
            ],
          ],
        ],
      },
    );
  });
});

describe('canonicalDefinition and contentHash', () => {
  const valid = (input: unknown): PipelineDefinition => {
    const result = validateDefinition(input);
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    return result.definition;
  };

  it('sorts keys recursively and keeps only description and nodes', () => {
    // Prepare
    const def = valid(greeting());

    // Act
    const text = canonicalDefinition({ ...def, extra: 'ignored' } as PipelineDefinition);

    // Assess
    expect(text).toBe(
      '{"description":"Greets someone","nodes":{"greeting":{"expression":"\'Hello, \' & name & \'!\'","inputs":["name"],"type":"transform"},' +
        '"message":{"from":"greeting","type":"output"},"name":{"type":"input","value":"world","value_type":"string"}}}',
    );
    expect(JSON.parse(text)).toEqual(greeting());
  });

  it('omits a missing description', () => {
    expect(canonicalDefinition({ nodes: { a: { type: 'input', value_type: 'boolean', value: true } } })).toBe(
      '{"nodes":{"a":{"type":"input","value":true,"value_type":"boolean"}}}',
    );
  });

  /** The same JSON value with every object's keys in a shuffled order. */
  function shuffleKeys(value: unknown, seed: number[]): unknown {
    if (Array.isArray(value)) return value.map((v) => shuffleKeys(v, seed));
    if (typeof value === 'object' && value !== null) {
      const entries = Object.entries(value);
      const order = entries.map((e, i) => ({ e, k: seed[i % Math.max(seed.length, 1)] ?? i }));
      order.sort((x, y) => x.k - y.k);
      return Object.fromEntries(order.map(({ e: [k, v] }) => [k, shuffleKeys(v, seed.slice(1).concat(seed.slice(0, 1)))]));
    }
    return value;
  }

  it('does not depend on key order', () => {
    fc.assert(
      fc.property(fc.constantFrom(greeting(), everyType()), fc.array(fc.integer(), { minLength: 1, maxLength: 8 }), (base, seed) => {
        const reordered = valid(shuffleKeys(base, seed));
        expect(canonicalDefinition(reordered)).toBe(canonicalDefinition(valid(base)));
        expect(contentHash(reordered)).toBe(contentHash(valid(base)));
      }),
    );
  });

  it('changes with any change of content', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('name', 'greeting', 'message'),
        fc.constantFrom('description', 'node value', 'expression', 'new node', 'node description', 'rename node'),
        fc.string({ minLength: 1, maxLength: 20 }),
        (target, change, text) => {
          // Prepare
          const base = greeting() as Record<string, unknown> & ReturnType<typeof greeting>;
          const changed = structuredClone(base) as { description?: string; nodes: Record<string, Record<string, unknown>> };
          if (change === 'description') changed.description = `${base.description}${text}`;
          if (change === 'node value') changed.nodes.name = { ...changed.nodes.name, value: `${base.nodes.name.value}${text}` };
          if (change === 'expression')
            changed.nodes.greeting = {
              ...changed.nodes.greeting,
              expression: `${base.nodes.greeting.expression} & ${JSON.stringify(text)}`,
            };
          if (change === 'new node') changed.nodes.extra_node = { type: 'input', value_type: 'string', value: text };
          if (change === 'node description') changed.nodes[target] = { ...changed.nodes[target], description: text };
          if (change === 'rename node') {
            changed.nodes.message2 = changed.nodes.message ?? {};
            delete changed.nodes.message;
          }

          // Act
          const before = contentHash(valid(base));
          const after = contentHash(valid(changed));

          // Assess
          expect(after).not.toBe(before);
          expect(after).toMatch(/^[0-9a-f]{64}$/);
        },
      ),
    );
  });
});

describe('graph helpers', () => {
  const def = (): PipelineDefinition => {
    const result = validateDefinition(everyType());
    if (!result.ok) throw new Error('fixture invalid');
    return result.definition;
  };

  it("lists each node type's dependencies", () => {
    const { nodes } = def();
    expect(nodes.who && nodeDependencies(nodes.who)).toEqual([]);
    expect(nodes.text && nodeDependencies(nodes.text)).toEqual(['shout']);
    expect(nodes.shout && nodeDependencies(nodes.shout)).toEqual(['pause', 'loud', 'ratio']);
    expect(nodes.call && nodeDependencies(nodes.call)).toEqual(['who', 'count']);
    expect(nodes.plain && nodeDependencies(nodes.plain)).toEqual([]);
    expect(nodes.pause && nodeDependencies(nodes.pause)).toEqual(['call']);
  });

  it('orders every node after its dependencies, ties in declaration order', () => {
    // Act
    const order = topologicalOrder(def());

    // Assess
    expect(order).toEqual(['who', 'count', 'ratio', 'loud', 'call', 'plain', 'pause', 'shout', 'constant', 'text', 'pong']);
  });

  it('puts dependencies first even when declared last', () => {
    // Prepare
    const reversed: PipelineDefinition = {
      nodes: {
        out: { type: 'output', from: 't' },
        t: { type: 'transform', inputs: ['a'], expression: 'a' },
        a: { type: 'input', value_type: 'string', value: 'x' },
      },
    };

    // Act + Assess
    expect(topologicalOrder(reversed)).toEqual(['a', 't', 'out']);
  });

  it('refuses a cyclic definition', () => {
    expect(() =>
      topologicalOrder({
        nodes: { a: { type: 'transform', inputs: ['b'], expression: 'b' }, b: { type: 'transform', inputs: ['a'], expression: 'a' } },
      }),
    ).toThrow('cycle');
  });

  it('lists input and output ids in declaration order', () => {
    expect(inputNodeIds(def())).toEqual(['who', 'count', 'ratio', 'loud']);
    expect(outputNodeIds(def())).toEqual(['text', 'pong']);
  });
});

describe('labels: what people read instead of an input or output id', () => {
  const labelled = (input: unknown, output: unknown) => ({
    nodes: {
      photo: { type: 'input', value_type: 'string', value: 'x', ...(input === undefined ? {} : { label: input }) },
      thumbnail_bytes: { type: 'output', from: 'photo', ...(output === undefined ? {} : { label: output }) },
    },
  });
  const problemsOf = (def: unknown) => {
    const r = validateDefinition(def);
    return r.ok ? [] : r.problems;
  };

  it('takes a label on inputs and outputs, up to its limit, and keeps it', () => {
    const r = validateDefinition(labelled('Your photo', 'x'.repeat(MAX_LABEL_LENGTH)));
    expect(r.ok && r.definition.nodes.photo).toMatchObject({ label: 'Your photo' });
    expect(r.ok && r.definition.nodes.thumbnail_bytes).toMatchObject({ label: 'x'.repeat(MAX_LABEL_LENGTH) });
  });

  it.each([
    ['one character over the limit', 'x'.repeat(MAX_LABEL_LENGTH + 1), `must be at most ${MAX_LABEL_LENGTH} characters long`],
    ['empty', '', 'must not be empty'],
    ['blank', '   ', 'must not be empty'],
    ['two lines', 'Your\nphoto', 'must be one line, without control characters'],
    ['a number', 5, 'must be a string'],
  ])('refuses a label that is %s', (_name, label, reason) => {
    expect(problemsOf(labelled(label, undefined))).toEqual([{ path: 'nodes.photo.label', reason }]);
  });

  it('is a field of inputs and outputs only', () => {
    const def = {
      nodes: {
        a: { type: 'input', value_type: 'string', value: 'x' },
        t: { type: 'transform', inputs: ['a'], expression: 'a', label: 'Step' },
        o: { type: 'output', from: 't' },
      },
    };
    expect(problemsOf(def)).toEqual([{ path: 'nodes.t.label', reason: expect.stringContaining('unknown field for a transform node') }]);
  });
});
