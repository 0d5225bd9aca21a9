import type { Ctx } from '../context';
import { checkPipelineId } from '../files';
import { duration, table } from '../output';

const when = (iso: string | null | undefined): string => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '');

/** `pipegate list` */
export async function list(ctx: Ctx): Promise<number> {
  const { body, raw } = await ctx.client.listPipelines();
  const { out } = ctx;
  out.document(raw);
  if (out.json) return 0;
  if (body.pipelines.length === 0) {
    out.line('No pipelines yet.');
    out.note(out.e.dim('push one: pipegate push examples/greeting.json'));
    return 0;
  }
  const showDeployed = body.pipelines.some((p) => p.deployment_id !== undefined);
  const headers = ['PIPELINE', 'VERSION', ...(showDeployed ? ['PUBLISHED'] : []), 'UPDATED', 'DESCRIPTION'];
  const rows = body.pipelines.map((p) => [
    p.pipeline_id,
    String(p.version),
    ...(showDeployed ? [p.deployment_id ? 'yes' : 'no'] : []),
    when(p.updated_at),
    p.description ?? '',
  ]);
  out.line(table(headers, rows, out.c));
  return 0;
}

/** `pipegate runs <pipeline> [--limit n]` */
export async function runs(ctx: Ctx, pipeline: string, opts: { limit?: number }): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const { body, raw } = await ctx.client.listRuns(pipeline, opts.limit !== undefined ? { limit: opts.limit } : {});
  const { out } = ctx;
  out.document(raw);
  if (out.json) return 0;
  if (body.runs.length === 0) {
    out.line(`${pipeline} has no runs yet.`);
    out.note(out.e.dim(`start one: pipegate run ${pipeline}`));
    return 0;
  }
  const paint = (s: string) => (s === 'completed' ? out.c.green(s) : s === 'failed' || s === 'cancelled' ? out.c.red(s) : out.c.yellow(s));
  out.line(
    table(
      ['RUN', 'VERSION', 'STATUS', 'CREATED', 'DURATION', 'ERROR'],
      body.runs.map((r) => [
        r.run_id,
        String(r.version),
        paint(r.status),
        when(r.created_at),
        duration(r.completion_duration),
        r.error_message ?? '',
      ]),
      out.c,
    ),
  );
  if (body.next_cursor) out.note(out.e.dim(`more runs exist; showing the newest ${body.runs.length}`));
  return 0;
}
