import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import fc from 'fast-check';
import { clampDelaySeconds, SqsQueuePort } from '../../../functions/adapters/sqs.queue';

const urls = {
  executions: 'https://sqs.eu-west-1.amazonaws.com/123456789012/pipegate-executions',
  callbacks: 'https://sqs.eu-west-1.amazonaws.com/123456789012/pipegate-callbacks',
};

describe('SqsQueuePort', () => {
  const sqs = mockClient(SQSClient);
  beforeEach(() => sqs.reset());

  it('sends the body as JSON to the named queue, without a delay unless asked', async () => {
    // Prepare
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
    const port = new SqsQueuePort(new SQSClient({ region: 'eu-west-1' }), urls);

    // Act
    await port.send('executions', { execution_id: 'e-1' });
    await port.send('callbacks', { execution_id: 'e-2', attempt: 3 }, { delaySeconds: 60 });

    // Assess
    const inputs = sqs.commandCalls(SendMessageCommand).map((c) => c.args[0].input);
    expect(inputs).toEqual([
      { QueueUrl: urls.executions, MessageBody: '{"execution_id":"e-1"}' },
      { QueueUrl: urls.callbacks, MessageBody: '{"execution_id":"e-2","attempt":3}', DelaySeconds: 60 },
    ]);
  });

  it('clamps the delay to what SQS accepts', async () => {
    // Prepare
    sqs.on(SendMessageCommand).resolves({});
    const port = new SqsQueuePort(new SQSClient({ region: 'eu-west-1' }), urls);

    // Act
    await port.send('callbacks', {}, { delaySeconds: 3600 });
    await port.send('callbacks', {}, { delaySeconds: -5 });
    await port.send('callbacks', {}, { delaySeconds: 1.2 });

    // Assess
    expect(sqs.commandCalls(SendMessageCommand).map((c) => c.args[0].input.DelaySeconds)).toEqual([900, 0, 2]);
  });

  it('lets SQS failures through to the caller', async () => {
    // Prepare
    sqs.on(SendMessageCommand).rejects(new Error('throttled'));
    const port = new SqsQueuePort(new SQSClient({ region: 'eu-west-1' }), urls);

    // Act / Assess
    await expect(port.send('executions', {})).rejects.toThrow('throttled');
  });
});

describe('clampDelaySeconds', () => {
  it('always gives a whole number of seconds within 0..900, never shorter than asked when it can', () => {
    fc.assert(
      fc.property(fc.oneof(fc.double(), fc.integer({ min: -10_000, max: 10_000 })), (wanted) => {
        const got = clampDelaySeconds(wanted);
        expect(Number.isInteger(got)).toBe(true);
        expect(got).toBeGreaterThanOrEqual(0);
        expect(got).toBeLessThanOrEqual(900);
        if (Number.isFinite(wanted) && wanted > 0 && wanted <= 900) expect(got).toBeGreaterThanOrEqual(wanted);
      }),
    );
  });
});
