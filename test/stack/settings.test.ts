import { Template } from 'aws-cdk-lib/assertions';
import { parseSettings, EXPRESS_MAX_EXECUTION_TIMEOUT_MS } from '../../lib/stacks/settings';
import { taskRunLambdaTimeoutSeconds } from '../../lib/workflow-budget';
import { buildTestApp, resourcesOf } from './stack-fixture';

describe('deploy settings from context', () => {
  it('defaults to Express with the longest execution time-out its budget leaves (170 s)', () => {
    // Act
    const s = parseSettings({});
    // Assess
    expect(s).toMatchObject({
      stackName: 'Pipegate',
      stageName: 'api',
      stateMachineType: 'EXPRESS',
      executionTimeoutMs: EXPRESS_MAX_EXECUTION_TIMEOUT_MS,
    });
    expect(EXPRESS_MAX_EXECUTION_TIMEOUT_MS).toBe(170_000);
  });

  it('refuses an execution time-out that cannot fit an Express execution', () => {
    // Act / Assess
    expect(() => parseSettings({ executionTimeoutMs: EXPRESS_MAX_EXECUTION_TIMEOUT_MS + 1 })).toThrow(/Express/);
    expect(() => parseSettings({ stateMachineType: 'EXPRESS', executionTimeoutMs: '300000' })).toThrow(/STANDARD/);
  });

  it('takes the 300 s default with Standard, and time-outs far longer than one Lambda invocation (the steps keep them)', () => {
    // Act / Assess
    expect(parseSettings({ stateMachineType: 'STANDARD' }).executionTimeoutMs).toBe(300_000);
    expect(parseSettings({ stateMachineType: 'STANDARD', executionTimeoutMs: '600000' }).executionTimeoutMs).toBe(600_000);
    expect(parseSettings({ stateMachineType: 'STANDARD', executionTimeoutMs: 3_600_000 }).executionTimeoutMs).toBe(3_600_000);
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
    expect(() => parseSettings({ stateMachineType: 'express' })).toThrow(/stateMachineType/);
    expect(() => parseSettings({ logRetentionDays: 31 })).toThrow(/logRetentionDays/);
    expect(() => parseSettings({ throttleRateLimit: 'fast' })).toThrow(/throttleRateLimit/);
  });

  it('switches the state machine to Standard with stateMachineType=STANDARD', () => {
    // Prepare
    const built = buildTestApp({ stateMachineType: 'STANDARD' });
    // Act
    const resources = resourcesOf(Template.fromStack(built.service));
    // Assess
    const machine = Object.values(resources).find((r) => r.Type === 'AWS::StepFunctions::StateMachine');
    expect(machine?.Properties?.StateMachineType).toBe('STANDARD');
    const taskRun = Object.values(resources).find(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties?.Description === 'pipegate task-run',
    );
    // A step's longest, whatever the execution's time-out: the state machine waits between steps.
    expect(Number(taskRun?.Properties?.Timeout)).toBe(taskRunLambdaTimeoutSeconds());
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
