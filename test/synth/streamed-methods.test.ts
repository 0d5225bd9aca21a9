/**
 * start:synth's gateway takes each method's response transfer mode from the template: the asset
 * route streams because its integration says STREAM (with the InvokeWithResponseStream URI and
 * its own time-out), every method the route table does not mark `streams` is buffered, and a template whose asset method is
 * buffered serves it buffered (so its streaming handler answers 502 there, as on API Gateway).
 */
import { apiFromTemplate } from '../../lib/synth/gateway-from-template';
import { resolveAssembly } from '../../lib/synth/physical';
import { ROUTES, STREAMED_ROUTE_TIMEOUT_SECONDS } from '../../lib/routes';
import { SYNTH_TIMEOUT_MS, testAssembly } from '../support/synth';
import { localEnv, withTemplate } from './synth-helpers';

type Resource = { Type: string; Properties?: Record<string, unknown> };

/** The streamed method whose function's logical id starts with `fn` (AssetGet, ExecutionEvents). */
const streamedMethod = (resources: Record<string, Resource>, fn = 'AssetGet'): Record<string, unknown> => {
  const found = Object.values(resources).find((r) => {
    const integration = JSON.stringify(r.Properties?.Integration ?? {});
    return r.Type === 'AWS::ApiGateway::Method' && integration.includes('response-streaming-invocations') && integration.includes(`"${fn}`);
  });
  if (!found?.Properties) throw new Error('no streamed method in the template');
  return found.Properties.Integration as Record<string, unknown>;
};

describe('streamed methods from the template', () => {
  it(
    'streams exactly the methods the route table marks (assets, event streams, answers carrying values), each with its own time-out',
    async () => {
      // Act
      const api = apiFromTemplate(resolveAssembly(await testAssembly(), localEnv()).stack('Pipegate'));
      // Assess
      const streamed = api.routes.filter((r) => r.streams);
      const marked = ROUTES.filter((r) => r.streams).map((r) => `${r.method} ${r.path}`);
      expect(streamed.map((r) => `${r.method} ${r.path}`).sort()).toEqual([...marked].sort());
      expect(marked).toEqual(
        expect.arrayContaining([
          'GET /v1/assets/{token}',
          'HEAD /v1/assets/{token}',
          'GET /v1/deployments/executions/{execution_id}/events',
          'GET /v1/deployments/executions/{execution_id}/result',
        ]),
      );
      for (const r of streamed) expect(r.integrationTimeoutMs).toBe(STREAMED_ROUTE_TIMEOUT_SECONDS * 1000);
      expect(api.integrationTimeoutMs).toBeLessThanOrEqual(29_000);
    },
    SYNTH_TIMEOUT_MS,
  );

  it(
    'serves the method buffered when the template says BUFFERED with the Invoke URI',
    async () => {
      // Prepare
      const edited = withTemplate(await testAssembly(), 'Pipegate', (t) => {
        const integration = streamedMethod(t.Resources as Record<string, Resource>);
        delete integration.ResponseTransferMode;
        delete integration.TimeoutInMillis;
        integration.Uri = JSON.parse(
          JSON.stringify(integration.Uri)
            .replace('/2021-11-15/functions/', '/2015-03-31/functions/')
            .replace('/response-streaming-invocations', '/invocations'),
        ) as unknown;
      });
      // Act
      const api = apiFromTemplate(resolveAssembly(edited, localEnv()).stack('Pipegate'));
      // Assess
      expect(api.routes.find((r) => r.path === '/v1/assets/{token}')?.streams).toBeUndefined();
    },
    SYNTH_TIMEOUT_MS,
  );

  it(
    'serves the events route buffered when the template says BUFFERED: it does not stream there',
    async () => {
      // Prepare
      const edited = withTemplate(await testAssembly(), 'Pipegate', (t) => {
        const integration = streamedMethod(t.Resources as Record<string, Resource>, 'ExecutionEvents');
        delete integration.ResponseTransferMode;
        delete integration.TimeoutInMillis;
        integration.Uri = JSON.parse(
          JSON.stringify(integration.Uri)
            .replace('/2021-11-15/functions/', '/2015-03-31/functions/')
            .replace('/response-streaming-invocations', '/invocations'),
        ) as unknown;
      });
      // Act
      const api = apiFromTemplate(resolveAssembly(edited, localEnv()).stack('Pipegate'));
      // Assess
      expect(api.routes.find((r) => r.path === '/v1/deployments/executions/{execution_id}/events')?.streams).toBeUndefined();
      expect(api.routes.find((r) => r.path === '/v1/assets/{token}')?.streams).toBe(true);
    },
    SYNTH_TIMEOUT_MS,
  );

  it(
    'refuses a STREAM method whose URI is the buffered Invoke path',
    async () => {
      // Prepare
      const edited = withTemplate(await testAssembly(), 'Pipegate', (t) => {
        const integration = streamedMethod(t.Resources as Record<string, Resource>);
        integration.Uri = JSON.parse(
          JSON.stringify(integration.Uri)
            .replace('/2021-11-15/functions/', '/2015-03-31/functions/')
            .replace('/response-streaming-invocations', '/invocations'),
        ) as unknown;
      });
      // Act
      const read = () => apiFromTemplate(resolveAssembly(edited, localEnv()).stack('Pipegate'));
      // Assess
      expect(read).toThrow(/does not invoke a Lambda function with a response stream/);
    },
    SYNTH_TIMEOUT_MS,
  );
});
