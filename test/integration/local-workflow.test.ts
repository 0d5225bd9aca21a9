import { LocalWorkflow, LocalWorkflows, type WorkflowTask } from '../../lib/local/workflow';
import definition from '../../lib/state-machine.asl.json';
import { retriersOf } from '../../lib/workflow-budget';

interface Calls {
  MarkRunning: unknown[];
  RunNodes: unknown[];
  MarkFailed: unknown[];
}

function gate(): { wait: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait, open };
}

function recorder(over: Partial<Record<keyof Calls, WorkflowTask>> = {}): { calls: Calls; tasks: Record<keyof Calls, WorkflowTask> } {
  const calls: Calls = { MarkRunning: [], RunNodes: [], MarkFailed: [] };
  const wrap =
    (name: keyof Calls, fallback: WorkflowTask): WorkflowTask =>
    async (input) => {
      calls[name].push(input);
      return (over[name] ?? fallback)(input);
    };
  return {
    calls,
    tasks: {
      MarkRunning: wrap('MarkRunning', async () => ({ proceed: true })),
      RunNodes: wrap('RunNodes', async () => ({ status: 'completed', next: 'done' })),
      MarkFailed: wrap('MarkFailed', async () => ({ status: 'failed' })),
    },
  };
}

const input = (id: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  execution_id: id,
  gen: 0,
  run: { next: 'step', step_timeout: 30 },
  ...extra,
});

describe('Promise.withResolvers polyfill', () => {
  it('resolves and rejects through the returned functions', async () => {
    // Prepare
    const withResolvers = (
      Promise as unknown as { withResolvers: <T>() => { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } }
    ).withResolvers;

    // Act
    const a = withResolvers.call(Promise) as { promise: Promise<number>; resolve: (v: number) => void; reject: (e: unknown) => void };
    a.resolve(7);
    const b = withResolvers.call(Promise) as { promise: Promise<number>; resolve: (v: number) => void; reject: (e: unknown) => void };
    b.reject(new Error('no'));

    // Assess
    await expect(a.promise).resolves.toBe(7);
    await expect(b.promise).rejects.toThrow('no');
    expect(() => withResolvers.call(undefined)).toThrow(TypeError);
  });
});

describe('LocalWorkflow', () => {
  it('runs MarkRunning, then RunNodes, handing each task the resolved Parameters', async () => {
    // Prepare
    const { calls, tasks } = recorder();
    const onError = jest.fn();
    const wf = new LocalWorkflow({ definition, tasks, onError });

    // Act
    const started = await wf.start('exec-1', input('exec-1'));
    await wf.idle();

    // Assess
    expect(started).toBe('started');
    // MarkRunning also gets the execution's own id ($$.Execution.Id): a Standard execution's ARN.
    expect(calls.MarkRunning).toEqual([
      {
        execution_id: 'exec-1',
        gen: 0,
        workflow_id: 'arn:aws:states:local:000000000000:execution:pipegate-standard:exec-1',
      },
    ]);
    // RunNodes also gets the last step's answer ($.run: the runner's input before the first step).
    expect(calls.RunNodes).toEqual([{ execution_id: 'exec-1', gen: 0, run: { next: 'step', step_timeout: 30 } }]);
    expect(calls.MarkFailed).toEqual([]);
    expect(onError).not.toHaveBeenCalled();
    expect(wf.running()).toEqual([]);
  });

  it('hands each RunNodes the answer of the step before, so a workflow counts its steps', async () => {
    // Prepare: three steps, each answering how many this workflow has made.
    const { calls, tasks } = recorder({
      RunNodes: async (taskInput) => {
        const made = (((taskInput as { run?: { steps?: number } }).run?.steps ?? 0) as number) + 1;
        return made < 3 ? { status: 'running', next: 'step', step_timeout: 30, steps: made } : { status: 'completed', next: 'done' };
      },
    });
    const wf = new LocalWorkflow({ definition, tasks });

    // Act
    await wf.start('exec-steps', input('exec-steps'));
    await wf.idle();

    // Assess
    expect(calls.RunNodes.map((c) => (c as { run: { steps?: number } }).run.steps)).toEqual([undefined, 1, 2]);
  });

  it('skips RunNodes when MarkRunning says not to proceed', async () => {
    // Prepare
    const { calls, tasks } = recorder({ MarkRunning: async () => ({ proceed: false }) });
    const wf = new LocalWorkflow({ definition, tasks });

    // Act
    await wf.start('exec-2', input('exec-2'));
    await wf.idle();

    // Assess
    expect(calls.MarkRunning).toHaveLength(1);
    expect(calls.RunNodes).toEqual([]);
    expect(calls.MarkFailed).toEqual([]);
  });

  it('sends a failing RunNodes to MarkFailed with the Lambda-shaped error', async () => {
    // Prepare
    class NodeFailure extends Error {
      override name = 'NodeFailure';
    }
    const { calls, tasks } = recorder({
      RunNodes: async () => {
        throw new NodeFailure('node "fetch" failed');
      },
    });
    const wf = new LocalWorkflow({ definition, tasks });

    // Act
    await wf.start('exec-3', input('exec-3'));
    await wf.idle();

    // Assess
    expect(calls.MarkFailed).toHaveLength(1);
    const failed = calls.MarkFailed[0] as { execution_id: string; error: { Error: string; Cause: string } };
    expect(failed.execution_id).toBe('exec-3');
    expect(failed.error.Error).toBe('NodeFailure');
    const cause = JSON.parse(failed.error.Cause) as { errorType: string; errorMessage: string; trace: unknown };
    expect(cause.errorType).toBe('NodeFailure');
    expect(cause.errorMessage).toBe('node "fetch" failed');
    expect(Array.isArray(cause.trace)).toBe(true);
  });

  it('retries MarkRunning as the document says, then carries on', async () => {
    // Prepare
    let attempts = 0;
    const { calls, tasks } = recorder({
      MarkRunning: async () => {
        attempts += 1;
        if (attempts < 3) throw new Error('store busy');
        return { proceed: true };
      },
    });
    const wf = new LocalWorkflow({ definition, tasks, retryIntervalOverrides: { MarkRunning: 0 } });

    // Act
    await wf.start('exec-4', input('exec-4'));
    await wf.idle();

    // Assess
    expect(calls.MarkRunning).toHaveLength(3);
    expect(calls.RunNodes).toHaveLength(1);
    expect(calls.MarkFailed).toEqual([]);
  });

  it('gives up on MarkRunning after its MaxAttempts and marks the execution failed', async () => {
    // Prepare
    const { calls, tasks } = recorder({
      MarkRunning: async () => {
        throw new Error('store down');
      },
    });
    const wf = new LocalWorkflow({ definition, tasks, retryIntervalOverrides: { MarkRunning: 0 } });

    // Act
    await wf.start('exec-5', input('exec-5'));
    await wf.idle();

    // Assess: the first attempt and every retry the ASL allows a failed task (States.TaskFailed).
    expect(calls.MarkRunning).toHaveLength(
      1 +
        retriersOf('MarkRunning')
          .filter((r) => r.ErrorEquals.includes('States.TaskFailed'))
          .reduce((n, r) => n + (r.MaxAttempts ?? 3), 0),
    );
    expect(calls.RunNodes).toEqual([]);
    expect(calls.MarkFailed).toHaveLength(1);
  });

  it('Standard: a start is idempotent by name, the same input while running being the same start, any other reuse refused', async () => {
    // Prepare
    const hold = gate();
    const { calls, tasks } = recorder({ RunNodes: () => hold.wait.then(() => ({})) });
    const wf = new LocalWorkflow({ definition, tasks });
    await wf.start('exec-6', input('exec-6'));

    // Act
    const again = await wf.start('exec-6', input('exec-6'));
    const otherInput = await wf.start('exec-6', input('exec-6', { gen: 1 }));
    hold.open();
    await wf.idle();
    const afterwards = await wf.start('exec-6', input('exec-6'));
    await wf.idle();

    // Assess: one execution ran; a closed name stays taken (Step Functions keeps it 90 days).
    expect([again, otherInput, afterwards]).toEqual(['started', 'already_exists', 'already_exists']);
    expect(calls.MarkRunning).toHaveLength(1);
  });

  it('Express: every start is a new execution, same name or not, each with an express ARN of its own', async () => {
    // Prepare
    const { calls, tasks } = recorder();
    const wf = new LocalWorkflow({ definition, tasks, type: 'EXPRESS' });

    // Act
    const first = await wf.start('exec-e', input('exec-e'));
    const second = await wf.start('exec-e', input('exec-e'));
    await wf.idle();

    // Assess: at least once: both ran (the store's conditional writes let one proceed in the service).
    expect([first, second]).toEqual(['started', 'started']);
    const ids = calls.MarkRunning.map((c) => (c as { workflow_id: string }).workflow_id);
    expect(ids).toHaveLength(2);
    for (const id of ids) expect(id).toMatch(/^arn:aws:states:local:000000000000:express:pipegate-express:exec-e:[0-9a-f-]{36}$/);
    expect(new Set(ids).size).toBe(2);
  });

  it('Express: an execution ends at its limit wherever it is, as timed out, and cannot be stopped before', async () => {
    // Prepare: a step that outlives the (shortened) five minutes.
    const hold = gate();
    const { calls, tasks } = recorder({ RunNodes: () => hold.wait.then(() => ({ status: 'running', next: 'step' })) });
    const onError = jest.fn();
    const wf = new LocalWorkflow({ definition, tasks, onError, type: 'EXPRESS', expressLimitMs: 300 });
    await wf.start('exec-t', input('exec-t'));

    // Act
    await wf.stop('exec-t', 'cancelled');
    const afterStop = wf.running();
    const timedOut = new Promise<void>((resolve) => {
      const poll = (): void => {
        if (onError.mock.calls.length > 0) resolve();
        else setTimeout(poll, 20);
      };
      poll();
    });
    await timedOut;
    hold.open();
    await wf.idle();

    // Assess: the stop did nothing; the limit ended it, reported as a time-out, with no MarkFailed
    // (the record is left to the sweeper, as on AWS) and no further step.
    expect(afterStop).toEqual(['exec-t']);
    expect(onError).toHaveBeenCalledTimes(1);
    expect((onError.mock.calls[0]?.[1] as Error).name).toBe('States.Timeout');
    expect(calls.RunNodes).toHaveLength(1);
    expect(calls.MarkFailed).toEqual([]);
    expect(wf.running()).toEqual([]);
  });

  it('Standard: a stop ends an execution asleep in its Wait state at once, with no further step', async () => {
    // Prepare: the step answers "wait an hour".
    const waiting = gate();
    const { calls, tasks } = recorder({
      RunNodes: async () => {
        waiting.open();
        return { status: 'running', next: 'wait', seconds: 3600, step_timeout: 30 };
      },
    });
    const wf = new LocalWorkflow({ definition, tasks });
    await wf.start('exec-w', input('exec-w'));
    await waiting.wait;
    await new Promise((r) => setTimeout(r, 50));
    expect(wf.running()).toEqual(['exec-w']);

    // Act
    await wf.stop('exec-w', 'cancelled');
    await wf.idleWithin(5_000);

    // Assess
    expect(wf.running()).toEqual([]);
    expect(calls.RunNodes).toHaveLength(1);
  });

  it('runs both machines of a service as one port, each execution on the one named', async () => {
    // Prepare
    const express = recorder();
    const standard = recorder();
    const both = new LocalWorkflows({
      express: new LocalWorkflow({ definition, tasks: express.tasks, type: 'EXPRESS' }),
      standard: new LocalWorkflow({ definition, tasks: standard.tasks }),
    });

    // Act
    await both.start('express', 'short', input('short'));
    await both.start('standard', 'long', input('long'));
    await both.idle();

    // Assess
    expect(express.calls.MarkRunning.map((c) => (c as { execution_id: string }).execution_id)).toEqual(['short']);
    expect(standard.calls.MarkRunning.map((c) => (c as { execution_id: string }).execution_id)).toEqual(['long']);
    expect(both.running()).toEqual([]);
  });

  it('stops an execution between states, without calling later tasks or onError', async () => {
    // Prepare
    const entered = gate();
    const hold = gate();
    const { calls, tasks } = recorder({
      RunNodes: async () => {
        entered.open();
        await hold.wait;
        throw new Error('interrupted');
      },
    });
    const onError = jest.fn();
    const wf = new LocalWorkflow({ definition, tasks, onError });
    await wf.start('exec-7', input('exec-7'));
    await entered.wait;

    // Act
    await wf.stop('exec-7', 'cancelled by caller');
    const whileWindingDown = wf.running();
    hold.open();
    await wf.idle();

    // Assess
    expect(whileWindingDown).toEqual(['exec-7']);
    expect(calls.MarkFailed).toEqual([]);
    expect(onError).not.toHaveBeenCalled();
    expect(wf.running()).toEqual([]);
    await expect(wf.stop('exec-7', 'again')).resolves.toBeUndefined();
  });

  it('honours TimeoutSecondsPath from the execution input, and tries a timed-out step again before failing it', async () => {
    // Prepare
    const hold = gate();
    const { calls, tasks } = recorder({ RunNodes: () => hold.wait.then(() => ({})) });
    const wf = new LocalWorkflow({ definition, tasks, retryIntervalOverrides: { RunNodes: 0 } });

    // Act
    await wf.start('exec-8', input('exec-8', { run: { next: 'step', step_timeout: 1 } }));
    const failed = new Promise<void>((resolve) => {
      const poll = (): void => {
        if (calls.MarkFailed.length > 0) resolve();
        else setTimeout(poll, 20);
      };
      poll();
    });
    await failed;
    hold.open();
    await wf.idle();

    // Assess: the first attempt and the two retries of States.Timeout (a step is safe to repeat).
    const first = { execution_id: 'exec-8', gen: 0, run: { next: 'step', step_timeout: 1 } };
    expect(calls.RunNodes).toEqual([first, first, first]);
    const marked = calls.MarkFailed[0] as { error: { Error: string } };
    expect(marked.error.Error).toBe('States.Timeout');
  });

  it('fails the execution, not the process, when the step time-out is missing', async () => {
    // Prepare
    const { calls, tasks } = recorder();
    const onError = jest.fn();
    const wf = new LocalWorkflow({ definition, tasks, onError });

    // Act
    await wf.start('exec-9', { execution_id: 'exec-9' });
    await wf.idle();

    // Assess
    expect(onError).toHaveBeenCalledTimes(1);
    expect(onError.mock.calls[0]?.[0]).toBe('exec-9');
    expect(calls.MarkFailed).toEqual([]);
  });

  it('stopAll aborts every execution and waits for their tasks', async () => {
    // Prepare
    const hold = gate();
    let finished = 0;
    const { calls, tasks } = recorder({
      MarkRunning: async () => {
        await hold.wait;
        finished += 1;
        return { proceed: true };
      },
    });
    const wf = new LocalWorkflow({ definition, tasks });
    await wf.start('a', input('a'));
    await wf.start('b', input('b'));

    // Act
    const stopping = wf.stopAll();
    hold.open();
    await stopping;

    // Assess
    expect(finished).toBe(2);
    expect(calls.RunNodes).toEqual([]);
    expect(wf.running()).toEqual([]);
  });

  it('stopAll with a grace period returns while a task call is still going', async () => {
    // Prepare
    const hold = gate();
    const { tasks } = recorder({ MarkRunning: () => hold.wait.then(() => ({ proceed: false })) });
    const wf = new LocalWorkflow({ definition, tasks });
    await wf.start('slow', input('slow'));

    // Act
    await wf.stopAll(20);
    const left = wf.running();
    hold.open();
    await wf.idle();

    // Assess
    expect(left).toEqual(['slow']);
    expect(wf.running()).toEqual([]);
  });

  it('refuses names and inputs Step Functions would refuse, and tasks that do not match the document', async () => {
    // Prepare
    const { tasks } = recorder();
    const wf = new LocalWorkflow({ definition, tasks });

    // Act / Assess
    await expect(wf.start('has space', input('x'))).rejects.toThrow('Invalid execution name');
    await expect(wf.start('x'.repeat(81), input('x'))).rejects.toThrow('Invalid execution name');
    await expect(wf.start('big', input('big', { blob: 'x'.repeat(256 * 1024) }))).rejects.toThrow('256 KiB');
    expect(() => new LocalWorkflow({ definition, tasks: { MarkRunning: tasks.MarkRunning, RunNodes: tasks.RunNodes } })).toThrow(
      'missing: MarkFailed',
    );
  });
});
