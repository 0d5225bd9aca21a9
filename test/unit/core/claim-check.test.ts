import fc from 'fast-check';
import {
  attributeBytes,
  claimName,
  claimsOf,
  goneValue,
  INLINE_VALUES_MAX_BYTES,
  ITEM_MAX_BYTES,
  planClaim,
  readClaim,
  type ClaimValues,
} from '../../../functions/core/claim-check';

const inlineBytes = (v: ClaimValues): number =>
  Object.entries(v).reduce((n, [k, x]) => n + (x === null || x === undefined ? 0 : Buffer.byteLength(k) + attributeBytes(x)), 0);

describe('attributeBytes (DynamoDB size rules, erring high)', () => {
  it('counts strings in UTF-8, numbers as 21 bytes, maps and lists with their overhead', () => {
    expect(attributeBytes('abc')).toBe(3);
    expect(attributeBytes('é')).toBe(2);
    expect(attributeBytes('😀')).toBe(4);
    expect(attributeBytes(7)).toBe(21);
    expect(attributeBytes(true)).toBe(1);
    expect(attributeBytes(null)).toBe(1);
    expect(attributeBytes({ a: 'xy' })).toBe(3 + 1 + 1 + 2);
    expect(attributeBytes(['xy', 1])).toBe(3 + 1 + 2 + 1 + 21);
  });
});

describe('planClaim', () => {
  it('keeps values that fit in the item, and stores nothing', () => {
    const plan = planClaim({ inputs: { name: 'world' }, outputs: { out: 'Hello' } });

    expect(plan.claim).toBeNull();
    expect(plan.inline).toEqual({ inputs: { name: 'world' }, outputs: { out: 'Hello' } });
  });

  it('moves a ≈ 560 KB output to one object and keeps the small fields in the item', () => {
    const big = 'x'.repeat(560_000);
    const plan = planClaim({ outputs: { body: big }, error_message: null, trace: '{"t":0,"n":[]}' });

    expect(plan.claim?.ref.fields).toEqual(['outputs']);
    expect(plan.inline).toEqual({ outputs: null, error_message: null, trace: '{"t":0,"n":[]}' });
    expect(plan.claim?.values).toEqual({ outputs: { body: big } });
    expect(plan.claim?.ref.bytes).toBe(plan.claim?.body.length);
    expect(readClaim(plan.claim!.ref, plan.claim!.body)).toEqual({ outputs: { body: big } });
  });

  it('moves at the threshold, not below it', () => {
    // `outputs` + a map of one entry `o`: 7 + 3 + 1 + 1 + n bytes.
    const at = 'x'.repeat(INLINE_VALUES_MAX_BYTES - 12);
    expect(planClaim({ outputs: { o: at } }).claim).toBeNull();
    expect(planClaim({ outputs: { o: `${at}x` } }).claim?.ref.fields).toEqual(['outputs']);
  });

  it('names the object by its text: the same values, the same object; others, another', () => {
    const a = planClaim({ outputs: { o: 'a'.repeat(200_000) } });
    const again = planClaim({ outputs: { o: 'a'.repeat(200_000) } });
    const other = planClaim({ outputs: { o: 'b'.repeat(200_000) } });

    expect(a.claim?.ref.name).toBe(again.claim?.ref.name);
    expect(a.claim?.ref.name).not.toBe(other.claim?.ref.name);
    expect(a.claim?.ref.name).toMatch(/^values\.[0-9a-f]{32}\.json$/);
  });

  it('whatever the values, what stays fits (or nothing is left to move), and the object gives back exactly what moved', () => {
    const value = fc.oneof(fc.string({ maxLength: 50 }), fc.integer(), fc.boolean());
    const big = fc.nat({ max: 300_000 }).map((n) => 'é'.repeat(n));
    fc.assert(
      fc.property(
        fc.record(
          {
            inputs: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.oneof(value, big), { maxKeys: 4 }),
            outputs: fc.option(fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.oneof(value, big), { maxKeys: 4 })),
            error_message: fc.option(fc.oneof(fc.string(), big)),
            trace: fc.option(big),
          },
          { requiredKeys: [] },
        ),
        fc.integer({ min: 1_000, max: INLINE_VALUES_MAX_BYTES }),
        (values: ClaimValues, max) => {
          const plan = planClaim(values, max);
          const stays = inlineBytes(plan.inline);
          if (plan.claim === null) {
            expect(plan.inline).toEqual(values);
            expect(stays).toBeLessThanOrEqual(max);
            return;
          }
          expect(stays <= max || Object.values(plan.inline).every((v) => v === null || v === undefined)).toBe(true);
          const back = readClaim(plan.claim.ref, plan.claim.body);
          expect(back).toEqual(plan.claim.values);
          for (const f of plan.claim.ref.fields) {
            expect(plan.inline[f]).toBeNull();
            expect(back?.[f]).toEqual(values[f]);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('leaves two writes at the threshold well inside the item limit', () => {
    expect(2 * INLINE_VALUES_MAX_BYTES).toBeLessThanOrEqual(ITEM_MAX_BYTES - 128 * 1024);
  });
});

describe('readClaim and claimsOf', () => {
  const plan = planClaim({ outputs: { o: 'z'.repeat(200_000) } });
  const { ref, body } = plan.claim!;

  it('refuses an object whose text is not the one its reference names', () => {
    const altered = new Uint8Array(body);
    altered[10] = altered[10] === 0x7a ? 0x79 : 0x7a;

    expect(readClaim(ref, altered)).toBeNull();
    expect(readClaim(ref, body.subarray(0, body.length - 1))).toBeNull();
    expect(readClaim({ ...ref, name: claimName(new Uint8Array([1])) }, body)).toBeNull();
  });

  it('reads only well-formed references', () => {
    expect(claimsOf([ref, { name: 'x' }, null, { ...ref, fields: ['secret'] }, 'x'])).toEqual([ref]);
    expect(claimsOf(undefined)).toEqual([]);
  });

  it('reads a gone object as empty values and a message that says so, never null where a map is expected', () => {
    expect(goneValue('inputs')).toEqual({});
    expect(goneValue('outputs')).toEqual({});
    expect(goneValue('error_message')).toMatch(/expired/);
    expect(goneValue('trace')).toBeNull();
    expect(goneValue('callback')).toBeNull();
    expect(goneValue('visible_outputs')).toEqual([]);
  });
});
