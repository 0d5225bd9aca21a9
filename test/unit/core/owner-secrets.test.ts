import fc from 'fast-check';
import { runPipeline } from '../../../functions/core/engine';
import {
  MissingSecretError,
  REDACTED,
  bodySecretsBinding,
  redactDeep,
  redactSecrets,
  substituteSecrets,
} from '../../../functions/core/owner-secrets';
import { referencedSecretNames, secretReferences } from '../../../functions/core/nodes/secrets';
import { validateDefinition } from '../../../functions/core/pipeline';
import type { HttpPort, HttpRequest } from '../../../functions/core/ports';
import type { PipelineDefinition } from '../../../functions/core/types';

const TOKEN = 'tok_9f8e7d6c5b4a3210';

function definition(nodes: Record<string, unknown>): PipelineDefinition {
  const result = validateDefinition({ nodes });
  if (!result.ok) throw new Error(`test definition is invalid: ${JSON.stringify(result.problems)}`);
  return result.definition;
}

const problemsOf = (nodes: Record<string, unknown>) => {
  const result = validateDefinition({ nodes });
  return result.ok ? [] : result.problems;
};

const authenticated = definition({
  city: { type: 'input', value_type: 'string', value: 'Lyon' },
  call: {
    type: 'http',
    method: 'POST',
    inputs: ['city'],
    url: 'https://api.example.com/v1/{{secrets.REGION}}/rates',
    headers: { Authorization: 'Bearer {{ secrets.UPSTREAM }}', 'X-Trace': 'fixed' },
    body: '{"city": city, "key": $secrets.SIGNING}',
  },
  answer: { type: 'output', from: 'call' },
});

describe('secret references', () => {
  it('are found in http urls, header values and bodies, with where they sit', () => {
    // Act
    const refs = secretReferences(authenticated);
    const names = referencedSecretNames(authenticated);

    // Assess
    expect(refs).toEqual([
      { name: 'REGION', path: 'nodes.call.url' },
      { name: 'UPSTREAM', path: 'nodes.call.headers.Authorization' },
      { name: 'SIGNING', path: 'nodes.call.body' },
    ]);
    expect(names).toEqual(['REGION', 'SIGNING', 'UPSTREAM']);
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    [
      'a malformed template',
      { type: 'http', url: 'https://a.example/{{secrets.9x}}' },
      'nodes.n.url',
      '{{secrets.9x}} is not a secret reference',
    ],
    [
      'a template without a name',
      { type: 'http', url: 'https://a.example/', headers: { 'x-k': '{{ secrets }}' } },
      'nodes.n.headers["x-k"]',
      '{{ secrets }} is not a secret reference',
    ],
    [
      '$secrets used whole',
      { type: 'http', method: 'POST', url: 'https://a.example/', body: '$secrets' },
      'nodes.n.body',
      'use $secrets.NAME for one secret',
    ],
    [
      '$secrets in a transform',
      { type: 'transform', inputs: [], expression: '$secrets.TOKEN' },
      'nodes.n.expression',
      'secrets are available only in http nodes',
    ],
  ])('refuse %s at push', (_what, node, path, reason) => {
    // Act
    const problems = problemsOf({ n: node });

    // Assess
    expect(problems).toEqual([{ path, reason: expect.stringContaining(reason) }]);
  });

  it('let a url whose host is a secret pass the push check', () => {
    // Act
    const problems = problemsOf({ n: { type: 'http', url: 'https://{{secrets.HOST}}/v1' } });

    // Assess
    expect(problems).toEqual([]);
  });
});

describe('substitution', () => {
  it('replaces every reference and names a missing secret', () => {
    // Prepare
    const values = new Map([['A', '1']]);

    // Act
    const done = substituteSecrets('x{{secrets.A}}y{{ secrets.A }}', values);
    const missing = (() => {
      try {
        substituteSecrets('{{secrets.A}}{{secrets.B}}', values);
      } catch (e) {
        return e;
      }
      return null;
    })();

    // Assess
    expect(done).toBe('x1y1');
    expect(missing).toBeInstanceOf(MissingSecretError);
    expect((missing as Error).message).toBe("secret 'B' is not set (set it with: pipegate secrets set B)");
  });

  it('binds only the names a body references', () => {
    // Act
    const binding = bodySecretsBinding(
      '{"k": $secrets.A}',
      new Map([
        ['A', '1'],
        ['OTHER', '2'],
      ]),
    );

    // Assess
    expect({ ...binding }).toEqual({ A: '1' });
  });
});

describe('redaction', () => {
  it('removes a value in every spelling it may come back in', () => {
    // Prepare
    const secret = 'p@ss/"word" ü';

    // Act
    const text = redactSecrets(`raw ${secret} json ${JSON.stringify(secret)} url ${encodeURIComponent(secret)}`, [secret]);

    // Assess
    expect(text).toBe(`raw ${REDACTED} json "${REDACTED}" url ${REDACTED}`);
  });

  it('leaves no occurrence of any value in any text (property)', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 6, maxLength: 30 }), fc.string(), fc.string(), (secret, before, after) => {
        const out = redactSecrets(`${before}${secret}${after}${secret}`, [secret]);
        return !out.includes(secret);
      }),
    );
  });

  it('redacts strings deep inside a value, keys included', () => {
    // Act
    const out = redactDeep({ [`k-${TOKEN}`]: [1, `Bearer ${TOKEN}`, { n: true }] }, (t) => redactSecrets(t, [TOKEN]));

    // Assess
    expect(out).toEqual({ [`k-${REDACTED}`]: [1, `Bearer ${REDACTED}`, { n: true }] });
  });
});

describe('the engine with owner secrets', () => {
  const secrets = new Map([
    ['REGION', 'eu-west'],
    ['UPSTREAM', TOKEN],
    ['SIGNING', 'sig_1234567890'],
  ]);

  it('sends the values in the url, the headers and the body', async () => {
    // Prepare
    const seen: HttpRequest[] = [];
    const http: HttpPort = async (req) => {
      seen.push(req);
      return { status: 200, headers: {}, body: '{"ok":true}' };
    };
    const def = definition({
      ...authenticated.nodes,
      answer: { type: 'output', from: 'flag' },
      flag: { type: 'transform', inputs: ['call'], expression: 'call.ok' },
    });

    // Act
    const result = await runPipeline(def, {}, { http, timeoutMs: 5000, secrets });

    // Assess
    expect(result).toEqual({ status: 'completed', outputs: { answer: true } });
    expect(seen[0]?.url).toBe('https://api.example.com/v1/eu-west/rates');
    expect(seen[0]?.headers).toEqual({ Authorization: `Bearer ${TOKEN}`, 'X-Trace': 'fixed', 'content-type': 'application/json' });
    expect(JSON.parse(String(seen[0]?.body ?? ''))).toEqual({ city: 'Lyon', key: 'sig_1234567890' });
  });

  it('fails the node with a message naming a missing secret, and calls nothing', async () => {
    // Prepare
    let calls = 0;
    const http: HttpPort = async () => {
      calls += 1;
      return { status: 200, headers: {}, body: '{}' };
    };

    // Act
    const result = await runPipeline(authenticated, {}, { http, timeoutMs: 5000, secrets: new Map([['REGION', 'eu']]) });

    // Assess
    expect(result).toEqual({
      status: 'failed',
      error_message: "Node 'call' failed: secret 'UPSTREAM' is not set (set it with: pipegate secrets set UPSTREAM)",
      caller_message: "Node 'call' failed: the pipeline is missing a setting",
    });
    expect(calls).toBe(0);
  });

  it('redacts an upstream that echoes the credential, in outputs and in error messages', async () => {
    // Prepare
    const echo: HttpPort = async (req) => ({ status: 200, headers: {}, body: JSON.stringify({ got: req.headers.Authorization }) });
    const echoDef = definition({
      call: { type: 'http', url: 'https://api.example.com/echo', headers: { Authorization: 'Bearer {{secrets.UPSTREAM}}' } },
      seen: { type: 'transform', inputs: ['call'], expression: 'call.got' },
      answer: { type: 'output', from: 'seen' },
    });
    const failing: HttpPort = async (req) => {
      throw new Error(`upstream said: bad token ${req.headers.Authorization} at ${req.url}`);
    };
    const inUrl = definition({
      call: {
        type: 'http',
        url: 'https://api.example.com/k/{{secrets.UPSTREAM}}/x',
        headers: { Authorization: 'Bearer {{secrets.UPSTREAM}}' },
      },
      answer: { type: 'output', from: 'call' },
    });
    const status401: HttpPort = async () => ({ status: 401, headers: {}, body: '' });

    // Act
    const echoed = await runPipeline(echoDef, {}, { http: echo, timeoutMs: 5000, secrets });
    const failed = await runPipeline(echoDef, {}, { http: failing, timeoutMs: 5000, secrets });
    const refused = await runPipeline(inUrl, {}, { http: status401, timeoutMs: 5000, secrets });

    // Assess
    expect(echoed).toEqual({ status: 'completed', outputs: { answer: `Bearer ${REDACTED}` } });
    expect(failed).toEqual({
      status: 'failed',
      error_message: `Node 'call' failed: upstream said: bad token Bearer ${REDACTED} at https://api.example.com/echo`,
      caller_message: "Node 'call' failed: the upstream request failed",
    });
    expect(refused).toEqual({
      status: 'failed',
      error_message: `Node 'call' failed: HTTP 401 from https://api.example.com/k/${REDACTED}/x`,
      caller_message: "Node 'call' failed: upstream answered 401",
    });
  });
});
