/**
 * The Lambda handlers as AWS invokes them: real API Gateway and SQS event shapes, a real
 * store (dynalite), recording queue and workflow ports.
 */
import { invokeStreamed } from '../support/streamed';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context, SQSBatchResponse } from 'aws-lambda';
import type { LocalFunction } from '../../lib/local/gateway/streaming';
import { PollingCompletions } from '../../functions/adapters/completions';
import type { Deps } from '../../functions/adapters/deps';
import { createHandler as authorizerHandler } from '../../functions/authorizer/handler';
import { createHandler as callbackDispatchHandler } from '../../functions/callback-dispatch/handler';
import { createHandler as executeHandler } from '../../functions/execute/handler';
import { createHandler as statusHandler } from '../../functions/execution-status/handler';
import { createHandler as publishHandler } from '../../functions/deployment-publish/handler';
import { createHandler as pushHandler } from '../../functions/pipeline-push/handler';
import { createHandler as runnerHandler } from '../../functions/runner/handler';
import { createHandler as taskFailHandler } from '../../functions/task-fail/handler';
import { createHandler as taskRunHandler } from '../../functions/task-run/handler';
import { createHandler as taskStartHandler } from '../../functions/task-start/handler';
import { INLINE_ASSET_BODY_MAX_BYTES } from '../../functions/core/assets';
import { inlineLimitDetail } from '../../functions/core/body-size';
import { KEY_REFUSALS, type KeyRefusal } from '../../functions/core/errors';
import type { HttpRequest } from '../../functions/core/ports';
import { createLogger } from '../../functions/adapters/logger';
import { startTestDb, type TestDb } from '../support/dynamo';
import { authorizerEvent, context, proxyEvent, sqsEvent } from '../support/events';
import { testDeps, type RecordingQueue, type RecordingWorkflow } from '../support/fakes';
import { greeting } from '../support/runtime';

let db: TestDb;
let d: Deps & { queue: RecordingQueue; workflow: RecordingWorkflow };
/** What the handlers below reach; a test swaps it to inject a fault. */
let current: Deps;
const source = (): Deps => current;
const authorizer = authorizerHandler(source);
const callbackDispatch = callbackDispatchHandler(source);
/** Streamed routes (lib/routes.ts `streams`), read back whole as a proxy result. */
const streamedAsResult =
  (fn: LocalFunction) =>
  async (event: APIGatewayProxyEvent, ctx: Context): Promise<APIGatewayProxyResult> => {
    const r = await invokeStreamed(fn, event, ctx);
    return { statusCode: r.statusCode, headers: r.headers, body: r.bytes.toString('utf8') };
  };
const execute = streamedAsResult(executeHandler(source));
const status = streamedAsResult(statusHandler(source));
const publish = publishHandler(source);
const push = pushHandler(source);
const runner = runnerHandler(source);
const taskFail = taskFailHandler(source);
const taskRun = taskRunHandler(source);
const taskStart = taskStartHandler(source);
const calls: HttpRequest[] = [];
let hookStatus = 204;

beforeAll(async () => {
  db = await startTestDb();
  d = testDeps(db, {
    http: async (req) => {
      calls.push(req);
      return { status: hookStatus, headers: {}, body: '' };
    },
  });
  // Retries at least 5 s apart: a retry message handled at once is always early, however loaded the machine.
  d.config = { ...d.config, callbackScheduleSeconds: [5, 10] };
  current = d;
});
afterAll(async () => {
  await db.close();
});

const parse = (r: APIGatewayProxyResult) => JSON.parse(r.body) as Record<string, unknown>;

/** Drives one execution through the state-machine task handlers, as Step Functions would. */
async function runWorkflow(executionId: string) {
  const start = await taskStart({ execution_id: executionId });
  if (start.proceed) await taskRun({ execution_id: executionId });
}

async function publishGreeting(pipelineId: string) {
  await push(
    proxyEvent({
      method: 'PUT',
      resource: '/v1/pipelines/{pipeline_id}',
      path: `/v1/pipelines/${pipelineId}`,
      pathParameters: { pipeline_id: pipelineId },
      body: JSON.stringify(greeting),
    }),
    context(),
  );
  const { startRun } = await import('../../functions/services/runs.service');
  const run = await startRun(d, pipelineId, null, 'https://x');
  await runWorkflow(run.run_id);
  const pub = await publish(
    proxyEvent({
      method: 'PUT',
      resource: '/v1/pipelines/{pipeline_id}/deployment',
      path: `/v1/pipelines/${pipelineId}/deployment`,
      pathParameters: { pipeline_id: pipelineId },
    }),
    context(),
  );
  expect(pub.statusCode).toBe(201);
  const body = parse(pub);
  return { deploymentId: body.deployment_id as string, apiKey: body.api_key as string };
}

async function authorize(apiKey: string) {
  const policy = await authorizer(authorizerEvent({ 'X-API-Key': apiKey }));
  return Object.fromEntries(Object.entries(policy.context ?? {}).map(([k, v]) => [k, String(v)]));
}

describe('authorizer', () => {
  it('allows a valid key for every caller route of the stage and passes the deployment on', async () => {
    const p = await publishGreeting('auth-ok');
    const policy = await authorizer(authorizerEvent({ authorization: `Api-Key ${p.apiKey}` }));

    expect(policy.principalId).toBe(p.deploymentId);
    expect(policy.policyDocument.Statement).toEqual([
      {
        Action: 'execute-api:Invoke',
        Effect: 'Allow',
        Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/v1/deployments/*',
      },
    ]);
    expect(policy.context).toMatchObject({ deployment_id: p.deploymentId, deleted: false });
  });

  const denied = (reason: string) => ({
    principalId: 'anonymous',
    policyDocument: {
      Version: '2012-10-17',
      Statement: [
        {
          Action: 'execute-api:Invoke',
          Effect: 'Deny',
          Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/v1/deployments/*',
        },
      ],
    },
    context: { reason, detail: KEY_REFUSALS[reason as KeyRefusal] },
  });

  it.each([
    ['no header', 'missing', {}],
    ['a malformed key', 'malformed', { 'x-api-key': 'hello' }],
    ['another scheme', 'wrong_scheme', { authorization: 'Bearer abc' }],
  ])('denies %s with the reason %s in its context (never throwing Unauthorized)', async (_w, reason, headers) => {
    expect(await authorizer(authorizerEvent(headers as Record<string, string>))).toEqual(denied(reason));
  });

  it("denies a well-formed key that is not the deployment's as unknown, and another deployment's key on its route", async () => {
    const p = await publishGreeting('auth-wrong');
    const q = await publishGreeting('auth-other');
    const { generateApiKey } = await import('../../functions/core/api-key');
    const forged = generateApiKey(p.deploymentId, Buffer.alloc(24, 1));
    expect(await authorizer(authorizerEvent({ 'x-api-key': forged }))).toEqual(denied('unknown'));
    const onOther = { ...authorizerEvent({ 'x-api-key': q.apiKey }), pathParameters: { deployment_id: p.deploymentId } };
    expect(await authorizer(onOther)).toEqual(denied('other_deployment'));
  });

  it('denies a key header sent twice with two keys as two_keys: API Gateway keeps the last in headers, every one in multiValueHeaders', async () => {
    // Prepare: the event API Gateway gives for `X-API-Key: <p's key>` then `X-API-Key: <q's key>`.
    const p = await publishGreeting('auth-twice');
    const q = await publishGreeting('auth-twice-other');
    const twice = (name: string, first: string, last: string) => ({
      ...authorizerEvent({ [name]: last }),
      multiValueHeaders: { [name]: [first, last] },
    });
    // Act
    const keys = await authorizer(twice('X-API-Key', q.apiKey, p.apiKey));
    const authorizations = await authorizer(twice('Authorization', `Api-Key ${q.apiKey}`, `Api-Key ${p.apiKey}`));
    const same = await authorizer(twice('X-API-Key', p.apiKey, p.apiKey));
    // Assess
    expect(keys).toEqual(denied('two_keys'));
    expect(authorizations).toEqual(denied('two_keys'));
    expect(same.principalId).toBe(p.deploymentId);
  });
});

describe('execute → runner → tasks → callback', () => {
  it('waits on AWS by re-reading the record: a completion written elsewhere ends the wait', async () => {
    const p = await publishGreeting('wait-poll');
    const auth = await authorize(p.apiKey);
    const res = await execute(
      proxyEvent({
        method: 'POST',
        resource: '/v1/deployments/{deployment_id}/executions',
        path: `/v1/deployments/${p.deploymentId}/executions/`,
        pathParameters: { deployment_id: p.deploymentId },
        authorizer: auth,
      }),
      context(),
    );
    const id = parse(res).execution_id as string;
    // Lambdas share no memory: the finishing task cannot wake the waiting one.
    const inProcess = d.completions;
    d.completions = new PollingCompletions([5, 10, 20]);
    const reads = jest.spyOn(d.executions, 'get');
    try {
      const waiting = status(
        proxyEvent({
          method: 'GET',
          resource: '/v1/deployments/executions/{execution_id}/status',
          path: `/v1/deployments/executions/${id}/status/`,
          pathParameters: { execution_id: id },
          headers: { Prefer: 'wait=20' },
          authorizer: auth,
        }),
        context(),
      );
      await new Promise((r) => setTimeout(r, 50));
      await runWorkflow(id);
      const st = await waiting;
      expect(st.statusCode).toBe(200);
      expect(st.headers?.['preference-applied']).toBe('wait=20');
      expect(parse(st)).toMatchObject({ status: 'completed' });
      // Strongly consistent re-reads: an eventually consistent one may not show the write yet.
      expect(reads.mock.calls.some((c) => c[0] === id && c[2] === true)).toBe(true);
    } finally {
      reads.mockRestore();
      d.completions = inProcess;
    }
  });

  it('writes no log line of its own for an execution that succeeds, from the submit to the status read (the cost model prices none)', async () => {
    // Prepare: every handler below logs through a recording logger.
    const p = await publishGreeting('quiet');
    const lines: string[] = [];
    current = { ...d, log: createLogger('pipegate', (l) => lines.push(l)) } as Deps;
    try {
      // Act
      const auth = await authorize(p.apiKey);
      const res = await execute(
        proxyEvent({
          method: 'POST',
          resource: '/v1/deployments/{deployment_id}/executions',
          path: `/v1/deployments/${p.deploymentId}/executions/`,
          pathParameters: { deployment_id: p.deploymentId },
          body: '{}',
          authorizer: auth,
        }),
        context(),
      );
      const id = parse(res).execution_id as string;
      await runner(sqsEvent([JSON.stringify({ execution_id: id })]), context());
      await runWorkflow(id);
      const st = await status(
        proxyEvent({
          method: 'GET',
          resource: '/v1/deployments/executions/{execution_id}/status',
          path: `/v1/deployments/executions/${id}/status/`,
          pathParameters: { execution_id: id },
          authorizer: auth,
        }),
        context(),
      );

      // Assess: warnings and errors only; bench/prices.ts's logBytes.lambdaOwn is 0 because of this.
      expect(parse(st)).toMatchObject({ status: 'completed' });
      expect(lines).toEqual([]);
    } finally {
      current = d;
    }
  });

  it('accepts with URLs that keep the stage, queues the execution, and the workflow completes it', async () => {
    const p = await publishGreeting('flow');
    const auth = await authorize(p.apiKey);
    const res = await execute(
      proxyEvent({
        method: 'POST',
        resource: '/v1/deployments/{deployment_id}/executions',
        path: `/v1/deployments/${p.deploymentId}/executions/`,
        pathParameters: { deployment_id: p.deploymentId },
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ callback: 'https://hooks.example.com/x', workflow_input: { name: { value: 'Bo', value_type: 'RAW' } } }),
        authorizer: auth,
      }),
      context(),
    );

    expect(res.statusCode).toBe(202);
    const body = parse(res);
    const id = body.execution_id as string;
    expect(body.status_url).toBe(`https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/deployments/executions/${id}/status/`);
    expect(res.headers?.location).toBe(body.status_url);
    // The greeting ends within what Express allows: its message names that machine, and the runner starts it there.
    expect(d.queue.on('executions').at(-1)?.body).toEqual({ execution_id: id, workflow: 'express' });

    const batch = (await runner(sqsEvent([JSON.stringify(d.queue.on('executions').at(-1)?.body)]), context())) as SQSBatchResponse;
    expect(batch.batchItemFailures).toEqual([]);
    expect(d.workflow.started).toContain(id);
    expect(d.workflow.on.get(id)).toBe('express');
    await runWorkflow(id);
    // A duplicate message after the fact starts nothing.
    await runner(sqsEvent([JSON.stringify({ execution_id: id })]), context());
    expect(d.workflow.started.filter((x) => x === id)).toHaveLength(1);

    const st = await status(
      proxyEvent({
        method: 'GET',
        resource: '/v1/deployments/executions/{execution_id}/status',
        path: `/v1/deployments/executions/${id}/status/`,
        pathParameters: { execution_id: id },
        authorizer: auth,
      }),
      context(),
    );
    expect(parse(st)).toMatchObject({ status: 'completed', error_message: null });

    const cbMessage = d.queue.on('callbacks').find((m) => m.body.execution_id === id);
    expect(cbMessage).toBeDefined();
    calls.length = 0;
    hookStatus = 500;
    await callbackDispatch(sqsEvent([JSON.stringify(cbMessage?.body)]), context());
    const retry = d.queue.on('callbacks').at(-1);
    expect(retry?.body.execution_id).toBe(id);
    expect(retry?.delaySeconds).toBeGreaterThanOrEqual(1);
    expect(calls[0]?.headers['webhook-id']).toMatch(/^msg_/);
    expect(JSON.parse(String(calls[0]?.body ?? '{}'))).toEqual({ message: ['Hello, Bo!'], execution_id: id });

    // The retry message arrives early (before it is due): it is deferred, not attempted.
    await callbackDispatch(sqsEvent([JSON.stringify(retry?.body)]), context());
    expect(calls).toHaveLength(1);

    const e = await d.executions.get(id, new Date(), true);
    expect(e?.callback_delivery).toMatchObject({ attempts: 1, outcome: 'pending', last_status: 500 });
  });

  it('dead-letters a callback once the schedule is used up, without touching the execution status', async () => {
    const p = await publishGreeting('dead');
    const auth = await authorize(p.apiKey);
    const res = await execute(
      proxyEvent({
        method: 'POST',
        resource: '/v1/deployments/{deployment_id}/executions',
        path: `/v1/deployments/${p.deploymentId}/executions`,
        pathParameters: { deployment_id: p.deploymentId },
        body: JSON.stringify({ callback: 'https://hooks.example.com/y' }),
        authorizer: auth,
      }),
      context(),
    );
    const id = parse(res).execution_id as string;
    await runWorkflow(id);
    hookStatus = 503;
    const { dispatchCallback } = await import('../../functions/services/dispatch.service');
    const outcomes = [];
    for (let i = 0; i < 3; i++) {
      const e = await d.executions.get(id, new Date(), true);
      // Pretend each retry is due now.
      if (e?.callback_delivery?.next_attempt_at) {
        const { UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
        const { createDocumentClient, keys } = await import('../../functions/adapters/dynamo');
        const raw = createDocumentClient({ region: 'local', endpoint: db.dynamo.endpoint });
        await raw.send(
          new UpdateCommand({
            TableName: db.table,
            Key: keys.execution(id),
            UpdateExpression: 'SET callback_delivery.next_attempt_at = :n',
            ExpressionAttributeValues: { ':n': null },
          }),
        );
        raw.destroy();
      }
      outcomes.push(await dispatchCallback(d, { execution_id: id }));
    }
    expect(outcomes).toEqual(['retry', 'retry', 'dead_lettered']);
    const e = await d.executions.get(id, new Date(), true);
    expect(e?.status).toBe('completed');
    expect(e?.callback_delivery).toMatchObject({ attempts: 3, outcome: 'dead_lettered', last_status: 503 });
  });

  it("names a callback attempt's claim by the SQS message id: another message is acknowledged unsent, the holder's own sends", async () => {
    // Prepare: attempt 0 claimed by a message whose Lambda died before recording it.
    const p = await publishGreeting('claimed');
    const auth = await authorize(p.apiKey);
    const res = await execute(
      proxyEvent({
        method: 'POST',
        resource: '/v1/deployments/{deployment_id}/executions',
        path: `/v1/deployments/${p.deploymentId}/executions`,
        pathParameters: { deployment_id: p.deploymentId },
        body: JSON.stringify({ callback: 'https://hooks.example.com/z' }),
        authorizer: auth,
      }),
      context(),
    );
    const id = parse(res).execution_id as string;
    await runWorkflow(id);
    hookStatus = 204;
    const holder = sqsEvent([JSON.stringify({ execution_id: id })]);
    const duplicate = sqsEvent([JSON.stringify({ execution_id: id })]);
    const now = Date.now();
    expect(await d.deliveries.claimDelivery(id, 0, holder.Records[0]?.messageId ?? '', now + 60_000, now)).toBe(true);
    calls.length = 0;
    // Act
    const dropped = (await callbackDispatch(duplicate, context())) as SQSBatchResponse;
    const sentAfterDuplicate = calls.length;
    const back = (await callbackDispatch(holder, context())) as SQSBatchResponse;
    // Assess
    expect(dropped.batchItemFailures).toEqual([]);
    expect(sentAfterDuplicate).toBe(0);
    expect(back.batchItemFailures).toEqual([]);
    expect(calls).toHaveLength(1);
    expect((await d.executions.get(id, new Date(), true))?.callback_delivery).toMatchObject({ attempts: 1, outcome: 'delivered' });
  });

  it('MarkFailed ends an execution that never started as failed, through running, with a readable message', async () => {
    const p = await publishGreeting('failing');
    const auth = await authorize(p.apiKey);
    const res = await execute(
      proxyEvent({
        method: 'POST',
        resource: '/v1/deployments/{deployment_id}/executions',
        path: `/v1/deployments/${p.deploymentId}/executions`,
        pathParameters: { deployment_id: p.deploymentId },
        authorizer: auth,
      }),
      context(),
    );
    const id = parse(res).execution_id as string;
    await taskFail({ execution_id: id, error: { Error: 'States.Timeout', Cause: 'x' } });
    const e = await d.executions.get(id, new Date(), true);
    // On Express, which holds an execution within 170 s whatever the default says.
    expect(e).toMatchObject({ status: 'failed', error_message: 'Execution timed out after 170 s' });
    expect(e?.started_at).not.toBeNull();
  });
});

describe('errors', () => {
  it('answers 413 on an owner route for a body over the limit, as API Gateway passes it on', async () => {
    // Prepare: a valid definition padded past the limit with whitespace.
    const body = JSON.stringify(greeting) + ' '.repeat(d.config.maxBodyBytes);

    // Act
    const res = await push(
      proxyEvent({
        method: 'PUT',
        resource: '/v1/pipelines/{pipeline_id}',
        path: '/v1/pipelines/padded',
        pathParameters: { pipeline_id: 'padded' },
        body,
      }),
      context(),
    );

    // Assess
    expect(res.statusCode).toBe(413);
    expect(parse(res)).toMatchObject({ error: 'Payload Too Large' });
    expect(await d.pipelines.getMeta('padded', true)).toBeNull();
  });

  it('answers 413 on the execute route for a body past the inline limit before looking anything up', async () => {
    // Prepare: a key of a deployment other than the path's (401 had the body been smaller).
    const p = await publishGreeting('oversize');
    const auth = await authorize(p.apiKey);
    const body = JSON.stringify({ workflow_input: { name: { value: 'x', value_type: 'RAW' } } }).padEnd(
      INLINE_ASSET_BODY_MAX_BYTES + 1,
      ' ',
    );

    // Act
    const res = await execute(
      proxyEvent({
        method: 'POST',
        resource: '/v1/deployments/{deployment_id}/executions',
        path: '/v1/deployments/other/executions',
        pathParameters: { deployment_id: 'other' },
        authorizer: auth,
        body,
      }),
      context(),
    );

    // Assess
    expect(res.statusCode).toBe(413);
    expect(parse(res)).toEqual({ error: 'Payload Too Large', detail: inlineLimitDetail() });
  });

  it('maps an unexpected failure to 500 with a request id and no internals', async () => {
    const fail = async () => {
      throw new Error('secret internals');
    };
    const broken = { ...d, executions: { ...d.executions, get: fail, getHead: fail } } as unknown as Deps;
    current = broken;
    try {
      const res = await status(
        proxyEvent({
          method: 'GET',
          resource: '/v1/deployments/executions/{execution_id}/status',
          path: '/v1/deployments/executions/x/status',
          pathParameters: { execution_id: 'x' },
          authorizer: { deployment_id: 'd', revision: '1', deleted: 'false' },
        }),
        context(),
      );
      expect(res.statusCode).toBe(500);
      expect(parse(res)).toEqual({ error: 'Internal Error', request_id: expect.any(String) });
      expect(res.body).not.toContain('secret internals');
    } finally {
      current = d;
    }
  });

  it('maps an unreachable store to 503 with Retry-After', async () => {
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const fail = async () => {
      throw down;
    };
    current = { ...d, executions: { ...d.executions, get: fail, getHead: fail } } as unknown as Deps;
    try {
      const res = await status(
        proxyEvent({
          method: 'GET',
          resource: '/v1/deployments/executions/{execution_id}/status',
          path: '/v1/deployments/executions/x/status',
          pathParameters: { execution_id: 'x' },
          authorizer: { deployment_id: 'd', revision: '1', deleted: 'false' },
        }),
        context(),
      );
      expect(res.statusCode).toBe(503);
      expect(res.headers?.['retry-after']).toBe('1');
    } finally {
      current = d;
    }
  });

  it('reports only the failed records of a runner batch', async () => {
    const flaky = {
      ...d,
      workflow: {
        start: async (_workflow: string, name: string) => {
          if (name.endsWith('1')) throw new Error('throttled');
          return 'started' as const;
        },
        stop: async () => undefined,
      },
    };
    current = flaky as Deps;
    try {
      const ids = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'];
      for (const id of ids) {
        await d.executions.create({
          execution_id: id,
          kind: 'api',
          pipeline_id: 'p',
          version: 1,
          deployment_id: null,
          status: 'pending',
          inputs: {},
          outputs: null,
          visible_outputs: null,
          callback: null,
          callback_delivery: null,
          error_message: null,
          created_at: new Date().toISOString(),
          started_at: null,
          completed_at: null,
          expires_at: null,
        });
      }
      const event = sqsEvent([...ids.map((id) => JSON.stringify({ execution_id: id })), 'not json']);
      const out = (await runner(event, context())) as SQSBatchResponse;
      expect(out.batchItemFailures).toEqual([{ itemIdentifier: event.Records[0]?.messageId }]);
    } finally {
      current = d;
    }
  });
});
