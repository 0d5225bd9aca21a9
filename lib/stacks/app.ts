/**
 * Both pipegate stacks in one app, with the deploy-time settings from context.
 */
import { Validations, type App, type Environment } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ServiceStack } from './service-stack';
import { PLACEHOLDER_ENV, settingsFrom, type Settings } from './settings';
import { StatefulStack } from './stateful-stack';

export interface PipegateApp {
  settings: Settings;
  stateful: StatefulStack;
  service: ServiceStack;
}

export interface BuildOptions {
  /** Run cdk-nag's AwsSolutions pack at synth (its errors fail the synth). */
  nag: boolean;
}

export function environmentFor(app: App, env: NodeJS.ProcessEnv = process.env): Environment {
  const ctx = (key: string): string | undefined => {
    const v: unknown = app.node.tryGetContext(key);
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  return {
    account: ctx('account') ?? env.CDK_DEFAULT_ACCOUNT ?? PLACEHOLDER_ENV.account,
    region: ctx('region') ?? env.CDK_DEFAULT_REGION ?? PLACEHOLDER_ENV.region,
  };
}

export function buildPipegate(app: App, options: BuildOptions): PipegateApp {
  const settings = settingsFrom(app.node);
  const env = environmentFor(app);
  const stateful = new StatefulStack(app, `${settings.stackName}Stateful`, {
    env,
    settings,
    description: 'pipegate: table, queues, key material (retained on delete)',
  });
  const service = new ServiceStack(app, settings.stackName, {
    env,
    settings,
    stateful,
    description: 'pipegate: API, functions, state machine, alarms',
  });
  if (options.nag) Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { settings, stateful, service };
}
