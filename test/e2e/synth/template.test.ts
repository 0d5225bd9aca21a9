/**
 * start:synth serves what the templates say, not what the sources say: a role stripped of one
 * grant makes exactly that call fail with AccessDenied end to end, a changed gateway response
 * changes the answer, and an event source mapping whose role may not receive is refused as
 * CloudFormation refuses it.
 */
import type { Template } from '../../../lib/synth/assembly';
import type { SynthRuntime } from '../../../lib/synth/runtime';
import { greeting, request } from '../../support/runtime';
import { ownSynthRuntimes } from '../../support/synth';

interface Statement {
  Action: string | string[];
  Effect: string;
}

/** Removes `action` from the policy attached to the role whose logical id starts with `rolePrefix`. */
function revoke(t: Template, rolePrefix: string, action: string): void {
  const policy = Object.values(t.Resources).find(
    (r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties?.Roles).includes(`"${rolePrefix}`),
  );
  const statements = (policy?.Properties?.PolicyDocument as { Statement: Statement[] } | undefined)?.Statement ?? [];
  const holder = statements.find((s) => [s.Action].flat().includes(action));
  if (!holder) throw new Error(`No statement of ${rolePrefix}'s policy grants ${action}`);
  holder.Action = [holder.Action].flat().filter((a) => a !== action);
  if (holder.Action.length === 0) statements.splice(statements.indexOf(holder), 1);
}

const start = ownSynthRuntimes('template');

describe('an edited template', () => {
  let rt: SynthRuntime;
  beforeAll(async () => {
    rt = await start((t) => {
      revoke(t, 'ExecuteRole', 'sqs:SendMessage');
      // A request without a key meets the authorizer's Deny, answered by ACCESS_DENIED.
      const unauthorized = Object.values(t.Resources).find(
        (r) => r.Type === 'AWS::ApiGateway::GatewayResponse' && r.Properties?.ResponseType === 'ACCESS_DENIED',
      );
      if (!unauthorized?.Properties) throw new Error('no ACCESS_DENIED gateway response');
      unauthorized.Properties.StatusCode = '418';
      unauthorized.Properties.ResponseTemplates = {
        'application/json': '{"error":"changed in the template","request_id":"$context.requestId"}',
      };
      unauthorized.Properties.ResponseParameters = { 'gatewayresponse.header.X-From-Template': "'yes'" };
    });
  });
  afterAll(async () => {
    await rt?.stop();
  });

  const owner = (method: string, path: string, body?: unknown) =>
    request<Record<string, unknown>>(`${rt.url}${path}`, method, body, { authorization: `Bearer ${rt.ownerToken}` });

  it('answers with the gateway response the template declares', async () => {
    // Act
    const r = await request<Record<string, unknown>>(`${rt.url}/v1/deployments/00000000-0000-4000-8000-000000000000`, 'GET', undefined, {});

    // Assess
    expect(r.status).toBe(418);
    expect(r.body).toEqual({ error: 'changed in the template', request_id: r.headers.get('x-request-id') });
    expect(r.headers.get('x-from-template')).toBe('yes');
  });

  it('fails the one call the stripped grant covered with AccessDenied, and the caller sees it', async () => {
    // Prepare: everything but execute's queue send still works.
    await owner('PUT', '/v1/pipelines/greeting', greeting);
    const run = await owner('POST', '/v1/pipelines/greeting/runs', {});
    expect(run.status).toBe(202);
    const pub = await (async () => {
      for (let i = 0; i < 200; i++) {
        const p = await owner('PUT', '/v1/pipelines/greeting/deployment', {});
        if (p.status === 201) return p;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('never publishable');
    })();

    // Act
    const r = await request<Record<string, unknown>>(
      `${rt.url}/v1/deployments/${pub.body.deployment_id}/executions`,
      'POST',
      {},
      { 'x-api-key': String(pub.body.api_key) },
    );

    // Assess: the send is refused, the pending record withdrawn, the caller told to retry.
    expect(r.status).toBe(503);
    const denied = rt.endpoint.denials.filter((d) => d.action === 'sqs:SendMessage');
    expect(denied).toHaveLength(1);
    expect(denied[0]?.principal).toMatch(/assumed-role\/Pipegate-ExecuteRole/);
    expect(rt.endpoint.denials.filter((d) => d.action !== 'sqs:SendMessage')).toEqual([]);
  });
});

describe('an authorizer whose role lost its read of the table', () => {
  let rt: SynthRuntime;
  beforeAll(async () => {
    rt = await start((t) => revoke(t, 'AuthorizerRole', 'dynamodb:GetItem'));
  });
  afterAll(async () => {
    await rt?.stop();
  });

  it('answers callers 503 with Retry-After (AUTHORIZER_CONFIGURATION_ERROR), not a bare 500', async () => {
    // Prepare: owner routes need no authorizer.
    const owner = (method: string, path: string, body?: unknown) =>
      request<Record<string, unknown>>(`${rt.url}${path}`, method, body, { authorization: `Bearer ${rt.ownerToken}` });
    await owner('PUT', '/v1/pipelines/greeting', greeting);
    await owner('POST', '/v1/pipelines/greeting/runs', {});
    let pub: Awaited<ReturnType<typeof owner>> | undefined;
    for (let i = 0; i < 200 && pub?.status !== 201; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      pub = await owner('PUT', '/v1/pipelines/greeting/deployment', {});
    }
    expect(pub?.status).toBe(201);

    // Act
    const r = await request<Record<string, unknown>>(
      `${rt.url}/v1/deployments/${String(pub?.body.deployment_id)}/executions`,
      'POST',
      {},
      { 'x-api-key': String(pub?.body.api_key) },
    );

    // Assess
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('1');
    expect(r.body).toEqual({ error: 'Service Unavailable', request_id: expect.any(String) });
    expect(rt.endpoint.denials.map((d) => [d.action, d.principal.includes('AuthorizerRole')])).toEqual([['dynamodb:GetItem', true]]);
  });
});

it('refuses an event source mapping whose function role may not receive from its queue', async () => {
  // Act
  const started = start((t) => revoke(t, 'RunnerRole', 'sqs:ReceiveMessage'));

  // Assess
  await expect(started).rejects.toThrow(/does not have permissions to call ReceiveMessage on SQS/);
});
