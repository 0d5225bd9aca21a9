/**
 * The whole service from the synthesized cloud assembly, on one machine: what `cdk deploy`
 * would upload, deployed onto local stand-ins in the templates' own terms. Every Lambda runs
 * its bundled asset in worker threads (./function-host) with the environment, handler,
 * timeout and memory of its template resource; the functions' AWS SDK reaches the local AWS
 * endpoint (./aws-endpoint), which checks every call against the function's role; the API,
 * the state machine, the queues and their event source mappings, schedules, secrets and
 * custom resources are all read from the templates. `npm run start:synth` runs it.
 */
import '../local/polyfills';
import { join } from 'node:path';
import { LocalQueue } from '../local/queue';
import type { Deps } from '../../functions/adapters/deps';
import type { LocalWorkflow, LocalWorkflows } from '../local/workflow';
import { cachedAssembly, loadAssembly, type Assembly } from './assembly';
import { LocalKms } from '../local/kms';
import { LocalSecretStore, startAwsEndpoint, type AwsEndpoint, type StateMachinePort, type EndpointQueue } from './aws-endpoint';
import type { FunctionHost } from './function-host';
import { assertKnownPolicies, IamEvaluator, type IamDecision, type IamRequest } from './iam';
import { bootstrap, onRecordedPort, type Boot, type BootOptions, type Booted, type Wired } from '../local/bootstrap';
import { resolveAssembly, type ResolvedAssembly } from './physical';
import { AWS_QUOTAS, scaleFactorOf, scaleModelFromTemplates, templateReservations, type ScaleModel } from './scale-model';
import { readSavedJson, writeSavedJson } from '../local/saved-json';
import { isPlainObject } from '../../functions/core/values';
import { wireApi } from './wiring/api';
import type { Wiring } from './wiring/context';
import { apiAddressNamed, localApiAddress, runCustomResources } from './wiring/custom-resources';
import { wireFunctions } from './wiring/functions';
import { eventSourceMappings, wireConsumers, wireQueues } from './wiring/queues';
import { indexUnmarkedOpen, recoveryDeps } from './wiring/recovery';
import { wireSchedules, type Schedule } from './wiring/schedules';
import { wireStateMachines } from './wiring/state-machines';
import { bucketsOf, defineKeys, defineSecrets, tableInputs } from './wiring/stores';

export { DEFAULT_OWNER_USER } from './wiring/api';
export type { Schedule } from './wiring/schedules';

/** Host, port, data dir, owner token, env and inMemory as lib/local/bootstrap.ts takes them. */
export interface SynthRuntimeOptions extends BootOptions {
  /** An assembly already loaded (tests pass an edited copy); default: the cached synth of the sources. */
  assembly?: Assembly;
  /** Environments kept warm per function at most (default 4). */
  maxConcurrency?: number;
  /** Each log line: the runtime's own and every function's. Default: stderr. */
  log?: ((line: string) => void) | false;
  /**
   * The scale model's factor (./scale-model): the templates' limits and AWS's quotas times this,
   * enforced as AWS enforces them. Default: PIPEGATE_SCALE, else no model.
   */
  scale?: number;
  /**
   * The emulated account's Lambda concurrency quota, as GetAccountSettings answers it and the
   * scale model shares it (default: PIPEGATE_SCALE_ACCOUNT_CONCURRENCY, else AWS's 1,000).
   */
  accountConcurrency?: number;
  /** Units other functions of the emulated account have reserved (default: PIPEGATE_SCALE_ACCOUNT_RESERVED, else 0). */
  accountReservedElsewhere?: number;
  /**
   * The IAM principal the owner token stands for, checked against the API's resource policy
   * (default: PIPEGATE_OWNER_PRINCIPAL, else a user of the template's account, DEFAULT_OWNER_USER).
   */
  ownerPrincipal?: string;
}

/** URL, owner token, data dir, drain time, what the start recovered and the stop: lib/local/bootstrap.ts. */
export interface SynthRuntime extends Booted {
  assembly: Assembly;
  resolved: ResolvedAssembly;
  endpoint: AwsEndpoint;
  iam: IamEvaluator;
  /** By function name. */
  functions: ReadonlyMap<string, FunctionHost>;
  /** By state machine ARN. */
  stateMachines: ReadonlyMap<string, LocalWorkflow & StateMachinePort>;
  /** By queue ARN. */
  queues: ReadonlyMap<string, LocalQueue>;
  /** The assembly's two state machines, Express and Standard, by type (what `npm start` calls `workflow`). */
  workflow: LocalWorkflows;
  /**
   * The table, queues and state machine as the functions see them, from this process and
   * outside IAM (the restart's recovery uses them; tests plant state with them).
   */
  deps: Deps;
  /** Every scheduled target, running on its rate; `fire` invokes it once now, as the rule would. */
  schedules: readonly Schedule[];
  /** The scale model when one is on: its limits and what it refused. */
  scale?: ScaleModel;
}

export async function startSynthRuntime(opts: SynthRuntimeOptions = {}): Promise<SynthRuntime> {
  const log = opts.log === false ? () => undefined : (opts.log ?? ((line: string) => process.stderr.write(`${line}\n`)));
  const progress = opts.progress ?? (() => undefined);
  const assembly = opts.assembly ?? loadAssembly((await cachedAssembly({ progress })).dir);
  const { booted, wired } = await bootstrap({ ...opts, progress }, '.pipegate-synth', (boot) =>
    wireSynth(opts, boot, assembly, log, progress),
  );
  const { exposed } = wired;
  return { ...booted, ...exposed };
}

/** What start:synth exposes beside what every runtime does (lib/local/bootstrap.ts Booted). */
type SynthParts = Omit<SynthRuntime, keyof Booted>;

/** The service from the templates: the bundles in worker threads, every AWS call checked by IAM. */
async function wireSynth(
  opts: SynthRuntimeOptions,
  boot: Boot,
  assembly: Assembly,
  log: (line: string) => void,
  progress: (line: string) => void,
): Promise<Wired & { exposed: SynthParts }> {
  const { env, dataDir } = boot;
  // On the port it had last time (the data dir's `aws-port`) when free: upload URLs the
  // functions presign name it, so those handed out before a restart still work after it.
  const endpoint = await onRecordedPort(
    join(dataDir, 'aws-port'),
    (port) => startAwsEndpoint({ port, log: (line) => log(line) }),
    (message) => log(`AWS endpoint: ${message}`),
  );
  boot.onStop(() => endpoint.stop());
  const resolved = resolveAssembly(assembly, { partition: 'aws', urlSuffix: 'amazonaws.com', awsEndpointUrl: endpoint.url });
  const iam = memoized(IamEvaluator.fromAssembly(resolved), assembly);
  const stacks = assembly.stacks.map((s) => resolved.stack(s.id));
  const factor = opts.scale ?? scaleFactorOf(env.PIPEGATE_SCALE);
  const accountConcurrency =
    opts.accountConcurrency ?? (env.PIPEGATE_SCALE_ACCOUNT_CONCURRENCY ? Number(env.PIPEGATE_SCALE_ACCOUNT_CONCURRENCY) : undefined);
  const reservedElsewhere =
    opts.accountReservedElsewhere ?? (env.PIPEGATE_SCALE_ACCOUNT_RESERVED ? Number(env.PIPEGATE_SCALE_ACCOUNT_RESERVED) : 0);
  const scale = factor === undefined ? undefined : scaleModelFromTemplates(stacks, { factor, accountConcurrency, reservedElsewhere });
  // The account as Lambda's GetAccountSettings reports it: what this service's functions held
  // when the data dir last started (a redeploy's functions still hold the old plan while the
  // deploy-time check runs) and what others reserved are not unreserved.
  const reservationsFile = join(dataDir, 'lambda-reservations.json');
  const saved = readSavedJson(reservationsFile);
  let heldByService = isPlainObject(saved) && typeof saved.total === 'number' ? saved.total : 0;
  const quota = accountConcurrency ?? AWS_QUOTAS.accountConcurrency;
  const lambdaAccount = () => ({ quota, unreserved: Math.max(0, quota - reservedElsewhere - heldByService) });
  const w: Wiring = { boot, assembly, resolved, stacks, iam, scale, log };

  const dynamo = await boot.tables(stacks.flatMap((s) => tableInputs(s)));

  const secrets = new LocalSecretStore(join(dataDir, 'secrets-manager.json'));
  for (const stack of stacks) defineSecrets(stack, secrets);
  // The templates' KMS keys, created once (their material in the data dir, as KMS keeps it).
  const kms = new LocalKms(join(dataDir, 'kms.json'));
  defineKeys(stacks, kms);

  const { hosts, roles, fnByArn } = wireFunctions(w, endpoint.url, opts.maxConcurrency);
  const { machines, workflows: workflow, roles: machineRoles } = wireStateMachines(w, fnByArn);

  // Every role local code acts as (each resolved once, above), before anything acts as one;
  // API Gateway's account-level logging role is not one.
  const actedAs = new Set([...roles.values(), ...machineRoles]);
  assertKnownPolicies(iam.principals.filter((p) => actedAs.has(p.roleArn)));

  const mappings = eventSourceMappings(stacks, fnByArn);
  const queues = wireQueues(w, mappings);

  const endpointQueues = new Map<string, EndpointQueue>([...queues].map(([arn, q]) => [arn, q]));
  endpoint.serve({
    iam,
    arns: resolved.arns,
    dynamoEndpoint: dynamo.endpoint,
    queues: endpointQueues,
    stateMachines: machines,
    secrets,
    kms,
    objects: { dir: join(dataDir, 'objects'), ...bucketsOf(stacks) },
    lambdaAccount,
    ...(scale ? { throughput: scale.dynamo, startThrottle: scale.states } : {}),
  });
  // S3's own lifecycle expiry, from the template's rules: a pass at start and every hour.
  boot.every(
    3600 * 1000,
    () => endpoint.expireObjects(),
    (err: unknown) => log(`object expiry failed: ${err instanceof Error ? err.message : String(err)}`),
    { now: true },
  );

  // Custom resources, as CloudFormation runs them on the first deploy.
  progress(`${hosts.size} functions and ${queues.size} queues set up; running custom resources`);
  // Those naming the API's own address run once it listens (listening, below): only then is the
  // local address that stands for it known, as CloudFormation creates them after the API.
  const namesApi = apiAddressNamed(stacks);
  for (const stack of stacks)
    await runCustomResources(
      stack,
      dataDir,
      fnByArn,
      (v) => v,
      log,
      (props) => !namesApi(props),
    );
  // Past the deploy-time concurrency check: the functions now hold the template's reservations.
  heldByService = [...templateReservations(stacks).values()].reduce((a, b) => a + b, 0);
  writeSavedJson(reservationsFile, { total: heldByService });

  // A restart owes the work it finds unfinished what `npm start` owes it: AWS never restarts,
  // but this process holds the state machine's runs, and they die with it.
  const deps = recoveryDeps([...hosts.values()], dynamo.endpoint, resolved, queues, secrets, workflow, endpoint.url);

  // The event source mappings poll only with what the function's role allows.
  const consumers = await wireConsumers(w, mappings, queues, roles);
  const schedules = wireSchedules(w, fnByArn);
  const handle = wireApi(w, fnByArn, { ownerPrincipal: opts.ownerPrincipal, logFormat: deps.config.logFormat });

  const executionsQueue = queues.get(resolved.arns.queueArnOfUrl(deps.config.executionsQueueUrl) ?? '');
  if (!executionsQueue) throw new Error(`No local queue for ${deps.config.executionsQueueUrl}`);

  return {
    // The functions' own conditional writes, from this process: AWS never stops, so no role holds them.
    deps,
    workflow,
    executionsQueue,
    drainSeconds: deps.config.drainSeconds,
    repair: () => indexUnmarkedOpen(deps, dynamo.endpoint),
    start() {
      for (const consume of consumers) consume();
    },
    handle,
    async listening(url) {
      // The API's execute-api address stands for this runtime's own wherever the templates name
      // it: the functions' environments (read by a sandbox when it starts; none of these has
      // been asked for before the API listens) and the custom resources left for now.
      const localize = localApiAddress(stacks, url, boot.env.PIPEGATE_BASE_PATH);
      for (const host of hosts.values()) Object.assign(host.spec.env, localize(host.spec.env));
      for (const stack of stacks) await runCustomResources(stack, dataDir, fnByArn, localize, log, namesApi);
    },
    say: (message, fields) => log(`${message}${fields ? ` ${JSON.stringify(fields)}` : ''}`),
    exposed: {
      assembly,
      resolved,
      endpoint,
      iam,
      functions: hosts,
      stateMachines: machines,
      queues,
      workflow,
      deps,
      schedules,
      ...(scale ? { scale } : {}),
    },
  };
}

/**
 * The evaluator with its decisions remembered per principal, action, resource and context: a
 * simulation costs ≈ 5 ms of CPU and an execution makes dozens of calls. Only where no policy
 * of the assembly conditions on the time, since then a decision cannot change while it runs.
 */
function memoized(iam: IamEvaluator, assembly: Assembly): IamEvaluator {
  if (/aws:(CurrentTime|EpochTime)/i.test(JSON.stringify(assembly.stacks.map((s) => s.template)))) return iam;
  const decisions = new Map<string, Promise<IamDecision>>();
  const memo = Object.create(iam) as IamEvaluator;
  memo.evaluate = (req: IamRequest) => {
    const key = JSON.stringify([req.principal, req.action, req.resource, req.context ?? {}]);
    let d = decisions.get(key);
    if (!d) {
      d = iam.evaluate(req);
      decisions.set(key, d);
    }
    return d;
  };
  return memo;
}
