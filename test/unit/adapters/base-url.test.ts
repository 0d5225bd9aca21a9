/** The base URL an answer's links are built on, from the request: never an invalid one, whatever the headers say. */
import type { APIGatewayProxyEvent } from 'aws-lambda';
import fc from 'fast-check';
import { baseUrlOf } from '../../../functions/adapters/api';

const event = (headers: Record<string, string>, path = '/v1/deployments/x/mcp', full = `/api${path}`): APIGatewayProxyEvent =>
  ({ headers, path, requestContext: { path: full } }) as unknown as APIGatewayProxyEvent;

describe('baseUrlOf', () => {
  it('takes the forwarded scheme when it is http or https, with the stage before the route', () => {
    expect(baseUrlOf(event({ host: 'api.example', 'x-forwarded-proto': 'http' }))).toBe('http://api.example/api');
    expect(baseUrlOf(event({ host: 'api.example', 'x-forwarded-proto': 'HTTPS, http' }))).toBe('https://api.example/api');
  });

  it('falls back to https for a forged scheme, so that the URL stays a URL (a fuzzed MCP request once got a 500)', () => {
    for (const proto of ['!', 'javascript', 'ftp', '', 'http:/', ' ']) {
      const url = baseUrlOf(event({ host: 'api.example', 'x-forwarded-proto': proto }));
      expect(url).toBe('https://api.example/api');
      expect(() => new URL(url)).not.toThrow();
    }
    fc.assert(
      fc.property(fc.string(), (proto) => {
        const url = baseUrlOf(event({ host: 'api.example', 'x-forwarded-proto': proto }));
        return /^https?:\/\/api\.example\/api$/.test(url);
      }),
    );
  });
});
