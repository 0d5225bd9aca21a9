/**
 * The caller key check (auth.service): each refusal names its case, never the key, and a
 * well-formed key tells nothing about which deployments exist. In-memory stores, no network.
 */
import { generateApiKey } from '../../../functions/core/api-key';
import { KEY_REFUSALS } from '../../../functions/core/errors';
import { authorize } from '../../../functions/services/auth.service';
import { rotate } from '../../../functions/services/keys.service';
import { testDeps, type TestDeps } from '../../support/fakes';
import { publishPipeline } from '../../support/published';
import { memoryStores } from '../../support/memory-stores';

const BASE = 'https://api.example';

const published = (d: TestDeps, id: string) => publishPipeline(d, id, { base: BASE });

describe('authorize', () => {
  let now: Date;
  let d: TestDeps;
  let a: { deploymentId: string; apiKey: string };
  let b: { deploymentId: string; apiKey: string };
  beforeEach(async () => {
    now = new Date('2026-11-24T12:00:00.000Z');
    d = testDeps(memoryStores(), { clock: { now: () => now } });
    a = await published(d, 'auth-a');
    b = await published(d, 'auth-b');
  });

  it('passes a valid key in either header, with its deployment', async () => {
    for (const headers of [
      { 'x-api-key': a.apiKey },
      { Authorization: `Api-Key ${a.apiKey}` },
      { 'X-API-Key': a.apiKey, authorization: `api-key ${a.apiKey}` },
    ]) {
      expect(await authorize(d, headers, a.deploymentId)).toMatchObject({ ok: true, deploymentId: a.deploymentId, deleted: false });
    }
    // Routes that name no deployment (an execution's status) take the key's own.
    expect(await authorize(d, { 'x-api-key': a.apiKey })).toMatchObject({ ok: true, deploymentId: a.deploymentId });
  });

  it.each([
    ['no header', 'missing', {}],
    ['an empty X-API-Key', 'missing', { 'x-api-key': '  ' }],
    ['Authorization: Api-Key without a key', 'missing', { authorization: 'Api-Key ' }],
    ['Authorization: Bearer', 'wrong_scheme', { authorization: 'Bearer KEY' }],
    ['Authorization: Basic', 'wrong_scheme', { authorization: 'Basic S0VZOg==' }],
    ['a bare key in Authorization', 'wrong_scheme', { authorization: 'KEY' }],
    ['garbage', 'malformed', { 'x-api-key': 'hello' }],
    ['a key with its checksum broken', 'malformed', { 'x-api-key': 'BROKEN' }],
  ])('refuses %s as %s', async (_what, reason, raw: Record<string, string>) => {
    const headers = Object.fromEntries(
      Object.entries(raw).map(([k, v]) => [
        k,
        v.replace('KEY', a.apiKey).replace('BROKEN', `${a.apiKey.slice(0, -1)}${a.apiKey.endsWith('A') ? 'B' : 'A'}`),
      ]),
    );
    expect(await authorize(d, headers, a.deploymentId)).toEqual({ ok: false, reason });
  });

  it('refuses two different keys in one request', async () => {
    expect(await authorize(d, { 'x-api-key': a.apiKey, authorization: `Api-Key ${b.apiKey}` }, a.deploymentId)).toEqual({
      ok: false,
      reason: 'two_keys',
    });
  });

  it('answers unknown alike for a made-up key of a real deployment and of one that does not exist', async () => {
    const madeUp = generateApiKey(a.deploymentId, Buffer.alloc(24, 7));
    const nowhere = generateApiKey('00000000-0000-4000-8000-000000000000', Buffer.alloc(24, 7));
    expect(await authorize(d, { 'x-api-key': madeUp }, a.deploymentId)).toEqual({ ok: false, reason: 'unknown' });
    expect(await authorize(d, { 'x-api-key': nowhere }, '00000000-0000-4000-8000-000000000000')).toEqual({ ok: false, reason: 'unknown' });
  });

  it("refuses a valid key on another deployment's route", async () => {
    expect(await authorize(d, { 'x-api-key': b.apiKey }, a.deploymentId)).toEqual({ ok: false, reason: 'other_deployment' });
    expect(await authorize(d, { 'x-api-key': b.apiKey }, 'not-a-uuid')).toEqual({ ok: false, reason: 'other_deployment' });
  });

  it('says revoked for a key replaced without grace, expired once a grace period has ended', async () => {
    const second = (await rotate(d, 'auth-a', '{}')).api_key as string;
    expect(await authorize(d, { 'x-api-key': a.apiKey }, a.deploymentId)).toEqual({ ok: false, reason: 'revoked' });
    expect(await authorize(d, { 'x-api-key': second }, a.deploymentId)).toMatchObject({ ok: true });

    const third = (await rotate(d, 'auth-a', '{"grace_seconds":60}')).api_key as string;
    expect(await authorize(d, { 'x-api-key': second }, a.deploymentId)).toMatchObject({ ok: true });
    now = new Date(now.getTime() + 61_000);
    expect(await authorize(d, { 'x-api-key': second }, a.deploymentId)).toEqual({ ok: false, reason: 'expired' });
    expect(await authorize(d, { 'x-api-key': third }, a.deploymentId)).toMatchObject({ ok: true });
    // Still told apart after more rotations, up to the retired keys kept.
    await rotate(d, 'auth-a', '{}');
    expect(await authorize(d, { 'x-api-key': a.apiKey }, a.deploymentId)).toEqual({ ok: false, reason: 'revoked' });
    expect(await authorize(d, { 'x-api-key': third }, a.deploymentId)).toEqual({ ok: false, reason: 'revoked' });
    const stored = await d.deployments.get(a.deploymentId);
    expect(stored?.key_hashes.length).toBeLessThanOrEqual(5);
  });

  it('keeps at most four retired keys', async () => {
    for (let i = 0; i < 6; i++) await rotate(d, 'auth-a', '{}');
    const stored = await d.deployments.get(a.deploymentId);
    expect(stored?.key_hashes.filter((k) => k.expires_at === null)).toHaveLength(1);
    expect(stored?.key_hashes).toHaveLength(5);
    // The oldest fell out: unknown now, which is what it would have been before keys were kept.
    expect(await authorize(d, { 'x-api-key': a.apiKey }, a.deploymentId)).toEqual({ ok: false, reason: 'unknown' });
  });

  it('has a detail for every reason that is safe inside a JSON string and an API Gateway template', () => {
    for (const [reason, detail] of Object.entries(KEY_REFUSALS)) {
      expect({ reason, unsafe: /["\\$#\p{Cc}]/u.test(detail) }).toEqual({ reason, unsafe: false });
    }
  });
});
