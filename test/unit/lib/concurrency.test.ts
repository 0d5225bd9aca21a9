/**
 * The concurrency budget (lib/concurrency.ts) over the whole range of its setting: every value
 * `reservedConcurrency` accepts plans, never reserves more than it says and never gives a
 * function less for more; and the deploy-time check's verdict on accounts of 10, 1,000 and
 * 10,000 units, as Lambda would give it.
 */
import fc from 'fast-check';
import {
  AWS_MIN_UNRESERVED,
  concurrencyPlan,
  DEFAULT_MAX_ACCOUNT_SHARE,
  MAX_RESERVED_CONCURRENCY,
  minimumReservation,
  mostReservable,
  reservationRefusal,
  SQS_MAX_MAX_CONCURRENCY,
  SQS_MIN_MAX_CONCURRENCY,
  type AccountConcurrency,
} from '../../../lib/concurrency';
import { allFunctionNames } from '../../../lib/stacks/permissions';
import { parseSettings } from '../../../lib/stacks/settings';
import { WORKERS } from '../../../lib/routes';

const names = allFunctionNames();
const least = minimumReservation(names);

/** What Lambda itself allows: after the reservation, at least 100 left unreserved. */
const lambdaAllows = (account: AccountConcurrency, held: number, total: number): boolean =>
  account.unreserved + held - total >= AWS_MIN_UNRESERVED;

const request = (requested: number, held = 0, maxAccountShare = DEFAULT_MAX_ACCOUNT_SHARE) => ({
  requested,
  total: requested === 0 ? 0 : concurrencyPlan(names, requested).total,
  held,
  maxAccountShare,
  least,
});

describe('reservedConcurrency, over its whole range', () => {
  it('accepts exactly 0 and every whole number from the least plan up, and each one it accepts plans', () => {
    fc.assert(
      fc.property(fc.integer({ min: -10, max: MAX_RESERVED_CONCURRENCY + 10 }), (n) => {
        // Act
        let settings: ReturnType<typeof parseSettings> | undefined;
        try {
          settings = parseSettings({ reservedConcurrency: String(n) });
        } catch {
          settings = undefined;
        }
        // Assess
        const valid = n === 0 || (n >= least && n <= MAX_RESERVED_CONCURRENCY);
        expect(settings !== undefined).toBe(valid);
        if (!settings || n === 0) return;
        const plan = concurrencyPlan(names, settings.reservedConcurrency);
        expect(plan.total).toBeLessThanOrEqual(n);
        expect(Object.keys(plan.reserved).sort()).toEqual([...names].sort());
        for (const f of names) expect(plan.reserved[f]).toBeGreaterThanOrEqual(1);
        for (const [q, max] of Object.entries(plan.queueMaxConcurrency)) {
          expect(max).toBeGreaterThanOrEqual(SQS_MIN_MAX_CONCURRENCY);
          expect(max).toBeLessThanOrEqual(SQS_MAX_MAX_CONCURRENCY);
          const consumer = q === 'executions' ? WORKERS.runner : WORKERS.callbackDispatch;
          expect(max).toBeLessThanOrEqual(plan.reserved[consumer] ?? 0);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('plans every value from the least to 20,000, one by one: never more than asked, never less for one more', () => {
    // Every reservation an account of up to 40,000 units lets through at the default share.
    let previous = concurrencyPlan(names, least);
    const problems: string[] = [];
    for (let n = least; n <= 20_000; n++) {
      const plan = concurrencyPlan(names, n);
      if (plan.total > n) problems.push(`${n}: reserves ${plan.total}`);
      for (const f of names) {
        if ((plan.reserved[f] ?? 0) < 1) problems.push(`${n}: ${f} gets ${plan.reserved[f] ?? 0}`);
        if ((plan.reserved[f] ?? 0) < (previous.reserved[f] ?? 0)) problems.push(`${n}: ${f} gets less than at ${n - 1}`);
      }
      previous = plan;
    }
    expect(problems).toEqual([]);
  });

  it('plans the edges: the least (one unit each, two per queue consumer) and the largest', () => {
    expect(concurrencyPlan(names, least).total).toBe(least);
    expect(concurrencyPlan(names, MAX_RESERVED_CONCURRENCY).total).toBeLessThanOrEqual(MAX_RESERVED_CONCURRENCY);
    expect(() => concurrencyPlan(names, least - 1)).toThrow(`set reservedConcurrency to at least ${least}, or to 0`);
  });

  it('never gives a function less when more is reserved (285 and 286 alike)', () => {
    fc.assert(
      fc.property(fc.integer({ min: least, max: 200_000 }), fc.integer({ min: 0, max: 5_000 }), (n, more) => {
        const a = concurrencyPlan(names, n);
        const b = concurrencyPlan(names, n + more);
        for (const f of names) expect(b.reserved[f]).toBeGreaterThanOrEqual(a.reserved[f] ?? 0);
        expect(b.total).toBeGreaterThanOrEqual(a.total);
      }),
      { numRuns: 500 },
    );
  });

  it('leaves little to rounding: the plan reserves all but a few units of what it is given', () => {
    fc.assert(
      fc.property(fc.integer({ min: least, max: MAX_RESERVED_CONCURRENCY }), (n) => {
        expect(n - concurrencyPlan(names, n).total).toBeLessThanOrEqual(names.length + 10);
      }),
    );
  });
});

describe('the deploy-time check, on accounts of 10, 1,000 and 10,000 units', () => {
  const fresh = (quota: number): AccountConcurrency => ({ quota, unreserved: quota });

  it('lets the default (nothing reserved) deploy on every account, as Lambda would', () => {
    for (const quota of [10, 1_000, 10_000]) {
      const settings = parseSettings({});
      expect(settings.reservedConcurrency).toBe(0);
      expect(reservationRefusal(fresh(quota), request(settings.reservedConcurrency))).toBeUndefined();
    }
  });

  it('lets through exactly what Lambda would take and the stated share allows, and nothing more', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 10, max: 20_000 }),
        fc.integer({ min: 0, max: 5_000 }),
        fc.integer({ min: 0, max: 3_000 }),
        fc.integer({ min: least, max: 20_000 }),
        fc.integer({ min: 1, max: 100 }),
        (quota, others, held, requested, share) => {
          fc.pre(others + held <= quota);
          const account = { quota, unreserved: quota - others - held };
          const r = request(requested, held, share);
          const refusal = reservationRefusal(account, r);
          const fits = lambdaAllows(account, held, r.total) && r.total <= Math.floor((quota * share) / 100);
          expect(refusal === undefined).toBe(fits);
          if (refusal === undefined) return;
          expect(refusal).toContain(`reservedConcurrency=${requested}`);
          // What it proposes instead is let through.
          const most = mostReservable(account, held, share);
          if (most >= least) {
            expect(refusal).toContain(`at most ${most}`);
            expect(reservationRefusal(account, request(most, held, share))).toBeUndefined();
          } else expect(refusal).toContain('reservedConcurrency=0');
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('refuses any reservation on a new account of 10, naming reservedConcurrency=0', () => {
    const refusal = reservationRefusal(fresh(10), request(least));
    expect(refusal).toMatch(/quota in the Region is 10: Lambda keeps 100 unreserved, so at most 0 can be reserved here/);
    expect(refusal).toMatch(/set reservedConcurrency=0 to reserve nothing.*"Concurrent executions" quota/);
  });

  it('holds a reservation to maxAccountShare of the quota: 500 of 1,000 and 5,000 of 10,000 by default', () => {
    expect(mostReservable(fresh(1_000), 0, DEFAULT_MAX_ACCOUNT_SHARE)).toBe(500);
    expect(mostReservable(fresh(10_000), 0, DEFAULT_MAX_ACCOUNT_SHARE)).toBe(5_000);
    expect(reservationRefusal(fresh(1_000), request(500))).toBeUndefined();
    expect(reservationRefusal(fresh(1_000), request(895))).toMatch(
      /maxAccountShare=50 lets pipegate take at most 500 \(50 % of the quota\); set reservedConcurrency to at most 500.*or raise maxAccountShare/,
    );
    // An account given over to pipegate may take all Lambda allows.
    expect(reservationRefusal(fresh(1_000), request(900, 0, 100))).toBeUndefined();
    expect(reservationRefusal(fresh(1_000), request(950, 0, 100))).toMatch(/at most 900 can be reserved/);
  });

  it("counts other functions' reservations (a second stack in the Region) and, on an update, its own", () => {
    // A second pipegate stack holding 500 of 1,000 leaves 400 to reserve.
    const shared = { quota: 1_000, unreserved: 500 };
    expect(reservationRefusal(shared, request(450, 0, 100))).toMatch(/with 500 reserved by other functions.*at most 400/);
    // This stack's own 450, held by its functions during an update, are counted back in.
    expect(reservationRefusal({ quota: 1_000, unreserved: 550 }, request(450, concurrencyPlan(names, 450).total, 100))).toBeUndefined();
  });
});
