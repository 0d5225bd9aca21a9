/**
 * A conditional write that lost its race is read in one place (functions/adapters/dynamo.ts
 * conditionalWrite): null, never an exception; any other failure is thrown. No other file of
 * the functions or the wiring reads DynamoDB's condition failure itself.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { conditionalWrite } from '../../../functions/adapters/dynamo';

const root = join(__dirname, '..', '..', '..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('conditionalWrite', () => {
  it("gives the write's output, null when its condition did not hold, and throws anything else", async () => {
    const lost = Object.assign(new Error('The conditional request failed'), { name: 'ConditionalCheckFailedException' });
    const throttled = Object.assign(new Error('Rate exceeded'), { name: 'ProvisionedThroughputExceededException' });

    expect(await conditionalWrite(Promise.resolve({ Attributes: { n: 1 } }))).toEqual({ Attributes: { n: 1 } });
    expect(await conditionalWrite(Promise.reject(lost))).toBeNull();
    await expect(conditionalWrite(Promise.reject(throttled))).rejects.toBe(throttled);
  });

  it('is the one place that reads a condition failure', () => {
    const readers = [...sources(join(root, 'functions')), ...sources(join(root, 'lib'))]
      .filter((f) => /ConditionalCheckFailed|isConditionFailure/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(root, f));
    expect(readers).toEqual(['functions/adapters/dynamo.ts']);
  });
});
