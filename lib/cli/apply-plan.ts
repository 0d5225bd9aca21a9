/**
 * What `pipegate apply` will do to one pipeline, decided from the file, the pipeline's
 * readiness and the version the push gave (or would give). Pure: the same facts always make
 * the same plan, so a dry run and a real apply agree.
 */
import type { RawValue } from '../../functions/core/types';
import type { ApplyFile, ApplyTest } from './apply-file';
import type { Readiness } from './client';

export interface PushOutcome {
  version: number;
  /** The push made a new version (false: the content equals the latest version). */
  created: boolean;
}

/** One run apply starts: a test of the file, or the run with the file's current values. */
export interface PlannedRun {
  name: string;
  inputs: Record<string, RawValue>;
  expect: Record<string, RawValue>;
  /** False for the run with the current values that apply adds (see `scheduleRuns`). */
  test: boolean;
}

export type PublishAction = 'create' | 'update' | 'none';

export interface VisibilityBody {
  inputs: Record<string, { visible: boolean }>;
  outputs: Record<string, { visible: boolean }>;
  /** Wait nodes: only when the file has any (a service from before them takes no `waits`). */
  waits?: Record<string, { visible: boolean }>;
  form?: ApplyFile['form'];
  events?: ApplyFile['events'];
}

export interface Plan {
  pipeline_id: string;
  push: PushOutcome;
  tests: { run: boolean; reason: string; runs: PlannedRun[] };
  publish: { action: PublishAction; reason: string; changes: string[]; body: VisibilityBody };
}

export const CURRENT_VALUES_RUN = 'run with the current values';

const sameValues = (file: ApplyFile, inputs: Record<string, RawValue>): boolean =>
  Object.entries(inputs).every(([id, value]) => file.inputs.find((i) => i.id === id)?.value === value);

/**
 * The runs to start, in order. Publishing snapshots the input values of the latest finished
 * run as the API's published values, so the last run must use the file's own values: a test
 * that does (no overrides, or overrides equal to the current values) goes last; when no test
 * does, a run with the current values follows the tests. Without tests that run is the only one.
 */
export function scheduleRuns(file: ApplyFile): PlannedRun[] {
  const runs: PlannedRun[] = file.tests.map((t: ApplyTest) => ({ name: t.name, inputs: t.inputs, expect: t.expect, test: true }));
  let last = -1;
  runs.forEach((r, i) => {
    if (sameValues(file, r.inputs)) last = i;
  });
  if (last < 0) return [...runs, { name: CURRENT_VALUES_RUN, inputs: {}, expect: {}, test: false }];
  const [closing] = runs.splice(last, 1);
  return closing ? [...runs, closing] : runs;
}

/** The publish body: every input and output of the file, visible unless the file hides it. */
export function visibilityBody(file: ApplyFile): VisibilityBody {
  // Explicit for every entry: the service keeps an unmentioned entry's previous visibility,
  // so leaving one out would keep a hide the file no longer asks for.
  const inputs: VisibilityBody['inputs'] = {};
  const outputs: VisibilityBody['outputs'] = {};
  for (const i of file.inputs) inputs[i.id] = { visible: file.visibility.inputs[i.id] ?? true };
  for (const o of file.outputs) outputs[o] = { visible: file.visibility.outputs[o] ?? true };
  const waits: NonNullable<VisibilityBody['waits']> = {};
  for (const w of file.waits) waits[w] = { visible: file.visibility.waits[w] ?? true };
  return {
    inputs,
    outputs,
    ...(file.waits.length > 0 ? { waits } : {}),
    ...(file.form ? { form: file.form } : {}),
    ...(file.events ? { events: file.events } : {}),
  };
}

/** Where the live visibility differs from what the file asks, as "hide input x" / "show output y". */
export function visibilityChanges(deployment: NonNullable<Readiness['deployment']>, body: VisibilityBody): string[] {
  const changes: string[] = [];
  for (const [kind, live, wanted] of [
    ['input', deployment.inputs, body.inputs],
    ['output', deployment.outputs, body.outputs],
    ['wait', deployment.waits ?? [], body.waits ?? {}],
  ] as const) {
    for (const entry of live) {
      const want = wanted[entry.id]?.visible;
      if (want !== undefined && want !== entry.visible) changes.push(`${want ? 'show' : 'hide'} ${kind} ${entry.id}`);
    }
  }
  const form = body.form;
  if (form !== undefined) {
    const live = deployment.form ?? null;
    if ((live?.enabled ?? false) !== form.enabled) changes.push(form.enabled ? 'turn the web form on' : 'turn the web form off');
    if (form.title !== undefined && form.title !== (live?.title ?? null)) changes.push("change the web form's title");
    if (form.description !== undefined && form.description !== (live?.description ?? null))
      changes.push("change the web form's description");
  }
  const detail = body.events?.node_detail;
  if (detail !== undefined && detail !== (deployment.events?.node_detail ?? true))
    changes.push(detail ? "show nodes in callers' event streams" : "show only counts in callers' event streams");
  return changes;
}

/** The latest run finished successfully on `version` with the file's values, so publishing needs no new run. */
function ranWithFileValues(file: ApplyFile, r: Readiness | null, version: number): boolean {
  if (r === null || !r.publishable || r.latest_run === null || r.discovered === null) return false;
  if (r.latest_run.status !== 'completed' || r.latest_run.version !== version) return false;
  return file.inputs.every((i) => r.discovered?.inputs.find((d) => d.id === i.id)?.value === i.value);
}

/**
 * The plan for one pipeline. Tests run whenever a publish of another version is due (the
 * version has never been live, so nothing vouches for it; a version whose tests failed before
 * is tested again rather than published); a visibility-only change publishes from the latest
 * run when that run already used this version and the file's values. Nothing runs and nothing
 * is published when the live version and visibility are what the file asks.
 */
export function computePlan(file: ApplyFile, readiness: Readiness | null, pushed: PushOutcome): Plan {
  const body = visibilityBody(file);
  const dep = readiness?.deployment ?? null;
  const V = pushed.version;
  const versionDiffers = dep === null || dep.version !== V;
  const changes = dep === null ? [] : visibilityChanges(dep, body);

  let action: PublishAction;
  let reason: string;
  if (dep === null) {
    action = 'create';
    reason = 'not published yet';
  } else if (versionDiffers) {
    action = 'update';
    reason = `live version ${dep.version} → ${V}${changes.length > 0 ? `; ${changes.join(', ')}` : ''}`;
  } else if (changes.length > 0) {
    action = 'update';
    reason = changes.join(', ');
  } else {
    action = 'none';
    reason = `version ${V} is live with the visibility the file asks`;
  }

  let tests: Plan['tests'];
  if (action === 'none') {
    tests = { run: false, reason: `version ${V} is live`, runs: [] };
  } else if (!versionDiffers && ranWithFileValues(file, readiness, V)) {
    tests = { run: false, reason: `version ${V} is live and its latest run succeeded; only the visibility changes`, runs: [] };
  } else {
    const why = pushed.created
      ? `version ${V} is new`
      : dep === null
        ? `version ${V} has never been published`
        : versionDiffers
          ? `version ${V} is not the live version`
          : `version ${V} needs a successful run with the file's values before publishing`;
    tests = { run: true, reason: why, runs: scheduleRuns(file) };
  }
  return { pipeline_id: file.id, push: pushed, tests, publish: { action, reason, changes, body } };
}

/** Push outcome predicted without pushing: the service keeps the version when the content is equal. */
export function predictPush(latest: { version: number; sameContent: boolean } | null): PushOutcome {
  if (latest === null) return { version: 1, created: true };
  return latest.sameContent ? { version: latest.version, created: false } : { version: latest.version + 1, created: true };
}

export interface Mismatch {
  output: string;
  expected: RawValue;
  /** Undefined when the run produced no such output. */
  actual: RawValue | undefined;
}

/** Every expected output that the run's outputs do not match exactly (same type, same value). */
export function compareOutputs(expect: Record<string, RawValue>, actual: Record<string, RawValue> | null): Mismatch[] {
  const out: Mismatch[] = [];
  for (const [id, expected] of Object.entries(expect)) {
    const got = actual !== null && Object.hasOwn(actual, id) ? actual[id] : undefined;
    if (got !== expected) out.push({ output: id, expected, actual: got });
  }
  return out;
}
