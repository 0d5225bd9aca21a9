import { parsePreferences, preferenceApplied, waitSeconds } from '../../../functions/core/prefer';

describe('Prefer: wait (RFC 7240)', () => {
  it('reads wait=N among other preferences and parameters', () => {
    expect(waitSeconds(['wait=10'], 60)).toBe(10);
    expect(waitSeconds(['respond-async, wait=5'], 60)).toBe(5);
    expect(waitSeconds(['respond-async', 'WAIT = 7 ; foo=bar'], 60)).toBe(7);
    expect(waitSeconds(['wait="12"'], 60)).toBe(12);
  });

  it('caps a long wait at the maximum', () => {
    expect(waitSeconds(['wait=100000'], 25)).toBe(25);
    expect(waitSeconds(['wait=99999999999'], 60)).toBe(0);
    expect(waitSeconds(['wait=9999999999'], 60)).toBe(60);
  });

  it('counts only the first wait preference', () => {
    expect(waitSeconds(['wait=3, wait=9'], 60)).toBe(3);
    expect(waitSeconds(['wait=x', 'wait=9'], 60)).toBe(0);
  });

  it.each([
    [[]],
    [['']],
    [['wait']],
    [['wait=']],
    [['wait=-1']],
    [['wait=1.5']],
    [['wait=abc']],
    [['wait=0']],
    [['wait="x"']],
    [['respond-async']],
    [['=5']],
    [['wait="5']],
  ])('ignores %j (no wait, never an error)', (values) => {
    expect(waitSeconds(values as string[], 60)).toBe(0);
  });

  it('keeps commas inside quoted values', () => {
    expect(parsePreferences(['a="x,y", wait=2']).get('a')).toBe('x,y');
    expect(parsePreferences(['a="x,y", wait=2']).get('wait')).toBe('2');
  });

  it('says which wait was applied, and nothing when none was', () => {
    expect(preferenceApplied(25)).toEqual({ 'preference-applied': 'wait=25' });
    expect(preferenceApplied(0)).toEqual({});
  });
});
