import { randomUUID } from 'node:crypto';
import { readConfig, type Config } from '../../lib/config';
import type { Clock, CompletionsPort, HttpPort, IdSource, OwnerSecretsPort, QueuePort, WorkflowPort } from '../core/ports';
import { PollingCompletions } from './completions';
import { DeploymentsStore } from './deployments.store';
import { createDocumentClient } from './dynamo';
import { ExecutionsStore } from './executions.store';
import { createLogger, type Logger } from './logger';
import { OwnerSecretsStore } from './owner-secrets.store';
import { PipelinesStore } from './pipelines.store';
import type { KeyMaterialPort } from './key-material';

/** Everything a handler needs from the outside world, built once per process. */
export interface Deps {
  config: Config;
  pipelines: PipelinesStore;
  executions: ExecutionsStore;
  deployments: DeploymentsStore;
  queue: QueuePort;
  workflow: WorkflowPort;
  keyMaterial: KeyMaterialPort;
  ownerSecrets: OwnerSecretsPort;
  http: HttpPort;
  /** Wakes callers waiting for an execution to finish (`Prefer: wait`). */
  completions: CompletionsPort;
  clock: Clock;
  ids: IdSource;
  log: Logger;
}

export const systemClock: Clock = { now: () => new Date() };
export const randomIds: IdSource = { uuid: () => randomUUID() };

/** The stores over one DynamoDB client; owner secrets open with `keyMaterial`, asked only when a value is sealed or opened. */
export function storesFor(config: Config, keyMaterial: KeyMaterialPort): Pick<Deps, 'pipelines' | 'executions' | 'deployments' | 'ownerSecrets'> {
  const db = createDocumentClient({ region: config.region, endpoint: config.dynamodbEndpoint });
  return {
    pipelines: new PipelinesStore(db, config.table),
    // A custom endpoint is dynalite (the local runtime, tests), which writes index entries
    // before the item: see ExecutionsStore's markerFollowUp.
    executions: new ExecutionsStore(db, config.table, config.trackOpen, config.dynamodbEndpoint !== undefined),
    deployments: new DeploymentsStore(db, config.table),
    ownerSecrets: new OwnerSecretsStore(db, config.table, keyMaterial, config.ownerSecretsTtlSeconds * 1000),
  };
}

/**
 * The AWS wiring. The DynamoDB client serves every function and is built at once; the SQS,
 * Step Functions and Secrets Manager clients and the guarded HTTP client are built on first use, and required only then,
 * so a function that never sends, starts or reads a secret neither loads nor bundles them
 * (lib/stacks/permissions.ts bundleExternals leaves them out of its bundle).
 */
export function awsDeps(config: Config = readConfig()): Deps {
  let queue: QueuePort | undefined;
  let workflow: WorkflowPort | undefined;
  let keyMaterial: KeyMaterialPort | undefined;
  let http: HttpPort | undefined;
  // The key material is read on first use; owner secrets ask for it through the getter below.
  const lazyKeyMaterial: KeyMaterialPort = { material: () => d.keyMaterial.material() };
  /* eslint-disable @typescript-eslint/no-require-imports -- lazy on purpose, see above */
  const d: Deps = {
    config,
    ...storesFor(config, lazyKeyMaterial),
    get queue(): QueuePort {
      if (!queue) {
        const { SQSClient } = require('@aws-sdk/client-sqs') as typeof import('@aws-sdk/client-sqs');
        const { SqsQueuePort } = require('./sqs.queue') as typeof import('./sqs.queue');
        queue = new SqsQueuePort(new SQSClient({ region: config.region }), {
          executions: config.executionsQueueUrl,
          callbacks: config.callbacksQueueUrl,
        });
      }
      return queue;
    },
    get workflow(): WorkflowPort {
      if (!workflow) {
        const { SFNClient } = require('@aws-sdk/client-sfn') as typeof import('@aws-sdk/client-sfn');
        const { SfnWorkflowPort } = require('./sfn.workflow') as typeof import('./sfn.workflow');
        workflow = new SfnWorkflowPort(new SFNClient({ region: config.region }), config.stateMachineArn);
      }
      return workflow;
    },
    get keyMaterial(): KeyMaterialPort {
      if (!keyMaterial) {
        const { SecretsManagerClient } = require('@aws-sdk/client-secrets-manager') as typeof import('@aws-sdk/client-secrets-manager');
        const { SecretsManagerKeyMaterial } = require('./key-material') as typeof import('./key-material');
        keyMaterial = new SecretsManagerKeyMaterial(new SecretsManagerClient({ region: config.region }), config.secretArn);
      }
      return keyMaterial;
    },
    get http(): HttpPort {
      if (!http) {
        const { createGuardedHttp } = require('./guarded-http') as typeof import('./guarded-http');
        http = createGuardedHttp({ allowPrivate: config.allowPrivateUrls });
      }
      return http;
    },
    /* eslint-enable @typescript-eslint/no-require-imports */
    // Lambdas share no memory: a waiting caller re-reads the record (see completions.ts).
    completions: new PollingCompletions(),
    clock: systemClock,
    ids: randomIds,
    log: createLogger(),
  };
  return d;
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

/** Forgets `d` if it is still the process's dependencies (a runtime stopping must not unwire another). */
export function releaseDeps(d: Deps): void {
  if (current === d) current = undefined;
}
