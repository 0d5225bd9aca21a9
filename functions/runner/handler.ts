import { lambdaDeps } from '../adapters/deps';
import { sqsBatchHandler } from '../adapters/sqs-batch';
import { ExecutionMessage, startWorkflow } from '../services/runner.service';

/**
 * Executions queue → one state-machine execution per pipegate execution, on the machine the
 * message names. Duplicates are harmless: only a pending execution is started, and the start
 * task moves it on only once.
 */
export const createHandler = sqsBatchHandler('executions', ExecutionMessage, (d, msg) => startWorkflow(d, msg));

export const handler = createHandler(lambdaDeps);
