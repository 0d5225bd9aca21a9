/** The scale bench's command-line options: one command re-runs a figure. */
import { scaleOptionsOf } from '../../../bench/scale';

describe('scaleOptionsOf', () => {
  it('reads the rates, the seconds, the deployments and --profile, and leaves out what is absent', () => {
    expect(scaleOptionsOf(['--only', 'scale', '--deployment', 'sized', '--rate', '2,20', '--seconds', '30', '--profile'])).toEqual({
      rates: [2, 20],
      seconds: 30,
      deployments: ['sized'],
      profile: true,
    });
    expect(scaleOptionsOf(['--only', 'scale'])).toEqual({ profile: false });
  });

  it('refuses a rate that is not a positive number and a deployment it does not know, naming the option', () => {
    expect(() => scaleOptionsOf(['--rate', '2,x'])).toThrow(/--rate/);
    expect(() => scaleOptionsOf(['--rate', '0'])).toThrow(/--rate/);
    expect(() => scaleOptionsOf(['--deployment', 'huge'])).toThrow(/--deployment takes default or sized/);
  });
});
