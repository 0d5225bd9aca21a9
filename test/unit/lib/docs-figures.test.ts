/**
 * The time-out figures docs/aws.md and the README state are the ones lib/workflow-budget.ts
 * computes from the ASL: a change to a retry or a time-out there fails here until the prose
 * follows.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  EXPRESS_LIMIT_SECONDS,
  EXPRESS_MAX_EXECUTION_TIMEOUT_MS,
  FAIL_ALLOWANCE_SECONDS,
  MARK_TASK_TIMEOUT_SECONDS,
  RUN_RECORD_SECONDS,
  RUN_RETRY_WAITS_SECONDS,
  START_ALLOWANCE_SECONDS,
  TRANSITIONS_SECONDS,
  runNodesTimeoutSeconds,
  taskRunLambdaTimeoutSeconds,
} from '../../../lib/workflow-budget';

const root = path.join(__dirname, '..', '..', '..');
const flat = (file: string) => readFileSync(path.join(root, file), 'utf8').replace(/\s+/g, ' ');
/** `209000` → `209 000`, as the prose writes thousands. */
const spaced = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');

describe('docs state the workflow budget the code computes', () => {
  const aws = flat('docs/aws.md');
  const maxMs = EXPRESS_MAX_EXECUTION_TIMEOUT_MS;
  const maxS = maxMs / 1000;

  it('docs/aws.md: the Express ceiling, the shares and the Lambda time-outs', () => {
    expect(aws).toContain(`\`PIPEGATE_EXECUTION_TIMEOUT_MS\` to at most ${spaced(maxMs)}`);
    expect(aws).toContain(`which leaves ${EXPRESS_LIMIT_SECONDS - maxS} s of the ${EXPRESS_LIMIT_SECONDS} s`);
    expect(aws).toContain(`MarkRunning's worst case is ${START_ALLOWANCE_SECONDS} s and MarkFailed's ${FAIL_ALLOWANCE_SECONDS} s`);
    expect(aws).toContain(`at the ${MARK_TASK_TIMEOUT_SECONDS} s Lambda time-out`);
    expect(aws).toContain(`RunNodes' retry waits ${RUN_RETRY_WAITS_SECONDS} s, the final write ${RUN_RECORD_SECONDS} s and the transitions ${TRANSITIONS_SECONDS} s`);
    expect(aws).toContain(`state time-out is the execution time-out plus ${runNodesTimeoutSeconds(0)} s`);
    expect(aws).toContain(`time-out the execution time-out plus ${taskRunLambdaTimeoutSeconds(0)} s`);
    expect(aws).toContain(`| \`executionTimeoutMs\` | ${maxMs} (Express)`);
    expect(aws).toContain(`at most ${maxMs} with Express`);
    expect(aws).toContain(`pipelines that need more than ${maxS} s`);
  });

  it('the README: the Express ceiling', () => {
    expect(flat('README.md')).toContain(`caps the execution time-out at ${maxS} s on AWS`);
  });

  it('mentions no other Express ceiling', () => {
    for (const stale of ['240 000', '280 000', '240000', '280000']) expect(aws).not.toContain(stale);
  });
});
