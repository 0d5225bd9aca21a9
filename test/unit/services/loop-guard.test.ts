/**
 * The loop guard: an http node may not call this service's own API (its execute-api host, its
 * custom domain, the local runtime's address), refused at push when the URL is written out and
 * at run time when a secret supplies the host, before any connection.
 */
import { isOwnApiUrl, LOOP_GUARD_REASON } from '../../../functions/core/address-guard';
import { callerReason, LoopGuardError, runPipeline } from '../../../functions/core/engine';
import { validateDefinition } from '../../../functions/core/pipeline';
import type { HttpPort, HttpRequest } from '../../../functions/core/ports';
import { push } from '../../../functions/services/push.service';
import { ownApiUrls } from '../../../functions/services/tasks.service';
import { testConfig, testDeps } from '../../support/fakes';
import { memoryStores } from '../../support/memory-stores';

const API = 'https://abc123.execute-api.us-east-1.amazonaws.com/api';
const DOMAIN = 'https://pipes.example.com/v1base';

const caller = (url: string) => ({ nodes: { go: { type: 'http', url }, out: { type: 'output', from: 'go' } } });

describe('isOwnApiUrl', () => {
  it('matches the own hosts on any path, in any case, with a trailing dot, and nothing else', () => {
    // Assess
    const own = [API, DOMAIN, undefined];
    expect(isOwnApiUrl('https://abc123.execute-api.us-east-1.amazonaws.com/api/v1/deployments/d/executions', own)).toBe(true);
    expect(isOwnApiUrl('https://ABC123.execute-api.us-east-1.amazonaws.com./other', own)).toBe(true);
    expect(isOwnApiUrl('http://pipes.example.com/anything?x=1', own)).toBe(true);
    expect(isOwnApiUrl('https://other.execute-api.us-east-1.amazonaws.com/api', own)).toBe(false);
    expect(isOwnApiUrl('https://pipes.example.com:8443/v1', own)).toBe(false);
    expect(isOwnApiUrl('http://127.0.0.1:4000/v1/pipelines', ['http://127.0.0.1:4000'])).toBe(true);
    expect(isOwnApiUrl('http://127.0.0.1:4001/v1/pipelines', ['http://127.0.0.1:4000'])).toBe(false);
    expect(isOwnApiUrl('not a url', own)).toBe(false);
    expect(isOwnApiUrl(API, [])).toBe(false);
  });
});

describe('the loop guard at push', () => {
  it("refuses an http node whose URL is the API's own or the custom domain's, naming the node and the guard", async () => {
    // Prepare
    const stores = memoryStores();
    const d = testDeps(stores, { config: testConfig({}, { apiUrl: API, publicUrl: DOMAIN }) });
    // Act / Assess
    for (const url of [`${API}/v1/deployments/x/executions`, 'https://pipes.example.com/v1/pipelines']) {
      await expect(push(d, 'loop', JSON.stringify(caller(url)))).rejects.toMatchObject({
        status: 400,
        message: 'Invalid Pipeline Definition',
        detail: [{ path: 'nodes.go.url', reason: LOOP_GUARD_REASON }],
      });
    }
    await expect(push(d, 'elsewhere', JSON.stringify(caller('https://api.example.org/v1')))).resolves.toMatchObject({ status: 201 });
  });
});

describe('the loop guard at run time', () => {
  it('fails the node before any request when a secret makes the URL the own API, telling the caller only which guard', async () => {
    // Prepare
    const checked = validateDefinition(caller('https://{{secrets.HOST}}/v1/deployments/x/executions'));
    if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
    const sent: HttpRequest[] = [];
    const http: HttpPort = (req) => {
      sent.push(req);
      return Promise.resolve({ status: 200, headers: { 'content-type': 'application/json' }, body: '"ok"' });
    };
    const run = (host: string) =>
      runPipeline(
        checked.definition,
        {},
        { http, timeoutMs: 60_000, secrets: new Map([['HOST', host]]), ownApiUrls: ownApiUrls({ apiUrl: API, publicUrl: undefined }) },
      );

    // Act
    const refused = await run('abc123.execute-api.us-east-1.amazonaws.com');
    const allowed = await run('api.example.org');

    // Assess
    expect(refused.status).toBe('failed');
    expect(refused.status === 'failed' && refused.error_message).toMatch(/loop guard/);
    expect(refused.status === 'failed' && refused.caller_message).toBe(
      "Node 'go' failed: the loop guard refused its URL (this service's own API)",
    );
    expect(allowed.status).toBe('completed');
    expect(sent.map((r) => r.url)).toEqual(['https://api.example.org/v1/deployments/x/executions']);
    expect(callerReason(new LoopGuardError('x'), 'http')).toMatch(/loop guard/);
  });
});
