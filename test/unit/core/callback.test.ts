import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { generateSigningSecret } from '../../../functions/core/api-key';
import { buildCallbackPayload, nextRetryDelayMs, scheduleTotalSeconds, signWebhook, webhookIdFor } from '../../../functions/core/callback';

const EXECUTION = '0b7e0b7c-5d1e-4e0a-8f43-2c1d9e8a7b6c';

describe('buildCallbackPayload', () => {
  it('sends each visible output of a completed execution as text in an array', () => {
    // Act
    const payload = buildCallbackPayload({
      execution_id: EXECUTION,
      status: 'completed',
      outputs: { message: 'Hello, Ada!', count: 3, ok: true, debug: 'internal' },
      visible_outputs: ['message', 'count', 'ok'],
    });

    // Assess
    expect(payload).toEqual({ message: ['Hello, Ada!'], count: ['3'], ok: ['true'], execution_id: EXECUTION });
  });

  it('sends every output when the execution has no visibility list', () => {
    // Act
    const payload = buildCallbackPayload({
      execution_id: EXECUTION,
      status: 'completed',
      outputs: { a: 1.5, b: false },
      visible_outputs: null,
    });

    // Assess
    expect(payload).toEqual({ a: ['1.5'], b: ['false'], execution_id: EXECUTION });
  });

  it.each(['failed', 'cancelled'] as const)('sends only the id of a %s execution', (status) => {
    // Act
    const payload = buildCallbackPayload({ execution_id: EXECUTION, status, outputs: { message: 'x' }, visible_outputs: null });

    // Assess
    expect(payload).toEqual({ execution_id: EXECUTION });
  });

  it('sends a list of files as exactly its links in order (null where an item failed), and nothing for an output whose branch did not run', () => {
    // Prepare
    const ref = (n: number) => ({ key: `d/x/e/y/node.v.${n}`, media_type: 'image/png', bytes: 10 + n, sha256: 'ab' });
    const link = (n: number) => ({ url: `https://svc.example/v1/assets/t${n}`, expires_at: '2030-01-01T00:00:00.000Z' });

    // Act
    const payload = buildCallbackPayload(
      {
        execution_id: EXECUTION,
        status: 'completed',
        outputs: { summary: '3 styles rendered' },
        output_assets: { gallery: [ref(0), null, ref(2)] },
        visible_outputs: ['gallery', 'summary', 'skipped_one'],
      },
      { gallery: [link(0), null, link(2)] },
    );

    // Assess
    expect(payload).toEqual({
      gallery: ['https://svc.example/v1/assets/t0', null, 'https://svc.example/v1/assets/t2'],
      summary: ['3 styles rendered'],
      execution_id: EXECUTION,
    });
  });

  it('refuses an execution that has not finished', () => {
    // Act
    const act = () => buildCallbackPayload({ execution_id: EXECUTION, status: 'running', outputs: null, visible_outputs: null });

    // Assess
    expect(act).toThrow(/finished/);
  });

  it('never shows a hidden output, for any outputs and visibility', () => {
    const outputs = fc.dictionary(
      fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,8}$/).filter((id) => id !== 'execution_id'),
      fc.oneof(fc.string(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean()),
    );
    fc.assert(
      fc.property(
        outputs.chain((o) => fc.tuple(fc.constant(o), fc.subarray(Object.keys(o)))),
        ([o, visible]) => {
          const payload = buildCallbackPayload({ execution_id: EXECUTION, status: 'completed', outputs: o, visible_outputs: visible });
          expect(Object.keys(payload).sort()).toEqual([...visible, 'execution_id'].sort());
          for (const id of visible) expect(payload[id]).toEqual([String(o[id])]);
        },
      ),
    );
  });
});

describe('webhookIdFor', () => {
  it('is stable and derived from the execution id', () => {
    // Act
    const id = webhookIdFor(EXECUTION);

    // Assess
    expect(id).toBe('msg_0b7e0b7c5d1e4e0a8f432c1d9e8a7b6c');
    expect(webhookIdFor(EXECUTION)).toBe(id);
  });
});

describe('signWebhook', () => {
  const body = JSON.stringify({ message: ['Hello, Ada!'], execution_id: EXECUTION });
  const current = generateSigningSecret(randomBytes(32));
  const previous = generateSigningSecret(randomBytes(32));

  it('produces Standard Webhooks headers that verify under each secret of a rotation', () => {
    // Prepare
    const at = new Date();

    // Act
    const headers = signWebhook(body, [current, previous], webhookIdFor(EXECUTION), at);

    // Assess
    expect(headers['webhook-id']).toBe(webhookIdFor(EXECUTION));
    expect(headers['webhook-timestamp']).toBe(String(Math.floor(at.getTime() / 1000)));
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=* v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(current).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(previous).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('does not verify a tampered body, another id or another secret', () => {
    // Prepare
    const headers = signWebhook(body, [current], webhookIdFor(EXECUTION), new Date());
    const tampered = body.replace('Ada', 'Eve');

    // Act
    const checks = [
      () => new Webhook(current).verify(tampered, headers),
      () => new Webhook(current).verify(body, { ...headers, 'webhook-id': 'msg_other' }),
      () => new Webhook(generateSigningSecret(randomBytes(32))).verify(body, headers),
    ];

    // Assess
    for (const check of checks) expect(check).toThrow();
  });

  it('refuses to sign without a secret', () => {
    // Act
    const act = () => signWebhook(body, [], webhookIdFor(EXECUTION), new Date());

    // Assess
    expect(act).toThrow(/signing secret/);
  });
});

describe('nextRetryDelayMs', () => {
  const schedule = [5, 30, 120];

  it('waits the scheduled time after each failure, then gives up', () => {
    // Act
    const delays = [1, 2, 3, 4].map((n) => nextRetryDelayMs(n, schedule, () => 0));

    // Assess
    expect(delays).toEqual([5_000, 30_000, 120_000, null]);
  });

  it('adds up to a quarter of jitter, upward only', () => {
    // Act
    const high = nextRetryDelayMs(2, schedule, () => 0.999999);
    const one = nextRetryDelayMs(2, schedule, () => 1);
    const negative = nextRetryDelayMs(2, schedule, () => -3);
    const nan = nextRetryDelayMs(2, schedule, () => Number.NaN);

    // Assess
    expect(high).toBe(37_499);
    expect(one).toBeLessThan(37_500);
    expect(negative).toBe(30_000);
    expect(nan).toBe(30_000);
  });

  it('stays within [1, 1.25) of the schedule for any jitter source', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 43_200 }), { minLength: 1, maxLength: 12 }),
        fc.double({ min: -1, max: 2, noNaN: true }),
        fc.nat({ max: 20 }),
        (sched, r, n) => {
          const delay = nextRetryDelayMs(n + 1, sched, () => r);
          const base = sched[n];
          if (base === undefined) return delay === null;
          return delay !== null && delay >= base * 1000 && (base === 0 ? delay === 0 : delay < base * 1250);
        },
      ),
    );
  });

  it('refuses attempt counts below one', () => {
    // Act
    const act = () => nextRetryDelayMs(0, schedule, () => 0);

    // Assess
    expect(act).toThrow(RangeError);
  });
});

describe('scheduleTotalSeconds', () => {
  it('adds the schedule up', () => {
    // Act
    const total = scheduleTotalSeconds([5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 36000]);

    // Assess
    expect(total).toBe(92_555);
    expect(total).toBeGreaterThanOrEqual(24 * 3600);
  });
});
