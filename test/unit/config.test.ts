/** The configuration reader's PIPEGATE_PUBLIC_URL: the base URL the service hands out, checked at start. */
import { ConfigError, readConfig } from '../../lib/config';

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

  it.each(['api.example.org', '/prod', 'ftp://api.example.org', 'https://api.example.org/?stage=prod', 'https://api.example.org/#x', 'https://user:pw@api.example.org'])(
    'refuses %j at start, naming the variable',
    (raw) => {
      expect(() => readConfig({ PIPEGATE_PUBLIC_URL: raw })).toThrow(ConfigError);
      expect(() => readConfig({ PIPEGATE_PUBLIC_URL: raw })).toThrow(/PIPEGATE_PUBLIC_URL/);
    },
  );
});
