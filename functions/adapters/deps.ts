import { randomUUID } from 'node:crypto';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SFNClient } from '@aws-sdk/client-sfn';
import { SQSClient } from '@aws-sdk/client-sqs';
import { readConfig, type Config } from '../../lib/config';
import type { Clock, HttpPort, IdSource, QueuePort, WorkflowPort } from '../core/ports';
import { DeploymentsStore } from './deployments.store';
import { createDocumentClient } from './dynamo';
import { ExecutionsStore } from './executions.store';
import { createGuardedHttp } from './guarded-http';
import { createLogger, type Logger } from './logger';
import { PipelinesStore } from './pipelines.store';
import { SecretsManagerSecrets, type SecretsPort } from './secrets';
import { SfnWorkflowPort } from './sfn.workflow';
import { SqsQueuePort } from './sqs.queue';

/** Everything a handler needs from the outside world, built once per process. */
export interface Deps {
  config: Config;
  pipelines: PipelinesStore;
  executions: ExecutionsStore;
  deployments: DeploymentsStore;
  queue: QueuePort;
  workflow: WorkflowPort;
  secrets: SecretsPort;
  http: HttpPort;
  clock: Clock;
  ids: IdSource;
  log: Logger;
}

export const systemClock: Clock = { now: () => new Date() };
export const randomIds: IdSource = { uuid: () => randomUUID() };

export function storesFor(config: Config): Pick<Deps, 'pipelines' | 'executions' | 'deployments'> {
  const db = createDocumentClient({ region: config.region, endpoint: config.dynamodbEndpoint });
  return {
    pipelines: new PipelinesStore(db, config.table),
    executions: new ExecutionsStore(db, config.table, config.trackOpen),
    deployments: new DeploymentsStore(db, config.table),
  };
}

/** The AWS wiring: SDK clients at module scope of the process, reused across invocations. */
export function awsDeps(config: Config = readConfig()): Deps {
  return {
    config,
    ...storesFor(config),
    queue: new SqsQueuePort(new SQSClient({ region: config.region }), {
      executions: config.executionsQueueUrl,
      callbacks: config.callbacksQueueUrl,
    }),
    workflow: new SfnWorkflowPort(new SFNClient({ region: config.region }), config.stateMachineArn),
    secrets: new SecretsManagerSecrets(new SecretsManagerClient({ region: config.region }), config.secretArn),
    http: createGuardedHttp({ allowPrivate: config.allowPrivateUrls }),
    clock: systemClock,
    ids: randomIds,
    log: createLogger(),
  };
}

let current: Deps | undefined;

/** The process's dependencies: AWS by default; the local runtime and tests install their own. */
export function deps(): Deps {
  current ??= awsDeps();
  return current;
}

export function setDeps(d: Deps | undefined): void {
  current = d;
}
