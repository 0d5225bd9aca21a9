import { runFiles, splitFileInputs } from '../asset-inputs';
import { waitUntilFinished, type Ctx } from '../context';
import { followEvents } from '../follow';
import { checkPipelineId } from '../files';
import { inputTypesOf, parseInputs, splitAssignments, type RawValue } from '../inputs';
import { duration, expiredValuesLine, fields, showValue, waitingLines } from '../output';

export interface RunOptions {
  input: string[];
  wait: boolean;
  /** Print node progress live from the run's event stream (implies wait). */
  follow?: boolean;
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
    const types = inputTypesOf(p.definition);
    const { files, texts } = splitFileInputs(opts.input, types, ctx.io.cwd);
    inputs = parseInputs(texts, types);
    if (files.length > 0) {
      // The request with every file's value empty: what the inline files' data URIs add to.
      const otherChars = Buffer.byteLength(
        JSON.stringify({ inputs: { ...inputs, ...Object.fromEntries(files.map((f) => [f.input, ''])) } }),
        'utf8',
      );
      Object.assign(inputs, await runFiles(ctx, pipeline, files, otherChars));
    }
  }
  const started = await client.startRun(pipeline, inputs);
  const { run_id: runId, version } = started.body;

  if (!opts.wait && !opts.follow) {
    out.document(started.raw);
    out.line(`run ${out.c.bold(runId)} of ${pipeline} version ${version} is ${started.body.status}`);
    if (!out.json) out.note(out.e.dim(`follow it: pipegate runs ${pipeline}  ·  ${started.body.status_url ?? ''}`.trimEnd()));
    return 0;
  }

  const followUp = [
    `stopped waiting; run ${runId} keeps going on the service.`,
    `  follow it:  pipegate show ${pipeline} ${runId}`,
    `  cancel it:  pipegate cancel ${pipeline} ${runId}`,
  ].join('\n');
  if (opts.follow) {
    out.note(`run ${runId} of ${pipeline} version ${version} started`);
    await followEvents(ctx, {
      what: `run ${runId}`,
      open: (last, signal) => client.runEvents(pipeline, runId, last, signal),
      later: `pipegate show ${pipeline} ${runId}`,
      timeoutSeconds: opts.timeout,
      followUp,
    });
  }
  const told = new Set<string>();
  const final = await waitUntilFinished(ctx, {
    started: `run ${runId} of ${pipeline} version ${version} started`,
    followUp,
    what: `run ${runId}`,
    timeoutSeconds: opts.timeout,
    poll: async () => {
      const r = await client.getRun(pipeline, runId);
      // A run that waits for an event says once where to send it (it goes on waiting meanwhile).
      const waiting = (r.body.waiting ?? []).filter((w) => !told.has(w.node_id));
      for (const w of waiting) told.add(w.node_id);
      if (waiting.length > 0 && !out.json) out.note(waitingLines(waiting, out.e).join('\n'));
      return r;
    },
    progress: (status, ms) => `${pipeline} v${version} ${status}… ${(ms / 1000).toFixed(1)} s`,
  });
  const r = final.body;
  out.document(final.raw);
  if (r.status === 'completed') {
    out.line(
      `${out.c.green('✔')} ${pipeline} version ${r.version} completed in ${duration(r.completion_duration ?? 0)}  ${out.c.dim(`(run ${r.run_id})`)}`,
    );
    const outputs = Object.entries(r.outputs ?? {});
    if (outputs.length > 0)
      out.line(
        fields(
          outputs.map(([k, v]) => [k, showValue(v)] as const),
          out.c,
        ),
      );
    const expired = expiredValuesLine(r.values_expired);
    if (expired) out.line(out.c.yellow(expired));
    if (!out.json) out.note(out.e.dim(`next: pipegate status ${pipeline}  ·  pipegate publish ${pipeline}`));
    return 0;
  }
  out.note(
    `${out.e.red('✖')} run ${r.run_id} of ${pipeline} version ${r.version} ${r.status}${r.error_message ? `: ${r.error_message}` : ''}`,
  );
  return 1;
}
