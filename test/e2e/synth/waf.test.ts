/**
 * The web ACL the template associates with the stage, under `npm run start:synth`: a request
 * whose Content-Length is 5,000,000 bytes or more (Lambda takes 6 MB, API Gateway passes 10 MB)
 * is answered 413 naming the functions' limits before any function runs, on caller and
 * owner routes alike; a smaller one goes on to the API. An edited rule changes the answer.
 */
import { request as httpRequest } from 'node:http';
import { bodyLimitDetail } from '../../../functions/core/body-size';
import { ERRORS } from '../../../functions/core/errors';
import { readConfig } from '../../../lib/config';
import { payloadTooLargeBody } from '../../../lib/stacks/service-stack';
import type { SynthRuntime } from '../../../lib/synth/runtime';
import { ownSynthRuntimes } from '../../support/synth';

/** The smallest Content-Length the template's rule blocks. */
const LIMIT = 5_000_000;
/** What the web ACL answers (both limits: it cannot tell which route's was meant). */
const TOO_LARGE = payloadTooLargeBody();
/** What a function itself answers past its 256 KiB. */
const FUNCTION_TOO_LARGE = { error: ERRORS.PayloadTooLarge.message, detail: bodyLimitDetail(readConfig({}).maxBodyBytes) };

const start = ownSynthRuntimes('waf');

/** Invocations so far, by function, leaving out the schedules' targets (they fire on their own). */
function invocations(rt: SynthRuntime): Map<string, number> {
  const scheduled = new Set(rt.schedules.map((s) => s.functionName));
  return new Map([...rt.functions].filter(([name]) => !scheduled.has(name)).map(([name, h]) => [name, h.stats.invocations]));
}
const invokedSince = (rt: SynthRuntime, before: Map<string, number>): string[] =>
  [...invocations(rt)].filter(([name, n]) => n > (before.get(name) ?? 0)).map(([name]) => name);

type Route = { method: string; path: string; headers: Record<string, string> };
const execute = (): Route => ({
  method: 'POST',
  path: '/v1/deployments/00000000-0000-4000-8000-000000000000/executions',
  headers: { 'x-api-key': 'pgk_not-a-key' },
});
const push = (rt: SynthRuntime): Route => ({
  method: 'PUT',
  path: '/v1/pipelines/padded',
  headers: { authorization: `Bearer ${rt.ownerToken}` },
});

/** A JSON body of exactly `bytes` bytes; the answer is read even when the server stops reading the upload. */
function send(rt: SynthRuntime, route: Route, bytes: number): Promise<{ status: number; body: unknown }> {
  const head = Buffer.from('{"nodes":{}}');
  const body = Buffer.concat([head, Buffer.alloc(bytes - head.length, 0x20)]);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${rt.url}${route.path}`,
      { method: route.method, headers: { ...route.headers, 'content-type': 'application/json', 'content-length': String(body.length) } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as unknown) : undefined }));
      },
    );
    // A reset while uploading comes after the answer has arrived.
    req.on('error', (err) => setTimeout(() => reject(err), 1_000));
    req.end(body);
  });
}

describe('the web ACL of the synthesized template', () => {
  let rt: SynthRuntime;
  beforeAll(async () => {
    rt = await start();
  });
  afterAll(async () => {
    await rt?.stop();
  });

  it.each([
    ['an execute route', () => execute()],
    ['an owner route', () => push(rt)],
  ])('answers a body of the limit 413 with the handlers’ body on %s, invoking no function', async (_, route) => {
    // Prepare
    const before = invocations(rt);

    // Act
    const r = await send(rt, route(), LIMIT);

    // Assess
    expect(r).toEqual({ status: 413, body: TOO_LARGE });
    expect(invokedSince(rt, before)).toEqual([]);
  });

  it('lets a body under the limit through to the API: the owner route’s function answers it itself', async () => {
    // Prepare
    const before = invocations(rt);

    // Act
    const justUnder = await send(rt, push(rt), LIMIT - 1);
    const small = await send(rt, push(rt), 100_000);

    // Assess: the same 413 as the ACL's, from the function (over its 256 KiB); a valid size is validated.
    expect(justUnder).toEqual({ status: 413, body: FUNCTION_TOO_LARGE });
    expect(small.status).toBe(400);
    expect(invokedSince(rt, before)).toEqual([expect.stringMatching(/PipelinePush/)]);
  });

  it('lets a body under the limit through on an execute route: the authorizer sees it', async () => {
    // Prepare
    const before = invocations(rt);

    // Act
    const r = await send(rt, execute(), LIMIT - 1);

    // Assess
    expect(r.status).toBe(401);
    expect(invokedSince(rt, before)).toEqual([expect.stringMatching(/Authorizer/)]);
  });
});

describe('an edited web ACL rule', () => {
  let rt: SynthRuntime;
  beforeAll(async () => {
    // Six digits or more: 100,000 bytes.
    rt = await start((t) => {
      const acl = Object.values(t.Resources).find((r) => r.Type === 'AWS::WAFv2::WebACL');
      const rules = acl?.Properties?.Rules as Array<{ Statement: { RegexMatchStatement: { RegexString: string } } }> | undefined;
      const rule = rules?.[0]?.Statement.RegexMatchStatement;
      if (!rule) throw new Error('no regex rule in the web ACL');
      rule.RegexString = '^[0-9]{6,}$';
    });
  });
  afterAll(async () => {
    await rt?.stop();
  });

  it('blocks what the template now says: a body of 100,000 bytes, which the synthesized rule passes', async () => {
    // Prepare
    const before = invocations(rt);

    // Act
    const r = await send(rt, push(rt), 100_000);

    // Assess
    expect(r).toEqual({ status: 413, body: TOO_LARGE });
    expect(invokedSince(rt, before)).toEqual([]);
  });
});
