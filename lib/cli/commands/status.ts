import type { Readiness } from '../client';
import type { Ctx } from '../context';
import { checkPipelineId } from '../files';
import { fields, literal, plural, type Colors } from '../output';

const STATE_TEXT: Record<Readiness['state'], string> = {
  run_required: 'run required',
  not_published: 'not published',
  live: 'live',
  needs_publish: 'needs publish',
};

/** What the owner should do next, given where the pipeline stands. */
export function nextStep(r: Readiness): string {
  const id = r.pipeline_id;
  const latestFailed = r.latest_run !== null && (r.latest_run.status === 'failed' || r.latest_run.status === 'cancelled');
  switch (r.state) {
    case 'run_required':
      return latestFailed
        ? `the latest run ${r.latest_run?.status}; fix the pipeline (pipegate push <file>) and run it until a run succeeds: pipegate run ${id}`
        : r.latest_run !== null
          ? `wait for the run under way to succeed (pipegate runs ${id}), then publish: pipegate publish ${id}`
          : `run it until a run succeeds: pipegate run ${id}`;
    case 'not_published':
      return r.publishable ? `publish it: pipegate publish ${id}` : `the latest run did not succeed; run it again: pipegate run ${id}`;
    case 'live':
      return `callers can execute it: pipegate execute ${r.deployment?.deployment_id ?? '<deployment>'} --key <api key>`;
    case 'needs_publish':
      return r.publishable
        ? `version ${r.latest_run?.version ?? '?'} ran successfully but version ${r.deployment?.version ?? '?'} is live; publish to update: pipegate publish ${id}`
        : `the latest run did not succeed; callers keep the live version ${r.deployment?.version ?? '?'} until a run succeeds and you publish`;
  }
}

export function renderReadiness(r: Readiness, c: Colors): string {
  const stateColor = r.state === 'live' ? c.green : r.state === 'needs_publish' ? c.yellow : c.cyan;
  const rows: [string, string][] = [['state', stateColor(STATE_TEXT[r.state])]];
  rows.push([
    'latest run',
    r.latest_run ? `${r.latest_run.status} · version ${r.latest_run.version} · ${r.latest_run.run_id}` : 'none yet',
  ]);
  if (r.counts) rows.push(['contract', `${plural(r.counts.inputs, 'input')}, ${plural(r.counts.outputs, 'output')}`]);
  rows.push(['publishable', r.publishable ? 'yes' : 'no']);
  if (r.deployment) {
    const d = r.deployment;
    rows.push(['deployment', d.deployment_id]);
    rows.push(['live version', `${d.version} (published ${d.published_at})`]);
    rows.push(['execute URL', d.execute_url]);
    if (d.form_url) rows.push(['form', d.form_url]);
    const inputs = d.inputs.map((i) => `${i.id}: ${i.value_type} = ${literal(i.value)}${i.visible ? '' : ' (hidden)'}`);
    const outputs = d.outputs.map((o) => `${o.id}${o.visible ? '' : ' (hidden)'}`);
    rows.push(['inputs', inputs.join(', ') || '(none)']);
    rows.push(['outputs', outputs.join(', ') || '(none)']);
  } else if (r.discovered) {
    rows.push(['inputs', r.discovered.inputs.map((i) => `${i.id}: ${i.value_type} = ${literal(i.value)}`).join(', ') || '(none)']);
    rows.push(['outputs', r.discovered.outputs.map((o) => o.id).join(', ') || '(none)']);
  }
  return [c.bold(r.pipeline_id), fields(rows, c), '', `${c.dim('next:')} ${nextStep(r)}`].join('\n');
}

/** `pipegate status <pipeline>` */
export async function status(ctx: Ctx, pipeline: string): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const { body, raw } = await ctx.client.readiness(pipeline);
  ctx.out.document(raw);
  ctx.out.line(renderReadiness(body, ctx.out.c));
  return 0;
}
