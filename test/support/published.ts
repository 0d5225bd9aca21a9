/**
 * A live deployment on in-memory stores, as an owner makes one: push, one run driven through
 * the state machine's tasks to the end, publish. The service tests that need a deployment to
 * act on start here.
 */
import { publish } from '../../functions/services/publish.service';
import { startRun } from '../../functions/services/runs.service';
import { push } from '../../functions/services/push.service';
import { taskRun, taskStart } from '../../functions/services/tasks.service';
import type { TestDeps } from './fakes';
import { greeting } from './runtime';

export const TEST_BASE_URL = 'https://api.example';

export interface Published {
  deploymentId: string;
  /** The key a first publish shows once. */
  apiKey: string;
  /** What a caller's request carries once the authorizer passed it. */
  auth: { deploymentId: string; revision: number; deleted: boolean };
  status: number;
}

export async function publishPipeline(
  d: TestDeps,
  id: string,
  opts: { definition?: unknown; publishBody?: string | null; base?: string } = {},
): Promise<Published> {
  const base = opts.base ?? TEST_BASE_URL;
  await push(d, id, JSON.stringify(opts.definition ?? greeting));
  const run = await startRun(d, id, null, base);
  if (!(await taskStart(d, run.run_id)).proceed) throw new Error(`run ${run.run_id} did not start`);
  const ran = await taskRun(d, run.run_id);
  if (ran.status !== 'completed') throw new Error(`run ${run.run_id} ended ${ran.status}`);
  const pub = await publish(d, id, opts.publishBody ?? null, base);
  const deploymentId = pub.body.deployment_id;
  const dep = await d.deployments.get(deploymentId);
  return {
    deploymentId,
    apiKey: 'api_key' in pub.body ? pub.body.api_key : '',
    auth: { deploymentId, revision: dep?.revision ?? 0, deleted: false },
    status: pub.status,
  };
}
