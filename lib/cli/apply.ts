/**
 * `pipegate apply <file|dir>… [--dry-run] [--secrets-out FILE] [--concurrency N]`: pipelines as
 * code (contract §10). Makes the service match a set of pipeline files: prints the plan,
 * then for each pipeline pushes, runs its tests when its version needs them, and publishes
 * when every test passed and the live version or visibility differs from what the file asks.
 * Pipelines are applied side by side (a few at a time) and each prints one block when it ends.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { contentHash, validateDefinition } from '../../functions/core/pipeline';
import { isTerminal } from '../../functions/core/transitions';
import type { RawValue } from '../../functions/core/types';
import { readTargets, type ApplyFile, type FileProblem } from './apply-file';
import { compareOutputs, computePlan, predictPush, type Mismatch, type Plan, type PlannedRun, type PushOutcome } from './apply-plan';
import { describeConsumers, planConsumers, type ConsumersPlan } from './apply-consumers';
import { CredentialsFile } from './apply-credentials';
import type { Readiness, Run } from './client';
import { pollUntil, type Ctx } from './context';
import { EXIT, ServiceError, UnreachableError, UsageError } from './errors';
import { literal, plural, table, type Colors } from './output';
import { mcpUrlOf } from './commands/publish';

export interface ApplyOptions {
  dryRun?: boolean;
  secretsOut?: string;
  concurrency: number;
  /** Seconds to wait for one run before giving up on it. */
  timeout: number;
}

export const DEFAULT_CONCURRENCY = 4;

const wholeNumber =
  (what: string, min: number, max: number) =>
  (text: string): number => {
    const n = Number(text);
    if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${what} must be a whole number from ${min} to ${max}`);
    }
    return n;
  };

/** Arguments and options of `apply`; the program adds the action. */
export function configureApplyCommand(cmd: Command): Command {
  return cmd
    .description('make the service match pipeline files: push, run their tests, publish (pipelines as code)')
    .argument(
      '<paths...>',
      'pipeline files, or directories of them (*.json, *.yaml, *.yml directly inside); an asset input\'s value "@path" sends that file (relative to its pipeline file, at most 64 KiB)',
    )
    .option('--dry-run', 'print the plan only; change nothing')
    .option(
      '--secrets-out <file>',
      'write the API key and signing secret of first publishes, and the keys of consumers it creates, to this JSON file (mode 0600); they are printed nowhere',
    )
    .addOption(
      new Option('--concurrency <n>', 'pipelines applied at the same time')
        .default(DEFAULT_CONCURRENCY)
        .argParser(wholeNumber('--concurrency', 1, 16)),
    )
    .addOption(
      new Option('--timeout <seconds>', 'stop waiting for one run after this long')
        .default(600)
        .argParser(wholeNumber('--timeout', 1, 86_400)),
    );
}

export interface TestResult {
  name: string;
  /** False for the run with the current values that apply adds. */
  test: boolean;
  run_id: string;
  version: number;
  status: Run['status'];
  passed: boolean;
  inputs: Record<string, RawValue>;
  expected: Record<string, RawValue>;
  actual: Record<string, RawValue> | null;
  mismatches: Mismatch[];
  error_message: string | null;
}

export type Published = 'created' | 'updated' | 'unchanged' | 'skipped';

/** What apply did to one pipeline: the object `--json` prints per pipeline. */
export interface PipelineReport {
  pipeline_id: string;
  file: string;
  ok: boolean;
  plan: {
    push: PushOutcome;
    tests: { run: boolean; reason: string; runs: string[] };
    publish: { action: Plan['publish']['action']; reason: string };
    /** Null when the file names no consumers. */
    consumers: { create: string[]; update: string[]; unchanged: string[]; not_in_file: string[] } | null;
  } | null;
  pushed: PushOutcome | null;
  tests: { run: number; passed: number; failed: number; results: TestResult[] };
  published: Published;
  deployment_id: string | null;
  live_version: number | null;
  /** Owner secrets this apply set (names only), before pushing. */
  secrets_set: string[];
  /** Files asset inputs' `@path` values named (sent as data URIs; never their bytes here). */
  files: { input: string; path: string; bytes: number }[];
  /** Where the credentials of a first publish went; null when there were none. */
  secrets: 'saved' | 'not saved' | null;
  /** What apply did to the consumers the file names (keys only in `--secrets-out`); null: none named, or not reached. */
  consumers: { created: string[]; updated: string[]; unchanged: string[]; not_in_file: string[] } | null;
  error: { message: string; problems?: FileProblem[]; detail?: unknown } | null;
}

/** Runs `fn` over `items` with at most `limit` at once; results keep the items' order. */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

const isNotFound = (e: unknown): boolean => e instanceof ServiceError && e.status === 404;

function errorOf(e: unknown): NonNullable<PipelineReport['error']> {
  if (e instanceof ServiceError) {
    const problems = e.problems;
    if (problems.length > 0) return { message: e.message, problems };
    return { message: e.message, ...(e.body.detail !== undefined ? { detail: e.body.detail } : {}) };
  }
  if (e instanceof UnreachableError) return { message: e.message, detail: e.reason };
  return { message: e instanceof Error ? e.message : String(e) };
}

function planView(plan: Plan, consumers: ConsumersPlan | null): NonNullable<PipelineReport['plan']> {
  return {
    push: plan.push,
    tests: { run: plan.tests.run, reason: plan.tests.reason, runs: plan.tests.runs.map((r) => r.name) },
    publish: { action: plan.publish.action, reason: plan.publish.reason },
    consumers:
      consumers === null
        ? null
        : {
            create: consumers.create.map((c) => c.name),
            update: consumers.update.map((u) => u.name),
            unchanged: consumers.unchanged,
            not_in_file: consumers.not_in_file,
          },
  };
}

function emptyReport(file: ApplyFile): PipelineReport {
  return {
    pipeline_id: file.id,
    file: file.shown,
    ok: true,
    plan: null,
    pushed: null,
    tests: { run: 0, passed: 0, failed: 0, results: [] },
    published: 'skipped',
    deployment_id: null,
    live_version: null,
    secrets_set: [],
    files: file.files.map((f) => ({ input: f.input, path: f.shown, bytes: f.bytes })),
    secrets: null,
    consumers: null,
    error: null,
  };
}

interface Planned {
  file: ApplyFile;
  readiness: Readiness | null;
  plan: Plan | null;
  /** Null when the file names no consumers. */
  consumers: ConsumersPlan | null;
  error: unknown;
}

/** The consumers of the live deployment against the file's; null when the file names none. */
async function planConsumersOf(ctx: Ctx, file: ApplyFile, live: boolean): Promise<ConsumersPlan | null> {
  if (file.consumers.length === 0) return null;
  if (!live) return planConsumers(file.consumers, null);
  const listed = await ctx.client.listConsumers(file.id);
  return planConsumers(file.consumers, listed.body.consumers);
}

/** Readiness and the latest definition, to plan before pushing (and without pushing, for --dry-run). */
async function planOne(ctx: Ctx, file: ApplyFile): Promise<Planned> {
  try {
    const [readiness, latest] = await Promise.all([
      ctx.client.readiness(file.id).then(
        (r) => r.body,
        (e: unknown) => (isNotFound(e) ? null : Promise.reject(e)),
      ),
      ctx.client.getPipeline(file.id).then(
        (r) => r.body,
        (e: unknown) => (isNotFound(e) ? null : Promise.reject(e)),
      ),
    ]);
    let predicted: PushOutcome;
    if (latest === null) predicted = predictPush(null);
    else {
      const stored = validateDefinition(latest.definition, { maxNodes: Number.MAX_SAFE_INTEGER });
      const sameContent = stored.ok && contentHash(stored.definition) === contentHash(file.definition);
      predicted = predictPush({ version: latest.version, sameContent });
    }
    const consumers = await planConsumersOf(ctx, file, (readiness?.deployment ?? null) !== null);
    return { file, readiness, plan: computePlan(file, readiness, predicted), consumers, error: null };
  } catch (e) {
    // Failures that are not this pipeline's (no service, credentials refused) stop the whole apply.
    if (e instanceof UsageError || e instanceof UnreachableError || (e instanceof ServiceError && (e.status === 401 || e.status === 403)))
      throw e;
    return { file, readiness: null, plan: null, consumers: null, error: e };
  }
}

export function renderPlan(planned: readonly Planned[], c: Colors): string {
  const lines = [c.bold(`Plan (${plural(planned.length, 'pipeline')}):`)];
  for (const p of planned) {
    lines.push(`  ${c.bold(p.file.id)}  ${c.dim(`(${p.file.shown})`)}`);
    if (p.plan === null) {
      lines.push(`    ${c.red('cannot plan:')} ${errorOf(p.error).message}`);
      continue;
    }
    const { push, tests, publish } = p.plan;
    const pushText = push.created
      ? push.version === 1
        ? 'create, version 1'
        : `new version ${push.version}`
      : `unchanged at version ${push.version}`;
    const testNames = tests.runs.map((r) => (r.test ? `"${r.name}"` : r.name));
    const testsText = tests.run ? `run ${testNames.join(', ')} (${tests.reason})` : `skipped (${tests.reason})`;
    const publishText =
      publish.action === 'none'
        ? `none (${publish.reason})`
        : `${publish.action}${tests.run ? ' if every run passes' : ''} (${publish.reason})`;
    if (p.file.secrets.length > 0) lines.push(`    secrets  set ${p.file.secrets.map((s) => `${s.name} from $${s.fromEnv}`).join(', ')}`);
    if (p.file.files.length > 0)
      lines.push(`    files    ${p.file.files.map((f) => `${f.input} ← ${f.shown} (${f.bytes} bytes)`).join(', ')}`);
    lines.push(`    push     ${pushText}`);
    lines.push(`    runs     ${testsText}`);
    lines.push(`    publish  ${publishText}`);
    if (p.consumers !== null)
      lines.push(
        `    consumers ${describeConsumers(p.consumers)}${(p.readiness?.deployment ?? null) === null ? ' (after publishing)' : ''}`,
      );
  }
  return lines.join('\n');
}

const shownValue = (v: RawValue | undefined): string => (v === undefined ? '(none)' : literal(v));

function renderRun(r: TestResult, c: Colors): string[] {
  const label = r.test ? `test "${r.name}"` : r.name;
  if (r.passed) return [`  ${c.green('✔')} ${label}`];
  const lines = [`  ${c.red('✖')} ${label} failed  ${c.dim(`(run ${r.run_id})`)}`];
  if (Object.keys(r.inputs).length > 0)
    lines.push(
      `      inputs: ${Object.entries(r.inputs)
        .map(([k, v]) => `${k}=${literal(v)}`)
        .join(', ')}`,
    );
  if (r.status !== 'completed') lines.push(`      the run ${r.status}${r.error_message ? `: ${r.error_message}` : ''}`);
  else {
    const rows = r.mismatches.map((m) => [m.output, shownValue(m.expected), shownValue(m.actual)]);
    lines.push(
      ...table(['output', 'expected', 'actual'], rows, c)
        .split('\n')
        .map((l) => `      ${l}`),
    );
  }
  return lines;
}

interface Applied {
  report: PipelineReport;
  lines: string[];
  warnings: string[];
}

async function runOne(ctx: Ctx, id: string, run: PlannedRun, timeoutSeconds: number): Promise<TestResult> {
  const started = await ctx.client.startRun(id, run.inputs);
  const runId = started.body.run_id;
  const final = await pollUntil(
    () => ctx.client.getRun(id, runId),
    (r) => isTerminal(r.body.status),
    { sleep: ctx.sleep, timeoutMs: timeoutSeconds * 1000, what: `run ${runId} of ${id} (${run.test ? `test "${run.name}"` : run.name})` },
  );
  const r = final.body;
  const mismatches = r.status === 'completed' ? compareOutputs(run.expect, r.outputs) : [];
  return {
    name: run.name,
    test: run.test,
    run_id: runId,
    version: r.version,
    status: r.status,
    passed: r.status === 'completed' && mismatches.length === 0,
    inputs: run.inputs,
    expected: run.expect,
    actual: r.outputs,
    mismatches,
    error_message: r.error_message,
  };
}

async function applyOne(
  ctx: Ctx,
  planned: Planned,
  opts: ApplyOptions,
  secrets: CredentialsFile | null,
  status: (text: string) => void,
): Promise<Applied> {
  const { file, readiness } = planned;
  const c = ctx.out.c;
  const report = emptyReport(file);
  const lines = [`${c.bold(file.id)}  ${c.dim(`(${file.shown})`)}`];
  const warnings: string[] = [];
  const live = readiness?.deployment ?? null;
  report.deployment_id = live?.deployment_id ?? null;
  report.live_version = live?.version ?? null;
  const fail = (e: unknown) => {
    report.ok = false;
    report.error = errorOf(e);
    lines.push(`  ${c.red('✖')} ${report.error.message}`);
    for (const p of report.error.problems ?? []) lines.push(`      ${p.path}  ${p.reason}`);
    if (typeof report.error.detail === 'string') lines.push(`      ${report.error.detail}`);
  };
  if (planned.plan === null) {
    fail(planned.error);
    return { report, lines, warnings };
  }
  try {
    // Before the push, so that the push finds them and the runs that follow use them.
    for (const s of file.secrets) {
      status(`setting secret ${s.name}`);
      await ctx.client.setSecret(s.name, ctx.io.env[s.fromEnv] ?? '');
      report.secrets_set.push(s.name);
      lines.push(`  ${c.green('✔')} set secret ${s.name} from $${s.fromEnv}`);
    }
    status('pushing');
    const pushed = await ctx.client.push(file.id, file.definition);
    report.pushed = { version: pushed.body.version, created: pushed.body.created };
    for (const w of pushed.body.warnings ?? []) warnings.push(`warning: ${file.id}: ${w.path}: ${w.reason}`);
    const plan = computePlan(file, readiness, report.pushed);
    report.plan = planView(plan, planned.consumers);
    lines.push(
      `  ${c.green('✔')} ${pushed.body.created ? `pushed version ${pushed.body.version}` : `unchanged at version ${pushed.body.version}`}`,
    );

    if (plan.tests.run) {
      let n = 0;
      for (const run of plan.tests.runs) {
        status(`run ${++n}/${plan.tests.runs.length}`);
        const result = await runOne(ctx, file.id, run, opts.timeout);
        report.tests.results.push(result);
        report.tests.run += 1;
        if (result.passed) report.tests.passed += 1;
        else report.tests.failed += 1;
        lines.push(...renderRun(result, c));
      }
      if (report.tests.failed > 0) {
        report.ok = false;
        report.error = { message: `${plural(report.tests.failed, 'run')} of ${report.tests.run} failed; nothing was published` };
        lines.push(
          `  ${c.red('✖')} not published: ${plural(report.tests.failed, 'run')} failed; ${live ? `the live API keeps serving version ${live.version}` : 'nothing is live'}`,
        );
        return { report, lines, warnings };
      }
    } else {
      lines.push(`  ${c.dim('·')} no runs: ${plan.tests.reason}`);
    }

    if (plan.publish.action === 'none') {
      report.published = 'unchanged';
      lines.push(`  ${c.dim('·')} nothing to publish: ${plan.publish.reason}`);
      if (live) await applyConsumers(ctx, file, live.deployment_id, secrets, report, lines, status);
      return { report, lines, warnings };
    }
    status('publishing');
    const pub = await ctx.client.publish(file.id, plan.publish.body);
    const created = pub.status === 201;
    const p = pub.body;
    report.published = created ? 'created' : 'updated';
    report.deployment_id = p.deployment_id;
    report.live_version = p.version;
    const hidden = [
      ...p.inputs.filter((i) => !i.visible).map((i) => `input ${i.id}`),
      ...p.outputs.filter((o) => !o.visible).map((o) => `output ${o.id}`),
    ];
    lines.push(
      `  ${c.green('✔')} ${created ? 'published' : 'updated'}: version ${p.version} is live${hidden.length > 0 ? `, hiding ${hidden.join(', ')}` : ''}`,
    );
    lines.push(`      deployment   ${p.deployment_id}`);
    lines.push(`      execute URL  ${p.execute_url}`);
    lines.push(`      MCP URL      ${mcpUrlOf(p)}`);
    if (p.form_url) lines.push(`      form         ${p.form_url}`);
    if (p.api_key !== undefined || p.signing_secret !== undefined) {
      if (secrets) {
        try {
          await secrets.save(file.id, {
            deployment_id: p.deployment_id,
            api_key: p.api_key ?? '',
            signing_secret: p.signing_secret ?? '',
            execute_url: p.execute_url,
          });
        } catch (e) {
          report.secrets = 'not saved';
          throw new Error(
            `published, but its API key and signing secret could not be written to ${secrets.path} (${(e as Error).message}); issue new ones with: pipegate keys rotate ${file.id} and pipegate keys rotate ${file.id} --signing-secret`,
          );
        }
        report.secrets = 'saved';
        lines.push(`      API key and signing secret written to ${secrets.path}`);
      } else {
        report.secrets = 'not saved';
        // Said once, on stderr with the other warnings (stdout keeps the result).
        warnings.push(
          `warning: the API key and signing secret of ${file.id} were not saved (no --secrets-out) and cannot be shown again; issue new ones with: pipegate keys rotate ${file.id} (and --signing-secret)`,
        );
      }
    }
    await applyConsumers(ctx, file, p.deployment_id, secrets, report, lines, status);
  } catch (e) {
    if (e instanceof UsageError) throw e;
    fail(e);
  }
  return { report, lines, warnings };
}

/**
 * Makes the live deployment's consumers match the file (read afresh: the plan may be minutes
 * old). Each new key is written to `--secrets-out` as soon as it exists; apply refused to start
 * without one when it planned to create keys, and checks again here.
 */
async function applyConsumers(
  ctx: Ctx,
  file: ApplyFile,
  deploymentId: string,
  secrets: CredentialsFile | null,
  report: PipelineReport,
  lines: string[],
  status: (text: string) => void,
): Promise<void> {
  if (file.consumers.length === 0) return;
  const c = ctx.out.c;
  status('consumers');
  const plan = await planConsumersOf(ctx, file, true);
  if (plan === null) return;
  const done: NonNullable<PipelineReport['consumers']> = {
    created: [],
    updated: [],
    unchanged: plan.unchanged,
    not_in_file: plan.not_in_file,
  };
  report.consumers = done;
  if (plan.ambiguous.length > 0) {
    throw new Error(
      `more than one consumer is named ${plan.ambiguous.join(', ')}; apply matches consumers by name: rename or revoke the extra ones (pipegate consumers list ${file.id})`,
    );
  }
  if (plan.create.length > 0 && secrets === null) {
    throw new Error(`consumers ${plan.create.map((d) => d.name).join(', ')} not created: their keys can only be written to --secrets-out`);
  }
  for (const u of plan.update) {
    await ctx.client.updateConsumer(file.id, u.consumer_id, u.body);
    done.updated.push(u.name);
    lines.push(`  ${c.green('✔')} consumer ${u.name}: updated ${Object.keys(u.body).join(', ')}`);
  }
  for (const d of plan.create) {
    const made = await ctx.client.createConsumer(file.id, { name: d.name, ...d.fields });
    try {
      await secrets?.saveConsumer(file.id, d.name, {
        deployment_id: deploymentId,
        consumer_id: made.body.consumer_id,
        api_key: made.body.api_key,
      });
    } catch (e) {
      throw new Error(
        `consumer ${d.name} was created, but its key could not be written to ${secrets?.path ?? '--secrets-out'} (${(e as Error).message}); issue a new one with: pipegate consumers rotate ${file.id} ${made.body.consumer_id}`,
      );
    }
    done.created.push(d.name);
    lines.push(`  ${c.green('✔')} consumer ${d.name}: created, key written to ${secrets?.path ?? ''}`);
  }
  if (plan.unchanged.length > 0) lines.push(`  ${c.dim('·')} consumers unchanged: ${plan.unchanged.join(', ')}`);
  if (plan.not_in_file.length > 0)
    lines.push(`  ${c.dim('·')} consumers not in the file, left as they are: ${plan.not_in_file.join(', ')}`);
}

function renderSummary(reports: readonly PipelineReport[], c: Colors): string {
  const count = (f: (r: PipelineReport) => boolean) => reports.filter(f).length;
  const parts = [
    plural(reports.length, 'pipeline'),
    `${count((r) => r.published === 'created' || r.published === 'updated')} published`,
    `${count((r) => r.ok && r.published === 'unchanged')} unchanged`,
    `${count((r) => !r.ok)} failed`,
  ];
  const rows = reports.map((r) => [
    r.pipeline_id,
    r.pushed ? `${r.pushed.version}${r.pushed.created ? ' (new)' : ''}` : '-',
    r.tests.run > 0 ? `${r.tests.passed}/${r.tests.run} passed` : '-',
    r.ok ? r.published : c.red(r.published === 'skipped' ? 'failed' : r.published),
    r.live_version !== null ? String(r.live_version) : '-',
    r.deployment_id ?? '-',
  ]);
  return [c.bold(`Summary: ${parts.join(' · ')}`), table(['PIPELINE', 'VERSION', 'RUNS', 'PUBLISH', 'LIVE', 'DEPLOYMENT'], rows, c)].join(
    '\n',
  );
}

function reportInvalid(ctx: Ctx, invalid: readonly { shown: string; problems: FileProblem[] }[]): number {
  const { out } = ctx;
  const message = `${plural(invalid.length, 'pipeline file')} cannot be applied; nothing was changed`;
  const lines = [`${out.e.red('error:')} ${message}`];
  for (const f of invalid) {
    lines.push(`  ${f.shown} (${plural(f.problems.length, 'problem')}):`);
    const w = Math.max(...f.problems.map((p) => p.path.length));
    for (const p of f.problems) lines.push(`    ${p.path.padEnd(w)}  ${p.reason}`);
  }
  out.note(lines.join('\n'));
  out.document({ ok: false, error: message, files: invalid.map((f) => ({ file: f.shown, problems: f.problems })) });
  return EXIT.usage;
}

/** `pipegate apply <file|dir>… [--dry-run] [--secrets-out FILE] [--concurrency N] [--timeout S]` */
export async function apply(ctx: Ctx, paths: readonly string[], opts: ApplyOptions): Promise<number> {
  const { out } = ctx;
  const { files, invalid } = readTargets(paths, ctx.io.cwd);
  if (invalid.length > 0) return reportInvalid(ctx, invalid);
  const unsetSecrets = files.flatMap((f) =>
    f.secrets.filter((s) => (ctx.io.env[s.fromEnv] ?? '') === '').map((s) => ({ file: f.shown, secret: s.name, from_env: s.fromEnv })),
  );
  const unset = unsetSecrets.map((u) => `${u.file}: secrets.${u.secret} reads $${u.from_env}, which is not set`);
  // A plan needs no secret value (a merge request's preview job has none): it says which are unset.
  if (unset.length > 0 && !opts.dryRun) {
    throw new UsageError(
      `${plural(unset.length, 'secret')} cannot be set:\n  ${unset.join('\n  ')}`,
      'export the environment variables the files name (from_env), then apply again',
    );
  }
  const secrets = opts.secretsOut !== undefined && !opts.dryRun ? new CredentialsFile(opts.secretsOut, ctx.io.cwd) : null;
  const limit = Math.max(1, opts.concurrency);

  const progress = out.spinner();
  const show = (text: string) => {
    if (progress.interactive) progress.update(text);
  };
  let planned: Planned[];
  try {
    show(`planning ${plural(files.length, 'pipeline')}…`);
    planned = await mapBounded(files, limit, (f) => planOne(ctx, f));
  } finally {
    progress.stop();
  }
  out.line(renderPlan(planned, out.c));
  const newKeys = planned.flatMap((p) => (p.consumers?.create ?? []).map((d) => `${p.file.id}: ${d.name}`));
  if (newKeys.length > 0 && !opts.dryRun && secrets === null) {
    throw new UsageError(
      `${plural(newKeys.length, 'consumer')} would get a new key (${newKeys.join(', ')}), and keys are written only to --secrets-out; nothing was changed`,
      "add --secrets-out FILE (a file readable by you only, e.g. in your CI runner's temp dir)",
    );
  }

  if (opts.dryRun) {
    const reports = planned.map((p) => {
      const r = emptyReport(p.file);
      r.deployment_id = p.readiness?.deployment?.deployment_id ?? null;
      r.live_version = p.readiness?.deployment?.version ?? null;
      if (p.plan === null) {
        r.ok = false;
        r.error = errorOf(p.error);
      } else {
        r.plan = planView(p.plan, p.consumers);
        r.published = p.plan.publish.action === 'none' ? 'unchanged' : 'skipped';
      }
      return r;
    });
    out.line('');
    if (unset.length > 0) {
      out.line(
        `${plural(unset.length, 'secret')} not set here (an apply needs ${unset.length === 1 ? 'it' : 'them'}; the plan does not):\n  ${unset.join('\n  ')}`,
      );
    }
    out.line(out.c.dim('dry run: nothing was pushed, run or published'));
    out.document({ ok: reports.every((r) => r.ok), dry_run: true, secrets_unset: unsetSecrets, pipelines: reports });
    return reports.every((r) => r.ok) ? EXIT.ok : EXIT.failure;
  }

  out.line('');
  const activity = new Map<string, string>();
  let finished = 0;
  const redraw = () => {
    if (!progress.interactive) return;
    const now = [...activity].map(([id, what]) => `${id}: ${what}`).join(' · ');
    progress.update(`applied ${finished}/${files.length}${now ? ` · ${now}` : ''}`);
  };
  let results: Applied[];
  try {
    results = await mapBounded(planned, limit, async (p) => {
      const applied = await applyOne(ctx, p, opts, secrets, (what) => {
        activity.set(p.file.id, what);
        redraw();
      });
      activity.delete(p.file.id);
      finished += 1;
      // One block per pipeline, written whole, so pipelines applied together never interleave.
      progress.stop();
      out.line(`${applied.lines.join('\n')}\n`);
      for (const w of applied.warnings) out.note(out.e.yellow(w));
      redraw();
      return applied;
    });
  } finally {
    progress.stop();
  }
  const reports = results.map((r) => r.report);
  out.line(renderSummary(reports, out.c));
  const ok = reports.every((r) => r.ok);
  out.document({ ok, dry_run: false, pipelines: reports });
  return ok ? EXIT.ok : EXIT.failure;
}
