/** The configuration reader's PIPEGATE_PUBLIC_URL: the base URL the service hands out, checked at start. */
import { CALLBACK_CLAIM_MARGIN_MS, ConfigError, callbackClaimMs, readConfig } from '../../../lib/config';

describe('PIPEGATE_PUBLIC_URL', () => {
  it.each<[string | undefined, string | undefined]>([
    [undefined, undefined],
    ['', undefined],
    ['   ', undefined],
    ['https://api.example.org', 'https://api.example.org'],
    ['https://api.example.org/prod/', 'https://api.example.org/prod'],
    [' http://127.0.0.1:8080/pipegate// ', 'http://127.0.0.1:8080/pipegate'],
  ])('reads %j as %j', (raw, expected) => {
    expect(readConfig(raw === undefined ? {} : { PIPEGATE_PUBLIC_URL: raw }).publicUrl).toBe(expected);
  });

  it.each([
    'api.example.org',
    '/prod',
    'ftp://api.example.org',
    'https://api.example.org/?stage=prod',
    'https://api.example.org/#x',
    'https://user:pw@api.example.org',
  ])('refuses %j at start, naming the variable', (raw) => {
    expect(() => readConfig({ PIPEGATE_PUBLIC_URL: raw })).toThrow(ConfigError);
    expect(() => readConfig({ PIPEGATE_PUBLIC_URL: raw })).toThrow(/PIPEGATE_PUBLIC_URL/);
  });
});

describe('the sweeper quiet period and the callback claim', () => {
  it('accepts a quiet period longer than a claim lasts (the time-out plus the margin)', () => {
    // Prepare / Act
    const c = readConfig({ PIPEGATE_CALLBACK_TIMEOUT_MS: '10000', PIPEGATE_SWEEP_PENDING_AFTER_SECONDS: '21' });
    // Assess
    expect(c.sweepPendingAfterSeconds * 1000).toBeGreaterThan(callbackClaimMs(c));
    expect(callbackClaimMs(c)).toBe(10_000 + CALLBACK_CLAIM_MARGIN_MS);
  });

  it.each([
    ['10000', '20'],
    ['60000', '70'],
    ['60000', '1'],
  ])('refuses a quiet period no longer than the claim (time-out %s ms, quiet %s s), naming the variable', (timeout, quiet) => {
    const env = { PIPEGATE_CALLBACK_TIMEOUT_MS: timeout, PIPEGATE_SWEEP_PENDING_AFTER_SECONDS: quiet };
    expect(() => readConfig(env)).toThrow(ConfigError);
    expect(() => readConfig(env)).toThrow(/PIPEGATE_SWEEP_PENDING_AFTER_SECONDS/);
  });

  it('keeps the defaults consistent', () => {
    const c = readConfig({});
    expect(c.sweepPendingAfterSeconds * 1000).toBeGreaterThan(callbackClaimMs(c));
  });
});
