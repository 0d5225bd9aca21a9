/**
 * The all-in cost the README leads with and docs/aws.md breaks down is computed, not typed:
 * from the waiting caller's inputs the last `npm run bench` measured (bench/reference-wait.json)
 * and bench/prices.ts. A change of price, assumption or measured count fails here until the
 * prose follows.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  allInHeadline,
  EVENT_STREAM_CALLS,
  mcpCost,
  ownerUploadCost,
  readUnitsOf,
  totalDollars,
  type CostInput,
} from '../../../bench/aws-calls';
import { consumerKeyCost } from '../../../bench/consumers';
import { streamCost } from '../../../bench/events';
import { ASSUMPTIONS, PRICES } from '../../../bench/prices';

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

describe('MCP clients', () => {
  const m = mcpCost(input);
  const aws = flat('docs/aws.md');

  it('docs/aws.md: a tools/call is the waiting caller through the MCP function, and a session its handshake', () => {
    expect(aws).toContain(`all in ${$(m.call)} per million calls, the ${$(m.call - h.allIn)} over execute`);
    expect(aws).toContain(`${$(m.sessionTotal)} per million sessions`);
    const part = (item: string) => m.session.filter((l) => l.item.startsWith(item)).reduce((s, l) => s + l.dollars, 0);
    expect(aws).toContain(
      `(API Gateway ${$(part('API Gateway'))}, Lambda ${$(part('Lambda'))}, the authorizer's reads ${$(part('DynamoDB'))}, WAF ${$(part('WAF'))}, logs and traces ${$(part('CloudWatch') + part('X-Ray'))})`,
    );
    // The call differs from execute's by the two functions' warm durations alone.
    const gbSeconds =
      (ASSUMPTIONS.lambdaMemoryMb / 1024) *
      (((ASSUMPTIONS.lambdaWarmMs['deployment-mcp'] ?? 0) - (ASSUMPTIONS.lambdaWarmMs.execute ?? 0)) / 1000);
    expect(m.call - h.allIn).toBeCloseTo(gbSeconds * PRICES.lambdaArmPerGbSecond * 1e6, 9);
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
