import { randomUUID } from 'node:crypto';
import { readConfig, type Config } from '../../lib/config';
import type {
  AssetLinksPort,
  Clock,
  CompletionsPort,
  ConsumersPort,
  DataKeysPort,
  DeliveriesPort,
  DeploymentsPort,
  ExecutionListsPort,
  ExecutionsPort,
  IdempotencyPort,
  FormsPort,
  HttpPort,
  IdSource,
  KeyMaterialPort,
  ObjectStorePort,
  OwnerSecretsPort,
  PipelinesPort,
  ResumeLinksPort,
  StepsPort,
  QueuePort,
  WaitSlotsPort,
  UploadsPort,
  SweepPort,
  UsagePort,
  WorkflowPort,
} from '../core/ports';
import { HmacAssetLinks } from './asset-links';
import { HmacResumeLinks } from './resume-links';
import { PollingCompletions } from './completions';
import { DynamoWaitSlots } from './wait-slots.store';
import { ConsumersStore } from './consumers.store';
import { DeploymentsStore } from './deployments.store';
import { createDocumentClient } from './dynamo';
import { executionStores } from './execution-stores';
import { StepsStore } from './steps.store';
import { createLogger, type Logger } from './logger';
import { OwnerSecretsStore } from './owner-secrets.store';
import { PipelinesStore } from './pipelines.store';
import { UploadsStore } from './uploads.store';
import { FormsStore } from './forms.store';

/** Everything a service needs from the outside world: ports, configuration, clock, ids, log. */
export interface Deps {
  config: Config;
  pipelines: PipelinesPort;
  /** The execution records and their status moves. */
  executions: ExecutionsPort;
  /** Callback deliveries, on the execution records. */
  deliveries: DeliveriesPort;
  /** The sweep index and its repairs. */
  sweep: SweepPort;
  /** The owner's lists of runs and executions. */
  executionLists: ExecutionListsPort;
  /** Deployments' usage counters. */
  usage: UsagePort;
  /** Idempotency-Key claims. */
  idempotency: IdempotencyPort;
  /** Each execution's node records: what its steps finished, and what waits (functions/core/engine.ts). */
  steps: StepsPort;
  deployments: DeploymentsPort;
  /** A deployment's consumers and the counters of every caller's limits. */
  consumers: ConsumersPort;
  queue: QueuePort;
  workflow: WorkflowPort;
  keyMaterial: KeyMaterialPort;
  /** Data keys from the owner secrets' KMS key (envelope encryption of owner secrets). */
  dataKeys: DataKeysPort;
  ownerSecrets: OwnerSecretsPort;
  http: HttpPort;
  /** The one bucket: asset bytes and values too large for a record (functions/core/object-keys.ts). */
  objects: ObjectStorePort;
  /** Callers' uploads (single use, expiring). */
  uploads: UploadsPort;
  /** Web-form links and their rate counters. */
  forms: FormsPort;
  /** Wakes callers waiting for an execution to finish (`Prefer: wait`). */
  completions: CompletionsPort;
  /** Bounds the callers waiting at once; none: unbounded. */
  waitSlots: WaitSlotsPort | undefined;
  /** Mints the capability links callers receive for stored objects. */
  assetLinks: AssetLinksPort;
  /** Wait nodes' resume URLs: derived where shown, checked where used. */
  resumeLinks: ResumeLinksPort;
  clock: Clock;
  ids: IdSource;
  log: Logger;
}

/** How a handler reaches its dependencies: built on first use, then the same for every invocation. */
export type DepsSource = () => Deps;

export const systemClock: Clock = { now: () => new Date() };
export const randomIds: IdSource = { uuid: () => randomUUID() };

/**
 * The one place dependencies are built, for Lambda, the local runtime and tests alike: AWS
 * adapters from the configuration, each replaceable through `overrides`. The DynamoDB client
 * and stores are built at once (cheap until used); the SQS, Step Functions and S3 clients, the
 * signed reads of key material and objects and the guarded HTTP client are built on first use,
 * and required only then, so a function that never sends, starts or writes objects neither
 * loads nor bundles those clients
 * (lib/stacks/permissions.ts bundleExternals leaves them out of its bundle).
 */
export function createDeps(config: Config, overrides: Partial<Omit<Deps, 'config'>> = {}): Deps {
  // The executions store reaches the bucket for values too large for a record (the claim check), on first need only.
  const stores = dynamoStores(config, () => d.objects);
  let queue = overrides.queue;
  let workflow = overrides.workflow;
  let keyMaterial = overrides.keyMaterial;
  let dataKeys = overrides.dataKeys;
  let http = overrides.http;
  let objects = overrides.objects;
  // The key material is read on first use; owner secrets ask for it through the getter below.
  const lazyKeyMaterial: KeyMaterialPort = { material: () => d.keyMaterial.material() };
  const lazyDataKeys: DataKeysPort = { generate: (c) => d.dataKeys.generate(c), decrypt: (b, c) => d.dataKeys.decrypt(b, c) };
  /* eslint-disable @typescript-eslint/no-require-imports -- lazy on purpose, see above */
  const d: Deps = {
    config,
    pipelines: overrides.pipelines ?? stores.pipelines,
    executions: overrides.executions ?? stores.executions,
    deliveries: overrides.deliveries ?? stores.deliveries,
    sweep: overrides.sweep ?? stores.sweep,
    executionLists: overrides.executionLists ?? stores.executionLists,
    usage: overrides.usage ?? stores.usage,
    idempotency: overrides.idempotency ?? stores.idempotency,
    steps: overrides.steps ?? stores.steps,
    deployments: overrides.deployments ?? stores.deployments,
    consumers: overrides.consumers ?? stores.consumers,
    ownerSecrets:
      overrides.ownerSecrets ??
      new OwnerSecretsStore(stores.db, config.table, lazyKeyMaterial, lazyDataKeys, config.ownerSecretsTtlSeconds * 1000),
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
        const { SfnWorkflowPort, SFN_MAX_ATTEMPTS } = require('./sfn.workflow') as typeof import('./sfn.workflow');
        workflow = new SfnWorkflowPort(new SFNClient({ region: config.region, maxAttempts: SFN_MAX_ATTEMPTS }), config.stateMachineArns);
      }
      return workflow;
    },
    get keyMaterial(): KeyMaterialPort {
      if (!keyMaterial) {
        const { SecretsManagerKeyMaterial, secretsManagerReader } = require('./key-material') as typeof import('./key-material');
        // A signed call with the DynamoDB client's credential provider: no Secrets Manager client.
        keyMaterial = new SecretsManagerKeyMaterial(
          secretsManagerReader({ region: config.region, credentials: () => stores.db.config.credentials() }),
          config.secretArn,
        );
      }
      return keyMaterial;
    },
    get dataKeys(): DataKeysPort {
      if (!dataKeys) {
        const { awsKmsTransport, KmsDataKeys } = require('./kms') as typeof import('./kms');
        dataKeys = new KmsDataKeys(awsKmsTransport({ region: config.region }), config.ownerSecretsKey);
      }
      return dataKeys;
    },
    get http(): HttpPort {
      if (!http) {
        const { createGuardedHttp } = require('./guarded-http') as typeof import('./guarded-http');
        http = createGuardedHttp({ allowPrivate: config.allowPrivateUrls });
      }
      return http;
    },
    get objects(): ObjectStorePort {
      if (!objects) {
        const { S3ObjectReads, splitObjectStore } = require('./object-reads') as typeof import('./object-reads');
        // Reads are signed with the DynamoDB client's credential provider (the environment's on
        // Lambda): no S3 client until the first write, and none at all in a function that only reads.
        const reads = new S3ObjectReads(config, config.bucket, () => stores.db.config.credentials());
        objects = splitObjectStore(reads, () =>
          (require('./objects.store') as typeof import('./objects.store')).createObjectWrites(config, config.bucket),
        );
      }
      return objects;
    },
    /* eslint-enable @typescript-eslint/no-require-imports */
    uploads: overrides.uploads ?? stores.uploads,
    forms: overrides.forms ?? stores.forms,
    // Lambdas share no memory: a waiting caller re-reads the record (see completions.ts).
    completions: overrides.completions ?? new PollingCompletions(),
    waitSlots:
      'waitSlots' in overrides
        ? overrides.waitSlots
        : config.maxWaiters > 0
          ? new DynamoWaitSlots(stores.db, config.table, config.waitScope, config.maxWaiters)
          : undefined,
    assetLinks: overrides.assetLinks ?? new HmacAssetLinks(lazyKeyMaterial, config.assetLinkTtlSeconds),
    resumeLinks: overrides.resumeLinks ?? new HmacResumeLinks(lazyKeyMaterial),
    clock: overrides.clock ?? systemClock,
    ids: overrides.ids ?? randomIds,
    log: overrides.log ?? createLogger(),
  };
  return d;
}

/**
 * The DynamoDB stores over one document client. The client is only a configuration until its
 * first call, so building it where every store is overridden (tests) costs nothing.
 */
export function dynamoStores(config: Config, objects?: () => ObjectStorePort) {
  const db = createDocumentClient({ region: config.region, endpoint: config.dynamodbEndpoint });
  return {
    db,
    pipelines: new PipelinesStore(db, config.table),
    // A custom endpoint is dynalite (the local runtime, tests), which writes index entries
    // before the item: see ExecutionItemsOptions' markerFollowUp.
    ...executionStores(db, config.table, { trackOpen: config.trackOpen, markerFollowUp: config.dynamodbEndpoint !== undefined, objects }),
    steps: new StepsStore(db, config.table, () => {
      if (!objects) throw new Error('node values too large for their record need object storage, and this store was given none');
      return objects();
    }),
    deployments: new DeploymentsStore(db, config.table),
    consumers: new ConsumersStore(db, config.table),
    uploads: new UploadsStore(db, config.table),
    forms: new FormsStore(db, config.table),
  };
}

let lambda: Deps | undefined;

/** A Lambda container's dependencies, from its environment, built on the first invocation. */
export const lambdaDeps: DepsSource = () => (lambda ??= createDeps(readConfig()));
