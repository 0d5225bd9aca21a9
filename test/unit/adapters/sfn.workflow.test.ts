import {
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  InvalidArn,
  SFNClient,
  SFNServiceException,
  StartExecutionCommand,
  StopExecutionCommand,
  ValidationException,
} from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { executionArnPrefix, SfnWorkflowPort } from '../../../functions/adapters/sfn.workflow';

const machineArn = 'arn:aws:states:eu-west-1:123456789012:stateMachine:pipegate-standard';
const expressArn = 'arn:aws:states:eu-west-1:123456789012:stateMachine:pipegate-express';
const meta = { $metadata: {} };

describe('SfnWorkflowPort', () => {
  const sfn = mockClient(SFNClient);
  beforeEach(() => sfn.reset());
  const port = (): SfnWorkflowPort =>
    new SfnWorkflowPort(new SFNClient({ region: 'eu-west-1' }), { express: expressArn, standard: machineArn });

  it('starts an execution named after the pipegate execution, with the input as JSON', async () => {
    // Prepare
    sfn.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });

    // Act
    const result = await port().start('standard', 'exec-1', { execution_id: 'exec-1', timeout_seconds: 300 });

    // Assess
    expect(result).toBe('started');
    expect(sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input).toEqual({
      stateMachineArn: machineArn,
      name: 'exec-1',
      input: '{"execution_id":"exec-1","timeout_seconds":300}',
    });
  });

  it('starts on the machine it is told: an Express one for a short pipeline', async () => {
    // Prepare
    sfn.on(StartExecutionCommand).resolves({ executionArn: 'x', startDate: new Date() });

    // Act
    await port().start('express', 'exec-5', {});
    await port().start('standard', 'exec-6', {});

    // Assess
    expect(sfn.commandCalls(StartExecutionCommand).map((c) => [c.args[0].input.stateMachineArn, c.args[0].input.name])).toEqual([
      [expressArn, 'exec-5'],
      [machineArn, 'exec-6'],
    ]);
  });

  it('calls nothing to stop an Express execution, which cannot be stopped', async () => {
    // Act
    await port().stop('express', 'exec-7', 'cancelled');

    // Assess
    expect(sfn.commandCalls(StopExecutionCommand)).toHaveLength(0);
  });

  it('refuses a machine it was not given', async () => {
    const only = new SfnWorkflowPort(new SFNClient({ region: 'eu-west-1' }), { express: '', standard: machineArn });
    await expect(only.start('express', 'exec-8', {})).rejects.toThrow(/express state machine/);
  });

  it('reports an existing execution of that name as already_exists', async () => {
    // Prepare
    sfn.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: 'exists', ...meta }));

    // Act
    const result = await port().start('standard', 'exec-1', {});

    // Assess
    expect(result).toBe('already_exists');
  });

  it('lets other start failures through', async () => {
    // Prepare
    sfn
      .on(StartExecutionCommand)
      .rejects(new SFNServiceException({ name: 'ThrottlingException', $fault: 'client', message: 'slow down', ...meta }));

    // Act / Assess
    await expect(port().start('standard', 'exec-1', {})).rejects.toThrow('slow down');
  });

  it('stops the execution whose ARN derives from the state machine ARN', async () => {
    // Prepare
    sfn.on(StopExecutionCommand).resolves({ stopDate: new Date() });

    // Act
    await port().stop('standard', 'exec-2', 'cancelled by caller');

    // Assess
    expect(sfn.commandCalls(StopExecutionCommand)[0]?.args[0].input).toEqual({
      executionArn: 'arn:aws:states:eu-west-1:123456789012:execution:pipegate-standard:exec-2',
      cause: 'cancelled by caller',
    });
  });

  it.each([
    ['ExecutionDoesNotExist', new ExecutionDoesNotExist({ message: 'gone', ...meta })],
    ['InvalidArn', new InvalidArn({ message: 'express', ...meta })],
    ['ValidationException', new ValidationException({ message: 'not supported', ...meta })],
  ])('treats %s on stop as nothing to stop', async (_name, error) => {
    // Prepare
    sfn.on(StopExecutionCommand).rejects(error);

    // Act / Assess
    await expect(port().stop('standard', 'exec-3', 'cancelled')).resolves.toBeUndefined();
  });

  it('lets other stop failures through', async () => {
    // Prepare
    sfn
      .on(StopExecutionCommand)
      .rejects(new SFNServiceException({ name: 'AccessDeniedException', $fault: 'client', message: 'denied', ...meta }));

    // Act / Assess
    await expect(port().stop('standard', 'exec-3', 'cancelled')).rejects.toThrow('denied');
  });

  it('cuts an overlong cause to what StopExecution accepts', async () => {
    // Prepare
    sfn.on(StopExecutionCommand).resolves({ stopDate: new Date() });

    // Act
    await port().stop('standard', 'exec-4', 'x'.repeat(40_000));

    // Assess
    expect(sfn.commandCalls(StopExecutionCommand)[0]?.args[0].input.cause).toHaveLength(32768);
  });
});

describe('executionArnPrefix', () => {
  it('keeps partition, region and account', () => {
    expect(executionArnPrefix('arn:aws-cn:states:cn-north-1:111122223333:stateMachine:sm')).toBe(
      'arn:aws-cn:states:cn-north-1:111122223333:execution:sm:',
    );
  });

  it.each(['', 'arn:aws:lambda:eu-west-1:1:function:f', 'arn:aws:states:eu-west-1:1:execution:sm:x', 'arn:aws:states::1:stateMachine:sm'])(
    'refuses %p',
    (arn) => {
      expect(() => executionArnPrefix(arn)).toThrow('Not a state machine ARN');
    },
  );
});
