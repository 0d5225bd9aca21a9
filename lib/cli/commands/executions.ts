/**
 * The owner's view of a live API from the command line: `executions`, `show`, `cancel`,
 * `redeliver`, `usage`, and the caller's `result`.
 */
import { resolve } from 'node:path';
import type { ExecutionList, OwnerExecution } from '../client';
import { downloadAll, planDownloads } from '../downloads';
import { callerKey, type Ctx } from '../context';
import { UsageError } from '../errors';
import { checkPipelineId } from '../files';
import { duration, expiredValuesLine, fields, showValue, table, waitingLines, type Colors } from '../output';

const when = (iso: string | null | undefined): string => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '');
const paintStatus = (c: Colors, s: string): string =>
  s === 'completed' || s === 'delivered'
    ? c.green(s)
    : s === 'failed' || s === 'cancelled' || s === 'dead_lettered'
      ? c.red(s)
      : c.yellow(s);
const oneLine = (s: string | null | undefined, max = 60): string => {
  if (!s) return '';
  const flat = s.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

export interface ExecutionsOptions {
  status?: string;
  limit?: number;
  since?: string;
  watch?: boolean;
  /** Seconds between refreshes with --watch. */
  interval?: number;
}

function callbackCell(c: ExecutionList['executions'][number]['callback'], colors: Colors): string {
  if (c === null) return '';
  const last = c.last_status !== null ? ` ${c.last_status}` : c.last_error ? ` ${oneLine(c.last_error, 24)}` : '';
  return `${paintStatus(colors, c.outcome)} ×${c.attempts}${last}`;
}

function executionsTable(list: ExecutionList, c: Colors): string {
  return table(
    ['EXECUTION', 'STATUS', 'SOURCE', 'CREATED', 'DURATION', 'CALLBACK', 'ERROR'],
    list.executions.map((e) => [
      e.execution_id,
      paintStatus(c, e.status),
      e.source ?? '-',
      when(e.created_at),
      duration(e.completion_duration),
      callbackCell(e.callback, c),
      oneLine(e.error_message),
    ]),
    c,
  );
}

/** `pipegate executions <pipeline> [--status S] [--limit N] [--since T] [--watch]` */
export async function executions(ctx: Ctx, pipeline: string, opts: ExecutionsOptions): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const { out, client } = ctx;
  const query = {
    ...(opts.status !== undefined ? { status: opts.status } : {}),
    ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
    ...(opts.since !== undefined ? { since: opts.since } : {}),
  };
  if (!opts.watch) {
    const { body, raw } = await client.listExecutions(pipeline, query);
    out.document(raw);
    if (out.json) return 0;
    if (body.executions.length === 0) {
      out.line(`${pipeline} has no executions${opts.status ? ` with status ${opts.status}` : ''} yet.`);
      return 0;
    }
    out.line(executionsTable(body, out.c));
    if (body.next_cursor) out.note(out.e.dim(`showing the newest ${body.executions.length}; --limit shows more (up to 100)`));
    out.note(out.e.dim(`details: pipegate show ${pipeline} <execution>`));
    return 0;
  }

  // --watch: the table again every interval until Ctrl-C, redrawn in place on a terminal; Ctrl-C
  // ends the wait between refreshes at once, however long the interval.
  const interrupted = new AbortController();
  const stop = ctx.onInterrupt(() => interrupted.abort());
  const tty = ctx.io.stdout.isTTY === true && !out.json;
  try {
    while (!interrupted.signal.aborted) {
      const { body, raw } = await client.listExecutions(pipeline, query);
      if (interrupted.signal.aborted) break;
      if (out.json) ctx.io.stdout.write(`${JSON.stringify(raw)}\n`);
      else {
        const text = body.executions.length === 0 ? `${pipeline} has no executions yet.` : executionsTable(body, out.c);
        const stamp = out.c.dim(`${pipeline} · every ${opts.interval ?? 2} s · ${when(new Date().toISOString())} · Ctrl-C to stop`);
        ctx.io.stdout.write(`${tty ? '\x1b[H\x1b[2J' : ''}${stamp}\n${text}\n${tty ? '' : '\n'}`);
      }
      await ctx.sleep((opts.interval ?? 2) * 1000, interrupted.signal);
    }
  } finally {
    stop();
  }
  return 0;
}

function traceLines(e: OwnerExecution, c: Colors): string {
  const trace = e.trace ?? [];
  return table(
    ['NODE', 'TYPE', 'OUTCOME', 'STARTED', 'DURATION', 'DETAIL'],
    trace.map((t) => [
      t.node,
      t.type,
      t.outcome === 'completed' ? c.green(t.outcome) : t.outcome === 'failed' ? c.red(t.outcome) : c.dim(t.outcome),
      t.started_at ? t.started_at.slice(11, 23) : '',
      duration(t.duration_ms),
      t.outcome === 'failed'
        ? oneLine(t.error, 100)
        : t.item_errors && t.item_errors.length > 0
          ? // A map whose failed items were skipped (on_item_error "skip"): which, and the first reason.
            oneLine(`items ${t.item_errors.map((x) => x.index).join(', ')} failed: ${t.item_errors[0]?.error ?? ''}`, 100)
          : oneLine(t.preview, 60),
    ]),
    c,
  );
}

function deliveryLines(e: OwnerExecution, c: Colors): string[] {
  const d = e.callback_delivery;
  if (!e.callback || !d) return [];
  const lines = [
    `${c.bold('callback')} ${e.callback}  ${paintStatus(c, d.outcome)} after ${d.attempts} ${d.attempts === 1 ? 'attempt' : 'attempts'}  ${c.dim(`webhook-id ${d.webhook_id}`)}`,
  ];
  const log = d.log ?? [];
  if (log.length > 0) {
    lines.push(
      table(
        ['ATTEMPT', 'AT', 'ANSWER', 'TOOK', ''],
        log.map((a, i) => [
          String(d.attempts - log.length + i + 1),
          when(a.at),
          a.status !== null ? (a.status < 300 ? c.green(String(a.status)) : c.red(String(a.status))) : c.red(oneLine(a.error, 60)),
          duration(a.duration_ms),
          a.redelivery ? c.dim('redelivery') : '',
        ]),
        c,
      ),
    );
  }
  if (d.outcome === 'pending' && d.next_attempt_at) lines.push(c.dim(`next attempt at ${when(d.next_attempt_at)}`));
  return lines;
}

/** `pipegate show <pipeline> <execution>`: the execution, its node trace and its callback attempts. */
export async function show(ctx: Ctx, pipeline: string, executionId: string): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const { out, client } = ctx;
  const { body: e, raw } = await client.getExecution(pipeline, executionId);
  out.document(raw);
  if (out.json) return 0;
  const c = out.c;
  const hidden = new Set(e.hidden_inputs ?? []);
  out.line(
    `${c.bold(e.kind === 'run' ? 'run' : 'execution')} ${e.execution_id}  ${paintStatus(c, e.status)}  ${c.dim(`${pipeline} version ${e.version}`)}`,
  );
  const times: [string, string][] = [
    ['created', when(e.created_at)],
    ['started', when(e.started_at)],
    ['completed', when(e.completed_at)],
    ['duration', duration(e.completion_duration)],
    ['error', e.error_message ?? ''],
  ];
  out.line(
    fields(
      times.filter(([, v]) => v !== ''),
      c,
    ),
  );
  const expired = expiredValuesLine(e.values_expired);
  if (expired) out.line(c.yellow(expired));
  for (const l of waitingLines(e.waiting, c)) out.line(l);
  if (e.failed_node) {
    const f = e.failed_node;
    out.line(`${c.red('failed at')} ${c.bold(f.node)}${f.http_status !== null ? ` (HTTP ${f.http_status})` : ''}: ${f.error ?? ''}`);
  }
  const inputs = Object.entries(e.inputs);
  if (inputs.length > 0) {
    out.line(c.bold('inputs'));
    out.line(
      fields(
        inputs.map(
          ([k, val]) => [k, `${showValue(val)}${hidden.has(k) ? c.dim('  (hidden: callers cannot see or set it)') : ''}`] as const,
        ),
        c,
      ),
    );
  }
  const outputs = Object.entries(e.outputs ?? {});
  if (outputs.length > 0) {
    const visible = e.visible_outputs === null ? null : new Set(e.visible_outputs);
    out.line(c.bold('outputs'));
    out.line(
      fields(
        outputs.map(([k, val]) => [k, `${showValue(val)}${visible && !visible.has(k) ? c.dim('  (hidden)') : ''}`] as const),
        c,
      ),
    );
  }
  if (e.trace) {
    out.line(c.bold('trace'));
    out.line(traceLines(e, c));
    if (e.trace_truncated) out.line(c.dim('(previews were cut to keep the record small)'));
  } else if (e.status === 'pending' || e.status === 'running') {
    out.line(c.dim('trace: shown once the execution has finished'));
  }
  for (const l of deliveryLines(e, c)) out.line(l);
  if (e.status === 'pending' || e.status === 'running') out.note(out.e.dim(`cancel it: pipegate cancel ${pipeline} ${e.execution_id}`));
  else if (e.callback_delivery && e.callback_delivery.outcome !== 'pending') {
    out.note(out.e.dim(`send the callback again: pipegate redeliver ${pipeline} ${e.execution_id}`));
  }
  return 0;
}

/**
 * `pipegate cancel <pipeline> <execution>` (owner: a run or an API execution) or
 * `pipegate cancel <execution> --key K` (caller).
 */
export async function cancel(ctx: Ctx, first: string, second: string | undefined, opts: { key?: string }): Promise<number> {
  const { out, client } = ctx;
  if (second === undefined) {
    const key = callerKey(ctx, opts.key);
    if (key === undefined) {
      throw new UsageError(
        'cancel needs the pipeline and the execution',
        'pipegate cancel <pipeline> <execution> (as the owner), or pipegate cancel <execution> --key <api key> (as a caller)',
      );
    }
    const { body, raw } = await client.callerCancel(first, key);
    out.document(raw);
    out.line(`execution ${out.c.bold(body.execution_id)} ${paintStatus(out.c, body.status)}`);
    return 0;
  }
  checkPipelineId(first, 'pipeline');
  const { body, raw } = await client.cancelExecution(first, second);
  out.document(raw);
  out.line(`${body.kind === 'run' ? 'run' : 'execution'} ${out.c.bold(body.execution_id)} of ${first} ${paintStatus(out.c, body.status)}`);
  if (body.callback) out.note(out.e.dim(`its callback says so; follow it: pipegate show ${first} ${body.execution_id}`));
  return 0;
}

/** `pipegate redeliver <pipeline> <execution>`: one new attempt, same webhook-id. */
export async function redeliver(ctx: Ctx, pipeline: string, executionId: string): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const { out, client } = ctx;
  const { body, raw } = await client.redeliver(pipeline, executionId);
  out.document(raw);
  out.line(`callback of ${out.c.bold(executionId)} queued again (attempt ${body.attempts + 1}, webhook-id ${body.webhook_id})`);
  out.note(out.e.dim(`see how it went: pipegate show ${pipeline} ${executionId}`));
  return 0;
}

/** `pipegate usage <pipeline>`: finished executions by status and p50/p95, last hour and day. */
export async function usage(ctx: Ctx, pipeline: string): Promise<number> {
  checkPipelineId(pipeline, 'pipeline');
  const { out, client } = ctx;
  const { body, raw } = await client.usage(pipeline);
  out.document(raw);
  if (out.json) return 0;
  const ms = (n: number | null) => (n === null ? '' : `≤ ${duration(n)}`);
  out.line(
    table(
      ['WINDOW', 'TOTAL', 'COMPLETED', 'FAILED', 'CANCELLED', 'P50', 'P95'],
      (
        [
          ['last hour', body.last_hour],
          ['last day', body.last_day],
        ] as const
      ).map(([label, w]) => [
        label,
        String(w.total),
        String(w.by_status.completed ?? 0),
        String(w.by_status.failed ?? 0),
        String(w.by_status.cancelled ?? 0),
        ms(w.p50_ms),
        ms(w.p95_ms),
      ]),
      out.c,
    ),
  );
  if (body.by_consumer.length > 0) {
    out.line('');
    out.line(
      table(
        ['CONSUMER (LAST DAY)', 'ACCEPTED', 'RATE 429', 'QUOTA 429', 'COMPLETED', 'FAILED', 'CANCELLED', 'P50', 'P95'],
        body.by_consumer.map((c) => [
          c.consumer_id === null ? '(deployment key)' : `${c.name ?? ''} ${out.c.dim(c.consumer_id)}`,
          String(c.last_day.accepted),
          String(c.last_day.refused_rate),
          String(c.last_day.refused_quota),
          String(c.last_day.by_status.completed ?? 0),
          String(c.last_day.by_status.failed ?? 0),
          String(c.last_day.by_status.cancelled ?? 0),
          ms(c.last_day.p50_ms),
          ms(c.last_day.p95_ms),
        ]),
        out.c,
      ),
    );
  }
  return 0;
}

export interface ResultOptions {
  key?: string;
  /** Save every ASSET output into this directory. */
  download?: string;
  /** With download: replace files that exist. */
  force?: boolean;
}

/** `pipegate result <execution> --key K [--download DIR [--force]]`: the caller's result of an execution. */
export async function result(ctx: Ctx, executionId: string, opts: ResultOptions): Promise<number> {
  const key = callerKey(ctx, opts.key);
  if (key === undefined) {
    throw new UsageError("result needs the deployment's API key", 'pass --key <api key> or set PIPEGATE_API_KEY');
  }
  const { out, client } = ctx;
  const { body: r, raw } = await client.executionResult(executionId, key);
  out.document(raw);
  if (r.status === 'completed') {
    out.line(`${out.c.green('✔')} execution ${executionId} completed in ${duration(r.completion_duration ?? 0)}`);
    const data = Object.entries(r.response_data);
    if (data.length > 0)
      out.line(
        fields(
          data.map(([k, val]) => [k, showValue(val.value)] as const),
          out.c,
        ),
      );
    if (opts.download !== undefined) {
      const planned = planDownloads(r.response_data, resolve(ctx.io.cwd, opts.download));
      if (planned.length === 0) {
        out.note(`execution ${executionId} has no ASSET outputs; nothing to download`);
        return 0;
      }
      const written = await downloadAll(ctx, executionId, opts.download, planned, opts.force === true);
      const pairs = planned.map((p, i) => [p.output, `${written[i] ?? ''}  ${out.c.dim(`(${p.mediaType}, ${p.bytes} bytes)`)}`] as const);
      if (out.json) for (const [k, path] of pairs) out.note(`saved ${k}: ${path}`);
      else {
        out.line(out.c.bold('saved'));
        out.line(fields(pairs, out.c));
      }
    }
    return 0;
  }
  out.note(`${out.e.red('✖')} execution ${executionId} ${r.status}${r.error_message ? `: ${r.error_message}` : ''}`);
  return 1;
}
