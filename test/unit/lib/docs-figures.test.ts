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

import {
  concurrencyPlan,
  DEFAULT_MAX_ACCOUNT_SHARE,
  DOWNLOAD_VIEW_SECONDS,
  minimumReservation,
  mostReservable,
  reservationRefusal,
  waitersBound,
} from '../../../lib/concurrency';
import { WAIT_SHARDS, WAIT_WINDOW_SECONDS } from '../../../functions/adapters/wait-slots.store';
import { DEFAULT_EXECUTION_TIMEOUT_MS } from '../../../lib/config';
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
    expect(aws).toContain(`An execution on Express is held to ${spaced(maxMs)} ms`);
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
  });

  it('docs/aws.md: the settings, and which machine a version runs on, at the allowance the code computes', () => {
    expect(aws).toContain(`| \`executionTimeoutMs\` | ${DEFAULT_EXECUTION_TIMEOUT_MS} |`);
    expect(aws).toContain(`An execution on the Express state machine is held within ${maxMs} ms whatever this says`);
    expect(aws).toContain(`its definition's \`timeout_ms\` is more than ${spaced(maxMs)} ms`);
    expect(aws).toContain('| `stateMachineType` | retired |');
    expect(aws).not.toContain('-c stateMachineType=STANDARD');
  });

  it('the README: the Express ceiling, and no retired setting', () => {
    const readme = flat('README.md');
    expect(readme).toContain(`holds an execution on Express to ${maxS} s`);
    expect(readme).not.toContain('stateMachineType=STANDARD');
  });

  it('mentions no other Express ceiling', () => {
    for (const stale of ['240 000', '280 000', '240000', '280000']) expect(aws).not.toContain(stale);
  });
});

describe('docs state the concurrency budget lib/concurrency.ts derives', () => {
  const names = allFunctionNames();
  const at = (n: number) => concurrencyPlan(names, n);
  const plan = at(500);
  const r = plan.reserved;
  const big = at(5000).reserved;
  const aws = flat('docs/aws.md');
  const thousands = (n: number) => n.toLocaleString('en-US');

  it('docs/aws.md: the least, the default share and what accounts of 10, 1,000 and 10,000 get', () => {
    const least = minimumReservation(names);
    expect(aws).toContain(`Otherwise at least ${least} (one unit for each function, two for each queue consumer)`);
    expect(aws).toContain(`| \`maxAccountShare\` | ${DEFAULT_MAX_ACCOUNT_SHARE} |`);
    expect(aws).toContain(`${least} for the ${names.length} functions`);
    for (const [quota, shared] of [
      [1_000, "every function shares the 1,000 with the account's others"],
      [10_000, 'the same, 10,000'],
    ] as const) {
      const most = mostReservable({ quota, unreserved: quota }, 0, DEFAULT_MAX_ACCOUNT_SHARE);
      const p = at(most).reserved;
      expect(aws).toContain(
        `| ${thousands(quota)} | ${shared} | ${thousands(most)} | the authorizer ${p.authorizer}, execute ${p.execute}, task-run ${p['task-run']}, asset-get ${p['asset-get']}, execution-events ${p['execution-events']} (plan total ${thousands(at(most).total)}) |`,
      );
    }
    expect(mostReservable({ quota: 10, unreserved: 10 }, 0, DEFAULT_MAX_ACCOUNT_SHARE)).toBeLessThan(least);
  });

  it("docs/aws.md: the deploy-time check's message, as it refuses reservedConcurrency=700 where others hold 300 of 1,000", () => {
    const refusal = reservationRefusal(
      { quota: 1_000, unreserved: 700 },
      { requested: 700, total: at(700).total, held: 0, maxAccountShare: 100, least: minimumReservation(names) },
    );
    expect(refusal).toBeDefined();
    expect(aws).toContain(`\`${String(refusal)}\` (here with \`maxAccountShare=100\`)`);
  });

  it('docs/aws.md: the reservations at reservedConcurrency=500 and their total', () => {
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
      `part of the waiting routes' share (${r['deployment-mcp']} with \`reservedConcurrency=500\`; ${waitersBound(r['deployment-mcp'] ?? 0)} may wait at once)`,
    );
    expect(aws).toContain(`and ${waitersBound(r['form-execution'] ?? 0)} for form-execution with \`reservedConcurrency=500\``);
    expect(aws).toContain(`one of ${WAIT_SHARDS} counter items per function and ${WAIT_WINDOW_SECONDS} s window`);
    expect(aws).toContain(
      `asset-get ${r['asset-get']}, execution-events ${r['execution-events']}, form-events ${r['form-events']}, form-execute and form-execution ${r['form-execute']} each, form-page and form-upload ${r['form-page']} each, the sweeper ${r.sweeper}, each other caller route ${r['execution-cancel']} and each owner route ${r['pipeline-push']}: ${plan.total} reserved`,
    );
    expect(aws).toContain(`**${r['execution-events']} concurrent event streams** for API callers`);
    expect(aws).toContain(`**${r['form-events']} form pages following a run by stream**`);
    expect(aws).toContain(`**${r['execution-events']} streams at once with \`reservedConcurrency=500\`**`);
    expect(aws).toContain(`${big['execution-events']} and ${big['form-events']} with \`reservedConcurrency=5000\``);
    expect(aws).toContain(`(${big['execution-events']} streams with \`reservedConcurrency=5000\`)`);
    expect(aws).toContain(`with the other 2/7: ${r['form-events']} with \`reservedConcurrency=500\``);
    expect(aws).toContain(`${r['form-execute']} runs and ${r['form-execution']} progress waits at`);
  });

  it('docs/aws.md: the download arithmetic', () => {
    const mib100 = 100 * 1024 * 1024;
    const seconds = DOWNLOAD_VIEW_SECONDS(mib100);
    const held = r['asset-get'] ?? 0;
    expect(aws).toContain(`(104,857,600 − 10,000,000) / 2,000,000 = **${seconds.toFixed(1)} s**`);
    expect(aws).toContain(`asset-get holds ${held}, so **${held} viewers of 100 MiB files at once**`);
    expect(aws).toContain(
      `(${held} / ${seconds.toFixed(1)} s ≈ ${(held / seconds).toFixed(2)} a second, ≈ ${thousands(Math.round(((held / seconds) * 3600) / 100) * 100)} an hour)`,
    );
    expect(aws).toContain(`With \`reservedConcurrency=5000\`: ${big['asset-get']} at once`);
  });
});
