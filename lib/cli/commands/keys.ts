import type { Ctx } from '../context';
import { UsageError } from '../errors';
import { checkPipelineId } from '../files';
import { fields } from '../output';

/** `pipegate keys rotate <pipeline> [--grace <seconds>] [--signing-secret | --form-link]` */
export async function rotate(
  ctx: Ctx,
  pipeline: string,
  opts: { grace?: number; signingSecret?: boolean; formLink?: boolean },
): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  if (opts.formLink) {
    if (opts.signingSecret || opts.grace !== undefined)
      throw new UsageError('--form-link takes neither --signing-secret nor --grace (the old link stops at once)');
    const { body, raw } = await ctx.client.rotate(pipeline, { credential: 'form_link' });
    ctx.out.document(raw);
    ctx.out.line(`${ctx.out.c.green('✔')} new web-form link for ${ctx.out.c.bold(pipeline)}`);
    ctx.out.line(fields([['form', ctx.out.c.bold(body.form_url ?? '')]], ctx.out.c));
    ctx.out.line(ctx.out.c.yellow('  The old link stopped working.'));
    return 0;
  }
  const credential = opts.signingSecret ? 'signing_secret' : 'api_key';
  const { body, raw } = await ctx.client.rotate(pipeline, {
    ...(opts.grace !== undefined ? { grace_seconds: opts.grace } : {}),
    ...(opts.signingSecret ? { credential } : {}),
  });
  const { out } = ctx;
  out.document(raw);
  const name = credential === 'api_key' ? 'API key' : 'signing secret';
  const value = credential === 'api_key' ? body.api_key : body.signing_secret;
  out.line(`${out.c.green('✔')} new ${name} for ${out.c.bold(pipeline)}`);
  out.line(fields([[name, out.c.bold(value ?? '')]], out.c));
  const grace = opts.grace ?? 0;
  out.line(
    out.c.yellow(
      `  Store it now: it is shown only this once. ${grace > 0 ? `The old ${name} keeps working for ${grace} s.` : `The old ${name} stopped working.`}`,
    ),
  );
  return 0;
}
