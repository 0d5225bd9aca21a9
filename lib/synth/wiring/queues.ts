/**
 * Every AWS::SQS::Queue of the assembly as a durable local queue with SQS's semantics
 * (visibility time-out, receive count, dead-letter), and the AWS::Lambda::EventSourceMapping
 * that consume them: each polls only with what its function's role allows, with the mapping's
 * batch size and partial batch failures.
 */
import { join } from 'node:path';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { isPlainObject } from '../../../functions/core/values';
import { LocalQueue } from '../../local/queue';
import type { FunctionHost } from '../function-host';
import type { ResolvedStack } from '../physical';
import type { FunctionLookup, Wiring } from './context';

/** An event source mapping as the template declares it. */
export interface EventSourceMapping {
  where: string;
  queueArn: string;
  fn: FunctionHost;
  batchSize: number;
  reportFailures: boolean;
  enabled: boolean;
  maximumConcurrency: number | undefined;
}

export function eventSourceMappings(stacks: ResolvedStack[], fnByArn: FunctionLookup): EventSourceMapping[] {
  return stacks.flatMap((stack) =>
    Object.entries(stack.stack.template.Resources)
      .filter(([, r]) => r.Type === 'AWS::Lambda::EventSourceMapping')
      .map(([id, r]) => {
        const where = `${stack.stack.id}.Resources.${id}.Properties`;
        const p = stack.resolve(r.Properties ?? {}, where) as Record<string, unknown>;
        return {
          where,
          queueArn: String(p.EventSourceArn),
          fn: fnByArn(String(p.FunctionName), where),
          batchSize: Number(p.BatchSize ?? 10),
          reportFailures: Array.isArray(p.FunctionResponseTypes) && p.FunctionResponseTypes.includes('ReportBatchItemFailures'),
          enabled: p.Enabled !== false,
          maximumConcurrency:
            isPlainObject(p.ScalingConfig) && p.ScalingConfig.MaximumConcurrency !== undefined
              ? Number(p.ScalingConfig.MaximumConcurrency)
              : undefined,
        };
      }),
  );
}

/** By queue ARN; each is consumed with its mapping's batch size (under the scale model, its concurrency). */
export function wireQueues(w: Wiring, mappings: readonly EventSourceMapping[]): Map<string, LocalQueue> {
  const { scale } = w;
  const queues = new Map<string, LocalQueue>();
  for (const stack of w.stacks) {
    for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
      if (r.Type !== 'AWS::SQS::Queue') continue;
      const where = `${stack.stack.id}.Resources.${id}.Properties`;
      const props = stack.resolve(r.Properties ?? {}, where) as Record<string, unknown>;
      const attrs = stack.physical[id]?.attributes ?? {};
      const arn = attrs.Arn ?? '';
      const redrive = isPlainObject(props.RedrivePolicy) ? props.RedrivePolicy : undefined;
      if (
        redrive &&
        ![...Object.values(w.resolved.stacks)].some((s) =>
          Object.values(s.physical).some((x) => x.attributes.Arn === redrive.deadLetterTargetArn),
        )
      ) {
        throw new Error(`${where}.RedrivePolicy: dead-letter target ${String(redrive.deadLetterTargetArn)} is not a queue of the assembly`);
      }
      const consumer = mappings.find((m) => m.queueArn === arn);
      const queue = new LocalQueue({
        dir: join(w.boot.dataDir, 'queues'),
        name: attrs.QueueName ?? id,
        visibilityTimeoutSeconds: Number(props.VisibilityTimeout ?? 30),
        // Without a redrive policy SQS keeps receiving a message until it expires.
        maxReceiveCount: redrive ? Number(redrive.maxReceiveCount) : Number.MAX_SAFE_INTEGER,
        batchSize: consumer?.batchSize ?? 10,
        // The pollers invoke at most the mapping's MaximumConcurrency at once (else the function's concurrency).
        ...(scale && consumer
          ? { concurrency: scale.queueConcurrency(consumer.maximumConcurrency) ?? scale.lambda.limitOf(consumer.fn.spec.name) }
          : {}),
        onError: (err: unknown) => w.log(`queue ${arn}: ${err instanceof Error ? err.message : String(err)}`),
      });
      w.boot.onStop(() => queue.stop());
      queues.set(arn, queue);
    }
  }
  return queues;
}

/**
 * Each enabled mapping's poller, started when the runtime starts consuming. A mapping whose
 * function's role may not receive, delete or read the queue's attributes fails here, as
 * CloudFormation fails to create it.
 */
export async function wireConsumers(
  w: Wiring,
  mappings: readonly EventSourceMapping[],
  queues: ReadonlyMap<string, LocalQueue>,
  roles: ReadonlyMap<string, string>,
): Promise<Array<() => void>> {
  const consumers: Array<() => void> = [];
  for (const m of mappings) {
    if (!m.enabled) continue;
    const queue = queues.get(m.queueArn);
    if (!queue) throw new Error(`${m.where}: event source ${m.queueArn} is not a queue of the assembly`);
    const roleArn = roles.get(m.fn.spec.name);
    if (roleArn === undefined) throw new Error(`${m.where}: no role for ${m.fn.spec.name}`);
    for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes']) {
      const d = await w.iam.evaluate({ principal: roleArn, action, resource: m.queueArn });
      // CloudFormation fails to create such a mapping ("The provided execution role does not have permissions").
      if (!d.allowed)
        throw new Error(
          `${m.where}: the execution role of ${m.fn.spec.name} does not have permissions to call ${action.slice(4)} on SQS (${d.reason})`,
        );
    }
    consumers.push(() =>
      queue.start(async (event: SQSEvent) => {
        const out = (await m.fn.invoke(event)) as SQSBatchResponse | null;
        // Without ReportBatchItemFailures Lambda ignores what the function returns.
        return m.reportFailures && out ? out : undefined;
      }),
    );
  }
  return consumers;
}
