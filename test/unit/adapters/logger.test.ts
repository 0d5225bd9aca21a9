import { createLogger } from '../../../functions/adapters/logger';

describe('log formats', () => {
  const capture = (format?: 'json' | 'text') => {
    const lines: string[] = [];
    return { lines, log: createLogger('svc', (l) => lines.push(l), format) };
  };
  const request = {
    method: 'POST',
    path: '/v1/pipelines/greeting/runs',
    route: '/v1/pipelines/{pipeline_id}/runs',
    status: 202,
    duration_ms: 14.237,
    request_id: 'r-1',
  };

  it('writes one JSON object a line by default', () => {
    const { lines, log } = capture();
    log.info('request', request);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ level: 'info', service: 'svc', message: 'request', ...request });
  });

  it('writes a request as method, path, status and milliseconds in text', () => {
    const { lines, log } = capture('text');
    log.info('request', request);
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d POST \/v1\/pipelines\/greeting\/runs 202 14 ms$/);
  });

  it('writes other lines in text with their level and fields', () => {
    const { lines, log } = capture('text');
    log.error('workflow failed', { execution_id: 'e-1', attempts: 2 });
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d error: workflow failed execution_id=e-1 attempts=2$/);
  });
});
