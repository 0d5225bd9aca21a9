/** The owner API's use cases (contract §3 and §7). */
import { randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { generateApiKey, generateSigningSecret, hashApiKey, sealSecret } from '../core/api-key';
import { DEFINITION_ASSET_MAX_BYTES, isUploadValue, parseAssetValue, PIPELINE_UPLOADS_ROUTE, type AssetValueForm } from '../core/assets';
import {
  applyVisibility,
  assertPublishable,
  discoverContract,
  formView,
  readiness as readinessView,
  requestedSettings,
  restrictionsOf,
  type FormRequest,
} from '../core/contract';
import { FORM_SALT_BYTES, formToken, formTokenHash, formUrl } from '../core/form-link';
import { AppError } from '../core/errors';
import { PIPELINE_ID_PATTERN } from '../core/ids';
import { RotateRequest, RunRequest } from '../core/shapes';
import { isTerminal } from '../core/transitions';
import { referenceProblem, valueTypeProblem } from '../core/values';
import { InvalidCursorError, type ObjectRef } from '../core/ports';
import type {
  Contract,
  ContractInput,
  DeploymentRecord,
  Execution,
  FormSettings,
  KeyHash,
  PipelineDefinition,
  PipelineMeta,
  RawValue,
  RunPointer,
} from '../core/types';
import { executeUrl, mcpUrl, runBody, runListBody } from '../core/views';
import { ownerRequestBody as parseJson } from '../core/json-body';
import type { Deps } from '../adapters/deps';
import { epochSeconds } from '../core/time';
import { deploymentPrefix } from '../core/object-keys';
import { errorFields } from '../adapters/logger';
import { checkAssets, storeAssets } from './asset-inputs.service';
import { POLL_HINT_SECONDS, preferenceApplied } from '../core/prefer';
import { enqueueNew } from './enqueue';
import { awaitTerminal, NO_WAIT, type Wait } from './caller.service';
import { outputLinks } from './output-links';

async function meta(d: Deps, id: string): Promise<PipelineMeta> {
  if (!PIPELINE_ID_PATTERN.test(id)) throw new AppError('PipelineNotFound');
  const m = await d.pipelines.getMeta(id, true);
  if (!m) throw new AppError('PipelineNotFound');
  return m;
}

const RECENT_RUNS = 5;

/**
 * The pipeline's run pointers are written just after a run's terminal status, so an owner who
 * saw the run finish may read them a moment too early. Readers that decide on them (readiness,
 * publish) first bring them up to date from the newest runs themselves: the records are the
 * truth, the pointers a summary. Returns the newest run, if any.
 */
async function syncRunPointers(d: Deps, id: string, m: PipelineMeta): Promise<{ meta: PipelineMeta; latest: Execution | null }> {
  const recent = await d.executions.listRuns(id, { limit: RECENT_RUNS });
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

export async function list(d: Deps) {
  const pipelines = await d.pipelines.list();
  return { pipelines: pipelines.sort((a, b) => a.pipeline_id.localeCompare(b.pipeline_id)) };
}

export async function get(d: Deps, id: string) {
  const m = await meta(d, id);
  const version = await d.pipelines.getVersion(id, m.version);
  if (!version) throw new Error(`pipeline ${id} points at missing version ${m.version}`);
  return {
    pipeline_id: id,
    version: m.version,
    description: m.description,
    definition: version.definition,
    deployment_id: m.deployment_id,
    created_at: m.created_at,
    updated_at: m.updated_at,
  };
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
  const m = await meta(d, id);
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
  };
  await d.executions.create(run);
  await enqueueNew(d, run.execution_id);
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
  const { e, waited } = await awaitTerminal(d, runId, first, wait);
  const headers = { ...location, ...preferenceApplied(waited) };
  if (!isTerminal(e.status)) return { status: 202, body: accepted, headers: { ...headers, 'retry-after': String(POLL_HINT_SECONDS) } };
  return { status: 200, body: runBody(e, await outputLinks(d, e, baseUrl, null)), headers };
}

export async function listRuns(d: Deps, id: string, limitText: string | undefined, cursor: string | undefined, baseUrl?: string) {
  await meta(d, id);
  const limit = limitText === undefined ? 20 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw new AppError('InvalidRequest', [{ path: 'limit', reason: 'must be a whole number from 1 to 100' }]);
  }
  try {
    const page = await d.executions.listRuns(id, { limit, cursor });
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
  const { e, waited } = await awaitTerminal(d, runId, read, wait);
  const headers = { ...preferenceApplied(waited), ...(isTerminal(e.status) ? {} : { 'retry-after': String(POLL_HINT_SECONDS) }) };
  return { body: { ...runBody(e, baseUrl === undefined ? {} : await outputLinks(d, e, baseUrl, null)) }, headers };
}

/** The contract a successful run discovers: its version's nodes with the values it used. */
async function discovered(d: Deps, id: string, run: RunPointer | null): Promise<Contract | null> {
  if (!run) return null;
  const [version, execution] = await Promise.all([d.pipelines.getVersion(id, run.version), d.executions.get(run.run_id, d.clock.now())]);
  if (!version) return null;
  return discoverContract(version.definition, execution?.inputs ?? {}, execution ?? undefined);
}

async function currentDeployment(d: Deps, m: PipelineMeta): Promise<DeploymentRecord | null> {
  if (!m.deployment_id) return null;
  const rec = await d.deployments.get(m.deployment_id, true);
  return rec && rec.status === 'live' ? rec : null;
}

const contractOf = (r: DeploymentRecord): Contract => ({ inputs: r.inputs, outputs: r.outputs });

/** The form's link as the owner is shown it: derived again from its salt (never stored); null unless enabled. */
async function formLinkOf(d: Deps, r: Pick<DeploymentRecord, 'form'>, baseUrl: string): Promise<string | null> {
  if (!r.form?.enabled) return null;
  const { masterKey } = await d.keyMaterial.material();
  return formUrl(baseUrl, formToken(r.form.salt, masterKey));
}

async function deploymentView(d: Deps, r: DeploymentRecord, baseUrl: string) {
  return {
    deployment_id: r.deployment_id,
    version: r.version,
    published_at: r.published_at,
    execute_url: executeUrl(baseUrl, r.deployment_id),
    mcp_url: mcpUrl(baseUrl, r.deployment_id),
    form_url: await formLinkOf(d, r, baseUrl),
    form: formView(r.form),
    events: { node_detail: r.node_detail !== false },
    inputs: r.inputs,
    outputs: r.outputs,
  };
}

/** A new form link: its lookup item first, so the link works the moment the deployment names it. */
async function newFormLink(d: Deps, deploymentId: string): Promise<Pick<FormSettings, 'salt' | 'token_hash'>> {
  const { pepper, masterKey } = await d.keyMaterial.material();
  const salt = randomBytes(FORM_SALT_BYTES).toString('base64url');
  const token_hash = formTokenHash(formToken(salt, masterKey), pepper);
  await d.forms.putLink(token_hash, deploymentId);
  return { salt, token_hash };
}

/**
 * Applies a publish's `form` to the deployment: enabling keeps the link it had (or makes the
 * first one), disabling keeps it for a later enable; title and description change when given.
 */
async function applyForm(d: Deps, r: DeploymentRecord, asked: FormRequest | undefined): Promise<DeploymentRecord> {
  const before = r.form ?? null;
  if (asked === undefined || (!asked.enabled && before === null)) return r;
  const link = before ?? (await newFormLink(d, r.deployment_id));
  const next: FormSettings = {
    enabled: asked.enabled,
    title: asked.title ?? before?.title ?? null,
    description: asked.description ?? before?.description ?? null,
    salt: link.salt,
    token_hash: link.token_hash,
  };
  const updated = await d.deployments.setForm(r.deployment_id, r.revision, next);
  if (!updated) throw new AppError('Conflict', 'the deployment changed while publishing; try again');
  return updated;
}

export async function readiness(d: Deps, id: string, baseUrl: string) {
  const synced = await syncRunPointers(d, id, await meta(d, id));
  const m = synced.meta;
  const [dep, disc] = await Promise.all([currentDeployment(d, m), discovered(d, id, m.last_success)]);
  const latestRun = synced.latest;
  return readinessView({
    pipeline_id: id,
    latestRun: latestRun
      ? { run_id: latestRun.execution_id, status: latestRun.status, version: latestRun.version, created_at: latestRun.created_at }
      : null,
    latestFinished: m.latest_finished,
    lastSuccessful: m.last_success,
    discovered: disc,
    deployment: dep
      ? {
          ...dep,
          execute_url: executeUrl(baseUrl, dep.deployment_id),
          mcp_url: mcpUrl(baseUrl, dep.deployment_id),
          form_url: await formLinkOf(d, dep, baseUrl),
        }
      : null,
  });
}

async function newCredentials(d: Deps, deploymentId: string) {
  const { pepper, masterKey } = await d.keyMaterial.material();
  const apiKey = generateApiKey(deploymentId, randomBytes(24));
  const signingSecret = generateSigningSecret(randomBytes(32));
  return {
    apiKey,
    signingSecret,
    keyHash: hashApiKey(apiKey, pepper),
    sealed: sealSecret(signingSecret, masterKey, randomBytes(12)),
  };
}

/**
 * Publishes (creates or updates) the pipeline's one deployment from its latest finished run.
 * No transactions: the pipeline's deployment slot is claimed first with a conditional write,
 * then the deployment item is written; a crash between the two is repaired by the next publish,
 * which finds the slot pointing at an item that does not exist and creates it under that id.
 */
export async function publish(d: Deps, id: string, body: string | null, baseUrl: string) {
  const { meta: m, latest: newest } = await syncRunPointers(d, id, await meta(d, id));
  const request = parseJson(body);
  const latest = m.latest_finished;
  const disc = latest?.status === 'completed' ? await discovered(d, id, latest) : null;
  const unfinished =
    newest && !isTerminal(newest.status)
      ? { pipeline_id: id, run_id: newest.execution_id, status: newest.status, version: newest.version }
      : null;
  assertPublishable(latest, m.last_success, disc, unfinished);
  // assertPublishable refuses unless the latest finished run completed and discovered a contract.
  const contract = disc as Contract;
  const version = (latest as RunPointer).version;
  const now = d.clock.now().toISOString();

  const existing = m.deployment_id ? await d.deployments.get(m.deployment_id, true) : null;
  if (existing && existing.status === 'live') {
    const next = applyVisibility(contract, request, contractOf(existing));
    const asked = requestedSettings(request);
    const republished = await d.deployments.republish(existing.deployment_id, existing.revision, {
      version,
      inputs: next.inputs,
      outputs: next.outputs,
      published_at: now,
      node_detail: asked.nodeDetail ?? existing.node_detail !== false,
    });
    if (!republished) throw new AppError('Conflict', 'the deployment changed while publishing; try again');
    const updated = await applyForm(d, republished, asked.form);
    return { status: 200, body: await deploymentView(d, updated, baseUrl) };
  }

  const next = applyVisibility(contract, request, null);
  const asked = requestedSettings(request);
  let deploymentId: string;
  if (m.deployment_id && !existing) {
    deploymentId = m.deployment_id; // claimed by a publish that stopped before writing the deployment
  } else {
    deploymentId = d.ids.uuid();
    if (!(await d.pipelines.claimDeployment(id, m.deployment_id, deploymentId))) {
      throw new AppError('Conflict', 'another publish of this pipeline is under way; try again');
    }
  }
  const creds = await newCredentials(d, deploymentId);
  const record: DeploymentRecord = {
    deployment_id: deploymentId,
    pipeline_id: id,
    version,
    revision: 1,
    status: 'live',
    inputs: next.inputs,
    outputs: next.outputs,
    published_at: now,
    created_at: now,
    key_hashes: [{ hash: creds.keyHash, expires_at: null }],
    signing_secrets: [{ sealed: creds.sealed, expires_at: null }],
    deleted_at: null,
    node_detail: asked.nodeDetail ?? true,
  };
  if (!(await d.deployments.create(record))) throw new AppError('Conflict', 'another publish of this pipeline is under way; try again');
  const created = await applyForm(d, record, asked.form);
  return {
    status: 201,
    body: { ...(await deploymentView(d, created, baseUrl)), api_key: creds.apiKey, signing_secret: creds.signingSecret },
  };
}

export async function remove(d: Deps, id: string, confirm: string | undefined) {
  const m = await meta(d, id);
  const dep = await currentDeployment(d, m);
  if (!dep) throw new AppError('DeploymentNotFound');
  if (confirm !== dep.deployment_id) {
    throw new AppError(
      'ConfirmationRequired',
      `repeat the deployment id as ?confirm=${dep.deployment_id} to delete it; this cannot be undone`,
    );
  }
  if (!(await d.deployments.markDeleted(dep.deployment_id, d.clock.now().toISOString()))) throw new AppError('DeploymentNotFound');
  await d.pipelines.claimDeployment(id, dep.deployment_id, null);
  // The link already answers 404 (its deployment is deleted); its lookup item goes too.
  if (dep.form)
    await d.forms.removeLink(dep.form.token_hash).catch((err: unknown) => d.log.warn('form link lookup not removed', errorFields(err)));
  await removeDeploymentObjects(d, dep.deployment_id);
}

/**
 * Objects removed with a deployment, in one request: at most this many (about ten list and ten
 * delete requests on S3, a few seconds), so a deployment with a long history cannot push the
 * delete past API Gateway's 29 s. Nothing of it is reachable once the delete is recorded (a
 * link checks its deployment); what a pass leaves, the bucket's lifecycle rule expires.
 */
export const DELETE_REMOVES_AT_MOST = 10_000;

/** The deleted deployment's bytes, as far as one bounded pass reaches; a failure is logged, never the caller's. */
async function removeDeploymentObjects(d: Deps, deploymentId: string): Promise<void> {
  try {
    const removed = await d.objects.removePrefix(deploymentPrefix(deploymentId), { maxKeys: DELETE_REMOVES_AT_MOST });
    if (removed > 0)
      d.log.info('deployment objects removed', { deployment_id: deploymentId, removed, bounded: removed >= DELETE_REMOVES_AT_MOST });
  } catch (err) {
    d.log.error('deployment objects not removed (the lifecycle rule expires them)', { deployment_id: deploymentId, ...errorFields(err) });
  }
}

/**
 * The retired key hashes a rotation keeps, newest first and at most RETIRED_KEYS_KEPT, only so
 * that a caller still sending one is told it was revoked or its grace period ended rather than
 * that it is unknown. Without a grace period the keys that worked until now are revoked.
 */
const RETIRED_KEYS_KEPT = 4;
export function retiredKeys(keys: readonly KeyHash[], grace: number, now: number): KeyHash[] {
  const revoked =
    grace === 0
      ? keys.filter((k) => k.expires_at === null || k.expires_at > now).map((k) => ({ hash: k.hash, expires_at: now, revoked_at: now }))
      : [];
  const past = keys.filter((k) => k.expires_at !== null && k.expires_at <= now);
  return [...revoked, ...past.sort((a, b) => (b.expires_at ?? 0) - (a.expires_at ?? 0))].slice(0, RETIRED_KEYS_KEPT);
}

/**
 * Rotates the API key (or the callback signing secret). Without a grace period the old one
 * stops at once; with one, both work until it ends, and callbacks carry both signatures.
 */
export async function rotate(d: Deps, id: string, body: string | null, baseUrl = '') {
  const m = await meta(d, id);
  const given = parseJson(body);
  const parsed = v.safeParse(RotateRequest, given === undefined ? {} : given);
  if (!parsed.success) {
    throw new AppError(
      'InvalidRequest',
      parsed.issues.map((i) => ({ path: v.getDotPath(i) ?? '(body)', reason: i.message })),
    );
  }
  const dep = await currentDeployment(d, m);
  if (!dep) throw new AppError('DeploymentNotFound');
  const now = d.clock.now();
  const grace = parsed.output.grace_seconds;
  // Rounded up, so a grace period is never shorter than asked.
  const until = Math.ceil(now.getTime() / 1000) + grace;
  const alive = <T extends { expires_at: number | null }>(xs: T[]): T[] =>
    grace === 0
      ? []
      : xs
          .filter((x) => x.expires_at === null || x.expires_at > epochSeconds(now))
          .map((x) => ({ ...x, expires_at: x.expires_at ?? until }));
  if (parsed.output.credential === 'form_link') return { form_url: await rotateFormLink(d, dep, baseUrl) };
  const creds = await newCredentials(d, dep.deployment_id);
  if (parsed.output.credential === 'signing_secret') {
    const ok = await d.deployments.replaceSigningSecrets(dep.deployment_id, dep.revision, [
      { sealed: creds.sealed, expires_at: null },
      ...alive(dep.signing_secrets),
    ]);
    if (!ok) throw new AppError('Conflict', 'the deployment changed while rotating; try again');
    return { signing_secret: creds.signingSecret };
  }
  const ok = await d.deployments.replaceKeys(dep.deployment_id, dep.revision, [
    { hash: creds.keyHash, expires_at: null },
    ...alive(dep.key_hashes),
    ...retiredKeys(dep.key_hashes, grace, epochSeconds(now)),
  ]);
  if (!ok) throw new AppError('Conflict', 'the deployment changed while rotating; try again');
  return { api_key: creds.apiKey };
}

/** A new form link; the old one answers 404 from the deployment's write on (no grace period: a link is shared, not configured). */
async function rotateFormLink(d: Deps, dep: DeploymentRecord, baseUrl: string): Promise<string> {
  const before = dep.form;
  if (!before) {
    throw new AppError('InvalidRequest', [
      { path: 'credential', reason: 'this deployment has no web form: publish with {"form": {"enabled": true}} first' },
    ]);
  }
  const link = await newFormLink(d, dep.deployment_id);
  const updated = await d.deployments.setForm(dep.deployment_id, dep.revision, { ...before, ...link });
  if (!updated) throw new AppError('Conflict', 'the deployment changed while rotating; try again');
  await d.forms.removeLink(before.token_hash).catch((err: unknown) => d.log.warn('old form link lookup not removed', errorFields(err)));
  const { masterKey } = await d.keyMaterial.material();
  return formUrl(baseUrl, formToken(link.salt, masterKey));
}
