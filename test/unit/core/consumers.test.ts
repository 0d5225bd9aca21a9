import fc from 'fast-check';
import { generateApiKey, generateConsumerKey, keyHint, parseApiKey } from '../../../functions/core/api-key';
import { quotaPeriod, rateLimitHeaders, rateWindow } from '../../../functions/core/consumers';

const DEP = '0d2f8c1e-7a6b-4c3d-9e8f-1a2b3c4d5e6f';
const CON = 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d';

describe('consumer keys', () => {
  it('name their deployment and consumer, and a deployment key names no consumer', () => {
    const key = generateConsumerKey(DEP, CON, Buffer.alloc(24, 9));
    expect(key).toHaveLength(106);
    expect(parseApiKey(key)).toEqual({ deploymentId: DEP, consumerId: CON });
    expect(parseApiKey(generateApiKey(DEP, Buffer.alloc(24, 9)))).toEqual({ deploymentId: DEP });
    expect(keyHint(key)).toBe(`${key.slice(0, 12)}…${key.slice(-4)}`);
  });

  it('refuse any one character changed (the checksum), and never throw on anything (property)', () => {
    const key = generateConsumerKey(DEP, CON, Buffer.alloc(24, 3));
    fc.assert(
      fc.property(fc.nat({ max: key.length - 1 }), fc.constantFrom(...'0123456789abcdefABCXYZ-_'), (i, c) => {
        const changed = `${key.slice(0, i)}${c}${key.slice(i + 1)}`;
        if (changed !== key) expect(parseApiKey(changed)).toBeNull();
      }),
    );
    fc.assert(fc.property(fc.string({ maxLength: 140 }), (s) => void parseApiKey(`pgk_${s}`)));
  });
});

describe('limit windows', () => {
  it('quota periods are the UTC day and calendar month, resetting at their start', () => {
    const day = quotaPeriod('day', new Date('2026-11-24T22:30:00.000Z'));
    expect(day).toMatchObject({ label: '2026-11-24', end: new Date('2026-11-25T00:00:00.000Z'), resetSeconds: 5400 });
    const december = quotaPeriod('month', new Date('2026-12-31T23:59:59.500Z'));
    expect(december).toMatchObject({ label: '2026-12', end: new Date('2027-01-01T00:00:00.000Z'), resetSeconds: 1 });
    expect(quotaPeriod('month', new Date('2027-01-01T00:00:00.000Z')).label).toBe('2027-01');
  });

  it('a rate window is aligned to the epoch and says how long until the next', () => {
    expect(rateWindow({ requests: 5, per_seconds: 60 }, 125_500)).toEqual({ start: 120, end: 180, resetSeconds: 55 });
    expect(rateWindow({ requests: 1, per_seconds: 1 }, 1_000)).toEqual({ start: 1, end: 2, resetSeconds: 1 });
  });

  it('headers follow the IETF draft, a named policy per limit', () => {
    expect(
      rateLimitHeaders([
        { policy: 'rate', limit: 10, windowSeconds: 1, remaining: 9, resetSeconds: 1 },
        { policy: 'quota', limit: 100, windowSeconds: 86_400, remaining: -1, resetSeconds: 3600 },
      ]),
    ).toEqual({ 'ratelimit-policy': '"rate";q=10;w=1, "quota";q=100;w=86400', ratelimit: '"rate";r=9;t=1, "quota";r=0;t=3600' });
    expect(rateLimitHeaders([])).toEqual({});
  });
});
