/**
 * The `consumers` block of apply files: checked with the service's create schema (every problem
 * with its path), and planned against the live consumers by name so that applying a plan and
 * planning again finds nothing left to do.
 */
import fc from 'fast-check';
import * as v from 'valibot';
import { checkConsumers, describeConsumers, planConsumers, type DeclaredConsumer } from '../../../lib/cli/apply-consumers';
import { checkApplyDocument } from '../../../lib/cli/apply-file';
import type { Consumer } from '../../../lib/cli/client';
import { ConsumerCreate } from '../../../functions/core/shapes';

const problemsOf = (block: unknown) => {
  const problems: { path: string; reason: string }[] = [];
  const declared = checkConsumers(block, problems);
  return { declared, problems };
};

let ids = 0;
function live(name: string, fields: Partial<Consumer> = {}): Consumer {
  return {
    consumer_id: `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}`,
    name,
    status: 'active',
    key_prefix: 'pgc_abc…wxyz',
    rate_limit: null,
    quota: null,
    expires_at: null,
    metadata: {},
    last_used_at: null,
    ...fields,
  };
}

describe('checkConsumers', () => {
  it('reads each entry with every field defaulted to none', () => {
    const { declared, problems } = problemsOf({
      free: { rate_limit: { requests: 1, per_seconds: 1 }, quota: { executions: 10, per: 'day' } },
      paid: { expires_at: '2027-01-01T00:00:00Z', metadata: { plan: 'pro' } },
      'team b': {},
      bare: null,
    });
    expect(problems).toEqual([]);
    expect(declared).toEqual([
      {
        name: 'free',
        fields: { rate_limit: { requests: 1, per_seconds: 1 }, quota: { executions: 10, per: 'day' }, expires_at: null, metadata: {} },
      },
      { name: 'paid', fields: { rate_limit: null, quota: null, expires_at: '2027-01-01T00:00:00Z', metadata: { plan: 'pro' } } },
      { name: 'team b', fields: { rate_limit: null, quota: null, expires_at: null, metadata: {} } },
      { name: 'bare', fields: { rate_limit: null, quota: null, expires_at: null, metadata: {} } },
    ]);
  });

  it('lists every problem with its path, as the service would refuse it', () => {
    const { declared, problems } = problemsOf({
      free: { rate_limit: { requests: 0, per_seconds: 1 }, quota: { executions: 10, per: 'week' }, colour: 'red' },
      'two words': { expires_at: 'tomorrow' },
      named: { name: 'other' },
      list: [1],
      '   ': {},
    });
    expect(declared).toEqual([]);
    const paths = problems.map((p) => p.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'consumers.free.rate_limit.requests',
        'consumers.free.quota.per',
        'consumers.free.colour',
        'consumers["two words"].expires_at',
        'consumers.named.name',
        'consumers.list',
        'consumers["   "]',
      ]),
    );
    expect(problems.find((p) => p.path === 'consumers["   "]')?.reason).toMatch(/blank/);
  });

  it('refuses a block that is not an object', () => {
    expect(problemsOf(['free']).problems).toEqual([
      { path: 'consumers', reason: expect.stringMatching(/object of consumer name/) as unknown as string },
    ]);
  });

  it('never throws, and accepts only what the service would create (fuzzed)', () => {
    const json = fc.jsonValue({ maxDepth: 4 });
    const entry = fc.oneof(
      json,
      fc.record(
        {
          rate_limit: fc.oneof(
            json,
            fc.record({ requests: fc.integer({ min: -2, max: 2_000_000 }), per_seconds: fc.integer({ min: -2, max: 4000 }) }),
          ),
          quota: fc.oneof(json, fc.record({ executions: fc.integer({ min: -2, max: 10 }), per: fc.constantFrom('day', 'month', 'year') })),
          expires_at: fc.oneof(
            json,
            fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          ),
          metadata: fc.dictionary(fc.string({ maxLength: 70 }), fc.oneof(fc.string({ maxLength: 300 }), json), { maxKeys: 20 }),
        },
        { requiredKeys: [] },
      ),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 120 }), entry, { maxKeys: 5 }), (block) => {
        const { declared, problems } = problemsOf(block);
        for (const d of declared) expect(v.safeParse(ConsumerCreate, { name: d.name, ...d.fields }).success).toBe(true);
        expect(declared.length + new Set(problems.map((p) => p.path.split(/[.[]/)[1])).size).toBeGreaterThanOrEqual(
          Object.keys(block).length > 0 ? 1 : 0,
        );
      }),
      { numRuns: 300 },
    );
  });

  it('is part of a pipeline file, and a bad block makes the file one that cannot be applied', () => {
    const nodes = { x: { type: 'input', value_type: 'string', value: 'a' }, out: { type: 'output', from: 'x' } };
    const ok = checkApplyDocument(
      { nodes, consumers: { free: { quota: { executions: 10, per: 'day' } } } },
      { path: '/p.json', shown: 'p.json', id: 'p' },
    );
    expect(ok.ok && ok.file.consumers.map((c) => c.name)).toEqual(['free']);
    const bad = checkApplyDocument({ nodes, consumers: { free: { quota: 3 } } }, { path: '/p.json', shown: 'p.json', id: 'p' });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.problems.map((p) => p.path)).toEqual(['consumers.free.quota']);
  });
});

const declare = (name: string, fields: Partial<DeclaredConsumer['fields']> = {}): DeclaredConsumer => ({
  name,
  fields: { rate_limit: null, quota: null, expires_at: null, metadata: {}, ...fields },
});

describe('planConsumers', () => {
  it('creates everything when nothing is live yet', () => {
    const plan = planConsumers([declare('a'), declare('b')], null);
    expect(plan.create.map((c) => c.name)).toEqual(['a', 'b']);
    expect(describeConsumers(plan)).toBe('create a, b');
  });

  it('changes only the fields that differ, sends null to remove a limit, and leaves unnamed consumers alone', () => {
    const existing = [
      live('free', { rate_limit: { requests: 1, per_seconds: 1 }, quota: { executions: 10, per: 'day' } }),
      live('paid', { expires_at: '2027-01-01T00:00:00.000Z', metadata: { b: '2', a: '1' } }),
      live('legacy'),
      live('gone', { status: 'revoked' }),
    ];
    const plan = planConsumers(
      [
        declare('free', { rate_limit: { requests: 1, per_seconds: 1 } }),
        declare('paid', { expires_at: '2027-01-01T00:00:00Z', metadata: { a: '1', b: '2' } }),
        declare('gone'),
      ],
      existing,
    );
    expect(plan.update).toEqual([{ name: 'free', consumer_id: existing[0]?.consumer_id, body: { quota: null } }]);
    expect(plan.unchanged).toEqual(['paid']);
    // A revoked consumer cannot change; the name gets a new consumer.
    expect(plan.create.map((c) => c.name)).toEqual(['gone']);
    expect(plan.not_in_file).toEqual(['legacy']);
    expect(describeConsumers(plan)).toBe('create gone · update free (quota) · unchanged paid · 1 not in the file left as it is');
  });

  it('will not guess between two live consumers of the same name', () => {
    const plan = planConsumers([declare('twin')], [live('twin'), live('twin')]);
    expect(plan).toMatchObject({ create: [], update: [], ambiguous: ['twin'] });
  });

  it('applying a plan and planning again leaves nothing to do (fuzzed)', () => {
    const rate = fc.option(fc.record({ requests: fc.integer({ min: 1, max: 5 }), per_seconds: fc.integer({ min: 1, max: 5 }) }), {
      nil: null,
    });
    const quota = fc.option(
      fc.record({ executions: fc.integer({ min: 1, max: 5 }), per: fc.constantFrom('day' as const, 'month' as const) }),
      { nil: null },
    );
    const expires = fc.option(fc.constantFrom('2027-01-01T00:00:00Z', '2027-01-01T00:00:00.000Z', '2028-06-01T12:00:00+02:00'), {
      nil: null,
    });
    const meta = fc.dictionary(fc.constantFrom('a', 'b', 'c'), fc.constantFrom('1', '2'), { maxKeys: 3 });
    const fields = fc.record({ rate_limit: rate, quota, expires_at: expires, metadata: meta });
    const names = fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd'), { maxLength: 4 });
    fc.assert(
      fc.property(names, names, fc.array(fields, { minLength: 8, maxLength: 8 }), (wanted, have, fs) => {
        const declared = wanted.map((name, i) => ({ name, fields: fs[i] as DeclaredConsumer['fields'] }));
        const existing = have.map((name, i) => live(name, fs[7 - i] as Partial<Consumer>));
        const plan = planConsumers(declared, existing);
        // What the service does with the plan's requests.
        const after = existing.map((c) => {
          const u = plan.update.find((x) => x.consumer_id === c.consumer_id);
          return u ? ({ ...c, ...u.body } as Consumer) : c;
        });
        after.push(...plan.create.map((d) => live(d.name, d.fields)));
        const again = planConsumers(declared, after);
        expect(again.create).toEqual([]);
        expect(again.update).toEqual([]);
        expect(again.unchanged.sort()).toEqual([...wanted].sort());
        expect(again.not_in_file.sort()).toEqual(have.filter((n) => !wanted.includes(n)).sort());
      }),
      { numRuns: 300 },
    );
  });
});
