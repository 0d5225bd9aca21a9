/**
 * `pipegate execute --follow` against a scripted fake of the service: one line per node as it
 * finishes, a spinner only on a terminal, a dropped stream resumed with Last-Event-ID (no line
 * lost or printed twice), then the result.
 */
import { runCli } from '../../../lib/cli/program';
import type { CliIO } from '../../../lib/cli/output';

const BASE = 'http://127.0.0.1:3999';
const DEP = '6f1c0f7e-2a55-4d1e-9a53-0a2f3c4b5d6e';
const EXEC = '0b9a1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d';

const ev = (id: number, event: string, data: unknown) => `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const result = {
  status: 'completed',
  execution_id: EXEC,
  deployment_id: DEP,
  completion_duration: 900,
  output_artifacts: [],
  error_message: null,
  response_data: { out: { value: 'hi', value_type: 'RAW' } },
};
const FIRST = [
  'retry: 2000\n\n',
  ev(1, 'status', { status: 'pending', at: 'x' }),
  ev(2, 'status', { status: 'running', at: 'x' }),
  ev(3, 'node', { node_id: 'call', type: 'http', state: 'started', at: 'x' }),
];
const SECOND = [
  ev(4, 'node', { node_id: 'call', type: 'http', state: 'finished', at: 'x', duration_ms: 812 }),
  ev(5, 'node', { node_id: 'shape', type: 'transform', state: 'failed', at: 'x', duration_ms: 3 }),
  ev(6, 'status', { status: 'completed', at: 'x' }),
  ev(7, 'output', { output: 'out', value: 'hi', value_type: 'RAW' }),
  ev(8, 'done', result),
];

async function follow(tty: boolean, first: string[] = FIRST, second: string[] = SECOND) {
  const lastIds: (string | undefined)[] = [];
  let stdout = '';
  let stderr = '';
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const headers = (init?.headers ?? {}) as Record<string, string>;
    if (init?.method === 'POST' && url.pathname === `/v1/deployments/${DEP}/executions/`) {
      return Response.json(
        { status: 'queued', status_url: `${BASE}/s`, result_url: `${BASE}/r`, deployment_id: DEP, execution_id: EXEC },
        { status: 202 },
      );
    }
    if (url.pathname === `/v1/deployments/executions/${EXEC}/events/`) {
      lastIds.push(headers['last-event-id']);
      // The first connection drops before done (a restart, a proxy); the second goes on from the id.
      const chunks =
        lastIds.length === 1 ? first : second.filter((c) => Number(/^id: (\d+)/.exec(c)?.[1]) > Number(headers['last-event-id'] ?? 0));
      return new Response(chunks.join(''), { status: 200, headers: { 'content-type': 'text/event-stream' } });
    }
    if (url.pathname === `/v1/deployments/executions/${EXEC}/result/`) return Response.json(result);
    return Response.json({ error: `unscripted ${url.pathname}` }, { status: 599 });
  }) as typeof fetch;
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s), isTTY: tty },
    env: { PIPEGATE_URL: BASE, PIPEGATE_OWNER_TOKEN: 'pgo_test', NO_COLOR: '1' },
    cwd: process.cwd(),
    fetch: fakeFetch,
    sleep: async () => undefined,
  };
  const code = await runCli(['execute', DEP, '--key', 'pgk_test', '--follow'], io, {});
  return { code, stdout, stderr, lastIds };
}

describe('execute --follow', () => {
  it('prints one line per finished or failed node, resumes a dropped stream after the last id, then the result', async () => {
    const r = await follow(false);
    expect(r.code).toBe(0);
    expect(r.lastIds).toEqual([undefined, '3']);
    const lines = r.stderr
      .split('\n')
      .filter((l) => /^\s+[✓✗] /.test(l))
      .map((l) => l.trim());
    expect(lines).toEqual(['✓ call http 0.81 s', '✗ shape transform failed 0.00 s']);
    expect(r.stderr).not.toMatch(/\r|⠋/);
    expect(r.stdout).toContain('completed');
  });

  it('shows a spinner naming the running nodes on a terminal only', async () => {
    const r = await follow(true);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('\r\u001b[2K');
    expect(r.stderr).toMatch(/running call…/);
    expect(r.stderr.match(/✓ call http/g)).toHaveLength(1);
  });

  it('prints counts for a deployment published with node detail off', async () => {
    const counts = [
      ev(4, 'node', { done: 1, total: 2 }),
      ev(5, 'node', { done: 2, total: 2 }),
      ev(6, 'status', { status: 'completed', at: 'x' }),
      ev(7, 'done', result),
    ];
    const r = await follow(false, FIRST.slice(0, 3), counts);
    expect(r.code).toBe(0);
    const lines = r.stderr
      .split('\n')
      .filter((l) => /^\s+[✓✗] /.test(l))
      .map((l) => l.trim());
    expect(lines).toEqual(['✓ 1 of 2 nodes done', '✓ 2 of 2 nodes done']);
  });
});
