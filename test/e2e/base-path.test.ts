/**
 * The local runtime served under a path prefix. Its own file: a runtime wires the process's
 * handlers, so two runtimes in one test module would share them.
 */
import { greeting, startTestRuntime } from '../support/runtime';

describe('served under a path prefix', () => {
  it('answers under PIPEGATE_BASE_PATH and keeps the prefix in the URLs it returns', async () => {
    const prefixed = await startTestRuntime({ env: { ...process.env, PIPEGATE_BASE_PATH: '/api' } });
    try {
      const owner = (m: string, p: string, b?: unknown) =>
        fetch(`${prefixed.url}/api${p}`, {
          method: m,
          headers: { authorization: `Bearer ${prefixed.ownerToken}`, 'content-type': 'application/json' },
          body: b === undefined ? undefined : JSON.stringify(b),
        });
      expect((await owner('PUT', '/v1/pipelines/greeting', greeting)).status).toBe(201);
      const run = (await (await owner('POST', '/v1/pipelines/greeting/runs', {})).json()) as { status_url: string };
      expect(run.status_url.startsWith(`${prefixed.url}/api/v1/pipelines/greeting/runs/`)).toBe(true);
      expect((await fetch(`${prefixed.url}/v1/pipelines`, { headers: { authorization: `Bearer ${prefixed.ownerToken}` } })).status).toBe(
        404,
      );
    } finally {
      await prefixed.cleanup();
    }
  });
});
