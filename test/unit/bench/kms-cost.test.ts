import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ownerSecretsKmsCost } from '../../../bench/aws-calls';

describe("the owner secrets' KMS cost", () => {
  it('prices one secret at $0.03 per million with data keys kept per container, $3.00 if opened on every run, and the key at $1 a month, as docs/aws.md says', () => {
    // Act
    const one = ownerSecretsKmsCost(1);
    const two = ownerSecretsKmsCost(2);
    const docs = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'aws.md'), 'utf8').replace(/\s+/g, ' ');

    // Assess
    expect(one.cached.dollars.toFixed(2)).toBe('0.03');
    expect(one.perRun.dollars.toFixed(2)).toBe('3.00');
    expect(one.keyMonthly).toBe(1);
    expect(two.cached.dollars).toBeCloseTo(2 * one.cached.dollars, 10);
    expect(docs).toContain(`≈ $${one.cached.dollars.toFixed(2)} with the data keys kept per container`);
    expect(docs).toContain(`would be $${one.perRun.dollars.toFixed(2)}`);
    expect(docs).toContain(`the key $${one.keyMonthly} a month`);
  });
});
