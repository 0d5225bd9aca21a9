/**
 * What each function may touch on AWS, as data: the service stack grants exactly this and the
 * stack tests check the synthesized policies against it. Plain data: no aws-cdk-lib.
 */
import { routeHandlers, WORKERS } from '../routes';
import type { QueueName } from '../queues';

export type TableAction = 'GetItem' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'Query';
export type StatesAction = 'StartExecution' | 'StopExecution';
export type { QueueName };

export interface FunctionAccess {
  /** DynamoDB actions on the main table; Query also covers its indexes. */
  table: readonly TableAction[];
  /** Queues the function sends to. */
  send: readonly QueueName[];
  /** The queue whose event source invokes the function. */
  consumes?: QueueName;
  /** Reads the key material secret (pepper and master key). */
  secret: boolean;
  /** Step Functions actions on the pipegate state machine (StopExecution: on its executions). */
  states: readonly StatesAction[];
}

const READ: readonly TableAction[] = ['GetItem'];
const LIST: readonly TableAction[] = ['GetItem', 'Query'];
const UPDATE: readonly TableAction[] = ['GetItem', 'UpdateItem'];
const CREATE_EXECUTION: readonly TableAction[] = ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'];
const ALL: readonly TableAction[] = ['GetItem', 'PutItem', 'UpdateItem', 'Query'];

const access = (table: readonly TableAction[], more: Partial<Omit<FunctionAccess, 'table'>> = {}): FunctionAccess => ({
  table,
  send: more.send ?? [],
  consumes: more.consumes,
  secret: more.secret ?? false,
  states: more.states ?? [],
});

/** Keyed by handler name (the folder under functions/). */
export const ACCESS: Readonly<Record<string, FunctionAccess>> = {
  // Callers.
  authorizer: access(READ, { secret: true }),
  // DeleteItem: a pending execution whose queue message could not be sent is withdrawn.
  execute: access(CREATE_EXECUTION, { send: ['executions'] }),
  'execution-status': access(READ),
  'execution-result': access(READ),
  'execution-cancel': access(UPDATE, { states: ['StopExecution'], send: ['callbacks'] }),
  'deployment-contract': access(READ),
  'deployment-openapi': access(READ),
  // Owners.
  'pipeline-list': access(LIST),
  'pipeline-get': access(LIST),
  // Query also lists the owner secrets' names, to warn about references to missing ones.
  'pipeline-push': access(ALL),
  'run-start': access(CREATE_EXECUTION, { send: ['executions'] }),
  'run-list': access(LIST),
  'run-get': access(LIST),
  'owner-execution-get': access(LIST),
  'deployment-readiness': access(LIST),
  'deployment-publish': access(ALL, { secret: true }),
  'deployment-keys': access(ALL, { secret: true }),
  'deployment-delete': access(UPDATE),
  // Owner secrets: sealing needs the master key; listing never opens a value.
  'secret-put': access(['PutItem'], { secret: true }),
  'secret-list': access(['Query']),
  'secret-delete': access(['DeleteItem']),
  // Workers.
  runner: access(UPDATE, { consumes: 'executions', states: ['StartExecution'] }),
  'task-start': access(UPDATE, { send: ['callbacks'] }),
  // Reads the owner secrets a pipeline references (one Query per container per TTL) and opens them.
  'task-run': access(['GetItem', 'UpdateItem', 'Query'], { send: ['callbacks'], secret: true }),
  'task-fail': access(UPDATE, { send: ['callbacks'] }),
  // Retries go back onto its own queue with a delay.
  'callback-dispatch': access(UPDATE, { consumes: 'callbacks', secret: true, send: ['callbacks'] }),
};

/** Every function pipegate deploys: the route handlers and the workers. */
export const allFunctionNames = (): string[] => [...new Set([...routeHandlers(), ...Object.values(WORKERS)])];

export function accessFor(name: string): FunctionAccess {
  const a = ACCESS[name];
  if (!a) throw new Error(`No access entry for function "${name}" in lib/stacks/permissions.ts`);
  return a;
}

/**
 * SDK packages a function's bundle leaves out. Clients are created lazily (functions/adapters/
 * deps.ts), so a function never loads a client its access does not include, and the credential
 * providers beyond the environment's are never used in Lambda. Should one be required all the
 * same, the Lambda Node.js runtime ships the SDK v3, so nothing breaks: it only is not bundled.
 */
export function bundleExternals(name: string): string[] {
  const a = accessFor(name);
  const unused: string[] = [];
  if (a.send.length === 0) unused.push('@aws-sdk/client-sqs');
  if (a.states.length === 0) unused.push('@aws-sdk/client-sfn');
  if (!a.secret) unused.push('@aws-sdk/client-secrets-manager');
  return [
    ...unused,
    '@aws-sdk/nested-clients',
    '@aws-sdk/token-providers',
    '@aws-sdk/credential-provider-ini',
    '@aws-sdk/credential-provider-sso',
    '@aws-sdk/credential-provider-login',
    '@aws-sdk/credential-provider-process',
    '@aws-sdk/credential-provider-web-identity',
    // Container and instance-metadata credentials: Lambda hands credentials in the environment.
    '@aws-sdk/credential-provider-http',
    '@smithy/credential-provider-imds',
  ];
}
