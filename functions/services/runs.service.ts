/** An owner's runs of a pipeline (contract §3): start one (and wait for it), list them, read one; the pipeline's run pointers kept up to date. */
import * as v from 'valibot';
import { DEFINITION_ASSET_MAX_BYTES, isUploadValue, parseAssetValue, PIPELINE_UPLOADS_ROUTE, type AssetValueForm } from '../core/assets';
import { restrictionsOf } from '../core/contract';
import { AppError } from '../core/errors';
import { RunRequest } from '../core/shapes';
import { isTerminal } from '../core/transitions';
import { referenceProblem, valueTypeProblem } from '../core/values';
import { InvalidCursorError, type ObjectRef } from '../core/ports';
import type { ContractInput, Execution, PipelineDefinition, PipelineMeta, RawValue } from '../core/types';
import { runBody, runListBody, waitsOf, waitsOnReader } from '../core/views';
import { ownerWaitingField } from './resume.service';
import type { Deps } from '../adapters/deps';
import { checkAssets, storeAssets } from './asset-inputs.service';
import { POLL_HINT_SECONDS, preferenceApplied } from '../core/prefer';
import { enqueueNew } from './enqueue';
import { versionWorkflow } from './workflow-choice';
import { awaitTerminal, NO_WAIT, type Wait } from './caller.service';
import { outputLinks } from './output-links';
import { pipelineMeta } from './pipelines.service';
import { ownerRequestBody as parseJson } from '../core/json-body';

const RECENT_RUNS = 5;

/**
 * The pipeline's run pointers are written just after a run's terminal status, so an owner who
 * saw the run finish may read them a moment too early. Readers that decide on them (readiness,
 * publish) first bring them up to date from the newest runs themselves: the records are the
 * truth, the pointers a summary. Returns the newest run, if any.
 */
export async function syncRunPointers(d: Deps, id: string, m: PipelineMeta): Promise<{ meta: PipelineMeta; latest: Execution | null }> {
  const recent = await d.executionLists.listRuns(id, { limit: RECENT_RUNS });
  const known = m.latest_finished ? `${m.latest_finished.created_at}#${m.latest_finished.run_id}` : '';
  let changed = false;
  let latest: Execution | null = null;
  for (const r of recent.runs) {
    if (`${r.created_at}#${r.execution_id}` <= known) break;
    const fresh = await d.executions.get(r.execution_id, d.clock.now(), true);
    latest ??= fresh;
    if (fresh && isTerminal(fresh.status)) {
      await d.pipelines.recordRunFinished(id, {
        run_id: fresh.execution_id,
        status: fresh.status,
        version: fresh.version,
        created_at: fresh.created_at,
      });
      changed = true;
      break;
    }
  }
  latest ??= recent.runs[0] ?? null;
  return { meta: changed ? ((await d.pipelines.getMeta(id, true)) ?? m) : m, latest };
}

/** Checks a run's input overrides against the version's input nodes; every problem listed. */
function runInputs(def: PipelineDefinition, given: Record<string, RawValue>, allowPrivate: boolean): Record<string, RawValue> {
  const problems: { path: string; reason: string }[] = [];
  const values: Record<string, RawValue> = {};
  for (const [id, node] of Object.entries(def.nodes)) if (node.type === 'input') values[id] = node.value;
  for (const [id, value] of Object.entries(given)) {
    const node = def.nodes[id];
    if (!node || node.type !== 'input') {
      const known = Object.entries(def.nodes)
        .filter(([, n]) => n.type === 'input')
        .map(([k]) => k);
      problems.push({
        path: `inputs.${id}`,
        reason: `no input node with this id; ${known.length ? `the inputs are: ${known.join(', ')}` : 'this pipeline has no input nodes'}`,
      });
      continue;
    }
    const wrong =
      node.value_type === 'reference'
        ? referenceProblem(value, { allowPrivate })
        : node.value_type === 'asset'
          ? runAssetProblem(value)
          : valueTypeProblem(node.value_type, value);
    if (wrong !== null) problems.push({ path: `inputs.${id}`, reason: wrong });
    else values[id] = value;
  }
  if (problems.length) throw new AppError('InvalidRequest', problems);
  return values;
}

/** A run's asset value: a definition's (a small data URI), or an upload the pipeline's owner made. */
function runAssetProblem(value: RawValue): string | null {
  if (isUploadValue(value) || valueTypeProblem('asset', value) === null) return null;
  return `must be a base64 data URI (data:<media type>;base64,...) of at most ${DEFINITION_ASSET_MAX_BYTES} bytes decoded, or an upload's value "upload:<id>" from ${PIPELINE_UPLOADS_ROUTE} (its type is asset)`;
}

/** Splits a run's values: asset inputs (data URIs, uploads) are checked against their nodes and stored or claimed; the rest stay values. */
async function runAssets(
  d: Deps,
  def: PipelineDefinition,
  values: Record<string, RawValue>,
  where: Pick<Execution, 'kind' | 'deployment_id' | 'pipeline_id' | 'execution_id'>,
  now: Date,
): Promise<{ inputs: Record<string, RawValue>; assets: Record<string, ObjectRef> | null }> {
  const inputs: Record<string, RawValue> = {};
  const forms: Record<string, AssetValueForm> = {};
  const assetInputs: ContractInput[] = [];
  for (const [id, value] of Object.entries(values)) {
    const node = def.nodes[id];
    if (node?.type === 'input' && node.value_type === 'asset' && typeof value === 'string') {
      const parsed = parseAssetValue(value);
      if (!parsed.ok) throw new AppError('InvalidRequest', [{ path: `inputs.${id}`, reason: parsed.reason }]);
      forms[id] = parsed.form;
      assetInputs.push({ id, value_type: 'asset', value, visible: true, ...restrictionsOf(node) });
    } else {
      inputs[id] = value;
    }
  }
  if (assetInputs.length === 0) return { inputs, assets: null };
  try {
    const checked = await checkAssets(d, { kind: 'pipeline', pipeline_id: where.pipeline_id }, assetInputs, forms, now);
    // Claiming an upload can still refuse (used by another run since the check).
    return { inputs, assets: await storeAssets(d, where, checked, now) };
  } catch (e) {
    if (e instanceof AppError && e.code === 'InvalidInput')
      throw new AppError('InvalidRequest', [{ path: 'inputs', reason: String(e.detail) }]);
    throw e;
  }
}

/**
 * A caller's value object ({"value": …, "value_type": "RAW"}) where a run takes the bare value
 * is an easy slip between the two APIs; say which shape a run wants.
 */
function valueObjectProblems(request: unknown): { path: string; reason: string }[] {
  if (typeof request !== 'object' || request === null) return [];
  const inputs = (request as { inputs?: unknown }).inputs;
  if (typeof inputs !== 'object' || inputs === null || Array.isArray(inputs)) return [];
  return Object.entries(inputs)
    .filter(([, x]) => typeof x === 'object' && x !== null && !Array.isArray(x) && 'value' in x)
    .map(([id]) => ({
      path: `inputs.${id}`,
      reason: `a run takes the bare value ({"inputs": {"${id}": <value>}}), not a caller's value object ({"value": …, "value_type": "RAW"})`,
    }));
}

export async function startRun(d: Deps, id: string, body: string | null, baseUrl: string) {
  const m = await pipelineMeta(d, id);
  const given = parseJson(body);
  const request = given === undefined ? {} : given;
  const shapeProblems = valueObjectProblems(request);
  if (shapeProblems.length) throw new AppError('InvalidRequest', shapeProblems);
  const parsed = v.safeParse(RunRequest, request);
  if (!parsed.success) {
    throw new AppError(
      'InvalidRequest',
      parsed.issues.map((i) => ({ path: v.getDotPath(i) ?? '(body)', reason: i.message })),
    );
  }
  const version = await d.pipelines.getVersion(id, m.version);
  if (!version) throw new Error(`pipeline ${id} points at missing version ${m.version}`);
  const allInputs = runInputs(version.definition, parsed.output.inputs ?? {}, d.config.allowPrivateUrls);
  const now = d.clock.now().toISOString();
  const runId = d.ids.uuid();
  // Asset inputs are stored (data URIs) or claimed (uploads) like a caller's: the record keeps their references.
  const { inputs, assets } = await runAssets(
    d,
    version.definition,
    allInputs,
    { kind: 'run', deployment_id: null, pipeline_id: id, execution_id: runId },
    d.clock.now(),
  );
  const run: Execution = {
    execution_id: runId,
    kind: 'run',
    pipeline_id: id,
    version: m.version,
    deployment_id: null,
    status: 'pending',
    inputs,
    ...(assets === null ? {} : { assets }),
    outputs: null,
    // Where the links its nodes are handed point (tasks.service.ts nodeLink).
    base_url: baseUrl,
    visible_outputs: null,
    callback: null,
    callback_delivery: null,
    error_message: null,
    created_at: now,
    started_at: null,
    completed_at: null,
    expires_at: null,
    workflow: versionWorkflow(version),
  };
  await d.executions.create(run);
  await enqueueNew(d, run);
  return {
    run_id: run.execution_id,
    version: run.version,
    status: run.status,
    status_url: `${baseUrl}/v1/pipelines/${id}/runs/${run.execution_id}`,
  };
}

/**
 * POST runs: 202 once queued. With a wait (`Prefer: wait=N`), a run that finishes within it is
 * answered 200 with the run as GET …/runs/{run_id} shows it (Location still names that URL), so a script can publish next
 * without polling; one still going when the wait runs out gets the usual 202.
 */
export async function startRunWaiting(d: Deps, id: string, body: string | null, baseUrl: string, wait: Wait = NO_WAIT) {
  const accepted = await startRun(d, id, body, baseUrl);
  const location = { location: accepted.status_url };
  if (wait.seconds <= 0) return { status: 202, body: accepted, headers: location };
  const runId = accepted.run_id;
  const first = async (): Promise<Execution> => {
    const e = await d.executions.get(runId, d.clock.now(), true);
    if (!e) throw new Error(`run ${runId} vanished after it was created`);
    return e;
  };
  // The owner may resume every wait node: a run that waits on one is answered at once.
  const { e, waited } = await awaitTerminal(d, runId, first, wait, undefined, (r) => waitsOnReader(waitsOf(r)));
  const headers = { ...location, ...preferenceApplied(waited) };
  if (!isTerminal(e.status))
    return {
      status: 202,
      body: { ...accepted, ...(await ownerWaitingField(d, e, baseUrl)) },
      headers: { ...headers, 'retry-after': String(POLL_HINT_SECONDS) },
    };
  return { status: 200, body: runBody(e, await outputLinks(d, e, baseUrl, null)), headers };
}

export async function listRuns(d: Deps, id: string, limitText: string | undefined, cursor: string | undefined, baseUrl?: string) {
  await pipelineMeta(d, id);
  const limit = limitText === undefined ? 20 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw new AppError('InvalidRequest', [{ path: 'limit', reason: 'must be a whole number from 1 to 100' }]);
  }
  try {
    const page = await d.executionLists.listRuns(id, { limit, cursor });
    const runs = await Promise.all(
      page.runs.map(async (r) => runListBody(r, baseUrl === undefined ? {} : await outputLinks(d, r, baseUrl, null))),
    );
    return { runs, next_cursor: page.next };
  } catch (e) {
    if (e instanceof InvalidCursorError)
      throw new AppError('InvalidRequest', [{ path: 'cursor', reason: 'is not a cursor this list returned' }]);
    throw e;
  }
}

/** One run; with a wait (`Prefer: wait=N`), as soon as it has finished or when the wait runs out. */
export async function getRun(d: Deps, id: string, runId: string, wait: Wait = NO_WAIT, baseUrl?: string) {
  const read = async (): Promise<Execution> => {
    const e = await d.executions.get(runId, d.clock.now());
    if (!e || e.kind !== 'run' || e.pipeline_id !== id) throw new AppError('RunNotFound');
    return e;
  };
  const { e, waited } = await awaitTerminal(d, runId, read, wait, undefined, (r) => waitsOnReader(waitsOf(r)));
  const headers = { ...preferenceApplied(waited), ...(isTerminal(e.status) ? {} : { 'retry-after': String(POLL_HINT_SECONDS) }) };
  return {
    body: {
      ...runBody(e, baseUrl === undefined ? {} : await outputLinks(d, e, baseUrl, null)),
      ...(await ownerWaitingField(d, e, baseUrl)),
    },
    headers,
  };
}
