/**
 * The bill the README leads with and docs/aws.md breaks down is computed, not typed:
 * from the waiting caller's inputs the last `npm run bench` measured (bench/reference-wait.json)
 * and bench/prices.ts. A change of price, assumption or measured count fails here until the
 * prose follows.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  allInHeadline,
  billText,
  dollars,
  EVENT_STREAM_CALLS,
  longExecutionText,
  mcpCost,
  pollWaitsSeconds,
  stepLoopStates,
  ownerUploadCost,
  resumeCost,
  readUnitsOf,
  totalDollars,
  xraySampledShareAt,
  type CostInput,
  type MonthlyBill,
} from '../../../bench/aws-calls';
import { consumerKeyCost } from '../../../bench/consumers';
import { streamCost } from '../../../bench/events';
import { ALL_IN_TARGET_DOLLARS, ASSUMPTIONS, PRICES } from '../../../bench/prices';

const root = path.join(__dirname, '..', '..', '..');
const flat = (file: string) => readFileSync(path.join(root, file), 'utf8').replace(/\s+/g, ' ');
const input = JSON.parse(readFileSync(path.join(root, 'bench', 'reference-wait.json'), 'utf8')) as CostInput;
const h = allInHeadline(input);
const $ = (x: number) => `$${x.toFixed(2)}`;

describe('the bill by the month', () => {
  const aws = flat('docs/aws.md');
  const readme = flat('README.md');
  const [tenk, million, hundred] = h.bills as [MonthlyBill, MonthlyBill, MonthlyBill];
  const line = (b: MonthlyBill, item: string) => b.variable.find((l) => l.item === item)?.dollars ?? NaN;
  const flatText = (x: string) => x.replace(/\s+/g, ' ');

  it('is given at 10 k, 1 M and 100 M executions a month, fixed costs included', () => {
    expect(h.bills.map((b) => b.monthlyExecutions)).toEqual([10_000, 1_000_000, 100_000_000]);
    for (const b of h.bills) expect(b.month).toBeCloseTo((totalDollars(b.variable) * b.monthlyExecutions) / 1e6 + h.fixed, 9);
    // The fixed charges the earlier figure left out: the web ACL, the key, the secrets, the alarms, the pollers, the sweeper.
    expect(million.fixed.map((f) => f.item)).toEqual([
      'WAF web ACL and rules',
      'KMS key (owner secrets)',
      'Secrets Manager',
      'CloudWatch alarms',
      'SQS pollers',
      'Sweeper',
    ]);
  });

  it('prices X-Ray at the sampling its default rule gives at each volume: all of it to a million a month, 7.5 % at 100 M', () => {
    expect(xraySampledShareAt(0.4)).toBe(1);
    expect(xraySampledShareAt(1)).toBe(1);
    expect(xraySampledShareAt(41)).toBeCloseTo((1 + 0.05 * 40) / 41, 12);
    expect(line(tenk, 'X-Ray')).toBeCloseTo(3 * PRICES.xrayPerMillionTracesRecorded, 9);
    expect(line(million, 'X-Ray')).toBeCloseTo(3 * PRICES.xrayPerMillionTracesRecorded, 9);
    expect(line(hundred, 'X-Ray') / (3 * PRICES.xrayPerMillionTracesRecorded)).toBeCloseTo(0.0746, 3);
    expect(aws).toContain('Every one is recorded up to about a million a month ($15.00), 7.5 % at 100 million ($1.12)');
  });

  it("docs/aws.md: the tables and figures are the model's", () => {
    const t = billText(h);
    expect(aws).toContain(flatText(t.bill));
    expect(aws).toContain(flatText(t.levers));
    expect(aws).toContain(`Fixed charges a month, whatever the volume: ${t.fixed}: ${dollars(h.fixed)} a month.`);
    expect(aws).toContain(
      `**≈ ${dollars(million.perMillion)} per million at 1 M executions a month, fixed costs included** (${dollars(million.month)}`,
    );
    expect(aws).toContain(`${dollars(tenk.perMillion)} per million at 10 k (${dollars(tenk.month)} a month`);
    expect(aws).toContain(`${dollars(hundred.perMillion)} at 100 M (${dollars(hundred.month)} a month`);
    expect(aws).toContain(`The request path alone is ${dollars(h.requestPath)} per million`);
    expect(aws).toContain(`${dollars(h.consumerKey)} per million at 1 M a month`);
    expect(aws).toContain(`\`-c reservedConcurrency=N\` adds ${dollars(h.waitBound)} per million waiting executions`);
    expect(aws).toContain(
      `\`stateMachineLogLevel=ALL\` adds ${dollars(h.logsAll)}, \`lambdaSystemLogLevel=INFO\` ${dollars(h.lambdaLinesInfo)}`,
    );
    expect(aws).toContain(`(≈ ${dollars(h.lambdaLinesInfo)} per million executions)`);
    expect(aws).toContain(`${dollars(h.pipelineSecond)} per million per second of pipeline time`);
  });

  it('docs/aws.md: what the ≤ $12 goal would take, from the levers the model prices', () => {
    const end = (i: number) => h.levers[i]?.at(-1)?.then ?? NaN;
    expect(end(2)).toBeLessThanOrEqual(ALL_IN_TARGET_DOLLARS);
    expect(end(1)).toBeGreaterThan(ALL_IN_TARGET_DOLLARS);
    expect(aws).toContain(
      `and callers' waiting: ${dollars(end(2))} per million. At 1 M a month the same levers end at ${dollars(end(1))} per million`,
    );
    expect(aws).toContain(`at 10 k, ${dollars(end(0))} per million`);
    expect(aws).toContain(`**The goal of ≤ $${ALL_IN_TARGET_DOLLARS} per million is not reached, and at the defaults it cannot be.**`);
  });

  it('README: the headline is the 1 M a month bill, with 10 k and 100 M beside it', () => {
    const rest = ['CloudWatch Logs', 'WAF', 'DynamoDB storage and backups', 'Transfer out (answers)'].reduce(
      (n, i) => n + line(million, i),
      0,
    );
    expect(readme).toContain(
      `costs ≈ ${dollars(million.perMillion)} per million at 1 M executions a month, fixed costs included (${dollars(million.month)} for the month: the request path ${dollars(h.requestPath)} per million, X-Ray, which records every trace at that rate, ${dollars(line(million, 'X-Ray'))}, the rest of logs, WAF and storage ${dollars(rest)}, and ${dollars(h.fixed)} of fixed charges`,
    );
    expect(readme).toContain(`≈ ${dollars(tenk.perMillion)} per million at 10 k a month`);
    expect(readme).toContain(`≈ ${dollars(hundred.perMillion)} at 100 M, where X-Ray samples 7.5 %`);
    expect(readme).toContain(`The goal of $${ALL_IN_TARGET_DOLLARS} per million is not reached`);
  });

  it('prices a consumer key with both limits as a variant of the same caller, the default path unchanged', () => {
    // The variant adds exactly what bench/consumers.ts prices per accepted execution.
    expect(h.consumerKey - million.perMillion).toBeCloseTo(consumerKeyCost().perMillionExecutions, 9);
    expect(consumerKeyCost()).toEqual({ perMillionRequests: 0.75, perMillionExecutions: 2 });
    expect(aws).toContain(`the usage count; see Consumer keys below): ${dollars(h.consumerKey)} per million`);
    expect(readme).toContain(`with such a key costs ≈ ${dollars(h.consumerKey)} per million at 1 M executions a month`);
  });
});

describe('MCP clients', () => {
  const m = mcpCost(input);
  const aws = flat('docs/aws.md');

  it('docs/aws.md: a tools/call is the waiting caller through the MCP function, and a session its handshake', () => {
    expect(aws).toContain(`all in ${$(m.call)} per million calls at 1 M a month, the ${$(m.call - h.million.perMillion)} over execute`);
    expect(aws).toContain(`${$(m.sessionTotal)} per million sessions`);
    const part = (item: string) => m.session.filter((l) => l.item.startsWith(item)).reduce((s, l) => s + l.dollars, 0);
    expect(aws).toContain(
      `(API Gateway ${$(part('API Gateway'))}, Lambda ${$(part('Lambda'))}, the authorizer's reads ${$(part('DynamoDB'))}, WAF ${$(part('WAF'))}, logs and traces ${$(part('CloudWatch') + part('X-Ray'))})`,
    );
    // The call differs from execute's by the two functions' warm durations alone.
    const gbSeconds =
      (ASSUMPTIONS.lambdaMemoryMb / 1024) *
      (((ASSUMPTIONS.lambdaWarmMs['deployment-mcp'] ?? 0) - (ASSUMPTIONS.lambdaWarmMs.execute ?? 0)) / 1000);
    expect(m.call - h.million.perMillion).toBeCloseTo(gbSeconds * PRICES.lambdaArmPerGbSecond * 1e6, 9);
  });
});

describe('the routes priced from their lists of calls', () => {
  const aws = flat('docs/aws.md');
  const readme = flat('README.md');

  it("docs/aws.md and README: a caller's and a web form viewer's event stream, from EVENT_STREAM_CALLS", () => {
    const caller10 = streamCost(10, 5, 'caller');
    const caller60 = streamCost(60, 5, 'caller');
    const form10 = streamCost(10, 5, 'form');
    const form60 = streamCost(60, 5, 'form');
    expect(aws).toContain(`A 10 s execution of 5 nodes: **≈ ${$(caller10.total)} per million** streamed executions`);
    expect(aws).toContain(`a 60 s one: **≈ ${$(caller60.total)} per million**`);
    expect(aws).toContain(
      `A 10 s execution of 5 nodes: **≈ ${$(form10.total)} per million** streamed executions; a 60 s one: **≈ ${$(form60.total)} per million**`,
    );
    expect(readme).toContain(
      `A stream of a 10 s execution costs ≈ ${$(caller10.total)} per million on AWS, a web form viewer's ≈ ${$(form10.total)}`,
    );
    // The viewer's stream differs from the caller's by the calls the lists name, nothing else.
    const { caller, form } = EVENT_STREAM_CALLS;
    const reads = (readUnitsOf(form) - readUnitsOf(caller)) * PRICES.dynamoPerMillionReadUnits;
    const writes = (form.writes - caller.writes) * PRICES.dynamoPerMillionWriteUnits;
    const authorizer =
      PRICES.lambdaPerMillionRequests +
      (ASSUMPTIONS.lambdaMemoryMb / 1024) * ((ASSUMPTIONS.lambdaWarmMs.authorizer ?? 0) / 1000) * PRICES.lambdaArmPerGbSecond * 1e6;
    expect(form10.total - caller10.total).toBeCloseTo(reads + writes - authorizer, 9);
  });

  it('docs/aws.md: one resume of a waiting execution, from RESUME_CALLS', () => {
    const lines = resumeCost();
    expect(aws).toContain(`| **Resume total** | | **≈ ${$(totalDollars(lines))}** |`);
    const escape = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    for (const l of lines)
      expect(aws).toMatch(new RegExp(`\\| ${escape(l.item)} \\| ${escape(l.perExecution)} \\| ${escape(l.dollars.toFixed(2))} \\|`));
  });

  it('docs/aws.md and README: one owner upload, from PIPELINE_UPLOAD_CALLS', () => {
    const lines = ownerUploadCost();
    const total = totalDollars(lines);
    expect(aws).toContain(`| **Owner upload total** | | **≈ ${$(total)}** |`);
    // Each of the model's lines is a row of the table, with its figure.
    const escape = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    for (const l of lines) expect(aws).toMatch(new RegExp(`\\| ${escape(l.item)}[^|]* \\| [^|]+ \\| ${escape(l.dollars.toFixed(2))} \\|`));
    expect(readme).toContain(`upload of 1 MB costs ≈ ${$(total)} per million uploads`);
  });
});

describe('long executions: Express, Standard, and what waiting costs', () => {
  const aws = flat('docs/aws.md');
  const asl = JSON.parse(readFileSync(path.join(root, 'lib', 'state-machine.asl.json'), 'utf8')) as {
    StartAt: string;
    States: Record<string, unknown>;
  };
  const t = longExecutionText(asl);
  const flatText = (x: string) => x.replace(/\s+/g, ' ');

  it("docs/aws.md: each priced execution's table is the model's", () => {
    for (const table of t.tables) expect(aws).toContain(flatText(table));
    expect(t.totals.map((x) => Math.round(x * 100) / 100)).toEqual([18.61, 2091.69, 292.59]);
  });

  it('prices Standard by the states the ASL enters: 5 for one step, 3 more for each wait, 5 for a workflow stopped in its Wait', () => {
    expect(stepLoopStates(asl, ['done'])).toEqual(['MarkRunning', 'ShouldRun', 'RunNodes', 'AfterStep', 'Done']);
    expect(stepLoopStates(asl, ['wait', 'wait', 'done'])).toHaveLength(11);
    expect(stepLoopStates(asl, ['wait'], { stoppedInItsLastWait: true })).toEqual([
      'MarkRunning',
      'ShouldRun',
      'RunNodes',
      'AfterStep',
      'Sleep',
    ]);
    expect(() => stepLoopStates(asl, ['wait'])).toThrow(/steps more than 1 times/);
  });

  it("polls a ten-minute job 25 times on the back-off the http node keeps, an upstream's Retry-After instead when it sends one", () => {
    expect(pollWaitsSeconds(600_000)).toEqual([...Array(12).fill(5), 8, 12, 17, 26, 38, 57, ...Array(7).fill(60)]);
    expect(pollWaitsSeconds(600_000, 5_000, 30_000)).toEqual(Array(20).fill(30));
  });

  it('README and docs/aws.md: the long executions and Standard beside Express, from the model', () => {
    const readme = flat('README.md');
    const h = allInHeadline(input);
    const expressLine = h.million.variable.find((l) => l.item === 'Step Functions Express')?.dollars ?? NaN;
    expect(readme).toContain(
      `a ten-minute polled job's workflow costs ≈ ${dollars(t.totals[1] ?? NaN)} per million on it, a webhook job's ≈ ${dollars(t.totals[2] ?? NaN)}`,
    );
    expect(readme).toContain(`≈ $${Math.round(t.fiveOnStandard - expressLine)} per million more were it on Standard`);
    expect(aws).toContain(`so the request path alone would be ≈ $${Math.round(h.requestPath - expressLine + t.fiveOnStandard)}`);
  });

  it("docs/aws.md: the prose's figures are the model's", () => {
    expect([t.polledWaits, t.polledTransitions, t.steadyTransitions, t.retryAfterTransitions]).toEqual([25, 80, 365, 65]);
    expect(aws).toContain(`25 waits for a job of ten minutes`);
    expect(aws).toContain(
      `the back-off makes the ten-minute job 25 polls and 80 transitions (${dollars(80 * PRICES.sfnStandardPerMillionTransitions)} per million)`,
    );
    expect(aws).toContain(`where a steady 5 s would be 365 (${dollars(t.steadyTransitions * PRICES.sfnStandardPerMillionTransitions)})`);
    expect(aws).toContain(
      `one that asks for 30 s: 65 transitions, ${dollars(t.retryAfterTransitions * PRICES.sfnStandardPerMillionTransitions)}`,
    );
    expect(aws).toContain(
      `polled every 5 s for ten minutes instead it would pay 365 (${dollars(t.steadyTransitions * PRICES.sfnStandardPerMillionTransitions)} per million)`,
    );
    expect(aws).toContain(`the five-node execution on Standard would pay ${dollars(t.fiveOnStandard)} in transitions alone`);
    expect(aws).toContain(
      `intervals under about ${Math.round(t.breakEvenSeconds)} s (${dollars(t.heldIntervalDollars)} per million 5 s intervals held at 256 MB against three transitions' ${dollars(t.threeTransitionsDollars)})`,
    );
  });
});
