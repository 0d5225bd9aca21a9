/**
 * The published contract of a pipeline and the owner's readiness view (contract §3 and §7):
 * what a run discovers, which entries the owner lets callers see, whether publishing is
 * allowed, and what a caller is shown.
 */
import * as v from 'valibot';
import { AppError } from './errors';
import { skippableNodes } from './flow';
import { FORM_DESCRIPTION_MAX_CHARS, FORM_TITLE_MAX_CHARS } from './form-link';
import { ownRecord, plainObject, strictFields } from './schema-parts';
import type { ExecutionStatus } from './transitions';
import { isPlainObject } from './values';
import type {
  AssetRestrictions,
  Contract,
  ContractInput,
  ContractOutput,
  ContractWait,
  Deployment,
  Execution,
  FormSettings,
  OutputKind,
  PipelineDefinition,
  Problem,
  RawValue,
  RunPointer,
} from './types';

/** An asset input's restrictions, only the ones it has (absent fields stay absent in JSON). */
export function restrictionsOf(i: AssetRestrictions): AssetRestrictions {
  const out: AssetRestrictions = {};
  if (i.media_types !== undefined) out.media_types = [...i.media_types];
  if (i.max_bytes !== undefined) out.max_bytes = i.max_bytes;
  return out;
}

/**
 * What an output answered in the run a contract is discovered from: ASSET when the run holds a
 * file for it, RAW when a value; undefined when the run is unknown or answered neither (the
 * definition alone cannot tell: a transform may pass on a file or a value).
 */
function outputKind(id: string, run: DiscoveryRun | undefined): OutputKind | undefined {
  if (run === undefined) return undefined;
  if (run.output_assets !== undefined && run.output_assets !== null && Object.hasOwn(run.output_assets, id)) return 'ASSET';
  if (run.outputs !== undefined && run.outputs !== null && Object.hasOwn(run.outputs, id)) return 'RAW';
  return undefined;
}

/** What discovery reads of the successful run's outputs: what each answered. */
export type DiscoveryRun = Pick<Execution, 'outputs' | 'output_assets'>;

/** A wait node's entry: what the contract shows of it (its fields, what people read). */
function waitEntry(id: string, node: Extract<PipelineDefinition['nodes'][string], { type: 'wait' }>): ContractWait {
  return {
    id,
    visible: true,
    timeout_ms: node.timeout_ms,
    ...(node.label === undefined ? {} : { label: node.label }),
    ...(node.description === undefined ? {} : { description: node.description }),
    ...(node.fields === undefined ? {} : { fields: structuredClone(node.fields) }),
  };
}

/**
 * Every input, output and wait node of a version, in declaration order, all visible; each
 * output with the kind the run answered for it (contract §3), where the run is known.
 */
export function discoverContract(def: PipelineDefinition, runInputs: Record<string, RawValue>, run?: DiscoveryRun): Contract {
  const inputs: ContractInput[] = [];
  const outputs: ContractOutput[] = [];
  const waits: ContractWait[] = [];
  const skippable = skippableNodes(def.nodes);
  for (const [id, node] of Object.entries(def.nodes)) {
    // Input and output nodes are the contract's two roles (each node type says its own: functions/core/nodes/).
    if (node.type === 'input') {
      // An asset's run value is stored bytes, not a value to publish: the definition's stays.
      const used = node.value_type !== 'asset' && Object.prototype.hasOwnProperty.call(runInputs, id) ? runInputs[id] : undefined;
      inputs.push({ id, value_type: node.value_type, value: used ?? node.value, visible: true, ...restrictionsOf(node) });
    } else if (node.type === 'output') {
      const kind = outputKind(id, run);
      const list = kind === 'ASSET' && Array.isArray(run?.output_assets?.[id]);
      outputs.push({
        id,
        visible: true,
        ...(kind === undefined ? {} : { value_type: kind }),
        ...(list ? { list: true } : {}),
        ...(skippable.has(id) ? { optional: true } : {}),
      });
    } else if (node.type === 'wait') waits.push(waitEntry(id, node));
  }
  return { inputs, outputs, waits };
}

/*
 * The publish request (PUT …/deployment), declared once: applyVisibility checks bodies with it
 * and shapes.ts documents it. Its messages are the `reason` of each problem a 400 lists.
 */

/** PUT …/deployment `form`: the web form, its link (form_url) and what its page says. */
export const FormOption = v.pipe(
  plainObject('must be an object'),
  v.strictObject(
    {
      enabled: v.optional(
        v.pipe(
          v.boolean('must be true or false'),
          v.description('false: the link answers 404 at once (true again brings the same link back). Absent: true.'),
        ),
        true,
      ),
      title: v.optional(
        v.pipe(
          v.string('must be a string'),
          v.maxLength(FORM_TITLE_MAX_CHARS, `must be at most ${FORM_TITLE_MAX_CHARS} characters`),
          v.description("The page's heading; the pipeline id when absent."),
        ),
      ),
      description: v.optional(
        v.pipe(
          v.string('must be a string'),
          v.maxLength(FORM_DESCRIPTION_MAX_CHARS, `must be at most ${FORM_DESCRIPTION_MAX_CHARS} characters`),
          v.description('Plain text shown under the heading.'),
        ),
      ),
    },
    strictFields,
  ),
  v.description('The web form of the deployment. Absent: the form stays as it was (none on a first publish).'),
);
/** PUT …/deployment `events`: what callers' event streams show of the nodes. */
export const EventsOption = v.pipe(
  plainObject('must be an object'),
  v.strictObject(
    {
      node_detail: v.optional(
        v.pipe(
          v.boolean('must be true or false'),
          v.description(
            "false: `node` events carry only counts `{done, total}`, never node ids, types or times (the pipeline's shape stays private). Absent: as it was (true on a first publish).",
          ),
        ),
      ),
    },
    strictFields,
  ),
  v.description("Callers' event streams. Absent: as it was (node detail on a first publish)."),
);
export const Visibility = v.pipe(
  plainObject('must be an object'),
  v.strictObject({ visible: v.boolean('must be true or false') }, strictFields),
);
/** Visibility by node id: every key is checked, `constructor` included (a valid node id). */
const VisibilityMap = v.pipe(plainObject('must be an object'), ownRecord(v.string(), Visibility, 'must be an object'));
export const PublishRequest = v.pipe(
  plainObject('must be an object'),
  v.strictObject(
    {
      inputs: v.optional(VisibilityMap),
      outputs: v.optional(VisibilityMap),
      waits: v.optional(
        v.pipe(
          VisibilityMap,
          v.description(
            "Wait nodes: a visible one's resume URL reaches callers while the execution waits on it (its `waiting` list), and the web form shows it. Visible by default.",
          ),
        ),
      ),
      form: v.optional(FormOption),
      events: v.optional(EventsOption),
    },
    'is not a known field',
  ),
  v.description(
    'Visibility per entry; an entry not mentioned keeps the visibility it had (visible on a first publish). `form`: the web form.',
  ),
);

export type FormRequest = v.InferOutput<typeof FormOption>;
export type EventsRequest = v.InferOutput<typeof EventsOption>;

/**
 * The publish request's settings beside visibility, each undefined to leave it as it is: `form`
 * (none on a first publish) and `events.node_detail` (true on a first publish). Call after
 * applyVisibility accepted the request.
 */
export function requestedSettings(request: unknown): { form: FormRequest | undefined; nodeDetail: boolean | undefined } {
  const parsed = v.safeParse(PublishRequest, request === undefined ? {} : request);
  return parsed.success
    ? { form: parsed.output.form, nodeDetail: parsed.output.events?.node_detail }
    : { form: undefined, nodeDetail: undefined };
}

const pathOf = (issue: v.BaseIssue<unknown>, prefix: string): string => {
  const inner = v.getDotPath(issue);
  if (inner === null) return prefix === '' ? '(body)' : prefix;
  return prefix === '' ? inner : `${prefix}.${inner}`;
};

type Section = 'inputs' | 'outputs' | 'waits';
const SECTION_NODE: Record<Section, string> = { inputs: 'input', outputs: 'output', waits: 'wait' };

/** An issue inside one entry of `inputs`, `outputs` or `waits`: reported with that entry, after its id is known to exist. */
const entryOf = (i: v.BaseIssue<unknown>): [string, unknown] | null => {
  const [section, entry] = i.path ?? [];
  return entry !== undefined && typeof section?.key === 'string' && Object.hasOwn(SECTION_NODE, section.key)
    ? [section.key, entry.key]
    : null;
};

function sectionProblems(section: Section, request: unknown, issues: v.BaseIssue<unknown>[], known: Set<string>): Problem[] {
  const map = isPlainObject(request) ? request[section] : undefined;
  if (!isPlainObject(map)) return [];
  const problems: Problem[] = [];
  for (const id of Object.keys(map)) {
    const at = `${section}.${id}`;
    if (!known.has(id)) {
      problems.push({ path: at, reason: `no ${SECTION_NODE[section]} node with this id` });
      continue;
    }
    for (const i of issues) {
      const e = entryOf(i);
      if (e !== null && e[0] === section && e[1] === id) problems.push({ path: pathOf(i, ''), reason: i.message });
    }
  }
  return problems;
}

/**
 * Applies the owner's visibility choices from a publish request to a freshly discovered
 * contract. An entry the request does not mention keeps the visibility it had in the previous
 * deployment, so hiding something once is not undone by a later publish that forgets it.
 */
export function applyVisibility(discovered: Contract, request: unknown, previous: Contract | null): Contract {
  // No body is `{}`; a JSON `null` is a body, and not an object.
  const body = request === undefined ? {} : request;
  const parsed = v.safeParse(PublishRequest, body);
  const issues = parsed.success ? [] : parsed.issues;
  // The request's own problems first; an entry's only once its id is known to be a node's.
  const top = issues.filter((i) => entryOf(i) === null);
  if (top.length > 0)
    throw new AppError(
      'InvalidRequest',
      top.map((i) => ({ path: pathOf(i, ''), reason: i.message })),
    );
  const problems = [
    ...sectionProblems('inputs', body, issues, new Set(discovered.inputs.map((i) => i.id))),
    ...sectionProblems('outputs', body, issues, new Set(discovered.outputs.map((o) => o.id))),
    ...sectionProblems('waits', body, issues, new Set((discovered.waits ?? []).map((w) => w.id))),
  ];
  if (problems.length > 0 || !parsed.success) throw new AppError('InvalidRequest', problems);
  const accepted = parsed.output;

  const asked = (section: Section, id: string): boolean | undefined => {
    const map = accepted[section];
    if (map === undefined || !Object.prototype.hasOwnProperty.call(map, id)) return undefined;
    const entry = map[id];
    return isPlainObject(entry) && typeof entry.visible === 'boolean' ? entry.visible : undefined;
  };
  const before = (entries: readonly { id: string; visible: boolean }[] | undefined, id: string) =>
    entries?.find((e) => e.id === id)?.visible;

  return {
    inputs: discovered.inputs.map((i) => ({
      ...i,
      visible: asked('inputs', i.id) ?? before(previous?.inputs, i.id) ?? true,
    })),
    outputs: discovered.outputs.map((o) => ({
      ...o,
      visible: asked('outputs', o.id) ?? before(previous?.outputs, o.id) ?? true,
    })),
    waits: (discovered.waits ?? []).map((w) => ({
      ...w,
      visible: asked('waits', w.id) ?? before(previous?.waits ?? undefined, w.id) ?? true,
    })),
  };
}

const hasEntries = (c: Contract | null): boolean => c !== null && (c.inputs.length > 0 || c.outputs.length > 0);

/**
 * Refuses a publish for the reasons of contract §3, in the order a user should fix them.
 * `unfinished` is the newest run when it has not finished yet: with no success so far, the
 * answer says to wait for it rather than to run again.
 */
export function assertPublishable(
  latestFinished: RunPointer | null,
  lastSuccessful: RunPointer | null,
  discovered: Contract | null,
  unfinished: (RunSummary & { pipeline_id: string }) | null = null,
): void {
  if (lastSuccessful === null && unfinished !== null) {
    const { pipeline_id: pipeline, ...latest_run } = unfinished;
    throw new AppError(
      'PublishNoSuccessfulRun',
      `run ${latest_run.run_id} is still ${latest_run.status}; publish once it has completed. To wait for it: GET /v1/pipelines/${pipeline}/runs/${latest_run.run_id} with the header "Prefer: wait=60" (answers as soon as it finishes), or start runs with "Prefer: wait=60" (npx pipegate run waits by default)`,
      { latest_run },
    );
  }
  if (lastSuccessful === null) throw new AppError('PublishNoSuccessfulRun');
  // A successful run is a finished one, so latestFinished is only null if the caller lost it.
  const latest = latestFinished ?? lastSuccessful;
  if (latest.status !== 'completed') {
    throw new AppError('PublishLatestRunFailed', undefined, {
      latest_run: { run_id: latest.run_id, status: latest.status, version: latest.version },
    });
  }
  if (!hasEntries(discovered)) throw new AppError('PublishNoInputsOrOutputs');
}

export type ReadinessState = 'run_required' | 'not_published' | 'live' | 'needs_publish';

export interface RunSummary {
  run_id: string;
  status: ExecutionStatus;
  version: number;
}

export interface Readiness {
  pipeline_id: string;
  state: ReadinessState;
  publishable: boolean;
  latest_run: RunSummary | null;
  /** Inputs and outputs of the contract the state is about: the live one, else the discovered one. */
  counts: { inputs: number; outputs: number };
  /** When the live contract was published; null unless the state is `live`. */
  published_at: string | null;
  discovered: Contract | null;
  deployment: {
    deployment_id: string;
    version: number;
    published_at: string;
    execute_url: string;
    mcp_url: string;
    form_url: string | null;
    form: { enabled: boolean; title: string | null; description: string | null } | null;
    events: { node_detail: boolean };
    inputs: ContractInput[];
    outputs: ContractOutput[];
    waits: ContractWait[];
  } | null;
}

const summary = (r: RunPointer | null): RunSummary | null =>
  r === null ? null : { run_id: r.run_id, status: r.status, version: r.version };

/**
 * The owner's view of where a pipeline stands. With a deployment but no finished run at all
 * (nothing has been run since), nothing contradicts the published version, so it counts as live.
 */
export function readiness(args: {
  pipeline_id: string;
  latestRun: RunPointer | null;
  latestFinished: RunPointer | null;
  lastSuccessful: RunPointer | null;
  discovered: Contract | null;
  deployment: (Deployment & { execute_url: string; mcp_url: string; form_url?: string | null }) | null;
}): Readiness {
  const { deployment, latestFinished, discovered } = args;
  let state: ReadinessState;
  if (deployment === null) state = args.lastSuccessful === null ? 'run_required' : 'not_published';
  else state = latestFinished === null || latestFinished.version === deployment.version ? 'live' : 'needs_publish';

  const counted: Contract | null = state === 'live' && deployment !== null ? deployment : discovered;
  return {
    pipeline_id: args.pipeline_id,
    state,
    publishable: latestFinished?.status === 'completed' && hasEntries(discovered),
    latest_run: summary(args.latestRun),
    counts: { inputs: counted?.inputs.length ?? 0, outputs: counted?.outputs.length ?? 0 },
    published_at: state === 'live' && deployment !== null ? deployment.published_at : null,
    discovered: discovered === null ? null : { inputs: discovered.inputs, outputs: discovered.outputs, waits: discovered.waits ?? [] },
    deployment:
      deployment === null
        ? null
        : {
            deployment_id: deployment.deployment_id,
            version: deployment.version,
            published_at: deployment.published_at,
            execute_url: deployment.execute_url,
            mcp_url: deployment.mcp_url,
            form_url: deployment.form_url ?? null,
            form: formView(deployment.form),
            events: { node_detail: deployment.node_detail !== false },
            inputs: deployment.inputs,
            outputs: deployment.outputs,
            waits: deployment.waits ?? [],
          },
  };
}

/** A form's settings as the owner sees them (never its salt or hash). */
export const formView = (
  f: FormSettings | null | undefined,
): { enabled: boolean; title: string | null; description: string | null } | null =>
  f ? { enabled: f.enabled, title: f.title, description: f.description } : null;

export interface CallerContract {
  deployment_id: string;
  inputs: ({ id: string; value_type: ContractInput['value_type']; value: RawValue } & AssetRestrictions)[];
  /** `value_type` where the contract recorded it (older ones did not); `list` for a list of files; `optional` when it may be absent. */
  outputs: { id: string; value_type?: OutputKind; list?: boolean; optional?: boolean }[];
  /** The visible wait nodes: while the execution waits on one, its `waiting` list gives the resume URL. */
  waits: Omit<ContractWait, 'visible'>[];
}

/** What a caller may see of a deployment: visible entries only, without the visibility flag. */
export function callerContract(d: Pick<Deployment, 'deployment_id' | 'inputs' | 'outputs' | 'waits'>): CallerContract {
  return {
    deployment_id: d.deployment_id,
    inputs: d.inputs.filter((i) => i.visible).map((i) => ({ id: i.id, value_type: i.value_type, value: i.value, ...restrictionsOf(i) })),
    outputs: d.outputs
      .filter((o) => o.visible)
      .map((o) => ({
        id: o.id,
        ...(o.value_type === undefined ? {} : { value_type: o.value_type }),
        ...(o.list === true ? { list: true } : {}),
        ...(o.optional === true ? { optional: true } : {}),
      })),
    waits: (d.waits ?? []).filter((w) => w.visible).map(({ visible: _visible, ...w }) => w),
  };
}
