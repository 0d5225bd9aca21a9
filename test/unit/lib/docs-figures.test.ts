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
  STEP_TIMEOUT_SECONDS,
  TRANSITIONS_SECONDS,
  runNodesTimeoutSeconds,
  taskRunLambdaTimeoutSeconds,
} from '../../../lib/workflow-budget';

import { DEFAULT_ACCOUNT_CONCURRENCY, concurrencyPlan, waitersBound } from '../../../lib/concurrency';
import { WAIT_SHARDS, WAIT_WINDOW_SECONDS } from '../../../functions/adapters/wait-slots.store';
import { allFunctionNames } from '../../../lib/stacks/permissions';

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
    expect(aws).toContain(
      `RunNodes' retry waits ${RUN_RETRY_WAITS_SECONDS} s, the final write ${RUN_RECORD_SECONDS} s and the transitions ${TRANSITIONS_SECONDS} s`,
    );
    expect(aws).toContain(
      `each RunNodes state's time-out is the time left to the deadline plus ${RUN_RECORD_SECONDS} s, at most a step's longest, ${STEP_TIMEOUT_SECONDS} s`,
    );
    expect(runNodesTimeoutSeconds(0)).toBe(RUN_RECORD_SECONDS);
    expect(aws).toContain(`\`task-run\`'s Lambda time-out is ${taskRunLambdaTimeoutSeconds()} s`);
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

describe('docs state the concurrency budget lib/concurrency.ts derives', () => {
  const plan = concurrencyPlan(allFunctionNames(), DEFAULT_ACCOUNT_CONCURRENCY);
  const r = plan.reserved;
  const aws = flat('docs/aws.md');

  it('docs/aws.md: the default reservations and their total', () => {
    const total = Object.values(r).reduce((a, b) => a + b, 0);
    expect(aws).toContain(
      `the authorizer ${r.authorizer}, execute ${r.execute}, execution-status ${r['execution-status']}, execution-result ${r['execution-result']}, deployment-mcp ${r['deployment-mcp']}, task-run ${r['task-run']}`,
    );
    expect(aws).toContain(
      `runner and callback-dispatch ${r.runner} each (queue maximum concurrency ${plan.queueMaxConcurrency.executions})`,
    );
    expect(aws).toContain(
      `${waitersBound(r.execute ?? 0)} for execute, ${waitersBound(r['execution-status'] ?? 0)} for execution-status, ${waitersBound(r['execution-result'] ?? 0)} for execution-result, ${waitersBound(r['deployment-mcp'] ?? 0)} for deployment-mcp`,
    );
    expect(aws).toContain(
      `part of the waiting routes' share (${r['deployment-mcp']} with the default 1,000; ${waitersBound(r['deployment-mcp'] ?? 0)} may wait at once)`,
    );
    expect(aws).toContain(`one of ${WAIT_SHARDS} counter items per function and ${WAIT_WINDOW_SECONDS} s window`);
    expect(aws).toContain(
      `execution-events ${r['execution-events']}, form-events ${r['form-events']}, form-execute and form-execution ${r['form-execute']} each, form-page and form-upload ${r['form-page']} each, the sweeper ${r.sweeper}, each other caller route ${r['execution-cancel']} and each owner route ${r['pipeline-push']}: ${total} reserved`,
    );
    expect(aws).toContain(`**${r['execution-events']} concurrent event streams with the default 1,000**`);
    expect(aws).toContain(`**Concurrency: ${r['execution-events']} streams at once by default.**`);
    expect(aws).toContain(
      `so ${concurrencyPlan(allFunctionNames(), 5000).reserved['execution-events']} at 5,000 and ${concurrencyPlan(allFunctionNames(), 10000).reserved['execution-events']} at 10,000`,
    );
    expect(aws).toContain(`**${r['form-events']} form pages following a run by stream**`);
    expect(aws).toContain(
      `(${concurrencyPlan(allFunctionNames(), 5000).reserved['form-events']} and ${concurrencyPlan(allFunctionNames(), 10000).reserved['form-events']} for forms)`,
    );
    expect(aws).toContain(`with the other 2/7: ${r['form-events']} by default`);
    expect(aws).toContain(`and ${waitersBound(r['form-execution'] ?? 0)} for form-execution with the default 1,000`);
  });
});
