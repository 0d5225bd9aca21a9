import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { ASL_PATH, ASL_SUBSTITUTIONS } from '../../lib/stacks/service-stack';

interface AslResult {
  isValid: boolean;
  errorsText: (separator?: string) => string;
}
// asl-validator ships CommonJS without type declarations.
const aslValidator = createRequire(__filename)('asl-validator') as (
  definition: unknown,
  opts?: { checkPaths: boolean; checkArn: boolean },
) => AslResult;

const substituted = (text: string): unknown => {
  let out = text;
  for (const [placeholder, fn] of Object.entries(ASL_SUBSTITUTIONS)) {
    out = out.split(`\${${placeholder}}`).join(`arn:aws:lambda:us-east-1:123456789012:function:pipegate-${fn}`);
  }
  return JSON.parse(out);
};

describe('lib/state-machine.asl.json', () => {
  const text = readFileSync(ASL_PATH, 'utf8');

  it('is valid Amazon States Language once the task ARNs are substituted', () => {
    // Act
    const result = aslValidator(substituted(text), { checkPaths: true, checkArn: true });
    // Assess
    expect(result.errorsText('\n')).toBe('');
    expect(result.isValid).toBe(true);
  });

  it('is caught by the validator when broken (the check can fail)', () => {
    // Prepare
    const broken = substituted(text) as { States: Record<string, { Next?: string }> };
    if (broken.States.MarkRunning) broken.States.MarkRunning.Next = 'NoSuchState';
    // Act
    const result = aslValidator(broken, { checkPaths: true, checkArn: true });
    // Assess
    expect(result.isValid).toBe(false);
  });

  it('uses JSONPath (the local interpreter ignores JSONata)', () => {
    // Assess
    const doc = JSON.parse(text) as { QueryLanguage?: string };
    expect(doc.QueryLanguage ?? 'JSONPath').toBe('JSONPath');
  });
});
