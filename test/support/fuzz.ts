/**
 * Requests for fuzzing every caller and owner route over real HTTP: the route table's
 * methods and paths, path parameters, query strings, headers and bodies, each from valid
 * through malformed to hostile.
 */
import fc from 'fast-check';
import { ROUTES, type Route } from '../../lib/routes';
import { greeting, type TestRuntime } from './runtime';

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface FuzzContext {
  ownerToken: string;
  apiKey: string;
  otherApiKey: string;
  /** Ids that exist, so a request gets past the lookups as well as failing them. */
  known: { deployment_id: string[]; execution_id: string[]; pipeline_id: string[]; run_id: string[] };
  /** Bodies that are valid for some route, to mutate. */
  validBodies: unknown[];
}

/** What undici lets through as a header value: no control characters but tab. */
const headerText = (maxLength: number) =>
  fc.string({ unit: 'binary-ascii', maxLength }).map((s) => s.replace(/[^\t\x20-\x7e]/g, '').trim());

const segment = (known: string[]) =>
  fc.oneof(
    { weight: 4, arbitrary: known.length > 0 ? fc.constantFrom(...known) : fc.uuid() },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).map(encodeURIComponent) },
    { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9._~-]{1,70}$/) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '%00',
        '%ZZ',
        '%',
        '%2e%2e',
        '%2F',
        '%C0%AF',
        '..%2f..%2fetc',
        'a'.repeat(2500),
        '%F0%9F%98%80',
        'null',
        'undefined',
        '0',
        '-1',
        'NaN',
      ),
    },
  );

const query = (ctx: FuzzContext) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant('') },
    {
      weight: 3,
      arbitrary: fc
        .array(
          fc.tuple(
            fc.constantFrom('confirm', 'limit', 'cursor', 'x', ''),
            fc.oneof(
              fc.constantFrom(...ctx.known.deployment_id, '1', '0', '101', '-5', '1e3', 'abc', ''),
              fc.string({ maxLength: 60 }).map(encodeURIComponent),
            ),
          ),
          { maxLength: 3 },
        )
        .map((pairs) => (pairs.length ? `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}` : '')),
    },
    { weight: 1, arbitrary: fc.constantFrom('?', '?&&', '?confirm', '?limit=%ZZ', '?cursor=eyJhIjoxfQ', `?cursor=${'A'.repeat(4000)}`) },
  );

function mutate(value: unknown, path: string[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  if (value === null || typeof value !== 'object') return value;
  const [head, ...rest] = path as [string, ...string[]];
  if (Array.isArray(value)) {
    const list: unknown[] = [...(value as unknown[])];
    list[Number(head)] = mutate(list[Number(head)], rest, replacement);
    return list;
  }
  const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  copy[head] = mutate(copy[head], rest, replacement);
  return copy;
}

function paths(value: unknown, prefix: string[] = [], out: string[][] = []): string[][] {
  out.push(prefix);
  if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) paths(v, [...prefix, k], out);
  return out;
}

const body = (ctx: FuzzContext) =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant<string | undefined>(undefined) },
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
    {
      weight: 4,
      arbitrary: fc.tuple(fc.constantFrom(...ctx.validBodies), fc.nat(), fc.jsonValue({ maxDepth: 2 })).map(([valid, at, replacement]) => {
        const all = paths(valid);
        return JSON.stringify(mutate(valid, all[at % all.length] ?? [], replacement));
      }),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '',
        'null',
        '[]',
        '{"__proto__":{"polluted":true}}',
        '{"constructor":{"prototype":{"x":1}}}',
        `${'['.repeat(5000)}${']'.repeat(5000)}`,
        `{"nodes":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}`,
        JSON.stringify({ workflow_input: { name: { value: 'x'.repeat(200_000), value_type: 'RAW' } } }),
        JSON.stringify({ callback: 'http://[::1', workflow_input: {} }),
        '\uFEFF{}',
        '{"a":1,"a":2}',
      ),
    },
  );

const contentType = fc.oneof(
  { weight: 5, arbitrary: fc.constant('application/json') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/octet-stream',
      'multipart/form-data; boundary=x',
      'application/vnd.api+json',
      'APPLICATION/JSON',
      ';;;',
    ),
  },
  { weight: 1, arbitrary: headerText(60) },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

const callerAuth = (ctx: FuzzContext) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constant({ 'x-api-key': ctx.apiKey }) },
    { weight: 1, arbitrary: fc.constant({ authorization: `Api-Key ${ctx.apiKey}` }) },
    { weight: 1, arbitrary: fc.constant({ 'x-api-key': ctx.otherApiKey }) },
    { weight: 1, arbitrary: headerText(80).map((k) => ({ 'x-api-key': k })) },
    { weight: 1, arbitrary: headerText(80).map((k) => ({ authorization: k })) },
    { weight: 1, arbitrary: fc.constant({}) },
  );

const ownerAuth = (ctx: FuzzContext) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constant({ authorization: `Bearer ${ctx.ownerToken}` }) },
    { weight: 1, arbitrary: headerText(80).map((k) => ({ authorization: `Bearer ${k}` })) },
    { weight: 1, arbitrary: fc.constant({ 'x-api-key': ctx.apiKey }) },
    { weight: 1, arbitrary: fc.constant({}) },
  );

const extraHeaders = fc.dictionary(
  fc.constantFrom(
    'idempotency-key',
    'x-forwarded-proto',
    'x-forwarded-for',
    'accept',
    'x-request-id',
    'content-encoding',
    'transfer-encoding-x',
    'cookie',
  ),
  headerText(300),
  { maxKeys: 3 },
);

function fillPath(route: Route, params: Record<string, string>): string {
  return route.path.replace(/\{([A-Za-z_]+)\}/g, (_, name: string) => params[name] ?? 'x');
}

/** One request to one of the route table's routes (or a near miss of one). */
export function fuzzRequest(ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      route: fc.constantFrom(...ROUTES),
      otherMethod: fc.oneof(
        { weight: 7, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS') },
      ),
      params: fc.record({
        deployment_id: segment(ctx.known.deployment_id),
        execution_id: segment(ctx.known.execution_id),
        pipeline_id: segment(ctx.known.pipeline_id),
        run_id: segment(ctx.known.run_id),
      }),
      slash: fc.boolean(),
      query: query(ctx),
      callerAuth: callerAuth(ctx),
      ownerAuth: ownerAuth(ctx),
      contentType,
      extra: extraHeaders,
      body: body(ctx),
    })
    .map((r) => {
      const method = r.otherMethod ?? r.route.method;
      const headers: Record<string, string> = { ...r.extra, ...(r.route.auth === 'owner' ? r.ownerAuth : r.callerAuth) };
      if (r.contentType !== undefined) headers['content-type'] = r.contentType;
      const sendsBody = r.body !== undefined && method !== 'GET';
      return {
        method,
        path: `${fillPath(r.route, r.params)}${r.slash ? '/' : ''}${r.query}`,
        headers,
        ...(sendsBody ? { body: r.body } : {}),
      };
    });
}

export interface FuzzReply {
  status: number;
  body: string;
}

/** Sends it; null when the HTTP client itself refuses to (a header it cannot encode). */
export async function sendFuzz(base: string, req: FuzzRequest): Promise<FuzzReply | null> {
  let res: Response;
  try {
    res = await fetch(`${base}${req.path}`, {
      method: req.method,
      headers: req.headers,
      redirect: 'manual',
      ...(req.body !== undefined ? { body: req.body } : {}),
    });
  } catch (e) {
    // Errors from Node's fetch come from another realm under Jest: compare names, not classes.
    const { name, message } = e as { name?: string; message?: string };
    if (name === 'TypeError' && message !== 'fetch failed') return null;
    throw e;
  }
  return { status: res.status, body: await res.text() };
}

/** Tally of answers by status. */
export class StatusTally {
  readonly byStatus = new Map<number, number>();
  refused = 0;
  readonly fiveXX: { req: FuzzRequest; reply: FuzzReply }[] = [];

  add(req: FuzzRequest, reply: FuzzReply | null): void {
    if (reply === null) {
      this.refused += 1;
      return;
    }
    this.byStatus.set(reply.status, (this.byStatus.get(reply.status) ?? 0) + 1);
    if (reply.status >= 500) this.fiveXX.push({ req, reply });
  }

  total(): number {
    return [...this.byStatus.values()].reduce((a, b) => a + b, 0);
  }

  summary(): string {
    return [...this.byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}:${n}`)
      .join(' ');
  }
}

/**
 * Two live deployments (one for caller routes, one the owner routes may rotate, republish or
 * delete), a finished execution and a run: the ids and bodies the fuzz starts from.
 */
export async function prepareFuzz(rt: TestRuntime): Promise<FuzzContext> {
  const caller = await rt.publishPipeline('fuzz-caller', greeting);
  const owner = await rt.publishPipeline('fuzz-owner', greeting);
  const done = await rt.caller('POST', `/v1/deployments/${caller.deploymentId}/executions/`, caller.apiKey, {});
  await rt.waitForExecution(done.body.execution_id as string, caller.apiKey);
  const runs = await rt.owner<{ runs: { run_id: string }[] }>('GET', '/v1/pipelines/fuzz-owner/runs');
  return {
    ownerToken: rt.ownerToken,
    apiKey: caller.apiKey,
    otherApiKey: owner.apiKey,
    known: {
      deployment_id: [caller.deploymentId, owner.deploymentId],
      execution_id: [done.body.execution_id as string],
      pipeline_id: ['fuzz-owner', 'fuzz-none'],
      run_id: runs.body.runs.map((r) => r.run_id),
    },
    validBodies: [
      { workflow_input: { name: { value: 'Ada', value_type: 'RAW' } } },
      greeting,
      { inputs: { name: 'Ada' } },
      { inputs: { name: { visible: false } }, outputs: { message: { visible: true } } },
      { grace_seconds: 5, credential: 'api_key' },
    ],
  };
}
