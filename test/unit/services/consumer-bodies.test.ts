/**
 * Create and update bodies of consumers, fuzzed: whatever an owner sends, the answer is the
 * consumer it asked for or a 400 whose problems each name a field, never another error; and a
 * body the service accepts is stored exactly as the answer says.
 */
import fc from 'fast-check';
import { AppError } from '../../../functions/core/errors';
import { createConsumer, listConsumers, updateConsumer } from '../../../functions/services/consumers.service';
import { testDeps, type TestDeps } from '../../support/fakes';
import { publishPipeline } from '../../support/published';
import { memoryStores } from '../../support/memory-stores';

const NOW = new Date('2026-11-25T12:00:00.000Z');

async function publishedDeps(): Promise<TestDeps> {
  const d = testDeps(memoryStores(), { clock: { now: () => NOW } });
  await publishPipeline(d, 'shop');
  return d;
}

const json = fc.jsonValue({ maxDepth: 3 });
const near = fc.record(
  {
    name: fc.oneof(fc.string({ maxLength: 110 }), json),
    rate_limit: fc.oneof(
      json,
      fc.constant(null),
      fc.record(
        {
          requests: fc.oneof(fc.integer({ min: -1, max: 1_000_001 }), fc.double(), json),
          per_seconds: fc.oneof(fc.integer({ min: -1, max: 3601 }), json),
        },
        { requiredKeys: [] },
      ),
    ),
    quota: fc.oneof(
      json,
      fc.constant(null),
      fc.record(
        { executions: fc.oneof(fc.integer({ min: -1, max: 5 }), json), per: fc.oneof(fc.constantFrom('day', 'month', 'week'), json) },
        { requiredKeys: [] },
      ),
    ),
    expires_at: fc.oneof(
      json,
      fc.constant(null),
      fc.date({ min: new Date('2020-01-01'), max: new Date('2030-01-01'), noInvalidDate: true }).map((x) => x.toISOString()),
      fc.constantFrom('2027-01-01', '2027-01-01T00:00:00+01:00', 'soon'),
    ),
    metadata: fc.oneof(json, fc.dictionary(fc.string({ maxLength: 70 }), fc.oneof(fc.string({ maxLength: 260 }), json), { maxKeys: 18 })),
    extra: json,
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  { weight: 6, arbitrary: near.map((b) => JSON.stringify(b)) },
  { weight: 2, arbitrary: json.map((b) => JSON.stringify(b)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 60 }) },
);

/** The outcome of a call: its value, or the 400's problems; anything else fails the test. */
async function outcome<T>(call: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; paths: string[] }> {
  try {
    return { ok: true, value: await call() };
  } catch (e) {
    if (!(e instanceof AppError) || e.status !== 400) throw e;
    const problems = e.detail as { path: string; reason: string }[] | string | undefined;
    if (Array.isArray(problems)) {
      for (const p of problems) {
        expect(typeof p.path).toBe('string');
        expect(p.reason.length).toBeGreaterThan(0);
      }
      return { ok: false, paths: problems.map((p) => p.path) };
    }
    expect(typeof problems).toBe('string');
    return { ok: false, paths: [] };
  }
}

describe('consumer bodies', () => {
  let d: TestDeps;
  beforeAll(async () => {
    d = await publishedDeps();
  });

  it('refuses metadata given as a list, on create and on update, naming the field', async () => {
    await expect(createConsumer(d, 'shop', JSON.stringify({ name: 'listy', metadata: [] }))).rejects.toMatchObject({
      status: 400,
      detail: [{ path: 'metadata' }],
    });
    const made = await createConsumer(d, 'shop', JSON.stringify({ name: 'listy', metadata: { plan: 'free' } }));
    await expect(updateConsumer(d, 'shop', made.consumer_id, JSON.stringify({ metadata: ['plan'] }))).rejects.toMatchObject({
      status: 400,
      detail: [{ path: 'metadata' }],
    });
    expect((await listConsumers(d, 'shop')).consumers.find((c) => c.consumer_id === made.consumer_id)?.metadata).toEqual({ plan: 'free' });
  });

  it('keeps metadata keys named prototype and constructor (found by the fuzz: they were dropped)', async () => {
    const made = await createConsumer(d, 'shop', JSON.stringify({ name: 'keys', metadata: { prototype: '', constructor: 'x' } }));
    expect(made.metadata).toEqual({ prototype: '', constructor: 'x' });
    expect((await listConsumers(d, 'shop')).consumers.find((c) => c.consumer_id === made.consumer_id)?.metadata).toEqual({
      prototype: '',
      constructor: 'x',
    });
  });

  it('create answers the consumer asked for or a 400 naming the fields (fuzzed)', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (text) => {
        const r = await outcome(() => createConsumer(d, 'shop', text));
        if (!r.ok) return;
        const sent = JSON.parse(text) as Record<string, unknown>;
        expect(r.value.name).toBe(sent.name);
        expect(r.value.rate_limit).toEqual(sent.rate_limit ?? null);
        expect(r.value.quota).toEqual(sent.quota ?? null);
        expect(r.value.metadata).toEqual(sent.metadata ?? {});
        if (typeof sent.expires_at === 'string') expect(Date.parse(r.value.expires_at ?? '')).toBe(Date.parse(sent.expires_at));
        const listed = (await listConsumers(d, 'shop')).consumers.find((c) => c.consumer_id === r.value.consumer_id);
        expect(listed).toEqual(Object.fromEntries(Object.entries(r.value).filter(([k]) => k !== 'api_key')));
      }),
      { numRuns: 150 },
    );
  });

  it('update changes what it was given or answers a 400 naming the fields, leaving the consumer as it was (fuzzed)', async () => {
    const made = await createConsumer(d, 'shop', JSON.stringify({ name: 'target', quota: { executions: 5, per: 'day' } }));
    await fc.assert(
      fc.asyncProperty(body, async (text) => {
        const before = (await listConsumers(d, 'shop')).consumers.find((c) => c.consumer_id === made.consumer_id);
        const r = await outcome(() => updateConsumer(d, 'shop', made.consumer_id, text));
        const after = (await listConsumers(d, 'shop')).consumers.find((c) => c.consumer_id === made.consumer_id);
        if (!r.ok) {
          expect(after).toEqual(before);
          return;
        }
        // An empty body (or JSON null) changes nothing, as `{}` does.
        const sent = (text.trim() === '' ? {} : (JSON.parse(text) ?? {})) as Record<string, unknown>;
        for (const k of ['name', 'rate_limit', 'quota', 'metadata'] as const) {
          expect(after?.[k]).toEqual(k in sent ? sent[k] : before?.[k]);
        }
      }),
      { numRuns: 150 },
    );
  });
});
