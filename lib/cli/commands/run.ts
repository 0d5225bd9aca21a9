import { isTerminal } from '../../../functions/core/transitions';
import type { Run } from '../client';
import { pollUntil, waitOrInterrupt, type Ctx } from '../context';
import { checkPipelineId } from '../files';
import { inputTypesOf, parseInputs, splitAssignments, type RawValue } from '../inputs';
import { duration, fields, showValue } from '../output';

export interface RunOptions {
  input: string[];
  wait: boolean;
  timeout: number;
}

/** `pipegate run <pipeline> [--input k=v]… [--no-wait]` */
export async function run(ctx: Ctx, pipeline: string, opts: RunOptions): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  splitAssignments(opts.input); // syntax errors before any request
  const { out, client } = ctx;
  let inputs: Record<string, RawValue> = {};
  if (opts.input.length > 0) {
    // Text becomes a value only once the pipeline says which type each input has.
    const { body: p } = await client.getPipeline(pipeline);
    inputs = parseInputs(opts.input, inputTypesOf(p.definition));
  }
  const started = await client.startRun(pipeline, inputs);
  const { run_id: runId, version } = started.body;

  if (!opts.wait) {
    out.document(started.raw);
    out.line(`run ${out.c.bold(runId)} of ${pipeline} version ${version} is ${started.body.status}`);
    if (!out.json) out.note(out.e.dim(`follow it: pipegate runs ${pipeline}  ·  ${started.body.status_url ?? ''}`.trimEnd()));
    return 0;
  }

  // The id first (inside the wait): whatever happens to the wait, the run can be found and cancelled.
  const progress = out.spinner();
  const followUp = [
    `stopped waiting; run ${runId} keeps going on the service.`,
    `  follow it:  pipegate show ${pipeline} ${runId}`,
    `  cancel it:  pipegate cancel ${pipeline} ${runId}`,
  ].join('\n');
  let final: { body: Run; raw: unknown };
  try {
    final = await waitOrInterrupt(ctx, followUp, (signal) => {
      // Printed once Ctrl-C is ours: from here on it stops the wait, never the process mid-line.
      out.note(`run ${runId} of ${pipeline} version ${version} started`);
      return pollUntil(
        () => client.getRun(pipeline, runId),
        (r) => isTerminal(r.body.status),
        {
          sleep: ctx.sleep,
          timeoutMs: opts.timeout * 1000,
          what: `run ${runId}`,
          signal,
          onTick: (r, ms) => {
            if (!isTerminal(r.body.status)) progress.update(`${pipeline} v${version} ${r.body.status}… ${(ms / 1000).toFixed(1)} s`, r.body.status);
          },
        },
      );
    });
  } finally {
    progress.stop();
  }
  const r = final.body;
  out.document(final.raw);
  if (r.status === 'completed') {
    out.line(`${out.c.green('✔')} ${pipeline} version ${r.version} completed in ${duration(r.completion_duration ?? 0)}  ${out.c.dim(`(run ${r.run_id})`)}`);
    const outputs = Object.entries(r.outputs ?? {});
    if (outputs.length > 0) out.line(fields(outputs.map(([k, v]) => [k, showValue(v)] as const), out.c));
    if (!out.json) out.note(out.e.dim(`next: pipegate status ${pipeline}  ·  pipegate publish ${pipeline}`));
    return 0;
  }
  out.note(`${out.e.red('✖')} run ${r.run_id} of ${pipeline} version ${r.version} ${r.status}${r.error_message ? `: ${r.error_message}` : ''}`);
  return 1;
}
