import type { Ctx } from '../context';
import { loadPipelineFile } from '../files';

/** `pipegate push <file> [--id <pipeline>]` */
export async function push(ctx: Ctx, file: string, opts: { id?: string }): Promise<number> {
  const loaded = loadPipelineFile(file, { cwd: ctx.io.cwd, ...(opts.id !== undefined ? { id: opts.id } : {}) });
  const { body, raw } = await ctx.client.push(loaded.id, loaded.definition);
  const { out } = ctx;
  out.document(raw);
  if (body.created) out.line(`${out.c.green('✔')} pushed ${out.c.bold(body.pipeline_id)} version ${body.version}`);
  else out.line(`${out.c.green('✔')} ${out.c.bold(body.pipeline_id)} is unchanged at version ${body.version}`);
  // Which state machine its executions run on, and why (a wait or a long time-out means Standard).
  if (body.workflow !== undefined) {
    const machine = body.workflow === 'standard' ? 'Standard' : 'Express';
    out.note(out.e.dim(`runs on ${machine}${body.workflow_reason === undefined ? '' : `: ${body.workflow_reason}`}`));
  }
  for (const w of body.warnings ?? []) out.note(out.e.yellow(`warning: ${w.path}: ${w.reason}`));
  if (!out.json) out.note(out.e.dim(`next: pipegate run ${body.pipeline_id}`));
  return 0;
}
