/**
 * Builds the pipegate app the way bin/app.ts does (cdk.json's context), with asset bundling
 * skipped so the stack tests neither run esbuild nor depend on handler code compiling.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildPipegate, type PipegateApp } from '../../lib/stacks/app';
import { isPlainObject } from '../../functions/core/values';

const CDK_JSON = path.join(__dirname, '..', '..', 'cdk.json');

export function cdkContext(): Record<string, unknown> {
  const parsed: unknown = JSON.parse(readFileSync(CDK_JSON, 'utf8'));
  if (typeof parsed !== 'object' || parsed === null || !('context' in parsed)) throw new Error('cdk.json has no context');
  return { ...(parsed.context as Record<string, unknown>) };
}

export interface TestAppOptions {
  /** Register cdk-nag as bin/app.ts does. */
  nag?: boolean;
  /**
   * CDK's built-in CloudFormation template validation, on by default in a real synth; it costs
   * about ten seconds per synth, so only the test that mirrors `npm run synth` turns it on.
   */
  cfnValidation?: boolean;
}

export function buildTestApp(extraContext: Record<string, unknown> = {}, opts: TestAppOptions = {}): { app: App } & PipegateApp {
  const app = new App({
    context: { ...cdkContext(), 'aws:cdk:bundling-stacks': [], ...extraContext },
    builtinCloudFormationValidation: opts.cfnValidation ?? false,
  });
  return { app, ...buildPipegate(app, { nag: opts.nag ?? false }) };
}

export type Resources = Record<string, { Type: string; Properties?: Record<string, unknown>; DeletionPolicy?: string }>;

export function resourcesOf(template: Template): Resources {
  return (template.toJSON() as { Resources: Resources }).Resources;
}

export function outputsOf(template: Template): Record<string, { Value: unknown }> {
  return (template.toJSON() as { Outputs?: Record<string, { Value: unknown }> }).Outputs ?? {};
}

/** The logical id in a { Ref } or { Fn::GetAtt: [id, attr] }, else undefined. */
export function refOf(x: unknown): string | undefined {
  if (!isPlainObject(x)) return undefined;
  if (typeof x.Ref === 'string') return x.Ref;
  const getAtt = x['Fn::GetAtt'];
  if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return getAtt[0];
  return undefined;
}

/**
 * Follows a cross-stack reference (Fn::GetStackOutput or Fn::ImportValue) into the producing
 * template's output, returning the logical id it refers to there.
 */
export function crossStackRef(x: unknown, producer: Template): string | undefined {
  if (!isPlainObject(x)) return undefined;
  const get = x['Fn::GetStackOutput'];
  if (isPlainObject(get) && typeof get.OutputName === 'string') return refOf(outputsOf(producer)[get.OutputName]?.Value);
  const imp = x['Fn::ImportValue'];
  if (typeof imp === 'string') {
    const out = Object.values(
      (producer.toJSON() as { Outputs?: Record<string, { Value: unknown; Export?: { Name?: unknown } }> }).Outputs ?? {},
    ).find((o) => o.Export?.Name === imp);
    return refOf(out?.Value);
  }
  return undefined;
}

export function asArray(x: unknown): unknown[] {
  return Array.isArray(x) ? x : [x];
}
