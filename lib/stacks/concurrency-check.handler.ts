/**
 * CloudFormation custom resource that checks, before any function is created or updated, that
 * the account can give the reserved concurrency the stack asks for (lib/concurrency.ts). Lambda
 * refuses a reservation that leaves the account fewer than 100 unreserved units, one function at
 * a time and half-way through a deploy, in words that name neither the setting nor the figure
 * that would fit; this reads the account's quota and what is unreserved (GetAccountSettings) and
 * fails the deploy at once, naming `reservedConcurrency` and the most the account can give.
 *
 * Unreserved excludes what this stack's functions hold already, so on an Update the previous
 * plan's total (the old properties') is counted back in. With nothing to reserve it answers at
 * once, without a call. Delete has nothing to undo. Every event can run twice with the same outcome.
 */
import { GetAccountSettingsCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { respond, type CustomResourceEvent } from './cfn-response';
import { reservationRefusal, type AccountConcurrency, type ReservationRequest } from '../concurrency';

const client = new LambdaClient({});

/** The resource's one physical id: there is one check per stack. */
export const CONCURRENCY_CHECK_ID = 'pipegate-concurrency-check';

/** The properties the stack gives the resource (ServiceStack.buildConcurrencyCheck). */
export interface ConcurrencyCheckProperties {
  /** The `reservedConcurrency` setting. */
  Requested: number;
  /** The plan's total. */
  Reserved: number;
  /** The `maxAccountShare` setting. */
  MaxAccountShare: number;
  /** The least `reservedConcurrency` that plans. */
  Least: number;
}

/** CloudFormation passes every property as a string. */
const count = (p: Record<string, unknown> | undefined, key: keyof ConcurrencyCheckProperties): number => {
  const v = Number(p?.[key]);
  if (!Number.isSafeInteger(v) || v < 0) throw new Error(`${key} must be a whole number, not ${JSON.stringify(p?.[key])}`);
  return v;
};

/** What the event asks of the account: the new plan's total, and what the old one holds. */
export function requestOf(event: CustomResourceEvent): ReservationRequest {
  const p = event.ResourceProperties;
  return {
    requested: count(p, 'Requested'),
    total: count(p, 'Reserved'),
    maxAccountShare: count(p, 'MaxAccountShare'),
    least: count(p, 'Least'),
    // A Create holds nothing yet; an Update's old total is in place until its functions change.
    held: event.RequestType === 'Update' && event.OldResourceProperties ? count(event.OldResourceProperties, 'Reserved') : 0,
  };
}

async function accountOf(lambda: LambdaClient): Promise<AccountConcurrency> {
  const got = await lambda.send(new GetAccountSettingsCommand({}));
  const quota = got.AccountLimit?.ConcurrentExecutions;
  const unreserved = got.AccountLimit?.UnreservedConcurrentExecutions;
  if (quota === undefined || unreserved === undefined) throw new Error('GetAccountSettings answered without the account limit');
  return { quota, unreserved };
}

/**
 * Lambda's entry point. Lambda calls it with (event, context): a default for a second
 * parameter would be replaced by the context, so the client is passed on here instead.
 */
export const handler = (event: CustomResourceEvent): Promise<void> => answerConcurrencyCheck(event, client);

/** Checks the reservation as the event asks, and answers CloudFormation. */
export async function answerConcurrencyCheck(event: CustomResourceEvent, lambda: LambdaClient): Promise<void> {
  try {
    if (event.RequestType !== 'Delete') {
      const request = requestOf(event);
      if (request.total > 0) {
        const account = await accountOf(lambda);
        const refusal = reservationRefusal(account, request);
        if (refusal !== undefined) {
          console.error(JSON.stringify({ level: 'error', message: 'reserved concurrency refused', reason: refusal, ...account }));
          return await respond(event, 'FAILED', CONCURRENCY_CHECK_ID, refusal);
        }
        console.log(JSON.stringify({ level: 'info', message: 'reserved concurrency fits', reserved: request.total, ...account }));
      }
    }
    await respond(event, 'SUCCESS', CONCURRENCY_CHECK_ID);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    console.error(
      JSON.stringify({ level: 'error', message: 'concurrency check failed', request_type: event.RequestType, error_message: message }),
    );
    await respond(event, 'FAILED', CONCURRENCY_CHECK_ID, `the reserved concurrency check could not run: ${message}`);
  }
}
