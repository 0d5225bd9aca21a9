import type { Execution } from '../../../functions/core/types';
import {
  acceptedBody,
  completionDuration,
  outputArtifacts,
  redactUrl,
  responseData,
  resultBody,
  statusBody,
} from '../../../functions/core/views';

const base: Execution = {
  execution_id: 'e1',
  kind: 'api',
  pipeline_id: 'p',
  version: 1,
  deployment_id: 'd1',
  status: 'completed',
  inputs: { name: 'x' },
  outputs: { shown: 'a', hidden: 'b', n: 2 },
  visible_outputs: ['shown', 'n'],
  callback: null,
  callback_delivery: null,
  error_message: null,
  created_at: '2026-01-01T00:00:00.000Z',
  started_at: '2026-01-01T00:00:01.000Z',
  completed_at: '2026-01-01T00:00:01.250Z',
  expires_at: null,
};

describe('response bodies', () => {
  it('accepts with absolute URLs built from the base URL', () => {
    expect(acceptedBody('https://h/prod', base)).toEqual({
      status: 'queued',
      status_url: 'https://h/prod/v1/deployments/executions/e1/status/',
      result_url: 'https://h/prod/v1/deployments/executions/e1/result/',
      deployment_id: 'd1',
      execution_id: 'e1',
    });
  });

  it('measures completion in whole milliseconds from start to finish, null until finished', () => {
    expect(completionDuration(base)).toBe(250);
    expect(completionDuration({ started_at: null, completed_at: null })).toBeNull();
    expect(completionDuration({ started_at: null, completed_at: '2026-01-01T00:00:00.000Z' })).toBe(0);
    expect(statusBody('https://h', { ...base, status: 'running', completed_at: null }).completion_duration).toBeNull();
  });

  it('returns only visible outputs, as RAW value objects, and nothing unless completed', () => {
    expect(resultBody(base).response_data).toEqual({ shown: { value: 'a', value_type: 'RAW' }, n: { value: 2, value_type: 'RAW' } });
    expect(resultBody({ ...base, status: 'failed', error_message: 'boom' }).response_data).toEqual({});
    expect(resultBody(base).output_artifacts).toEqual([]);
  });

  it("hides a callback URL's query string, which may carry a token", () => {
    expect(redactUrl('https://hooks.example.com/in?token=abc')).toBe('https://hooks.example.com/in?…');
    expect(redactUrl('https://hooks.example.com/in')).toBe('https://hooks.example.com/in');
  });
});

describe('lists of files', () => {
  const ref = (n: number) => ({ key: `d/d1/e/e1/node.m.${n}`, media_type: 'image/png', bytes: 100 + n, sha256: 'ab' });
  const link = (n: number) => ({ url: `https://h/v1/assets/t${n}`, expires_at: `2030-01-01T00:00:0${n}.000Z` });
  const e: Execution = { ...base, outputs: {}, output_assets: { gallery: [ref(0), null, ref(2)] }, visible_outputs: ['gallery', 'gone'] };

  it('answers a list output as its links in order, each field a list, and leaves an output that did not run out', () => {
    expect(responseData(e, { gallery: [link(0), null, link(2)] })).toEqual({
      gallery: {
        value: ['https://h/v1/assets/t0', null, 'https://h/v1/assets/t2'],
        value_type: 'ASSET',
        media_type: ['image/png', null, 'image/png'],
        bytes: [100, null, 102],
        expires_at: '2030-01-01T00:00:00.000Z',
      },
    });
  });

  it("lists each file of a web-form execution's list output as an artifact with its index", () => {
    expect(outputArtifacts({ ...e, source: 'form' }, { gallery: [link(0), null, link(2)] })).toEqual([
      { output: 'gallery', url: 'https://h/v1/assets/t0', media_type: 'image/png', bytes: 100, index: 0 },
      { output: 'gallery', url: 'https://h/v1/assets/t2', media_type: 'image/png', bytes: 102, index: 2 },
    ]);
  });
});
