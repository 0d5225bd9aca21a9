/**
 * The owner's execution commands and the waits' Ctrl-C against a scripted fake of the service:
 * what they send, print and exit with. (test/e2e/owner-story.test.ts plays them for real.)
 */
import { runCli } from '../../../lib/cli/program';
import type { CliIO } from '../../../lib/cli/output';

const BASE = 'http://127.0.0.1:3999';
const DEP = '6f1c0f7e-2a55-4d1e-9a53-0a2f3c4b5d6e';
const EXE = '0f8fad5b-d9cb-469f-a165-70867728950e';

type Script = (method: string, path: string) => [number, unknown] | undefined;

async function cli(args: string[], script: Script, opts: { interruptAfterPolls?: number; ctrlCDuringSleep?: boolean } = {}) {
  const paths: string[] = [];
  let stdout = '';
  let stderr = '';
  let interrupt: (() => void) | undefined;
  let polls = 0;
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const method = init?.method ?? 'GET';
    paths.push(`${method} ${url.pathname}${url.search}`);
    const [status, body] = script(method, url.pathname + url.search) ?? [599, { error: 'unscripted' }];
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { PIPEGATE_URL: BASE, PIPEGATE_OWNER_TOKEN: 'pgo_test' },
    cwd: '/',
    fetch: fakeFetch,
    // Each sleep is one poll or refresh; the user presses Ctrl-C after the given number.
    sleep: async (_ms, signal) => {
      polls++;
      if (opts.interruptAfterPolls !== undefined && polls >= opts.interruptAfterPolls) interrupt?.();
      if (opts.ctrlCDuringSleep) {
        // A long sleep that only an abort ends; the user presses Ctrl-C while it runs.
        const aborted = new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true }));
        setImmediate(() => interrupt?.());
        await aborted;
      }
    },
    onInterrupt: (handler) => {
      interrupt = handler;
      return () => {
        interrupt = undefined;
      };
    },
  };
  const code = await runCli(args, io, {});
  return { code, stdout, stderr, paths };
}

const row = (status: string, extra: Record<string, unknown> = {}) => ({
  execution_id: EXE,
  status,
  created_at: '2026-11-22T10:00:00.000Z',
  started_at: null,
  completed_at: null,
  completion_duration: null,
  error_message: null,
  callback: null,
  ...extra,
});

describe('waits and Ctrl-C', () => {
  it('execute --wait prints the id first; Ctrl-C exits 130 saying how to get the result and how to cancel', async () => {
    // Act
    const r = await cli(
      ['execute', DEP, '--key', 'pgk_k', '--wait'],
      (method, path) => {
        if (method === 'POST') return [202, { status: 'queued', status_url: 's', result_url: 'r', deployment_id: DEP, execution_id: EXE }];
        if (path.endsWith('/status/'))
          return [200, { status: 'running', execution_id: EXE, deployment_id: DEP, error_message: null, completion_duration: null }];
        return undefined;
      },
      { interruptAfterPolls: 2 },
    );
    // Assess
    expect(r.code).toBe(130);
    expect(r.stderr.indexOf(`execution ${EXE} queued`)).toBeLessThan(r.stderr.indexOf('stopped waiting'));
    expect(r.stderr).toContain(`pipegate result ${EXE} --key <api key>`);
    expect(r.stderr).toContain(`pipegate cancel ${EXE} --key <api key>`);
    expect(r.stderr).not.toContain('pgk_k');
    expect(r.paths.some((p) => p.endsWith('/result/'))).toBe(false);
  });
});

describe('executions', () => {
  it('sends the filters, prints a table with the callback outcome, and refuses an unknown status before any request', async () => {
    // Act
    const r = await cli(['executions', 'quotes', '--status', 'failed', '--limit', '5', '--since', '2026-11-22T00:00:00Z'], () => [
      200,
      {
        pipeline_id: 'quotes',
        deployment_id: DEP,
        executions: [
          row('failed', {
            source: 'form',
            error_message: 'Node rates failed',
            callback: { outcome: 'dead_lettered', attempts: 11, last_status: 500, last_error: 'HTTP 500' },
          }),
        ],
        next_cursor: null,
      },
    ]);
    const bad = await cli(['executions', 'quotes', '--status', 'done'], () => undefined);
    // Assess
    expect(r.code).toBe(0);
    expect(r.paths).toEqual([`GET /v1/pipelines/quotes/deployment/executions?status=failed&limit=5&since=2026-11-22T00%3A00%3A00Z`]);
    expect(r.stdout).toMatch(/EXECUTION\s+STATUS\s+SOURCE\s+CREATED/);
    expect(r.stdout).toMatch(new RegExp(`${EXE}\\s+failed\\s+form\\s+2026-11-22 10:00:00Z\\s+dead_lettered ×11 500\\s+Node rates failed`));
    expect(bad.code).toBe(2);
    expect(bad.paths).toEqual([]);
  });

  it('--watch redraws until Ctrl-C, then exits 0; with --json one document per refresh', async () => {
    // Prepare
    let n = 0;
    const script: Script = () => [
      200,
      { pipeline_id: 'quotes', deployment_id: DEP, executions: [row(++n > 1 ? 'completed' : 'running')], next_cursor: null },
    ];
    // Act
    const human = await cli(['executions', 'quotes', '--watch'], script, { interruptAfterPolls: 2 });
    n = 0;
    const json = await cli(['executions', 'quotes', '--watch', '--json'], script, { interruptAfterPolls: 3 });
    // Assess
    expect(human.code).toBe(0);
    expect(human.paths).toHaveLength(2);
    expect(human.stdout).toMatch(/running[\s\S]*completed/);
    expect(
      json.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { executions: { status: string }[] }).executions[0]?.status),
    ).toEqual(['running', 'completed', 'completed']);
  });
});

it('--watch stops at Ctrl-C during the wait between refreshes, not after it', async () => {
  // Prepare
  const script: Script = () => [200, { pipeline_id: 'quotes', deployment_id: DEP, executions: [row('running')], next_cursor: null }];
  // Act
  const r = await cli(['executions', 'quotes', '--watch', '--interval', '3600'], script, { ctrlCDuringSleep: true });
  // Assess
  expect(r.code).toBe(0);
  expect(r.paths).toHaveLength(1);
});

describe('cancel, redeliver, usage, result', () => {
  it('cancels as the owner (pipeline and execution) or as a caller (execution and --key)', async () => {
    // Act
    const owner = await cli(['cancel', 'quotes', EXE], () => [
      200,
      {
        ...row('cancelled'),
        kind: 'api',
        pipeline_id: 'quotes',
        version: 1,
        deployment_id: DEP,
        inputs: {},
        outputs: null,
        visible_outputs: [],
        callback: null,
        callback_delivery: null,
      },
    ]);
    const caller = await cli(['cancel', EXE, '--key', 'pgk_k'], () => [
      200,
      { status: 'cancelled', execution_id: EXE, deployment_id: DEP, error_message: null },
    ]);
    const neither = await cli(['cancel', EXE], () => undefined);
    // Assess
    expect(owner.paths).toEqual([`POST /v1/pipelines/quotes/executions/${EXE}/cancel`]);
    expect(owner.stdout).toBe(`execution ${EXE} of quotes cancelled\n`);
    expect(caller.paths).toEqual([`POST /v1/deployments/executions/${EXE}/cancel/`]);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain('pipegate cancel <pipeline> <execution>');
  });

  it('redelivers, and prints usage by window', async () => {
    // Act
    const again = await cli(['redeliver', 'quotes', EXE], () => [
      202,
      { webhook_id: 'msg_1', attempts: 11, outcome: 'pending', last_status: 500, last_error: 'HTTP 500', redelivery: true, log: [] },
    ]);
    const window = (total: number) => ({
      from: 'a',
      to: 'b',
      total,
      by_status: { completed: total - 1, failed: 1, cancelled: 0 },
      p50_ms: 100,
      p95_ms: 2500,
    });
    const u = await cli(['usage', 'quotes'], () => [
      200,
      { pipeline_id: 'quotes', deployment_id: DEP, last_hour: window(3), last_day: window(40) },
    ]);
    // Assess
    expect(again.paths).toEqual([`POST /v1/pipelines/quotes/executions/${EXE}/callback/redeliver`]);
    expect(again.stdout).toContain('queued again (attempt 12, webhook-id msg_1)');
    expect(u.stdout).toMatch(/last hour\s+3\s+2\s+1\s+0\s+≤ 100 ms\s+≤ 2\.50 s/);
    expect(u.stdout).toMatch(/last day\s+40\s+39\s+1\s+0/);
  });
});

describe('show', () => {
  const view = (extra: Record<string, unknown>) => ({
    ...row('completed', { completed_at: '2026-11-22T10:00:01.000Z', completion_duration: 1 }),
    kind: 'run',
    pipeline_id: 'quotes',
    version: 1,
    deployment_id: null,
    inputs: {},
    outputs: {},
    visible_outputs: null,
    callback_delivery: null,
    hidden_inputs: [],
    trace: null,
    ...extra,
  });

  it('says which stored values have expired, so empty outputs are not taken for what the run produced', async () => {
    // Act
    const gone = await cli(['show', 'quotes', EXE], () => [200, view({ values_expired: ['outputs', 'trace'] })]);
    const whole = await cli(['show', 'quotes', EXE], () => [200, view({ values_expired: [], outputs: { body: 'hi' } })]);
    // Assess
    expect(gone.code).toBe(0);
    expect(gone.stdout).toContain('stored values expired: outputs, trace');
    expect(whole.stdout).not.toContain('expired');
    expect(whole.stdout).toContain('hi');
  });

  it('lists what a running execution waits for: each wait node, the URL to POST its event to, and until when', async () => {
    const url = `${BASE}/v1/resume/w1.${EXE}.approval.tag`;
    const waiting = await cli(['show', 'quotes', EXE], () => [
      200,
      view({
        status: 'running',
        completed_at: null,
        waiting: [{ node_id: 'approval', resume_url: url, expires_at: '2026-11-23T10:00:00.000Z' }],
      }),
    ]);
    const done = await cli(['show', 'quotes', EXE], () => [200, view({})]);
    expect(waiting.code).toBe(0);
    expect(waiting.stdout).toContain('waiting for an event (POST a JSON object to the URL)');
    expect(waiting.stdout).toMatch(new RegExp(`approval\\s+${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+until 2026-11-23 10:00:00Z`));
    expect(done.stdout).not.toContain('waiting for');
  });

  it("shows a skipped node as skipped and a map's failed items (on_item_error skip) with the first reason", async () => {
    // Prepare
    const at = '2026-11-22T10:00:00.000Z';
    const t = (node: string, type: string, outcome: string, extra: Record<string, unknown> = {}) => ({
      node,
      type,
      outcome,
      started_at: at,
      completed_at: at,
      duration_ms: 0,
      error: null,
      http_status: null,
      preview: null,
      ...extra,
    });
    const trace = [
      t('refused', 'transform', 'skipped'),
      t('variants', 'map', 'completed', {
        preview: '[…]',
        item_errors: [
          { index: 1, error: 'HTTP 503 from https://r.example/' },
          { index: 3, error: 'x' },
        ],
      }),
    ];

    // Act
    const r = await cli(['show', 'quotes', EXE], () => [200, view({ values_expired: [], trace })]);

    // Assess
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/refused\s+transform\s+skipped/);
    expect(r.stdout).toMatch(/variants\s+map\s+completed.*items 1, 3 failed: HTTP 503 from https:\/\/r\.example\//);
  });
});
