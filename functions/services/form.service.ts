/**
 * A deployment's web form (GET /v1/forms/{form_token} and its routes). The link is the
 * capability: each request finds the form by the token's hash and checks, against the
 * deployment itself (read consistently), that the form is enabled and still has this link, so a
 * disable, a rotation or a delete holds from the write on. Execute, read and upload go through
 * the callers' own code paths (validation, limits, lifecycle) as the deployment; every action
 * that costs something is counted against the link and the client's address first.
 */
import { createHmac } from 'node:crypto';
import { AppError } from '../core/errors';
import { FORM_TOKEN_PATTERN, formExecutionUrl, formHashMatches, formTokenHash } from '../core/form-link';
import {
  FORM_FILES,
  FORM_NOT_FOUND_CSP,
  FORM_SCRIPT,
  FORM_SCRIPT_NAME,
  FORM_STYLE,
  formNotFoundHtml,
  formPageCsp,
  formPageHtml,
  type FormField,
} from '../core/form-page';
import { isUuid } from '../core/ids';
import { POLL_HINT_SECONDS, preferenceApplied } from '../core/prefer';
import { epochSeconds } from '../core/time';
import { isTerminal } from '../core/transitions';
import type { DeploymentRecord, Execution } from '../core/types';
import { callerWaitsOf, resultBody, waitsOnReader } from '../core/views';
import { callerWaitingList, waitingField } from './resume.service';
import type { RouteAnswer } from '../adapters/api';
import type { CallerAuth } from '../core/consumers';
import type { Deps } from '../adapters/deps';
import { presignedOrigin } from '../adapters/object-reads';
import { awaitTerminal, NO_WAIT, submit, type Wait } from './caller.service';
import { callerOutputIds, outputLinks } from './output-links';
import { callerNodeView, callerResumable, streamOf } from './events.service';
import { createUpload } from './uploads.service';

interface OpenForm {
  rec: DeploymentRecord;
  /** The link's token hash: what its executions record, and its rate counter's key. */
  hash: string;
}

/** The form behind a link, or 404 alike for a malformed, unknown, rotated, disabled or deleted one. */
async function openForm(d: Deps, token: string): Promise<OpenForm> {
  if (!FORM_TOKEN_PATTERN.test(token)) throw new AppError('FormNotFound');
  const { pepper } = await d.keyMaterial.material();
  const hash = formTokenHash(token, pepper);
  const deploymentId = await d.forms.findLink(hash);
  if (deploymentId === null) throw new AppError('FormNotFound');
  const rec = await d.deployments.get(deploymentId, true);
  if (!rec || rec.status !== 'live' || !rec.form?.enabled || !formHashMatches(hash, rec.form.token_hash))
    throw new AppError('FormNotFound');
  return { rec, hash };
}

/** The form acts as its deployment, as a caller with the key would (the revision keys the contract cache). */
const authOf = (rec: DeploymentRecord): CallerAuth => ({ deploymentId: rec.deployment_id, revision: rec.revision, deleted: false });

const RATE_WINDOW_SECONDS = 60;

/**
 * Counts one run or upload against the link and the address (fixed one-minute windows); 429
 * with Retry-After (the seconds left in the window) past either limit. The address is kept only
 * as an HMAC under the pepper.
 */
async function admit(d: Deps, hash: string, address: string): Promise<void> {
  const now = epochSeconds(d.clock.now());
  const start = now - (now % RATE_WINDOW_SECONDS);
  const expires = start + 2 * RATE_WINDOW_SECONDS;
  const { pepper } = await d.keyMaterial.material();
  const addressKey = createHmac('sha256', pepper).update(`form address\0${address}`).digest('hex').slice(0, 32);
  const [byLink, byAddress] = await Promise.all([
    d.forms.count(`link#${hash.slice(0, 32)}`, start, expires),
    d.forms.count(`addr#${addressKey}`, start, expires),
  ]);
  const retry = Math.max(1, start + RATE_WINDOW_SECONDS - now);
  const refuse = (detail: string) => new AppError('TooManyRequests', detail, {}, { headers: { 'retry-after': String(retry) } });
  if (byLink > d.config.formLinkActionsPerMinute) {
    throw refuse(
      `this form takes at most ${d.config.formLinkActionsPerMinute} runs, uploads and progress streams a minute from everyone together; try again in ${retry} seconds`,
    );
  }
  if (byAddress > d.config.formAddressActionsPerMinute) {
    throw refuse(
      `at most ${d.config.formAddressActionsPerMinute} runs, uploads and progress streams a minute may come from one address through forms; try again in ${retry} seconds`,
    );
  }
}

const PAGE_HEADERS = {
  'x-content-type-options': 'nosniff',
  // The link is the capability: never send it on as a Referer, never keep it in a cache.
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** The page, generated from the published contract: visible inputs and outputs only. */
export async function formPage(d: Deps, token: string, baseUrl: string): Promise<RouteAnswer> {
  let opened: OpenForm;
  try {
    opened = await openForm(d, token);
  } catch (e) {
    // A person followed this link: a page they can read, saying what to do, not the API's JSON.
    if (!(e instanceof AppError) || e.code !== 'FormNotFound') throw e;
    return {
      status: 404,
      headers: { ...PAGE_HEADERS, 'content-security-policy': FORM_NOT_FOUND_CSP },
      text: { contentType: 'text/html; charset=utf-8', body: formNotFoundHtml() },
    };
  }
  const { rec } = opened;
  const version = await d.pipelines.getVersion(rec.pipeline_id, rec.version);
  const nodes = version?.definition.nodes ?? {};
  const node = (id: string) => (Object.hasOwn(nodes, id) ? nodes[id] : undefined);
  const about = (id: string): string | null => node(id)?.description ?? null;
  const labelOf = (id: string): string | null => {
    const n = node(id);
    return n !== undefined && (n.type === 'input' || n.type === 'output') ? (n.label ?? null) : null;
  };
  const fields: FormField[] = rec.inputs
    .filter((i) => i.visible)
    .map((i) => ({
      id: i.id,
      label: labelOf(i.id),
      value_type: i.value_type,
      value: i.value,
      description: about(i.id),
      media_types: i.media_types ?? null,
      max_bytes: i.max_bytes ?? null,
    }));
  const outputs = rec.outputs.filter((o) => o.visible).map((o) => ({ id: o.id, label: labelOf(o.id), description: about(o.id) }));
  // Visible wait nodes: each a form the person answers while the run waits on it.
  const waits = (rec.waits ?? [])
    .filter((w) => w.visible)
    .map((w) => ({
      id: w.id,
      label: w.label ?? null,
      description: w.description ?? null,
      fields:
        w.fields === undefined
          ? null
          : Object.entries(w.fields).map(([id, f]) => ({
              id,
              label: f.label ?? null,
              description: f.description ?? null,
              value_type: f.value_type,
            })),
    }));
  // The steps a caller's events show one by one (every node but inputs and outputs); with node
  // detail off the events count every node themselves.
  const steps = rec.node_detail === false ? null : Object.values(nodes).filter((n) => n.type !== 'input' && n.type !== 'output').length;
  // Straight to storage only where the bucket's CORS rule names this page's origin.
  const direct = d.config.formUploadOrigins.includes(new URL(baseUrl).origin);
  const html = formPageHtml({
    uploads: direct ? 'direct' : 'inline',
    baseUrl,
    token,
    title: rec.form?.title ?? rec.pipeline_id,
    description: rec.form?.description ?? null,
    fields,
    outputs,
    waits,
    steps,
  });
  const csp = formPageCsp(direct ? presignedOrigin(d.config, d.config.bucket) : null);
  return {
    status: 200,
    headers: { ...PAGE_HEADERS, 'content-security-policy': csp },
    text: { contentType: 'text/html; charset=utf-8', body: html },
  };
}

/** The page's script and style sheet: the same for every form, so cached. */
export function formFile(name: string): RouteAnswer {
  const contentType = Object.hasOwn(FORM_FILES, name) ? FORM_FILES[name] : undefined;
  if (contentType === undefined) throw new AppError('RouteNotFound');
  return {
    status: 200,
    headers: { 'x-content-type-options': 'nosniff', 'cache-control': 'public, max-age=3600' },
    text: { contentType, body: name === FORM_SCRIPT_NAME ? FORM_SCRIPT : FORM_STYLE },
  };
}

export interface FormExecuteRequest {
  token: string;
  body: string | null;
  contentType: string | undefined;
  baseUrl: string;
  address: string;
}

/** POST …/executions: 202 with the execution's URL under this link. */
export async function formExecute(d: Deps, req: FormExecuteRequest): Promise<RouteAnswer> {
  const { rec, hash } = await openForm(d, req.token);
  await admit(d, hash, req.address);
  const accepted = await submit(d, authOf(rec), {
    deploymentId: rec.deployment_id,
    body: req.body,
    contentType: req.contentType,
    idempotencyKey: undefined,
    baseUrl: req.baseUrl,
    formLink: hash,
  });
  const statusUrl = formExecutionUrl(req.baseUrl, req.token, accepted.body.execution_id);
  return {
    status: 202,
    body: { status: 'queued', execution_id: accepted.body.execution_id, status_url: statusUrl },
    headers: { location: statusUrl },
  };
}

/**
 * GET …/executions/{id}: the execution as the page shows it, with its result once finished
 * (fresh links to the visible files). With `Prefer: wait=N`, answered when it finishes or the
 * wait runs out, so the page long-polls rather than asking every second.
 */
export async function formExecution(
  d: Deps,
  token: string,
  executionId: string,
  baseUrl: string,
  wait: Wait = NO_WAIT,
): Promise<RouteAnswer> {
  const { rec, hash } = await openForm(d, token);
  // A run that waits for the person's answer is answered at once: the page shows its form.
  const { e, waited } = await awaitTerminal(
    d,
    executionId,
    () => readFormExecution(d, rec, hash, executionId),
    wait,
    undefined,
    (x) => waitsOnReader(callerWaitsOf(x)),
  );
  const { body } = await formView(d, e, token, baseUrl);
  return {
    status: 200,
    headers: {
      'cache-control': 'no-store',
      ...preferenceApplied(waited),
      ...(isTerminal(e.status) ? {} : { 'retry-after': String(POLL_HINT_SECONDS) }),
    },
    body,
  };
}

/** The execution, if this link made it: not another form's, not this form's previous link (404 alike). */
async function readFormExecution(d: Deps, rec: DeploymentRecord, hash: string, executionId: string): Promise<Execution> {
  const e = isUuid(executionId) ? await d.executions.get(executionId, d.clock.now()) : null;
  if (!e || e.kind !== 'api' || e.deployment_id !== rec.deployment_id || e.source !== 'form' || !formHashMatches(e.form_link ?? '', hash)) {
    throw new AppError('ExecutionNotFound');
  }
  return e;
}

/** A form execution as the page reads it (GET …/executions/{id}), with fresh links to its visible files once completed. */
async function formView(
  d: Deps,
  e: Execution,
  token: string,
  baseUrl: string,
): Promise<{ result: ReturnType<typeof resultBody>; body: Record<string, unknown> }> {
  const links = e.status === 'completed' ? await outputLinks(d, e, baseUrl, callerOutputIds(e)) : {};
  const result = resultBody(e, links);
  return {
    result,
    body: {
      status: e.status,
      execution_id: e.execution_id,
      status_url: formExecutionUrl(baseUrl, token, e.execution_id),
      created_at: e.created_at,
      started_at: e.started_at,
      completed_at: e.completed_at,
      completion_duration: result.completion_duration,
      error_message: result.error_message,
      output_artifacts: result.output_artifacts,
      response_data: result.response_data,
      ...waitingField(await callerWaitingList(d, e, baseUrl)),
    },
  };
}

export interface FormEventsRequest {
  token: string;
  executionId: string;
  address: string;
  lastEventId: string | undefined;
  baseUrl: string;
}

/**
 * GET …/executions/{id}/events: the callers' event stream of a form execution (the same events,
 * the nodes a caller sees), `done` holding what GET …/executions/{id} answers. 404 as that route
 * before any byte is sent. Opening one counts against the link and the address, as a run does: a
 * stream holds its function for as long as the execution runs.
 */
export async function openFormEventStream(d: Deps, req: FormEventsRequest): Promise<AsyncIterable<string>> {
  return streamOf(d, req.executionId, { lastEventId: req.lastEventId, baseUrl: req.baseUrl }, async () => {
    const { rec, hash } = await openForm(d, req.token);
    await admit(d, hash, req.address);
    const first = await readFormExecution(d, rec, hash, req.executionId);
    return {
      first,
      shows: await callerNodeView(d, rec, first),
      resumable: callerResumable(first),
      final: async (e) => {
        const { result, body } = await formView(d, e, req.token, req.baseUrl);
        return { outputs: result.response_data, body };
      },
    };
  });
}

/** POST …/uploads: a presigned PUT for a file too large to send inline, as the callers' uploads route answers. */
export async function formUpload(d: Deps, token: string, body: string | null, address: string): Promise<RouteAnswer> {
  const { rec, hash } = await openForm(d, token);
  await admit(d, hash, address);
  return { status: 201, body: await createUpload(d, authOf(rec), rec.deployment_id, body), headers: { 'cache-control': 'no-store' } };
}
