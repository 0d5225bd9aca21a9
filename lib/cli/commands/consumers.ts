/**
 * `pipegate consumers create|list|update|revoke|rotate`: a deployment's consumers, each with its
 * own API key (shown once), rate limit, quota and expiry.
 */
import type { Consumer, ConsumerFields } from '../client';
import type { Ctx } from '../context';
import { UsageError } from '../errors';
import { checkPipelineId } from '../files';
import { fields, table } from '../output';

export interface ConsumerOptions {
  name?: string;
  /** `<requests>/<seconds>`, or `none`. */
  rate?: string;
  /** `<executions>/<day|month>`, or `none`. */
  quota?: string;
  /** An ISO 8601 time, or `none`. */
  expires?: string;
  /** `key=value`, repeated. */
  meta?: string[];
}

const WHOLE = /^[1-9]\d*$/;

/** The request body the options describe; a malformed option is a usage error naming it. */
export function consumerFields(o: ConsumerOptions): ConsumerFields {
  const out: ConsumerFields = {};
  if (o.name !== undefined) out.name = o.name;
  if (o.rate !== undefined) {
    const [requests = '', per = ''] = o.rate.split('/');
    if (o.rate === 'none') out.rate_limit = null;
    else if (WHOLE.test(requests) && WHOLE.test(per)) out.rate_limit = { requests: Number(requests), per_seconds: Number(per) };
    else throw new UsageError(`--rate ${o.rate}: expected <requests>/<seconds> (e.g. 1/1 or 100/60), or none`);
  }
  if (o.quota !== undefined) {
    const [executions = '', per = ''] = o.quota.split('/');
    if (o.quota === 'none') out.quota = null;
    else if (WHOLE.test(executions) && (per === 'day' || per === 'month')) out.quota = { executions: Number(executions), per };
    else throw new UsageError(`--quota ${o.quota}: expected <executions>/day or <executions>/month (e.g. 10/day), or none`);
  }
  if (o.expires !== undefined) out.expires_at = o.expires === 'none' ? null : o.expires;
  if (o.meta !== undefined) {
    out.metadata = {};
    for (const pair of o.meta) {
      const at = pair.indexOf('=');
      if (at <= 0) throw new UsageError(`--meta ${pair}: expected key=value`);
      out.metadata[pair.slice(0, at)] = pair.slice(at + 1);
    }
  }
  return out;
}

const limits = (c: Pick<Consumer, 'rate_limit' | 'quota'>): [string, string] => [
  c.rate_limit ? `${c.rate_limit.requests}/${c.rate_limit.per_seconds}s` : '—',
  c.quota ? `${c.quota.executions}/${c.quota.per}` : '—',
];

export async function create(ctx: Ctx, pipeline: string, o: ConsumerOptions): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  if (o.name === undefined) throw new UsageError('--name is required');
  const { body, raw } = await ctx.client.createConsumer(pipeline, consumerFields(o));
  const { out } = ctx;
  out.document(raw);
  const [rate, quota] = limits(body);
  out.line(`${out.c.green('✔')} consumer ${out.c.bold(body.name)} of ${out.c.bold(pipeline)}`);
  out.line(
    fields(
      [
        ['consumer', body.consumer_id],
        ['API key', out.c.bold(body.api_key)],
        ['rate', rate],
        ['quota', quota],
        ['expires', body.expires_at ?? 'never'],
      ],
      out.c,
    ),
  );
  out.line(out.c.yellow('  Store the key now: it is shown only this once.'));
  return 0;
}

export async function list(ctx: Ctx, pipeline: string): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const { body, raw } = await ctx.client.listConsumers(pipeline);
  const { out } = ctx;
  out.document(raw);
  if (out.json) return 0;
  if (body.consumers.length === 0) {
    out.line(`no consumers yet: pipegate consumers create ${pipeline} --name <name>`);
    return 0;
  }
  out.line(
    table(
      ['CONSUMER', 'NAME', 'STATUS', 'KEY', 'RATE', 'QUOTA', 'EXPIRES', 'LAST USED'],
      body.consumers.map((c) => [c.consumer_id, c.name, c.status, c.key_prefix, ...limits(c), c.expires_at ?? '—', c.last_used_at ?? '—']),
      out.c,
    ),
  );
  return 0;
}

export async function update(ctx: Ctx, pipeline: string, consumerId: string, o: ConsumerOptions): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const changes = consumerFields(o);
  if (Object.keys(changes).length === 0) throw new UsageError('nothing to change: give --name, --rate, --quota, --expires or --meta');
  const { body, raw } = await ctx.client.updateConsumer(pipeline, consumerId, changes);
  const { out } = ctx;
  out.document(raw);
  const [rate, quota] = limits(body);
  out.line(
    `${out.c.green('✔')} consumer ${out.c.bold(body.name)} updated: rate ${rate}, quota ${quota}, expires ${body.expires_at ?? 'never'}`,
  );
  return 0;
}

export async function revoke(ctx: Ctx, pipeline: string, consumerId: string): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const { raw } = await ctx.client.revokeConsumer(pipeline, consumerId);
  const { out } = ctx;
  out.document(raw ?? { consumer_id: consumerId, status: 'revoked' });
  out.line(`${out.c.green('✔')} consumer ${out.c.bold(consumerId)} revoked: its key is refused from now on`);
  return 0;
}

export async function rotate(ctx: Ctx, pipeline: string, consumerId: string, o: { grace?: number }): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const { body, raw } = await ctx.client.rotateConsumerKey(pipeline, consumerId, o.grace !== undefined ? { grace_seconds: o.grace } : {});
  const { out } = ctx;
  out.document(raw);
  out.line(`${out.c.green('✔')} new API key for consumer ${out.c.bold(consumerId)}`);
  out.line(fields([['API key', out.c.bold(body.api_key)]], out.c));
  const grace = o.grace ?? 0;
  out.line(
    out.c.yellow(
      `  Store it now: it is shown only this once. ${grace > 0 ? `The old key keeps working for ${grace} s.` : 'The old key stopped working.'}`,
    ),
  );
  return 0;
}

/** `pipegate keys limits <pipeline> [--rate R/S] [--quota N/period]`: the deployment key's own limits. */
export async function keyLimits(ctx: Ctx, pipeline: string, o: Pick<ConsumerOptions, 'rate' | 'quota'>): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const { rate_limit, quota } = consumerFields(o);
  const { body, raw } = await ctx.client.setKeyLimits(pipeline, { rate_limit: rate_limit ?? null, quota: quota ?? null });
  const { out } = ctx;
  out.document(raw);
  const [r, q] = limits(body);
  out.line(`${out.c.green('✔')} the deployment key of ${out.c.bold(pipeline)}: rate ${r}, quota ${q}`);
  return 0;
}
