/**
 * The `pipegate` command line (docs/contract.md §10): commander wiring, one error reporter, and
 * the exit codes 0 ok · 1 failure reported by the service · 2 usage error.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { version } from '../../package.json';
import { apply, configureApplyCommand, type ApplyOptions } from './apply';
import { remove } from './commands/delete';
import { execute } from './commands/execute';
import { mcpBridge } from './commands/mcp';
import { STATUSES } from '../../functions/core/transitions';
import { cancel, executions, redeliver, result, show, usage, type ResultOptions } from './commands/executions';
import { DEFINITION_ASSET_MAX_BYTES, INLINE_ASSET_BODY_MAX_BYTES, sizeText, UPLOAD_MAX_BYTES } from '../../functions/core/assets';
import { rotate } from './commands/keys';
import {
  create as createConsumer,
  keyLimits,
  list as listConsumers,
  revoke as revokeConsumer,
  rotate as rotateConsumerKey,
  update as updateConsumer,
  type ConsumerOptions,
} from './commands/consumers';
import { list, runs } from './commands/list';
import { publish, SNIPPET_LANGUAGES, type SnippetLanguage } from './commands/publish';
import { push } from './commands/push';
import { run } from './commands/run';
import { deleteSecret, listSecrets, setSecret } from './commands/secrets';
import { status } from './commands/status';
import { cloudFormationLookup, type GlobalOptions } from './connection';
import { createContext, Interrupted, type CliDeps, type Ctx } from './context';
import { EXIT, exitCodeFor, ServiceError, UnreachableError, UsageError } from './errors';
import { colorEnabled, Output, type CliIO } from './output';

// No default list: commander would print it as "(default: [])" in help.
const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

const wholeNumber =
  (what: string, min: number, max: number) =>
  (text: string): number => {
    const n = Number(text);
    if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${what} must be a whole number from ${min} to ${max}`);
    }
    return n;
  };

/** Builds the program; every action resolves the exit code into `state.code`. */
export function buildProgram(io: CliIO, deps: CliDeps, state: { code: number }): Command {
  const program = new Command('pipegate');
  program
    .description('Publish a pipeline as an authenticated, asynchronous HTTP API')
    .version(version, '-V, --version')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .showHelpAfterError('(add --help for usage)')
    // Every command's help lists --json, --url and the rest, not only the top level's.
    .configureHelp({ showGlobalOptions: true })
    .option(
      '--url <url>',
      'base URL of pipegate (env PIPEGATE_URL; default: the URL the local runtime recorded in <PIPEGATE_DATA_DIR or ./.pipegate>/runtime-url, else http://127.0.0.1:3000)',
    )
    .option(
      '--token <token>',
      'owner token of the local runtime (env PIPEGATE_OWNER_TOKEN; else <PIPEGATE_DATA_DIR or ./.pipegate>/owner-token)',
    )
    .option('--aws', 'sign owner calls with AWS SigV4 from the standard credential chain')
    .option('--stack <name>', 'take the URL from the ApiUrl output of this CloudFormation stack (implies --aws)')
    .option('--region <region>', 'AWS region to sign for (default: from the URL, else AWS_REGION)')
    .option('--json', 'print the result as one JSON document and nothing else on stdout')
    .option('--no-color', 'no colours, even on a terminal');

  const act =
    <A extends unknown[]>(fn: (ctx: Ctx, ...args: A) => Promise<number>) =>
    async (...args: unknown[]) => {
      const cmd = args[args.length - 1] as Command;
      const globals = cmd.optsWithGlobals<GlobalOptions>();
      const ctx = await createContext(io, globals, deps);
      state.code = await fn(ctx, ...(args.slice(0, -1) as A));
    };

  program
    .command('push')
    .description('push a pipeline definition (JSON or YAML); creates a new version when it changed')
    .argument(
      '<file>',
      `pipeline file (.json, .yaml or .yml); an asset input's value "@path" sends that file (relative to the pipeline file, at most ${sizeText(DEFINITION_ASSET_MAX_BYTES)})`,
    )
    .option('--id <pipeline>', 'pipeline id (default: the file name without its extension)')
    .action(act((ctx, file: string, o: { id?: string }) => push(ctx, file, o)));

  program
    .command('list')
    .description('list pipelines')
    .action(act((ctx) => list(ctx)));

  program
    .command('run')
    .description('run the latest version of a pipeline and wait for its outputs')
    .argument('<pipeline>', 'pipeline id')
    .option(
      '-i, --input <id=value>',
      `override an input (repeatable); the value is read by the input's type; for an asset input, @path sends that file: inline up to ${sizeText(DEFINITION_ASSET_MAX_BYTES)}, else through the pipeline's uploads route (at most ${sizeText(UPLOAD_MAX_BYTES)})`,
      collect,
    )
    .option('--wait', 'wait until the run finishes and print its outputs (default)')
    .option('--no-wait', 'print the run id and return at once')
    .option('--follow', "wait, printing each node as it finishes (a spinner on a terminal), from the run's event stream")
    .addOption(
      new Option('--timeout <seconds>', 'stop waiting after this long').default(600).argParser(wholeNumber('--timeout', 1, 86_400)),
    )
    .action(
      act((ctx, p: string, o: { input?: string[]; wait?: boolean; follow?: boolean; timeout: number }) =>
        run(ctx, p, { ...o, input: o.input ?? [], wait: o.wait !== false }),
      ),
    );

  program
    .command('runs')
    .description('list the runs of a pipeline, newest first')
    .argument('<pipeline>', 'pipeline id')
    .addOption(new Option('--limit <n>', 'how many').default(20).argParser(wholeNumber('--limit', 1, 100)))
    .action(act((ctx, p: string, o: { limit?: number }) => runs(ctx, p, o)));

  program
    .command('status')
    .description('where a pipeline stands: latest run, contract, deployment, and what to do next')
    .argument('<pipeline>', 'pipeline id')
    .action(act((ctx, p: string) => status(ctx, p)));

  program
    .command('publish')
    .description("publish (or update) the pipeline's API from its latest successful run")
    .argument('<pipeline>', 'pipeline id')
    .option('--hide-input <ids>', 'inputs callers may not see or set (comma-separated, repeatable)', collect)
    .option('--hide-output <ids>', 'outputs callers do not receive (comma-separated, repeatable)', collect)
    .option('--show-input <ids>', 'make hidden inputs visible again', collect)
    .option('--show-output <ids>', 'make hidden outputs visible again', collect)
    .option('--form', 'turn on the web form: anyone with its link (printed) can run the pipeline in a browser')
    .option('--no-form', 'turn the web form off (its link answers 404 at once; --form brings the same link back)')
    .option('--form-title <text>', "the form page's heading (implies --form)")
    .option('--form-description <text>', 'text shown under the heading (implies --form)')
    .addOption(new Option('--snippet <language>', 'the ready-to-run example to print').choices([...SNIPPET_LANGUAGES]).default('curl'))
    .action(
      act(
        (
          ctx,
          p: string,
          o: {
            hideInput?: string[];
            hideOutput?: string[];
            showInput?: string[];
            showOutput?: string[];
            snippet?: SnippetLanguage;
            form?: boolean;
            formTitle?: string;
            formDescription?: string;
          },
        ) =>
          publish(ctx, p, {
            hideInput: o.hideInput ?? [],
            hideOutput: o.hideOutput ?? [],
            showInput: o.showInput ?? [],
            showOutput: o.showOutput ?? [],
            snippet: o.snippet ?? 'curl',
            form: o.form,
            formTitle: o.formTitle,
            formDescription: o.formDescription,
          }),
      ),
    );

  program
    .command('delete')
    .description("delete the pipeline's deployment (immediate, cannot be undone)")
    .argument('<pipeline>', 'pipeline id')
    .option('--yes', 'confirm the deletion')
    .action(act((ctx, p: string, o: { yes?: boolean }) => remove(ctx, p, o)));

  const keys = program.command('keys').description("manage a deployment's credentials");
  keys
    .command('rotate')
    .description('issue a new API key (or callback signing secret); the old one stops at once unless --grace is given')
    .argument('<pipeline>', 'pipeline id')
    .addOption(new Option('--grace <seconds>', 'keep the old credential working this long').argParser(wholeNumber('--grace', 0, 604_800)))
    .option('--signing-secret', 'rotate the callback signing secret instead of the API key')
    .option('--form-link', 'issue a new web-form link instead; the old link answers 404 at once')
    .action(act((ctx, p: string, o: { grace?: number; signingSecret?: boolean; formLink?: boolean }) => rotate(ctx, p, o)));
  keys
    .command('limits')
    .description("set the deployment key's own rate limit and quota (what is not given is removed)")
    .argument('<pipeline>', 'pipeline id')
    .option('--rate <requests/seconds>', 'rate limit, e.g. 100/60')
    .option('--quota <executions/period>', 'accepted executions per UTC day or month, e.g. 1000/day')
    .action(act((ctx, p: string, o: ConsumerOptions) => keyLimits(ctx, p, o)));

  const consumers = program
    .command('consumers')
    .description("a deployment's consumers: each caller its own API key, rate limit, quota and expiry");
  const limitOptions = (c: Command) =>
    c
      .option('--rate <requests/seconds>', 'rate limit, e.g. 1/1 (one request a second) or 100/60; none removes it')
      .option('--quota <executions/period>', 'accepted executions per UTC day or month, e.g. 10/day; none removes it')
      .option('--expires <time>', 'ISO 8601 time after which the key is refused; none removes it')
      .option('--meta <key=value>', 'metadata for your own records (repeatable)', collect);
  limitOptions(
    consumers
      .command('create')
      .description('create a consumer and print its API key (shown once)')
      .argument('<pipeline>', 'pipeline id')
      .option('--name <name>', 'who it is for'),
  ).action(act((ctx, p: string, o: ConsumerOptions) => createConsumer(ctx, p, o)));
  consumers
    .command('list')
    .description('every consumer with its limits, key prefix and last use (never a key)')
    .argument('<pipeline>', 'pipeline id')
    .action(act((ctx, p: string) => listConsumers(ctx, p)));
  limitOptions(
    consumers
      .command('update')
      .description("change a consumer's name, limits, expiry or metadata")
      .argument('<pipeline>', 'pipeline id')
      .argument('<consumer>', 'consumer id')
      .option('--name <name>', 'a new name'),
  ).action(act((ctx, p: string, id: string, o: ConsumerOptions) => updateConsumer(ctx, p, id, o)));
  consumers
    .command('revoke')
    .description('revoke a consumer: its key is refused from the next request on; the others keep working')
    .argument('<pipeline>', 'pipeline id')
    .argument('<consumer>', 'consumer id')
    .action(act((ctx, p: string, id: string) => revokeConsumer(ctx, p, id)));
  consumers
    .command('rotate')
    .description('issue a new key for a consumer; the old one stops at once unless --grace is given')
    .argument('<pipeline>', 'pipeline id')
    .argument('<consumer>', 'consumer id')
    .addOption(new Option('--grace <seconds>', 'keep the old key working this long').argParser(wholeNumber('--grace', 0, 604_800)))
    .action(act((ctx, p: string, id: string, o: { grace?: number }) => rotateConsumerKey(ctx, p, id, o)));

  program
    .command('execute')
    .description('execute a published deployment as a caller would')
    .argument('<deployment>', 'deployment id')
    .option('--key <key>', "the deployment's API key (env PIPEGATE_API_KEY)")
    .option(
      '-i, --input <id=value>',
      `set an input (repeatable); the value is read by the input's type; for an asset input, @path sends that file: inline while the request stays within ${sizeText(INLINE_ASSET_BODY_MAX_BYTES)}, else through an upload (at most ${sizeText(UPLOAD_MAX_BYTES)})`,
      collect,
    )
    .option('--callback <url>', 'URL to POST the outcome to when the execution finishes')
    .option('--wait', 'wait until the execution finishes and print its result')
    .option('--follow', "like --wait, printing each node as it finishes (a spinner on a terminal), from the execution's event stream")
    .option('--idempotency-key <key>', 'repeat-safe submit: the same key and body start nothing new')
    .addOption(
      new Option('--timeout <seconds>', 'with --wait, stop waiting after this long')
        .default(600)
        .argParser(wholeNumber('--timeout', 1, 86_400)),
    )
    .option('--download <dir>', 'with --wait, save every ASSET output into <dir> as <output><extension>')
    .option('--force', 'with --download, replace files that exist')
    .action(
      act(
        (
          ctx,
          d: string,
          o: {
            key?: string;
            input?: string[];
            callback?: string;
            wait?: boolean;
            follow?: boolean;
            idempotencyKey?: string;
            timeout: number;
            download?: string;
            force?: boolean;
          },
        ) => {
          if (o.download !== undefined && !o.wait && !o.follow)
            throw new UsageError(
              '--download needs --wait',
              `or save the outputs later: pipegate result <execution> --download ${o.download}`,
            );
          return execute(ctx, d, { ...o, input: o.input ?? [] });
        },
      ),
    );

  program
    .command('mcp')
    .description(
      "a local MCP server on stdin/stdout for clients that only start servers as processes: relays to the deployment's MCP URL with the key",
    )
    .argument('<deployment>', 'deployment id')
    .option('--key <key>', "the deployment's API key, or a consumer's (env PIPEGATE_API_KEY)")
    .action(act((ctx, d: string, o: { key?: string }) => mcpBridge(ctx, d, o)));

  program
    .command('executions')
    .description("list the live API's executions, newest first (what callers ran, how it went, how its callback went)")
    .argument('<pipeline>', 'pipeline id')
    .addOption(new Option('--status <status>', 'only executions with this status').choices(STATUSES))
    .addOption(new Option('--limit <n>', 'how many').default(20).argParser(wholeNumber('--limit', 1, 100)))
    .option('--since <time>', 'only executions created at or after this ISO 8601 time')
    .option('--watch', 'redraw the list every --interval seconds until Ctrl-C')
    .addOption(
      new Option('--interval <seconds>', 'with --watch, seconds between refreshes')
        .default(2)
        .argParser(wholeNumber('--interval', 1, 3600)),
    )
    .action(
      act((ctx, p: string, o: { status?: string; limit?: number; since?: string; watch?: boolean; interval?: number }) =>
        executions(ctx, p, o),
      ),
    );

  program
    .command('show')
    .description('one run or execution in full: inputs, outputs, error, the node trace (which node failed and why), callback attempts')
    .argument('<pipeline>', 'pipeline id')
    .argument('<execution>', 'execution or run id')
    .action(act((ctx, p: string, id: string) => show(ctx, p, id)));

  program
    .command('cancel')
    .description(
      'cancel a pending or running run or execution at once: <pipeline> <execution> as the owner, or <execution> --key K as a caller',
    )
    .argument('<pipeline|execution>', 'pipeline id (owner), or the execution id with --key (caller)')
    .argument('[execution]', 'execution or run id (owner)')
    .option('--key <key>', "as a caller: the deployment's API key (env PIPEGATE_API_KEY)")
    .action(act((ctx, first: string, second: string | undefined, o: { key?: string }) => cancel(ctx, first, second, o)));

  program
    .command('result')
    .description("an execution's result, as its caller gets it")
    .argument('<execution>', 'execution id')
    .option('--key <key>', "the deployment's API key (env PIPEGATE_API_KEY)")
    .option('--download <dir>', 'save every ASSET output into <dir> as <output><extension> (extension from its media type; size checked)')
    .option('--force', 'with --download, replace files that exist')
    .action(act((ctx, id: string, o: ResultOptions) => result(ctx, id, o)));

  program
    .command('redeliver')
    .description("send a finished execution's callback again: one new attempt with the same webhook-id")
    .argument('<pipeline>', 'pipeline id')
    .argument('<execution>', 'execution id')
    .action(act((ctx, p: string, id: string) => redeliver(ctx, p, id)));

  program
    .command('usage')
    .description("the live API's finished executions by status, with p50/p95 durations, over the last hour and day")
    .argument('<pipeline>', 'pipeline id')
    .action(act((ctx, p: string) => usage(ctx, p)));

  const secrets = program
    .command('secrets')
    .description('owner secrets that pipelines reference as {{secrets.NAME}} (values are never shown)');
  secrets
    .command('set')
    .description(
      'create or replace a secret; the value is read from stdin, or from a prompt that does not echo (never from the command line)',
    )
    .argument('<name>', 'secret name, e.g. RATES_TOKEN')
    .action(act((ctx, name: string) => setSecret(ctx, name)));
  secrets
    .command('list')
    .description('list the secrets: names and when they were set')
    .action(act((ctx) => listSecrets(ctx)));
  secrets
    .command('delete')
    .description('delete a secret; runs that reference it fail naming it')
    .argument('<name>', 'secret name')
    .action(act((ctx, name: string) => deleteSecret(ctx, name)));

  configureApplyCommand(program.command('apply')).action(act((ctx, paths: string[], o: ApplyOptions) => apply(ctx, paths, o)));

  return program;
}

/** How a failure reads for a person: the message, then every listed problem, then a hint. */
export function describeError(e: unknown): { message: string; lines: string[]; hint?: string } {
  if (e instanceof UsageError) return { message: e.message, lines: [], ...(e.hint ? { hint: e.hint } : {}) };
  if (e instanceof UnreachableError) return { message: e.message, lines: [`(${e.reason})`] };
  if (e instanceof ServiceError) {
    const lines: string[] = [];
    const problems = e.problems;
    if (problems.length > 0) {
      const w = Math.max(...problems.map((p) => p.path.length));
      for (const p of problems) lines.push(`${p.path.padEnd(w)}  ${p.reason}`);
    } else if (typeof e.body.detail === 'string') lines.push(e.body.detail);
    const hint = e.hint ?? hintFor(e);
    const message =
      problems.length > 0 ? `${e.message} (${problems.length} ${problems.length === 1 ? 'problem' : 'problems'}):` : e.message;
    return { message, lines, ...(hint ? { hint } : {}) };
  }
  return { message: e instanceof Error ? e.message : String(e), lines: [] };
}

function hintFor(e: ServiceError): string | undefined {
  const error = typeof e.body.error === 'string' ? e.body.error : '';
  const p = e.pipeline ?? '<pipeline>';
  if (e.status === 401) {
    return e.audience === 'owner'
      ? 'the owner credential was refused: use the token the local runtime printed at start (PIPEGATE_OWNER_TOKEN or --token), or on AWS check your AWS credentials'
      : 'the API key was refused: check --key (publish printed it once; pipegate keys rotate <pipeline> issues a new one)';
  }
  if (e.status === 403 && e.audience === 'owner') return 'your AWS identity may not call the owner API (it needs execute-api:Invoke on it)';
  if (error === 'Secret Not Found') return 'see the secrets with: pipegate secrets list';
  if (error === 'Pipeline Not Found') return 'see your pipelines with: pipegate list (push one with: pipegate push <file>)';
  if (error === 'Deployment Not Found' && e.audience === 'owner') return `it is not published: pipegate publish ${p}`;
  if (e.status === 409 && e.audience === 'owner' && error !== 'Conflict' && error !== 'Execution already finished') {
    return error.includes('no Input and no Output')
      ? `add input and output nodes, push the file again, then run it: pipegate push <file> && pipegate run ${p}`
      : `run it until a run succeeds: pipegate run ${p}`;
  }
  return undefined;
}

/** Runs the CLI with `args` (what follows `pipegate`); resolves to the exit code. */
export async function runCli(args: readonly string[], io: CliIO, deps: CliDeps = { stackLookup: cloudFormationLookup }): Promise<number> {
  const state = { code: EXIT.ok as number };
  const program = buildProgram(io, deps, state);
  const json = args.includes('--json');
  try {
    await program.parseAsync([...args], { from: 'user' });
    return state.code;
  } catch (e) {
    if (e instanceof Interrupted) {
      io.stderr.write(`\n${e.followUp}\n`);
      return e.exitCode;
    }
    const code = exitCodeFor(e);
    if (e instanceof CommanderError) {
      // commander has already printed its message (or the help/version text).
      if (code !== EXIT.ok && json) io.stdout.write(`${JSON.stringify({ error: e.message.replace(/^error: /, '') })}\n`);
      return code;
    }
    const out = new Output(io, json);
    const { message, lines, hint } = describeError(e);
    const paint = colorEnabled(io.stderr, io.env);
    const red = (s: string) => (paint ? `\x1b[31m${s}\x1b[39m` : s);
    const dim = (s: string) => (paint ? `\x1b[2m${s}\x1b[22m` : s);
    io.stderr.write(`${red('error:')} ${message}\n${lines.map((l) => `  ${l}\n`).join('')}${hint ? `${dim(`hint: ${hint}`)}\n` : ''}`);
    if (json) out.document(e instanceof ServiceError ? e.body : { error: message, ...(hint ? { detail: hint } : {}) });
    // Expected failures carry an exit code; anything else is a bug worth a stack trace on request.
    if (io.env.PIPEGATE_DEBUG && e instanceof Error && !('exitCode' in e)) io.stderr.write(`${e.stack ?? ''}\n`);
    return code;
  }
}
