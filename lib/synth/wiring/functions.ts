/**
 * Every AWS::Lambda::Function of the assembly as a function host running its bundle in worker
 * threads, with its template's environment, time-out and memory, credentials of its own role,
 * and the local AWS endpoint as every SDK's endpoint.
 */
import { join } from 'node:path';
import { isPlainObject } from '../../../functions/core/values';
import { FunctionHost, type FunctionSpec } from '../function-host';
import { credentialsFor } from '../iam';
import { scaled } from '../scale-model';
import type { FunctionLookup, Wiring } from './context';

/**
 * Function settings a local run may tune (call-back schedule, poll intervals, time-outs...),
 * given as PIPEGATE_* variables to start:synth. The wiring (table, queues, secret, state
 * machine) always comes from the template.
 */
const WIRING = new Set([
  'PIPEGATE_TABLE',
  'PIPEGATE_EXECUTIONS_QUEUE_URL',
  'PIPEGATE_CALLBACKS_QUEUE_URL',
  'PIPEGATE_SECRET_ARN',
  'PIPEGATE_OWNER_SECRETS_KEY',
  'PIPEGATE_EXPRESS_STATE_MACHINE_ARN',
  'PIPEGATE_STANDARD_STATE_MACHINE_ARN',
  'PIPEGATE_BUCKET',
  'PIPEGATE_S3_ENDPOINT',
  'PIPEGATE_S3_FORCE_PATH_STYLE',
  'PIPEGATE_DYNAMODB_ENDPOINT',
  'PIPEGATE_TRACK_OPEN',
  'PIPEGATE_DATA_DIR',
  'PIPEGATE_OWNER_TOKEN',
  'PIPEGATE_BASE_PATH',
  'PIPEGATE_SCALE',
  'PIPEGATE_SCALE_ACCOUNT_CONCURRENCY',
  'PIPEGATE_SCALE_ACCOUNT_RESERVED',
  'PIPEGATE_OWNER_PRINCIPAL',
]);

export interface Functions {
  /** By physical name. */
  hosts: Map<string, FunctionHost>;
  /** Each function's execution role by its physical name, resolved once here for everything that acts as it. */
  roles: Map<string, string>;
  fnByArn: FunctionLookup;
}

export function wireFunctions(w: Wiring, endpointUrl: string, maxConcurrency: number | undefined): Functions {
  const { scale } = w;
  const { env, dataDir } = w.boot;
  const region = w.resolved.env.region;
  const hosts = new Map<string, FunctionHost>();
  const roles = new Map<string, string>();
  const byArn = new Map<string, FunctionHost>();
  const tuning = Object.fromEntries(
    Object.entries(env).filter((e): e is [string, string] => e[0].startsWith('PIPEGATE_') && !WIRING.has(e[0]) && e[1] !== undefined),
  );
  for (const fn of w.assembly.functions) {
    const stack = w.resolved.stack(fn.stack);
    const where = `${fn.stack}.Resources.${fn.logicalId}.Properties`;
    const physical = stack.physical[fn.logicalId];
    if (!physical) throw new Error(`${where}: no physical function`);
    const arn = physical.attributes.Arn ?? '';
    const roleArn = stack.resolveString(fn.properties.Role, `${where}.Role`);
    roles.set(physical.ref, roleArn);
    const variables = (
      isPlainObject(fn.properties.Environment)
        ? stack.resolve(fn.properties.Environment.Variables ?? {}, `${where}.Environment.Variables`)
        : {}
    ) as Record<string, string>;
    const credentials = credentialsFor(roleArn);
    const memoryMb = Number(fn.properties.MemorySize ?? 128);
    const spec: FunctionSpec = {
      name: physical.ref,
      arn,
      file: fn.file,
      exportName: fn.exportName,
      root: fn.assetDir,
      timeoutSeconds: Number(fn.properties.Timeout ?? 3),
      memoryMb,
      env: {
        ...variables,
        // Local callers and call-back receivers live on this machine's private addresses.
        PIPEGATE_ALLOW_PRIVATE_URLS: 'true',
        ...tuning,
        // The wait bound is a share of the function's reservation, so it scales with it.
        ...(scale && Number(variables.PIPEGATE_MAX_WAITERS) > 0
          ? { PIPEGATE_MAX_WAITERS: String(scaled(Number(variables.PIPEGATE_MAX_WAITERS), scale.factor)) }
          : {}),
        AWS_ENDPOINT_URL: endpointUrl,
        // S3 addresses buckets by host name unless told otherwise; the local endpoint has one host.
        PIPEGATE_S3_ENDPOINT: endpointUrl,
        PIPEGATE_S3_FORCE_PATH_STYLE: 'true',
        AWS_ACCESS_KEY_ID: credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
        AWS_SESSION_TOKEN: credentials.sessionToken,
        AWS_REGION: region,
        AWS_DEFAULT_REGION: region,
        AWS_LAMBDA_FUNCTION_NAME: physical.ref,
        AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(memoryMb),
        AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${physical.ref}`,
        AWS_EXECUTION_ENV: `AWS_Lambda_${String(fn.properties.Runtime ?? 'nodejs')}`,
        LAMBDA_TASK_ROOT: fn.assetDir,
        TZ: ':UTC',
        // No profile or shared file of this machine may reach a function's SDK.
        AWS_CONFIG_FILE: join(dataDir, 'no-aws-config'),
        AWS_SHARED_CREDENTIALS_FILE: join(dataDir, 'no-aws-credentials'),
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
    };
    const host = new FunctionHost(spec, {
      // Under the scale model an environment per concurrent invocation Lambda allows, and no more.
      maxConcurrency: scale ? scale.lambda.limitOf(spec.name) : maxConcurrency,
      ...(scale ? { concurrency: () => scale.lambda.acquire(spec.name) } : {}),
      log: (name, line) => w.log(`[${name}] ${line}`),
    });
    w.boot.onStop(() => host.stop());
    hosts.set(spec.name, host);
    byArn.set(arn, host);
  }
  const fnByArn: FunctionLookup = (arn, where) => {
    const h = byArn.get(arn) ?? hosts.get(arn);
    if (!h) throw new Error(`${where}: no function ${arn} in the assembly`);
    return h;
  };

  return { hosts, roles, fnByArn };
}
