/**
 * The figures docs/aws.md gives for a map ("Branches and fan-out") are the cost model's
 * (bench/aws-calls.ts): a change of price, assumption or design fails here until the prose
 * follows. The model's step count is the engine's own (bench/map.ts measures it locally:
 * waves × (polls − 1) + 1).
 */
import { STANDARD_STEPS_PER_WORKFLOW } from '../../../lib/workflow-budget';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { dollars, largestMapWithinQuotas, mapCostPerMillion, mapStateWork, mapStepLoopWork, totalDollars } from '../../../bench/aws-calls';
import { HISTORY_EVENTS, MAP_SCENARIO, SFN_QUOTAS } from '../../../bench/prices';
import { MAP_MAX_ITEMS } from '../../../functions/core/nodes/map';

const aws = readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'aws.md'), 'utf8').replace(/\s+/g, ' ');
const line = (lines: ReturnType<typeof mapCostPerMillion>, item: string) => lines.find((l) => l.item === item)?.dollars ?? NaN;

describe("a map's cost on AWS, as docs/aws.md gives it", () => {
  const loop = mapStepLoopWork();
  const state = mapStateWork();
  const loopCost = mapCostPerMillion(loop);
  const stateCost = mapCostPerMillion(state);

  it('prices a map of 100 jobs in the step loop and in the Map state', () => {
    expect(MAP_SCENARIO).toMatchObject({ items: 100, concurrency: 4, pollsPerItem: 3, requestMs: 50 });
    expect(aws).toContain(
      `the step loop takes ${loop.steps} steps, ${loop.transitions} transitions, ${loop.lambdaInvocations} Lambda invocations, ${loop.writeUnits} write and ${loop.readUnits} read units in the steps table, **${dollars(totalDollars(loopCost))} per million executions** (Step Functions ${dollars(line(loopCost, 'Step Functions Standard'))}, DynamoDB writes ${dollars(line(loopCost, 'DynamoDB writes'))}, reads ${dollars(line(loopCost, 'DynamoDB reads'))}, Lambda ${dollars(line(loopCost, 'Lambda requests') + line(loopCost, 'Lambda duration (arm64)'))})`,
    );
    expect(aws).toContain(
      `the Map state takes ${state.transitions.toLocaleString('en-US')} transitions and ${state.lambdaInvocations} invocations, **${dollars(totalDollars(stateCost))} per million** (Step Functions ${dollars(line(stateCost, 'Step Functions Standard'))})`,
    );
    expect(aws).toContain(`The step loop is ${(totalDollars(stateCost) / totalDollars(loopCost)).toFixed(1)} times cheaper`);
  });

  it("gives each design's history and payload against Step Functions' quotas", () => {
    const pastHistory = Array.from({ length: 2000 }, (_, i) => i + 1).find(
      (items) => mapStateWork({ ...MAP_SCENARIO, items }).historyEvents > SFN_QUOTAS.historyEvents,
    );
    const perStep = HISTORY_EVENTS.task + HISTORY_EVENTS.choice + HISTORY_EVENTS.wait;
    const steps = Math.floor((SFN_QUOTAS.historyEvents - HISTORY_EVENTS.task - HISTORY_EVENTS.choice) / perStep);
    expect(aws).toContain(`9 events each, not with items: ${loop.historyEvents} events for the map above`);
    expect(perStep).toBe(9);
    expect(aws).toContain(`${state.historyEvents.toLocaleString('en-US')} for the map above, and past the quota from ${pastHistory} items`);
    expect(aws).toContain(
      `take ${Math.round(state.payloadBytes / 1024)} KiB, and ${largestMapWithinQuotas(mapStateWork)} is the most a list of them can hold`,
    );
    // A workflow hands its execution on well before its history would fill (functions/services/tasks.service.ts handOver).
    expect(aws).toContain(`history would hold about ${steps.toLocaleString('en-US')} steps (9 events each)`);
    expect(STANDARD_STEPS_PER_WORKFLOW * perStep).toBeLessThan(SFN_QUOTAS.historyEvents);
    expect(aws).toContain(
      `no workflow makes more than ${STANDARD_STEPS_PER_WORKFLOW.toLocaleString('en-US')} (\`STANDARD_STEPS_PER_WORKFLOW\` in \`lib/workflow-budget.ts\`, ${(STANDARD_STEPS_PER_WORKFLOW * perStep).toLocaleString('en-US')} events`,
    );
    expect(aws).toContain(
      `a map of 1,000 items of ${MAP_SCENARIO.recordBytes} bytes reads ${Math.ceil((MAP_MAX_ITEMS * MAP_SCENARIO.recordBytes) / 4096)} units a step`,
    );
    expect(largestMapWithinQuotas(mapStepLoopWork)).toBe(MAP_MAX_ITEMS);
  });
});
