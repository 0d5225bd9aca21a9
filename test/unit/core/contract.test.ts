import fc from 'fast-check';
import { applyVisibility, assertPublishable, callerContract, discoverContract, readiness } from '../../../functions/core/contract';
import { AppError, isAppError } from '../../../functions/core/errors';
import type { Contract, Deployment, PipelineDefinition, RunPointer } from '../../../functions/core/types';
import { thrown } from '../../support/thrown';

const def: PipelineDefinition = {
  description: 'Greets someone',
  nodes: {
    name: { type: 'input', value_type: 'string', value: 'world' },
    greeting: { type: 'transform', inputs: ['name', 'times'], expression: "'Hello, ' & name & '!'" },
    times: { type: 'input', value_type: 'integer', value: 1 },
    message: { type: 'output', from: 'greeting' },
    debug: { type: 'output', from: 'name' },
  },
};

const run = (status: RunPointer['status'], version: number, run_id = `run-${version}-${status}`): RunPointer => ({
  run_id,
  status,
  version,
  created_at: '2026-01-01T00:00:00.000Z',
});

const appError = (fn: () => unknown): AppError => thrown(fn, AppError);

describe('discoverContract', () => {
  it('lists input and output nodes in declaration order with the values the run used', () => {
    // Prepare
    const runInputs = { name: 'Ada' };

    // Act
    const contract = discoverContract(def, runInputs);

    // Assess
    expect(contract).toEqual({
      inputs: [
        { id: 'name', value_type: 'string', value: 'Ada', visible: true },
        { id: 'times', value_type: 'integer', value: 1, visible: true },
      ],
      outputs: [
        { id: 'message', visible: true },
        { id: 'debug', visible: true },
      ],
      waits: [],
    });
  });

  it('lists wait nodes with what people read of them and what their event holds, visible', () => {
    const withWaits: PipelineDefinition = {
      nodes: {
        ...def.nodes,
        approval: {
          type: 'wait',
          inputs: ['greeting'],
          timeout_ms: 86_400_000,
          label: 'Approve the greeting',
          fields: { approved: { value_type: 'boolean', label: 'Approve' } },
        },
        hook: { type: 'wait', timeout_ms: 60_000 },
      },
    };
    expect(discoverContract(withWaits, {}).waits).toEqual([
      {
        id: 'approval',
        visible: true,
        timeout_ms: 86_400_000,
        label: 'Approve the greeting',
        fields: { approved: { value_type: 'boolean', label: 'Approve' } },
      },
      { id: 'hook', visible: true, timeout_ms: 60_000 },
    ]);
  });

  it('records what the run answered for each output, RAW or ASSET, and nothing where the run is unknown or answered neither', () => {
    // Prepare
    const ref = { key: 'p/x/r/run/in.photo', media_type: 'image/png', bytes: 3, sha256: 'a'.repeat(64) };
    const withFile: PipelineDefinition = { nodes: { ...def.nodes, picture: { type: 'output', from: 'name' } } };

    // Act
    const known = discoverContract(withFile, {}, { outputs: { message: 'Hello, world!' }, output_assets: { picture: ref } });
    const unknown = discoverContract(withFile, {});

    // Assess
    expect(known.outputs).toEqual([
      { id: 'message', visible: true, value_type: 'RAW' },
      { id: 'debug', visible: true },
      { id: 'picture', visible: true, value_type: 'ASSET' },
    ]);
    expect(unknown.outputs.every((o) => !('value_type' in o))).toBe(true);
  });

  it("marks an output that may be skipped optional, and a list of files as a list, and the caller's contract says both", () => {
    // Prepare
    const ref = { key: 'p/x/r/run/node.m.0', media_type: 'image/png', bytes: 3, sha256: 'a'.repeat(64) };
    const branching: PipelineDefinition = {
      nodes: {
        name: { type: 'input', value_type: 'string', value: 'x' },
        maybe: { type: 'transform', inputs: ['name'], if: "name = 'y'", expression: 'name' },
        either: { type: 'output', from: ['maybe', 'name'] },
        only: { type: 'output', from: 'maybe' },
        pictures: { type: 'output', from: 'name' },
      },
    };

    // Act
    const c = discoverContract(branching, {}, { outputs: { either: 'x' }, output_assets: { pictures: [ref, null] } });
    const caller = callerContract({ deployment_id: 'd', inputs: c.inputs, outputs: c.outputs });

    // Assess
    expect(c.outputs).toEqual([
      { id: 'either', visible: true, value_type: 'RAW' },
      { id: 'only', visible: true, optional: true },
      { id: 'pictures', visible: true, value_type: 'ASSET', list: true },
    ]);
    expect(caller.outputs).toEqual([
      { id: 'either', value_type: 'RAW' },
      { id: 'only', optional: true },
      { id: 'pictures', value_type: 'ASSET', list: true },
    ]);
  });

  it('keeps falsy run values instead of falling back to the node value', () => {
    // Prepare
    const flags: PipelineDefinition = { nodes: { on: { type: 'input', value_type: 'boolean', value: true } } };

    // Act
    const contract = discoverContract(flags, { on: false });

    // Assess
    expect(contract.inputs[0]?.value).toBe(false);
  });
});

describe('applyVisibility', () => {
  const discovered = discoverContract(def, {});

  it('makes every entry visible when the request is empty and there is no previous deployment', () => {
    // Act
    const result = applyVisibility(discovered, undefined, null);

    // Assess
    expect(result.inputs.every((i) => i.visible)).toBe(true);
    expect(result.outputs.every((o) => o.visible)).toBe(true);
  });

  it('applies the requested visibility per entry', () => {
    // Act
    const result = applyVisibility(discovered, { inputs: { times: { visible: false } }, outputs: { debug: { visible: false } } }, null);

    // Assess
    expect(result.inputs.map((i) => [i.id, i.visible])).toEqual([
      ['name', true],
      ['times', false],
    ]);
    expect(result.outputs.map((o) => [o.id, o.visible])).toEqual([
      ['message', true],
      ['debug', false],
    ]);
  });

  it('keeps a hidden entry hidden across a republish that does not mention it (no body), and refuses a JSON null body', () => {
    // Prepare
    const previous = applyVisibility(discovered, { outputs: { debug: { visible: false } } }, null);

    // Act
    const republished = applyVisibility(discovered, undefined, previous);
    const shownAgain = applyVisibility(discovered, { outputs: { debug: { visible: true } } }, previous);

    // Assess
    expect(republished.outputs.find((o) => o.id === 'debug')?.visible).toBe(false);
    expect(shownAgain.outputs.find((o) => o.id === 'debug')?.visible).toBe(true);
    expect(() => applyVisibility(discovered, null, previous)).toThrow(AppError);
  });

  it('makes entries new since the previous deployment visible', () => {
    // Prepare
    const previous: Contract = { inputs: [{ id: 'name', value_type: 'string', value: 'x', visible: false }], outputs: [] };

    // Act
    const result = applyVisibility(discovered, {}, previous);

    // Assess
    expect(result.inputs.map((i) => i.visible)).toEqual([false, true]);
    expect(result.outputs.map((o) => o.visible)).toEqual([true, true]);
  });

  it('rejects unknown ids and bad shapes, listing every problem', () => {
    // Act
    const error = appError(() =>
      applyVisibility(
        discovered,
        { inputs: { nope: { visible: false }, name: { visible: 'no' } }, outputs: { message: { visible: true, extra: 1 } } },
        null,
      ),
    );

    // Assess
    expect(error.code).toBe('InvalidRequest');
    expect(error.status).toBe(400);
    expect(error.detail).toEqual([
      { path: 'inputs.nope', reason: 'no input node with this id' },
      { path: 'inputs.name.visible', reason: 'must be true or false' },
      { path: 'outputs.message.extra', reason: 'is not a known field' },
    ]);
  });

  it('names unknown fields of form and events in its own words, and a form that is no object', () => {
    // Act
    const unknown = appError(() =>
      applyVisibility(discovered, { form: { enabled: true, colour: 'red' }, events: { detail: false } }, null),
    );
    const notObject = appError(() => applyVisibility(discovered, { form: 5 }, null));

    // Assess
    expect(unknown.detail).toEqual([
      { path: 'form.colour', reason: 'is not a known field' },
      { path: 'events.detail', reason: 'is not a known field' },
    ]);
    expect(notObject.detail).toEqual([{ path: 'form', reason: 'must be an object' }]);
  });

  it.each([
    ['a top-level array', []],
    ['a string body', 'inputs'],
    ['an unknown top-level field', { hidden: ['name'] }],
    ['inputs as an array', { inputs: [] }],
    ['an entry that is not an object', { inputs: { name: true } }],
    ['an entry without visible', { outputs: { message: {} } }],
    ['an id that is an Object.prototype name', { inputs: { constructor: { visible: false } } }],
    ['__proto__ as an id', JSON.parse('{"inputs":{"__proto__":{"visible":false}}}') as unknown],
  ])('rejects %s', (_name, request) => {
    // Act
    const error = appError(() => applyVisibility(discovered, request, null));

    // Assess
    expect(error.code).toBe('InvalidRequest');
    expect(Array.isArray(error.detail)).toBe(true);
    expect((error.detail as unknown[]).length).toBeGreaterThan(0);
  });

  it('either returns a contract of the same entries or throws InvalidRequest, for any JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (request) => {
        try {
          const result = applyVisibility(discovered, request, null);
          expect(result.inputs.map((i) => i.id)).toEqual(['name', 'times']);
          expect(result.outputs.map((o) => o.id)).toEqual(['message', 'debug']);
        } catch (e) {
          expect(isAppError(e) && e.code === 'InvalidRequest').toBe(true);
        }
      }),
    );
  });
});

describe('assertPublishable', () => {
  const discovered = discoverContract(def, {});

  it('refuses when no run ever succeeded, with the exact message', () => {
    // Act
    const error = appError(() => assertPublishable(run('failed', 2), null, null));

    // Assess
    expect(error.code).toBe('PublishNoSuccessfulRun');
    expect(error.status).toBe(409);
    expect(error.body().error).toBe('To deploy the workflow, there must be at least one successful execution.');
  });

  it('refuses when the latest finished run failed, naming that run', () => {
    // Act
    const error = appError(() => assertPublishable(run('failed', 3, 'r3'), run('completed', 2), discovered));

    // Assess
    expect(error.code).toBe('PublishLatestRunFailed');
    expect(error.body()).toEqual({
      error: expect.stringContaining('latest run failed'),
      latest_run: { run_id: 'r3', status: 'failed', version: 3 },
    });
  });

  it('checks for a successful run before looking at the latest one', () => {
    // Act
    const error = appError(() => assertPublishable(run('cancelled', 1), null, discovered));

    // Assess
    expect(error.code).toBe('PublishNoSuccessfulRun');
  });

  it('refuses a version without input and output nodes', () => {
    // Act
    const error = appError(() => assertPublishable(run('completed', 1), run('completed', 1), { inputs: [], outputs: [] }));

    // Assess
    expect(error.code).toBe('PublishNoInputsOrOutputs');
  });

  it('allows a successful latest run with a contract', () => {
    // Act
    const act = () => assertPublishable(run('completed', 4), run('completed', 4), discovered);

    // Assess
    expect(act).not.toThrow();
  });
});

describe('readiness', () => {
  const discovered = discoverContract(def, { name: 'Ada' });
  const deployment: Deployment & { execute_url: string; mcp_url: string } = {
    deployment_id: '6f1c0f7e-2a55-4d1e-9a53-0a2f3c4b5d6e',
    pipeline_id: 'greeter',
    version: 2,
    revision: 1,
    status: 'live',
    inputs: discovered.inputs,
    outputs: [{ id: 'message', visible: true }],
    published_at: '2026-01-02T00:00:00.000Z',
    created_at: '2026-01-02T00:00:00.000Z',
    execute_url: 'https://api.example.com/v1/deployments/6f1c0f7e-2a55-4d1e-9a53-0a2f3c4b5d6e/executions/',
    mcp_url: 'https://api.example.com/v1/deployments/6f1c0f7e-2a55-4d1e-9a53-0a2f3c4b5d6e/mcp',
  };

  it('asks for a run when none succeeded', () => {
    // Prepare
    const failed = run('failed', 1);

    // Act
    const view = readiness({
      pipeline_id: 'greeter',
      latestRun: failed,
      latestFinished: failed,
      lastSuccessful: null,
      discovered: null,
      deployment: null,
    });

    // Assess
    expect(view).toEqual({
      pipeline_id: 'greeter',
      state: 'run_required',
      publishable: false,
      latest_run: { run_id: failed.run_id, status: 'failed', version: 1 },
      counts: { inputs: 0, outputs: 0 },
      published_at: null,
      discovered: null,
      deployment: null,
    });
  });

  it('reports the discovered counts before the first publish', () => {
    // Prepare
    const ok = run('completed', 1);

    // Act
    const view = readiness({
      pipeline_id: 'greeter',
      latestRun: ok,
      latestFinished: ok,
      lastSuccessful: ok,
      discovered,
      deployment: null,
    });

    // Assess
    expect(view.state).toBe('not_published');
    expect(view.publishable).toBe(true);
    expect(view.counts).toEqual({ inputs: 2, outputs: 2 });
    expect(view.discovered).toEqual(discovered);
  });

  it('is live when the latest finished run used the published version', () => {
    // Prepare
    const ok = run('completed', 2);
    const running = run('running', 3);

    // Act
    const view = readiness({
      pipeline_id: 'greeter',
      latestRun: running,
      latestFinished: ok,
      lastSuccessful: ok,
      discovered,
      deployment,
    });

    // Assess
    expect(view.state).toBe('live');
    expect(view.latest_run).toEqual({ run_id: running.run_id, status: 'running', version: 3 });
    expect(view.published_at).toBe(deployment.published_at);
    expect(view.counts).toEqual({ inputs: 2, outputs: 1 });
    expect(view.deployment).toEqual({
      deployment_id: deployment.deployment_id,
      version: 2,
      published_at: deployment.published_at,
      execute_url: deployment.execute_url,
      mcp_url: deployment.mcp_url,
      form_url: null,
      form: null,
      events: { node_detail: true },
      inputs: deployment.inputs,
      outputs: deployment.outputs,
      waits: [],
    });
  });

  it.each([
    ['succeeded', 'completed', true],
    ['failed', 'failed', false],
  ] as const)('needs a publish when the latest finished run used another version and %s', (_name, status, publishable) => {
    // Prepare
    const latest = run(status, 3);

    // Act
    const view = readiness({
      pipeline_id: 'greeter',
      latestRun: latest,
      latestFinished: latest,
      lastSuccessful: run('completed', 2),
      discovered,
      deployment,
    });

    // Assess
    expect(view.state).toBe('needs_publish');
    expect(view.publishable).toBe(publishable);
    expect(view.published_at).toBeNull();
    expect(view.deployment?.version).toBe(2);
  });

  it('is not publishable when the discovered contract is empty', () => {
    // Prepare
    const ok = run('completed', 1);

    // Act
    const view = readiness({
      pipeline_id: 'p',
      latestRun: ok,
      latestFinished: ok,
      lastSuccessful: ok,
      discovered: { inputs: [], outputs: [] },
      deployment: null,
    });

    // Assess
    expect(view.state).toBe('not_published');
    expect(view.publishable).toBe(false);
  });
});

describe('callerContract', () => {
  it('shows visible entries only, without the visibility flag', () => {
    // Prepare
    const contract = applyVisibility(
      discoverContract(def, {}),
      { inputs: { times: { visible: false } }, outputs: { debug: { visible: false } } },
      null,
    );

    // Act
    const shown = callerContract({ deployment_id: 'd-1', ...contract });

    // Assess
    expect(shown).toEqual({
      deployment_id: 'd-1',
      inputs: [{ id: 'name', value_type: 'string', value: 'world' }],
      outputs: [{ id: 'message' }],
      waits: [],
    });
  });

  it('shows the visible wait nodes only: the owner may hide one, a later publish keeps it hidden, an unknown id is refused', () => {
    const withWaits: PipelineDefinition = {
      nodes: { ...def.nodes, approval: { type: 'wait', timeout_ms: 60_000, label: 'Approve' }, hook: { type: 'wait', timeout_ms: 60_000 } },
    };
    const discovered = discoverContract(withWaits, {});
    const contract = applyVisibility(discovered, { waits: { hook: { visible: false } } }, null);
    expect(callerContract({ deployment_id: 'd-1', ...contract }).waits).toEqual([{ id: 'approval', timeout_ms: 60_000, label: 'Approve' }]);
    expect(applyVisibility(discovered, undefined, contract).waits?.map((w) => [w.id, w.visible])).toEqual([
      ['approval', true],
      ['hook', false],
    ]);
    expect(appError(() => applyVisibility(discovered, { waits: { nope: { visible: false }, hook: { visible: 1 } } }, null)).detail).toEqual(
      [
        { path: 'waits.nope', reason: 'no wait node with this id' },
        { path: 'waits.hook.visible', reason: 'must be true or false' },
      ],
    );
  });

  it("shows each visible output's recorded kind, and keeps the hidden ones out", () => {
    const contract = applyVisibility(
      discoverContract(def, {}, { outputs: { message: 'Hi', debug: 'x' }, output_assets: null }),
      { outputs: { debug: { visible: false } } },
      null,
    );
    expect(callerContract({ deployment_id: 'd-1', ...contract }).outputs).toEqual([{ id: 'message', value_type: 'RAW' }]);
  });
});
