import { Template } from 'aws-cdk-lib/assertions';
import { parseSettings, EXPRESS_MAX_EXECUTION_TIMEOUT_MS } from '../../lib/stacks/settings';
import { taskRunLambdaTimeoutSeconds } from '../../lib/workflow-budget';
import { buildTestApp, resourcesOf } from './stack-fixture';

describe('deploy settings from context', () => {
  it('defaults to a 300 s execution time-out, which only Standard executions take whole (Express ones are held within 170 s)', () => {
    // Act
    const s = parseSettings({});
    // Assess
    expect(s).toMatchObject({ stackName: 'Pipegate', stageName: 'api', executionTimeoutMs: 300_000 });
    expect(s).not.toHaveProperty('stateMachineType');
    expect(EXPRESS_MAX_EXECUTION_TIMEOUT_MS).toBe(170_000);
  });

  it('takes time-outs far longer than one Lambda invocation or an Express execution (the steps keep them), up to 7 days', () => {
    // Act / Assess
    expect(parseSettings({ executionTimeoutMs: '600000' }).executionTimeoutMs).toBe(600_000);
    expect(parseSettings({ executionTimeoutMs: 3_600_000 }).executionTimeoutMs).toBe(3_600_000);
    expect(parseSettings({ executionTimeoutMs: 604_800_000 }).executionTimeoutMs).toBe(604_800_000);
    expect(() => parseSettings({ executionTimeoutMs: 604_800_001 })).toThrow(/executionTimeoutMs/);
    expect(() => parseSettings({ executionTimeoutMs: 999 })).toThrow(/executionTimeoutMs/);
  });

  it('refuses the retired stateMachineType, whatever its value, saying what replaced it', () => {
    // Act / Assess: both machines are deployed; each version runs on the one it needs.
    for (const value of ['EXPRESS', 'STANDARD', 'express']) {
      expect(() => parseSettings({ stateMachineType: value })).toThrow(
        /stateMachineType is retired: the stack deploys an Express and a Standard/,
      );
    }
    expect(() => parseSettings({ stateMachineType: 'STANDARD' })).toThrow(/timeout_ms/);
  });

  it('takes a public base URL (a custom domain) without its trailing slash, and refuses one that is not a URL', () => {
    expect(parseSettings({}).publicUrl).toBeUndefined();
    expect(parseSettings({ publicUrl: 'https://pipes.example.org/v/' }).publicUrl).toBe('https://pipes.example.org/v');
    expect(() => parseSettings({ publicUrl: 'pipes.example.org' })).toThrow(/publicUrl/);
  });

  it('reads command-line strings and rejects nonsense', () => {
    // Act / Assess
    expect(parseSettings({ throttleRateLimit: '50', throttleBurstLimit: '75' })).toMatchObject({
      throttleRateLimit: 50,
      throttleBurstLimit: 75,
    });
    expect(() => parseSettings({ logRetentionDays: 31 })).toThrow(/logRetentionDays/);
    expect(() => parseSettings({ throttleRateLimit: 'fast' })).toThrow(/throttleRateLimit/);
  });

  it('deploys both state machines whatever the execution time-out, task-run a step long', () => {
    // Prepare
    const built = buildTestApp({ executionTimeoutMs: 3_600_000 });
    // Act
    const resources = resourcesOf(Template.fromStack(built.service));
    // Assess
    const machines = Object.values(resources).filter((r) => r.Type === 'AWS::StepFunctions::StateMachine');
    expect(machines.map((m) => m.Properties?.StateMachineType).sort()).toEqual(['EXPRESS', 'STANDARD']);
    const taskRun = Object.values(resources).find(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties?.Description === 'pipegate task-run',
    );
    // A step's longest, whatever the execution's time-out: the state machine waits between steps.
    expect(Number(taskRun?.Properties?.Timeout)).toBe(taskRunLambdaTimeoutSeconds());
    const env = (taskRun?.Properties?.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(env.PIPEGATE_EXECUTION_TIMEOUT_MS).toBe('3600000');
  });

  it('hands publicUrl to every function as PIPEGATE_PUBLIC_URL', () => {
    // Prepare
    const built = buildTestApp({ publicUrl: 'https://pipes.example.org/' });
    // Act
    // Every function of the service (not the custom resources', which read no configuration).
    const functions = Object.values(resourcesOf(Template.fromStack(built.service))).filter(
      (r) =>
        r.Type === 'AWS::Lambda::Function' &&
        !['pipegate upload-cors', 'pipegate concurrency-check'].includes(String(r.Properties?.Description)),
    );
    const urls = functions.map(
      (f) => (f.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.PIPEGATE_PUBLIC_URL,
    );
    // Assess
    expect(functions.length).toBeGreaterThan(10);
    expect(new Set(urls)).toEqual(new Set(['https://pipes.example.org']));
  });

  it('gives the objects bucket no CorsConfiguration of its own, with or without a public URL (test/stack/upload-cors.test.ts)', () => {
    // Prepare
    const withUrl = buildTestApp({ publicUrl: 'https://pipes.example.org/v1base' });
    const without = buildTestApp({});
    // Act
    const bucketOf = (t: Template) => Object.values(resourcesOf(t)).find((r) => r.Type === 'AWS::S3::Bucket')?.Properties;
    // Assess: the service stack's custom resource owns the upload rule; a rule here would be reset by stateful updates.
    expect(bucketOf(Template.fromStack(withUrl.stateful))?.CorsConfiguration).toBeUndefined();
    expect(bucketOf(Template.fromStack(without.stateful))?.CorsConfiguration).toBeUndefined();
  });
});
