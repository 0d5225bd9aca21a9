/**
 * The deploy-time reserved concurrency check (lib/stacks/concurrency-check.handler.ts) as
 * CloudFormation drives it: each event answered to its response URL, a reservation the account
 * cannot give refused with the setting named, before any function is touched.
 */
import { GetAccountSettingsCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { answerConcurrencyCheck, CONCURRENCY_CHECK_ID } from '../../lib/stacks/concurrency-check.handler';
import type { CustomResourceEvent } from '../../lib/stacks/cfn-response';
import { concurrencyPlan, minimumReservation } from '../../lib/concurrency';
import { allFunctionNames } from '../../lib/stacks/permissions';
import { reply, startTestServer, type TestServer } from '../support/http-server';

const lambda = mockClient(LambdaClient);
const least = minimumReservation(allFunctionNames());
const planned = (n: number) => concurrencyPlan(allFunctionNames(), n).total;

let receiver: TestServer;
const answers: { Status?: string; Reason?: string; PhysicalResourceId?: string }[] = [];

beforeAll(async () => {
  receiver = await startTestServer((req, res) => {
    answers.push(JSON.parse(req.body) as (typeof answers)[number]);
    reply(res, 200);
  });
});
afterAll(() => receiver.close());
beforeEach(() => {
  lambda.reset();
  answers.length = 0;
});

const props = (requested: number) => ({
  ServiceToken: 'arn',
  // CloudFormation hands a custom resource every property as a string.
  Requested: String(requested),
  Reserved: String(requested === 0 ? 0 : planned(requested)),
  MaxAccountShare: '50',
  Least: String(least),
});

const event = (RequestType: CustomResourceEvent['RequestType'], requested: number, was?: number): CustomResourceEvent => ({
  RequestType,
  ResponseURL: `${receiver.origin}/response`,
  StackId: 'stack',
  RequestId: 'req',
  LogicalResourceId: 'ConcurrencyCheckResource',
  ...(RequestType === 'Create' ? {} : { PhysicalResourceId: CONCURRENCY_CHECK_ID }),
  ResourceProperties: props(requested),
  ...(was !== undefined ? { OldResourceProperties: props(was) } : {}),
});

const account = (quota: number, unreserved = quota) =>
  lambda
    .on(GetAccountSettingsCommand)
    .resolves({ AccountLimit: { ConcurrentExecutions: quota, UnreservedConcurrentExecutions: unreserved } });

const run = async (e: CustomResourceEvent) => {
  await answerConcurrencyCheck(e, new LambdaClient({ region: 'us-east-1' }));
  return answers[0];
};

describe('the concurrency check', () => {
  it('answers at once, without asking the account, when nothing is reserved (the default)', async () => {
    // Act
    const a = await run(event('Create', 0));
    // Assess
    expect(a).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: CONCURRENCY_CHECK_ID });
    expect(lambda.calls()).toHaveLength(0);
  });

  it('lets through a reservation the account can give', async () => {
    // Prepare
    account(1_000);
    // Act
    const a = await run(event('Create', 500));
    // Assess
    expect(a?.Status).toBe('SUCCESS');
    expect(lambda.commandCalls(GetAccountSettingsCommand)).toHaveLength(1);
  });

  it('fails the deploy on a new account of 10, naming reservedConcurrency and what fits', async () => {
    // Prepare
    account(10);
    // Act
    const a = await run(event('Create', least));
    // Assess
    expect(a?.Status).toBe('FAILED');
    expect(a?.Reason).toContain(`reservedConcurrency=${least} reserves ${least} units`);
    expect(a?.Reason).toContain('set reservedConcurrency=0 to reserve nothing');
  });

  it('counts what the old plan holds on an update, so raising 450 to 480 fits where 450 was left 550', async () => {
    // Prepare: the stack's functions hold 450's plan of an account of 1,000.
    account(1_000, 1_000 - planned(450));
    // Act
    const raised = await run(event('Update', 480, 450));
    answers.length = 0;
    const tooMuch = await run(event('Update', 800, 450));
    // Assess
    expect(raised?.Status).toBe('SUCCESS');
    expect(tooMuch?.Status).toBe('FAILED');
    expect(tooMuch?.Reason).toMatch(/maxAccountShare=50 lets pipegate take at most 500/);
  });

  it('fails, saying so, when the account cannot be read', async () => {
    // Prepare
    lambda.on(GetAccountSettingsCommand).rejects(new Error('User is not authorized to perform: lambda:GetAccountSettings'));
    // Act
    const a = await run(event('Create', 500));
    // Assess
    expect(a?.Status).toBe('FAILED');
    expect(a?.Reason).toMatch(/the reserved concurrency check could not run: .*lambda:GetAccountSettings/);
  });

  it('has nothing to undo on delete', async () => {
    // Act
    const a = await run(event('Delete', 500));
    // Assess
    expect(a?.Status).toBe('SUCCESS');
    expect(lambda.calls()).toHaveLength(0);
  });
});
