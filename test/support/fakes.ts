import { randomUUID } from 'node:crypto';
import { InProcessCompletions } from '../../functions/adapters/completions';
import { readConfig, type Config } from '../../lib/config';
import type { Deps } from '../../functions/adapters/deps';
import { silentLogger } from '../../functions/adapters/logger';
import { testKeyMaterial } from './dynamo';
import type { HttpPort, QueueName, QueuePort, WorkflowPort } from '../../functions/core/ports';
import type { TestDb } from './dynamo';

export class RecordingQueue implements QueuePort {
  readonly sent: { queue: QueueName; body: Record<string, unknown>; delaySeconds?: number }[] = [];
  async send(queue: QueueName, body: Record<string, unknown>, opts?: { delaySeconds?: number }): Promise<void> {
    this.sent.push({ queue, body, delaySeconds: opts?.delaySeconds });
  }
  on(queue: QueueName) {
    return this.sent.filter((m) => m.queue === queue);
  }
}

export class RecordingWorkflow implements WorkflowPort {
  readonly started: string[] = [];
  readonly stopped: string[] = [];
  async start(name: string): Promise<'started' | 'already_exists'> {
    if (this.started.includes(name)) return 'already_exists';
    this.started.push(name);
    return 'started';
  }
  async stop(name: string): Promise<void> {
    this.stopped.push(name);
  }
}

export { testKeyMaterial };

export function testConfig(db: TestDb, overrides: Partial<Config> = {}): Config {
  return { ...readConfig({ PIPEGATE_TABLE: db.table, PIPEGATE_ALLOW_PRIVATE_URLS: 'true', PIPEGATE_CANCEL_POLL_MS: '50' }), ...overrides };
}

export const noHttp: HttpPort = async () => {
  throw new Error('no network in this test');
};

/** Deps over a test database, with recording queue and workflow ports. */
export function testDeps(db: TestDb, overrides: Partial<Deps> = {}): Deps & { queue: RecordingQueue; workflow: RecordingWorkflow } {
  return {
    config: testConfig(db),
    pipelines: db.pipelines,
    executions: db.executions,
    deployments: db.deployments,
    ownerSecrets: db.ownerSecrets,
    queue: new RecordingQueue(),
    workflow: new RecordingWorkflow(),
    keyMaterial: testKeyMaterial,
    http: noHttp,
    completions: new InProcessCompletions(),
    clock: { now: () => new Date() },
    ids: { uuid: () => randomUUID() },
    log: silentLogger,
    ...overrides,
  } as Deps & { queue: RecordingQueue; workflow: RecordingWorkflow };
}
