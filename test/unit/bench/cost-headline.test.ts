/**
 * The all-in cost the README leads with and docs/aws.md breaks down is computed, not typed:
 * from the waiting caller's inputs the last `npm run bench` measured (bench/reference-wait.json)
 * and bench/prices.ts. A change of price, assumption or measured count fails here until the
 * prose follows.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { allInHeadline, type CostInput } from '../../../bench/aws-calls';
import { consumerKeyCost } from '../../../bench/consumers';

const root = path.join(__dirname, '..', '..', '..');
const flat = (file: string) => readFileSync(path.join(root, file), 'utf8').replace(/\s+/g, ' ');
const input = JSON.parse(readFileSync(path.join(root, 'bench', 'reference-wait.json'), 'utf8')) as CostInput;
const h = allInHeadline(input);
const $ = (x: number) => `$${x.toFixed(2)}`;

describe('the all-in cost per million', () => {
  it('README: the headline is the all-in figure for a waiting caller', () => {
    expect(flat('README.md')).toContain(`costs ≈ ${$(h.allIn)} per million all in`);
  });

  it('docs/aws.md: the request path, each operations line and the total', () => {
    const aws = flat('docs/aws.md');
    expect(aws).toContain(`request path ${$(h.requestPath)}`);
    for (const l of h.operations) expect(aws).toContain(`${l.item} ${$(l.dollars)}`);
    expect(aws).toContain(`all in ${$(h.allIn)}`);
    expect(aws).toContain(`\`stateMachineLogLevel=ALL\` adds ${$(h.logsAll)}`);
    expect(aws).toContain(`\`lambdaSystemLogLevel=INFO\` ${$(h.lambdaLinesInfo)}`);
    expect(aws).toContain(`(≈ ${$(h.lambdaLinesInfo)} per million executions)`);
    expect(aws).toContain(`**not reached**: ${$(h.allIn)}`);
    expect(aws).toContain(`${$(h.pipelineSecond)} per million per second of pipeline time`);
  });

  it('prices a consumer key with both limits as a variant of the same caller, the default path unchanged', () => {
    // The variant adds exactly what bench/consumers.ts prices per accepted execution.
    expect(h.consumerKey - h.allIn).toBeCloseTo(consumerKeyCost().perMillionExecutions, 9);
    expect(consumerKeyCost()).toEqual({ perMillionRequests: 0.75, perMillionExecutions: 2 });
    expect(flat('docs/aws.md')).toContain(`the usage count; see Consumer keys below): all in ${$(h.consumerKey)} per million`);
    expect(flat('README.md')).toContain(`with such a key costs ≈ ${$(h.consumerKey)} per million all in`);
  });
});
