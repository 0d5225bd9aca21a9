import { requestValueType, type RequestValueType } from '../../../functions/core/values';
import { callerKey, waitUntilFinished, type Ctx } from '../context';
import { isUuid, PIPELINE_ID_PATTERN } from '../../../functions/core/ids';
import { ServiceError, UsageError } from '../errors';
import { parseInputs, splitAssignments, type InputValueType, type RawValue } from '../inputs';
import { fields, waitingLines } from '../output';
import { executionFiles, splitFileInputs } from '../asset-inputs';
import { result } from './executions';
import { followEvents } from '../follow';

export interface ExecuteOptions {
  key?: string;
  /** With --wait: download the ASSET outputs into this directory. */
  download?: string;
  force?: boolean;
  input: string[];
  callback?: string;
  wait?: boolean;
  /** Print node progress live from the event stream, then the result (implies wait). */
  follow?: boolean;
  idempotencyKey?: string;
  timeout: number;
}

/** A pipeline id given where a deployment id belongs is the common slip; say where to find the id. */
function deploymentHint(e: unknown, deploymentId: string): never {
  if (
    e instanceof ServiceError &&
    e.body.error === 'Deployment Not Found' &&
    !isUuid(deploymentId) &&
    PIPELINE_ID_PATTERN.test(deploymentId)
  ) {
    e.hint = `"${deploymentId}" looks like a pipeline id; execute takes the deployment id (a UUID), which pipegate status ${deploymentId} shows`;
  }
  throw e;
}

/** `pipegate execute <deployment> --key K [--input k=v]… [--callback URL] [--wait] [--idempotency-key K]` */
export async function execute(ctx: Ctx, deploymentId: string, opts: ExecuteOptions): Promise<number> {
  try {
    return await executeOnce(ctx, deploymentId, opts);
  } catch (e) {
    return deploymentHint(e, deploymentId);
  }
}

async function executeOnce(ctx: Ctx, deploymentId: string, opts: ExecuteOptions): Promise<number> {
  const key = callerKey(ctx, opts.key);
  if (key === undefined) {
    throw new UsageError(
      "execute needs the deployment's API key",
      'pass --key <api key> or set PIPEGATE_API_KEY (publish printed it once)',
    );
  }
  splitAssignments(opts.input); // syntax errors before any request
  const { out, client } = ctx;
  const body: { workflow_input?: Record<string, { value: RawValue; value_type: RequestValueType }>; callback?: string } = {};
  if (opts.callback !== undefined) body.callback = opts.callback;
  if (opts.input.length > 0) {
    // The caller's contract holds the visible inputs and their types; hidden ones cannot be set.
    const { body: contract } = await client.contract(deploymentId, key);
    const types = new Map<string, InputValueType>(contract.inputs.map((i) => [i.id, i.value_type]));
    const { files, texts } = splitFileInputs(opts.input, types, ctx.io.cwd);
    const values = parseInputs(texts, types);
    const workflowInput: Record<string, { value: RawValue; value_type: RequestValueType }> = Object.fromEntries(
      Object.entries(values).map(([id, value]) => [id, { value, value_type: requestValueType(types.get(id) ?? 'string') }]),
    );
    body.workflow_input = workflowInput;
    if (files.length > 0) {
      // The request as it would be with every file's value empty: what the files' values add to.
      const empty = Object.fromEntries(files.map((f) => [f.input, { value: '', value_type: 'ASSET' as const }]));
      const otherChars = Buffer.byteLength(JSON.stringify({ ...body, workflow_input: { ...workflowInput, ...empty } }), 'utf8');
      const fileValues = await executionFiles(ctx, deploymentId, key, files, otherChars);
      for (const [id, value] of Object.entries(fileValues)) workflowInput[id] = { value, value_type: 'ASSET' };
    }
  }

  const accepted = await client.execute(deploymentId, key, body, opts.idempotencyKey);
  const executionId = accepted.body.execution_id;
  if (!opts.wait && !opts.follow) {
    out.document(accepted.raw);
    out.line(`execution ${out.c.bold(executionId)} ${accepted.body.status}`);
    out.line(
      fields(
        [
          ['status', accepted.body.status_url],
          ['result', accepted.body.result_url],
        ],
        out.c,
      ),
    );
    return 0;
  }

  const followUp = [
    `stopped waiting; execution ${executionId} keeps going on the service.`,
    `  its result:  pipegate result ${executionId} --key <api key>`,
    `  cancel it:   pipegate cancel ${executionId} --key <api key>`,
  ].join('\n');
  const downloads = opts.download !== undefined ? { download: opts.download, force: opts.force === true } : {};
  if (opts.follow) {
    out.note(`execution ${executionId} ${accepted.body.status}`);
    await followEvents(ctx, {
      what: `execution ${executionId}`,
      open: (last, signal) => client.executionEvents(executionId, key, last, signal),
      later: `pipegate result ${executionId}`,
      timeoutSeconds: opts.timeout,
      followUp,
    });
    return result(ctx, executionId, { key, ...downloads });
  }
  const told = new Set<string>();
  await waitUntilFinished(ctx, {
    started: `execution ${executionId} ${accepted.body.status}`,
    followUp,
    what: `execution ${executionId}`,
    timeoutSeconds: opts.timeout,
    poll: async () => {
      const r = await client.executionStatus(executionId, key);
      // An execution that waits for the caller's event says once where to send it (the wait goes on).
      const waiting = (r.body.waiting ?? []).filter((w) => !told.has(w.node_id));
      for (const w of waiting) told.add(w.node_id);
      if (waiting.length > 0 && !out.json) out.note(waitingLines(waiting, out.e).join('\n'));
      return r;
    },
    progress: (status, ms) => `execution ${status}… ${(ms / 1000).toFixed(1)} s`,
  });
  return result(ctx, executionId, { key, ...downloads });
}
