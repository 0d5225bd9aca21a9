import { randomUUID } from 'node:crypto';
import { InProcessCompletions } from '../../functions/adapters/completions';
import { readConfig, type Config } from '../../lib/config';
import { createDeps, type Deps } from '../../functions/adapters/deps';
import { silentLogger } from '../../functions/adapters/logger';
import { testDataKeys, testKeyMaterial } from './dynamo';
import type { DeploymentRecord, Execution, WorkflowType } from '../../functions/core/types';
import type {
  DeliveriesPort,
  DeploymentsPort,
  ExecutionListsPort,
  ExecutionsPort,
  IdempotencyPort,
  ConsumersPort,
  HttpPort,
  OwnerSecretsPort,
  PipelinesPort,
  StepsPort,
  QueueName,
  QueuePort,
  SweepPort,
  UploadsPort,
  UsagePort,
  WorkflowPort,
} from '../../functions/core/ports';

/** The stores, from dynalite (test/support/dynamo.ts) or in memory (memory-stores.ts). */
export interface StoreSet {
  pipelines: PipelinesPort;
  executions: ExecutionsPort;
  deliveries: DeliveriesPort;
  sweep: SweepPort;
  executionLists: ExecutionListsPort;
  usage: UsagePort;
  idempotency: IdempotencyPort;
  steps?: StepsPort;
  deployments: DeploymentsPort;
  ownerSecrets?: OwnerSecretsPort;
  uploads?: UploadsPort;
  consumers?: ConsumersPort;
}

export class RecordingQueue implements QueuePort {
  readonly sent: { queue: QueueName; body: Record<string, unknown>; delaySeconds?: number }[] = [];
  async send(queue: QueueName, body: Record<string, unknown>, opts?: { delaySeconds?: number }): Promise<void> {
    this.sent.push({ queue, body, delaySeconds: opts?.delaySeconds });
  }
  on(queue: QueueName) {
    return this.sent.filter((m) => m.queue === queue);
  }
}

/** Names started and stopped, and on which state machine each was (`on`). */
export class RecordingWorkflow implements WorkflowPort {
  readonly started: string[] = [];
  readonly stopped: string[] = [];
  readonly on = new Map<string, WorkflowType>();
  async start(workflow: WorkflowType, name: string): Promise<'started' | 'already_exists'> {
    if (this.started.includes(name)) return 'already_exists';
    this.started.push(name);
    this.on.set(name, workflow);
    return 'started';
  }
  /** As on AWS, only a Standard workflow can be stopped: an Express one is not recorded. */
  async stop(workflow: WorkflowType, name: string): Promise<void> {
    if (workflow === 'standard') this.stopped.push(name);
  }
}

export { testKeyMaterial };

export function testConfig(db: { table?: string }, overrides: Partial<Config> = {}): Config {
  return {
    ...readConfig({ PIPEGATE_TABLE: db.table ?? 'pipegate', PIPEGATE_ALLOW_PRIVATE_URLS: 'true', PIPEGATE_CANCEL_POLL_MS: '50' }),
    ...overrides,
  };
}

export const noHttp: HttpPort = async () => {
  throw new Error('no network in this test');
};

export type TestDeps = Deps & { queue: RecordingQueue; workflow: RecordingWorkflow };

/**
 * Deps with recording queue and workflow ports, over a test database (dynalite) or over the
 * in-memory stores (test/support/memory-stores.ts). A plain object, so a test may replace a
 * field (e.g. `d.config`) for itself.
 */
export function testDeps(stores: StoreSet & { table?: string }, overrides: Partial<Omit<Deps, 'queue' | 'workflow'>> = {}): TestDeps {
  const queue = new RecordingQueue();
  const workflow = new RecordingWorkflow();
  const built = createDeps(overrides.config ?? testConfig(stores), {
    pipelines: stores.pipelines,
    executions: stores.executions,
    deliveries: stores.deliveries,
    sweep: stores.sweep,
    executionLists: stores.executionLists,
    usage: stores.usage,
    idempotency: stores.idempotency,
    ...(stores.steps ? { steps: stores.steps } : {}),
    deployments: stores.deployments,
    ...(stores.ownerSecrets ? { ownerSecrets: stores.ownerSecrets } : {}),
    ...(stores.uploads ? { uploads: stores.uploads } : {}),
    ...(stores.consumers ? { consumers: stores.consumers } : {}),
    queue,
    workflow,
    keyMaterial: testKeyMaterial,
    dataKeys: testDataKeys,
    http: noHttp,
    completions: new InProcessCompletions(),
    log: silentLogger,
    ...overrides,
  });
  return { ...built, queue, workflow };
}

/** A live deployment record, as publish writes it, with whatever a test changes. */
export function aDeploymentRecord(over: Partial<DeploymentRecord> = {}): DeploymentRecord {
  const at = new Date().toISOString();
  return {
    deployment_id: randomUUID(),
    pipeline_id: 'p',
    version: 1,
    revision: 1,
    status: 'live',
    inputs: [],
    outputs: [],
    published_at: at,
    created_at: at,
    key_hashes: [],
    signing_secrets: [],
    deleted_at: null,
    ...over,
  };
}

/** A pending API execution record, as execute writes it, with whatever a test changes. */
export function anExecution(over: Partial<Execution> = {}): Execution {
  return {
    execution_id: randomUUID(),
    kind: 'api',
    pipeline_id: 'p',
    version: 1,
    deployment_id: randomUUID(),
    status: 'pending',
    inputs: {},
    outputs: null,
    visible_outputs: [],
    callback: null,
    callback_delivery: null,
    error_message: null,
    created_at: new Date().toISOString(),
    started_at: null,
    completed_at: null,
    expires_at: null,
    ...over,
  };
}
