import { App, Stack, Validations, type PolicyValidationPluginReport } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { buildTestApp } from './stack-fixture';

const errors = (report: PolicyValidationPluginReport): string[] =>
  report.violations
    .filter((v) => v.severity === 'error' || v.severity === 'fatal')
    .map((v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(', ')}`);

describe("cdk-nag's AwsSolutions pack", () => {
  // Prepare: the app as bin/app.ts builds it, with the pack and CDK's template validation.
  const { app } = buildTestApp({}, { nag: true, cfnValidation: true });

  it('finds no unacknowledged error in the pipegate app', () => {
    // Act
    const report = new AwsSolutionsChecks(app).validateScope(app);
    // Assess
    expect(errors(report)).toEqual([]);
  });

  it('lets the app synthesize with the pack registered, as `npm run synth` does', () => {
    // Act / Assess: a failing validation throws when synthesized in-process.
    expect(() => app.synth()).not.toThrow();
  });

  it('reports an unacknowledged wildcard (the check can fail)', () => {
    // Prepare
    const app = new App();
    const stack = new Stack(app, 'Probe');
    const role = new iam.Role(stack, 'Role', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    role.addToPolicy(new iam.PolicyStatement({ actions: ['dynamodb:GetItem'], resources: ['*'] }));
    // Act
    const before = errors(new AwsSolutionsChecks(app).validateScope(app));
    Validations.of(role).acknowledge({ id: 'AwsSolutions-IAM5[Resource::*]', reason: 'probe' });
    const after = errors(new AwsSolutionsChecks(app).validateScope(app));
    // Assess
    expect(before).toEqual(['AwsSolutions-IAM5[Resource::*] at Probe/Role/DefaultPolicy/Resource']);
    expect(after).toEqual([]);
  });
});
