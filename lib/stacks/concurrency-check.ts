/**
 * The deploy-time reserved concurrency check (concurrency-check.handler.ts): its function,
 * allowed to read the account's Lambda settings and nothing else, and the custom resource every
 * reserving function waits for.
 */
import { CustomResource, Duration } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { Construct, IDependable } from 'constructs';
import type { ConcurrencyPlan } from '../concurrency';
import { PipegateFunction } from './pipegate-function';
import type { Settings } from './settings';
import type { ConcurrencyCheckProperties } from './concurrency-check.handler';

/**
 * How long CloudFormation waits for a custom resource's answer: the handlers answer within
 * seconds, and without it a function that dies before answering holds the stack an hour.
 */
export const CUSTOM_RESOURCE_SERVICE_TIMEOUT = Duration.minutes(5);

export interface ConcurrencyCheckProps {
  settings: Settings;
  /** The plan the stack reserves by; none when nothing is reserved. */
  plan: ConcurrencyPlan | undefined;
  /** The least `reservedConcurrency` that plans. */
  least: number;
}

/**
 * Builds the check in `scope` (ConcurrencyCheck, its function, and ConcurrencyCheckResource) and
 * answers what a reserving function depends on: the check has passed.
 */
export function buildConcurrencyCheck(scope: Construct, props: ConcurrencyCheckProps): IDependable {
  const fn = new PipegateFunction(scope, 'ConcurrencyCheck', {
    name: 'concurrency-check',
    timeout: Duration.seconds(30),
    logRetentionDays: props.settings.logRetentionDays,
    systemLogLevel: props.settings.lambdaSystemLogLevel,
  });
  fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['lambda:GetAccountSettings'], resources: ['*'] }));
  fn.acknowledge(
    'AwsSolutions-IAM5[Resource::*]',
    "lambda:GetAccountSettings reads the account's concurrency quota and supports no resource-level permissions.",
  );
  const properties: ConcurrencyCheckProperties = {
    Requested: props.settings.reservedConcurrency,
    Reserved: props.plan?.total ?? 0,
    MaxAccountShare: props.settings.maxAccountShare,
    Least: props.least,
  };
  return new CustomResource(scope, 'ConcurrencyCheckResource', {
    serviceToken: fn.fn.functionArn,
    resourceType: 'Custom::PipegateConcurrencyCheck',
    serviceTimeout: CUSTOM_RESOURCE_SERVICE_TIMEOUT,
    properties,
  });
}
