import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import {
  constantTimeEquals,
  extractApiKey,
  generateApiKey,
  keyStatus,
  readApiKey,
  generateSigningSecret,
  hashApiKey,
  keyMatches,
  openSecret,
  parseApiKey,
  sealSecret,
} from '../../../functions/core/api-key';

const DEPLOYMENT = '6f1c0f7e-2a55-4d1e-9a53-0a2f3c4b5d6e';
const KEY_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-';

describe('API keys', () => {
  it('have a recognisable, fixed-length format naming the deployment', () => {
    // Act
    const key = generateApiKey(DEPLOYMENT, Buffer.alloc(24, 7));

    // Assess
    expect(key).toMatch(/^pgk_6f1c0f7e2a554d1e9a530a2f3c4b5d6e[A-Za-z0-9_-]{38}$/);
    expect(parseApiKey(key)).toEqual({ deploymentId: DEPLOYMENT });
  });

  it('differ when the random part differs', () => {
    // Act
    const a = generateApiKey(DEPLOYMENT, Buffer.alloc(24, 1));
    const b = generateApiKey(DEPLOYMENT, Buffer.alloc(24, 2));

    // Assess
    expect(a).not.toBe(b);
  });

  it('refuse too little randomness and ids that are not UUIDs', () => {
    // Act
    const short = () => generateApiKey(DEPLOYMENT, Buffer.alloc(23));
    const notUuid = () => generateApiKey('greeter', Buffer.alloc(24));

    // Assess
    expect(short).toThrow(/random bytes/);
    expect(notUuid).toThrow(/not a UUID/);
  });

  it('round-trip for any deployment id and random bytes', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uint8Array({ minLength: 24, maxLength: 48 }), (id, bytes) => {
        const key = generateApiKey(id, Buffer.from(bytes));
        expect(parseApiKey(key)).toEqual({ deploymentId: id.toLowerCase() });
      }),
    );
  });

  it('are rejected after any single-character change', () => {
    const keyAndEdit = fc
      .tuple(fc.uuid(), fc.uint8Array({ minLength: 24, maxLength: 24 }))
      .map(([id, bytes]) => generateApiKey(id, Buffer.from(bytes)))
      .chain((key) =>
        fc.record({
          key: fc.constant(key),
          at: fc.nat({ max: key.length - 1 }),
          replacement: fc.oneof(fc.constantFrom(...KEY_ALPHABET), fc.string({ minLength: 1, maxLength: 1 })),
        }),
      )
      .filter(({ key, at, replacement }) => key[at] !== replacement);
    fc.assert(
      fc.property(keyAndEdit, ({ key, at, replacement }) => {
        const changed = key.slice(0, at) + replacement + key.slice(at + 1);
        expect(parseApiKey(changed)).toBeNull();
      }),
      { numRuns: 1000 },
    );
  });

  it('are rejected when truncated, extended or of another prefix', () => {
    // Prepare
    const key = generateApiKey(DEPLOYMENT, Buffer.alloc(24, 9));

    // Act
    const variants = [key.slice(0, -1), `${key}a`, `x${key.slice(1)}`, key.toUpperCase(), ` ${key}`, ''];

    // Assess
    for (const variant of variants) expect(parseApiKey(variant)).toBeNull();
  });

  it('parsing never throws, whatever the string', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: 'binary' }),
          fc.string().map((s) => `pgk_${s}`),
        ),
        (s) => {
          expect(parseApiKey(s)).toBeNull();
        },
      ),
    );
  });
});

describe('key hashes', () => {
  const pepper = Buffer.from('a pepper of some length for tests');

  it('are HMAC-SHA-256 hex, depending on the pepper', () => {
    // Prepare
    const key = generateApiKey(DEPLOYMENT, randomBytes(24));

    // Act
    const hash = hashApiKey(key, pepper);

    // Assess
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key, Buffer.from('another pepper'))).not.toBe(hash);
    expect(hash).not.toContain(key.slice(36));
  });

  it('match the key against any of the stored hashes', () => {
    // Prepare
    const oldKey = generateApiKey(DEPLOYMENT, randomBytes(24));
    const newKey = generateApiKey(DEPLOYMENT, randomBytes(24));
    const stored = [hashApiKey(oldKey, pepper), hashApiKey(newKey, pepper)];

    // Act
    const results = [
      keyMatches(oldKey, pepper, stored),
      keyMatches(newKey, pepper, stored),
      keyMatches(newKey, pepper, stored.slice(0, 1)),
      keyMatches(generateApiKey(DEPLOYMENT, randomBytes(24)), pepper, stored),
      keyMatches(newKey, pepper, []),
      keyMatches(newKey, pepper, ['short', '']),
    ];

    // Assess
    expect(results).toEqual([true, true, false, false, false, false]);
  });
});

describe('extractApiKey', () => {
  it.each([
    ['X-API-Key', { 'X-API-Key': 'k1' }, 'k1'],
    ['x-api-key in lower case', { 'x-api-key': ' k1 ' }, 'k1'],
    ['Authorization: Api-Key', { Authorization: 'Api-Key k1' }, 'k1'],
    ['the scheme in any case, with spaces', { authorization: '  api-key   k1 ' }, 'k1'],
    ['both headers with the same key', { 'X-Api-Key': 'k1', Authorization: 'API-KEY k1' }, 'k1'],
    ['X-API-Key beside another Authorization scheme', { 'X-API-Key': 'k1', Authorization: 'Bearer t' }, 'k1'],
  ])('reads %s', (_name, headers, expected) => {
    // Act
    const key = extractApiKey(headers);

    // Assess
    expect(key).toBe(expected);
  });

  it.each([
    ['no headers', {}],
    ['both headers with different keys', { 'X-API-Key': 'k1', Authorization: 'Api-Key k2' }],
    ['another Authorization scheme alone', { Authorization: 'Bearer k1' }],
    ['a scheme without a key', { Authorization: 'Api-Key' }],
    ['an empty X-API-Key', { 'X-API-Key': '  ' }],
    ['an undefined header', { 'X-API-Key': undefined }],
    ['the same header twice in different case, differing', { 'x-api-key': 'k1', 'X-API-KEY': 'k2' }],
  ])('refuses %s', (_name, headers) => {
    // Act
    const key = extractApiKey(headers as Record<string, string | undefined>);

    // Assess
    expect(key).toBeNull();
  });
});

describe('readApiKey', () => {
  it.each([
    ['no headers', {}, { refused: 'missing' }],
    ['an empty X-API-Key and an empty Authorization', { 'X-API-Key': ' ', Authorization: '' }, { refused: 'missing' }],
    ['the Api-Key scheme without a key', { Authorization: 'Api-Key ' }, { refused: 'missing' }],
    ['Bearer', { Authorization: 'Bearer k1' }, { refused: 'wrong_scheme' }],
    ['Basic', { authorization: 'Basic azE6' }, { refused: 'wrong_scheme' }],
    ['a bare key', { authorization: 'k1' }, { refused: 'wrong_scheme' }],
    ['two different keys', { 'X-API-Key': 'k1', Authorization: 'Api-Key k2' }, { refused: 'two_keys' }],
    ['a key with a space in it, whole (to be refused as malformed)', { Authorization: 'Api-Key k1 k2' }, { key: 'k1 k2' }],
    ['X-API-Key beside a Bearer token', { 'X-API-Key': 'k1', Authorization: 'Bearer t' }, { key: 'k1' }],
    ['X-API-Key sent twice with two keys', { 'X-API-Key': ['k1', 'k2'] }, { refused: 'two_keys' }],
    ['Authorization sent twice with two keys', { authorization: ['Api-Key k1', 'Api-Key k2'] }, { refused: 'two_keys' }],
    ['Authorization sent twice, a key and a Bearer token', { Authorization: ['Bearer t', 'Api-Key k1'] }, { refused: 'two_keys' }],
    ['x-api-key and X-API-Key, two keys', { 'x-api-key': 'k1', 'X-API-Key': ['k2'] }, { refused: 'two_keys' }],
    ['X-API-Key sent twice with the same key', { 'X-API-Key': ['k1', ' k1 '] }, { key: 'k1' }],
  ])('reads %s', (_name, headers, expected) => {
    expect(readApiKey(headers)).toEqual(expected);
  });

  // The MCP route, where clients send their token as `Authorization: Bearer`.
  it.each([
    ['Bearer', { Authorization: 'Bearer k1' }, { key: 'k1' }],
    ['bearer in any case, with tabs', { authorization: 'bEaReR\tk1' }, { key: 'k1' }],
    ['Bearer without a token', { Authorization: 'Bearer ' }, { refused: 'missing' }],
    ['Bearer beside the same key in X-API-Key', { 'X-API-Key': 'k1', Authorization: 'Bearer k1' }, { key: 'k1' }],
    ['Bearer beside another key', { 'X-API-Key': 'k1', Authorization: 'Bearer k2' }, { refused: 'two_keys' }],
    ['Api-Key still', { Authorization: 'Api-Key k1' }, { key: 'k1' }],
    ['Basic still refused', { authorization: 'Basic azE6' }, { refused: 'wrong_scheme' }],
  ])('reads %s where Bearer is taken', (_name, headers, expected) => {
    expect(readApiKey(headers, { bearer: true })).toEqual(expected);
  });
});

describe('keyStatus', () => {
  const pepper = randomBytes(32);
  const key = generateApiKey(DEPLOYMENT, randomBytes(24));
  const hash = hashApiKey(key, pepper);
  const other = hashApiKey(generateApiKey(DEPLOYMENT, randomBytes(24)), pepper);

  it.each([
    ['current', [{ hash, expires_at: null }], 'valid'],
    ['in its grace period', [{ hash, expires_at: 101 }], 'valid'],
    ['past its grace period', [{ hash, expires_at: 100 }], 'expired'],
    ['revoked', [{ hash, expires_at: 90, revoked_at: 90 }], 'revoked'],
    ['not stored', [{ hash: other, expires_at: null }], 'unknown'],
    [
      'stored twice, once current',
      [
        { hash, expires_at: 90, revoked_at: 90 },
        { hash, expires_at: null },
      ],
      'valid',
    ],
    ['against nothing', [], 'unknown'],
  ])('says a key %s is %s', (_what, stored, expected) => {
    expect(keyStatus(key, pepper, stored, 100)).toBe(expected);
  });
});

describe('constantTimeEquals', () => {
  it('compares strings of any length', () => {
    // Act
    const results = [
      constantTimeEquals('owner-token', 'owner-token'),
      constantTimeEquals('owner-token', 'owner-tokem'),
      constantTimeEquals('owner-token', 'owner-token-longer'),
      constantTimeEquals('', ''),
      constantTimeEquals('', 'x'),
    ];

    // Assess
    expect(results).toEqual([true, false, false, true, false]);
  });

  it('agrees with === for any pair of strings', () => {
    fc.assert(fc.property(fc.string(), fc.string(), (a, b) => constantTimeEquals(a, b) === (a === b)));
  });
});

describe('signing secrets', () => {
  it('use the Standard Webhooks format: whsec_ and base64 of 32 bytes', () => {
    // Prepare
    const bytes = randomBytes(40);

    // Act
    const secret = generateSigningSecret(bytes);

    // Assess
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64').equals(bytes.subarray(0, 32))).toBe(true);
    expect(() => generateSigningSecret(Buffer.alloc(31))).toThrow();
  });
});

describe('sealed secrets', () => {
  const masterKey = randomBytes(32);
  const secret = generateSigningSecret(randomBytes(32));

  it('open to the sealed plaintext', () => {
    // Act
    const sealed = sealSecret(secret, masterKey, randomBytes(12));

    // Assess
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain(secret.slice(6));
    expect(openSecret(sealed, masterKey)).toBe(secret);
  });

  it('round-trip any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.uint8Array({ minLength: 12, maxLength: 12 }), (text, iv) => {
        expect(openSecret(sealSecret(text, masterKey, Buffer.from(iv)), masterKey)).toBe(text);
      }),
    );
  });

  it('refuse to open under another key', () => {
    // Prepare
    const sealed = sealSecret(secret, masterKey, randomBytes(12));

    // Act
    const act = () => openSecret(sealed, randomBytes(32));

    // Assess
    expect(act).toThrow(/authentication/);
  });

  it('refuse to open after any single-character change', () => {
    // Prepare
    const sealed = sealSecret(secret, masterKey, randomBytes(12));
    const alphabet = `${KEY_ALPHABET}.=`;
    const edit = fc
      .record({ at: fc.nat({ max: sealed.length - 1 }), replacement: fc.constantFrom(...alphabet) })
      .filter(({ at, replacement }) => sealed[at] !== replacement);

    // Act / Assess
    fc.assert(
      fc.property(edit, ({ at, replacement }) => {
        const changed = sealed.slice(0, at) + replacement + sealed.slice(at + 1);
        expect(() => openSecret(changed, masterKey)).toThrow();
      }),
      { numRuns: 500 },
    );
  });

  it.each([
    ['another version', (s: string) => s.replace(/^v1/, 'v2')],
    [
      'a truncated tag',
      (s: string) =>
        s
          .split('.')
          .map((p, i) => (i === 2 ? p.slice(0, 8) : p))
          .join('.'),
    ],
    ['a missing part', (s: string) => s.split('.').slice(0, 3).join('.')],
    ['an extra part', (s: string) => `${s}.AAAA`],
  ])('refuse %s', (_name, mutate) => {
    // Prepare
    const sealed = sealSecret(secret, masterKey, randomBytes(12));

    // Act
    const act = () => openSecret(mutate(sealed), masterKey);

    // Assess
    expect(act).toThrow(/malformed/);
  });

  it('seal the same text differently under different IVs', () => {
    // Act
    const a = sealSecret(secret, masterKey, randomBytes(12));
    const b = sealSecret(secret, masterKey, randomBytes(12));

    // Assess
    expect(a).not.toBe(b);
    expect(openSecret(a, masterKey)).toBe(openSecret(b, masterKey));
  });
});
