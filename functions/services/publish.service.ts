/** Readiness and publish (contract §3): the contract a successful run discovered, published as the pipeline's one deployment. */
import {
  applyVisibility,
  assertPublishable,
  discoverContract,
  formView,
  readiness as readinessView,
  requestedSettings,
  type FormRequest,
} from '../core/contract';
import { AppError } from '../core/errors';
import { isTerminal } from '../core/transitions';
import type { Contract, DeploymentRecord, FormSettings, RunPointer } from '../core/types';
import { executeUrl, mcpUrl } from '../core/views';
import type { Deps } from '../adapters/deps';
import { currentDeployment, pipelineMeta } from './pipelines.service';
import { ownerRequestBody as parseJson } from '../core/json-body';
import { syncRunPointers } from './runs.service';
import { formLinkOf, newFormLink } from './form-links.service';
import { newCredentials } from './keys.service';
import { workflowOfVersion } from './workflow-choice';

/** The contract a successful run discovers: its version's nodes with the values it used. */
async function discovered(d: Deps, id: string, run: RunPointer | null): Promise<Contract | null> {
  if (!run) return null;
  const [version, execution] = await Promise.all([d.pipelines.getVersion(id, run.version), d.executions.get(run.run_id, d.clock.now())]);
  if (!version) return null;
  return discoverContract(version.definition, execution?.inputs ?? {}, execution ?? undefined);
}

const contractOf = (r: DeploymentRecord): Contract => ({ inputs: r.inputs, outputs: r.outputs, waits: r.waits ?? [] });

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
    waits: r.waits ?? [],
  };
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
  const synced = await syncRunPointers(d, id, await pipelineMeta(d, id));
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

/**
 * Publishes (creates or updates) the pipeline's one deployment from its latest finished run.
 * No transactions: the pipeline's deployment slot is claimed first with a conditional write,
 * then the deployment item is written; a crash between the two is repaired by the next publish,
 * which finds the slot pointing at an item that does not exist and creates it under that id.
 */
export async function publish(d: Deps, id: string, body: string | null, baseUrl: string) {
  const { meta: m, latest: newest } = await syncRunPointers(d, id, await pipelineMeta(d, id));
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
  // Callers' executions run on the machine the version was given when it was pushed.
  const workflow = await workflowOfVersion(d, id, version);
  const now = d.clock.now().toISOString();

  const existing = m.deployment_id ? await d.deployments.get(m.deployment_id, true) : null;
  if (existing && existing.status === 'live') {
    const next = applyVisibility(contract, request, contractOf(existing));
    const asked = requestedSettings(request);
    const republished = await d.deployments.republish(existing.deployment_id, existing.revision, {
      version,
      inputs: next.inputs,
      outputs: next.outputs,
      waits: next.waits ?? [],
      published_at: now,
      node_detail: asked.nodeDetail ?? existing.node_detail !== false,
      workflow,
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
    waits: next.waits ?? [],
    published_at: now,
    created_at: now,
    key_hashes: [{ hash: creds.keyHash, expires_at: null }],
    signing_secrets: [{ sealed: creds.sealed, expires_at: null }],
    deleted_at: null,
    node_detail: asked.nodeDetail ?? true,
    workflow,
  };
  if (!(await d.deployments.create(record))) throw new AppError('Conflict', 'another publish of this pipeline is under way; try again');
  const created = await applyForm(d, record, asked.form);
  return {
    status: 201,
    body: { ...(await deploymentView(d, created, baseUrl)), api_key: creds.apiKey, signing_secret: creds.signingSecret },
  };
}
