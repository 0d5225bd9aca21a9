import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { allFunctionNames } from '../../lib/stacks/permissions';
import { inputsHash, REPO_ROOT, stackOf, type Assembly } from '../../lib/synth/assembly';
import { resolveAssembly, type ResolvedAssembly } from '../../lib/synth/physical';
import { SYNTH_TIMEOUT_MS, testAssembly } from '../support/synth';

const ENDPOINT = 'http://127.0.0.1:4599';

describe('the synthesized assembly', () => {
  let assembly: Assembly;
  let resolved: ResolvedAssembly;

  beforeAll(async () => {
    assembly = await testAssembly();
    resolved = resolveAssembly(assembly, { partition: 'aws', urlSuffix: 'amazonaws.com', awsEndpointUrl: ENDPOINT });
  }, SYNTH_TIMEOUT_MS);

  it('holds both stacks in deployment order, with every function bundled', () => {
    // Assess
    expect(assembly.stacks.map((s) => s.id)).toEqual(['PipegateStateful', 'Pipegate']);
    // The service's functions, and the upload CORS and concurrency check custom resources' beside them.
    const service = assembly.functions.filter((f) => f.stack === 'Pipegate');
    expect(service).toHaveLength(allFunctionNames().length + 2);
    expect(service.filter((f) => f.logicalId.startsWith('UploadCors'))).toHaveLength(1);
    expect(service.filter((f) => f.logicalId.startsWith('ConcurrencyCheck'))).toHaveLength(1);
    for (const f of assembly.functions) {
      expect(f.file).toBe(path.join(f.assetDir, 'index.js'));
      expect(f.exportName).toBe('handler');
    }
  });

  it('bundles nothing from lib/local, lib/cli or lib/synth (they are not part of the cache key)', () => {
    // Prepare
    const sources = assembly.functions.flatMap((f) => {
      const map = JSON.parse(readFileSync(`${f.file}.map`, 'utf8')) as { sources: string[] };
      return map.sources.map((s) => path.relative(REPO_ROOT, path.resolve(f.assetDir, s)));
    });
    // Assess: the check can see repository sources at all, and none of the excluded ones.
    expect(sources).toContain(path.join('functions', 'execute', 'handler.ts'));
    expect(sources.filter((s) => /^lib\/(local|cli|synth)\//.test(s))).toEqual([]);
  });

  it('resolves every function environment to local names and ARNs', () => {
    // Prepare
    const stateful = resolved.stack('PipegateStateful');
    const service = resolved.stack('Pipegate');
    const logicalOf = (type: string, prefix: string) =>
      Object.entries(stateful.stack.template.Resources).find(([id, r]) => r.Type === type && id.startsWith(prefix))?.[0] ?? '';
    const table = stateful.physical[logicalOf('AWS::DynamoDB::Table', 'Table')];
    const queue = stateful.physical[logicalOf('AWS::SQS::Queue', 'ExecutionsQueue')];
    const secret = stateful.physical[logicalOf('AWS::SecretsManager::Secret', 'KeyMaterial')];
    const execute = assembly.functions.find((f) => f.logicalId.startsWith('ExecuteFunction'));
    // Act
    const env = service.resolve((execute?.properties.Environment as { Variables: unknown }).Variables) as Record<string, string>;
    // Assess
    expect(env.PIPEGATE_TABLE).toBe('PipegateStateful-TableCD117FA1');
    expect(env.PIPEGATE_TABLE).toBe(table?.ref);
    expect(table?.attributes.Arn).toBe('arn:aws:dynamodb:us-east-1:123456789012:table/PipegateStateful-TableCD117FA1');
    expect(env.PIPEGATE_EXECUTIONS_QUEUE_URL).toBe(queue?.ref);
    expect(env.PIPEGATE_EXECUTIONS_QUEUE_URL).toMatch(new RegExp(`^${ENDPOINT}/123456789012/PipegateStateful-ExecutionsQueue`));
    expect(resolved.arns.queueArnOfUrl(env.PIPEGATE_EXECUTIONS_QUEUE_URL ?? '')).toBe(queue?.attributes.Arn);
    expect(env.PIPEGATE_SECRET_ARN).toBe(secret?.ref);
    expect(env.PIPEGATE_SECRET_ARN).toMatch(
      /^arn:aws:secretsmanager:us-east-1:123456789012:secret:PipegateStateful-KeyMaterial[0-9A-F]+-[a-z0-5]{6}$/,
    );
    for (const f of assembly.functions) {
      const vars = resolved.stack(f.stack).resolve((f.properties.Environment as { Variables: unknown } | undefined)?.Variables ?? {});
      for (const v of Object.values(vars as Record<string, unknown>)) expect(typeof v).toBe('string');
    }
  });

  it('resolves the state machine substitutions to the task functions and every policy document', () => {
    // Prepare
    const service = resolved.stack('Pipegate');
    const machines = Object.entries(service.stack.template.Resources).filter(([, r]) => r.Type === 'AWS::StepFunctions::StateMachine');
    const [machineId, machine] = machines.find(([id]) => id.startsWith('StandardStateMachine')) ?? [];
    // Act
    const subs = service.resolve(machine?.Properties?.DefinitionSubstitutions) as Record<string, string>;
    const policies = assembly.stacks.flatMap((s) =>
      Object.values(s.template.Resources)
        .filter((r) => r.Type === 'AWS::IAM::Policy')
        .map((r) => resolved.stack(s.id).resolve(r.Properties?.PolicyDocument)),
    );
    // Assess
    expect(Object.keys(subs).sort()).toEqual(['TaskFailArn', 'TaskRunArn', 'TaskStartArn']);
    expect(subs.TaskRunArn).toMatch(/^arn:aws:lambda:us-east-1:123456789012:function:Pipegate-TaskRunFunction[0-9A-F]+$/);
    expect(machines).toHaveLength(2);
    expect(service.physical[machineId ?? '']?.ref).toMatch(
      /^arn:aws:states:us-east-1:123456789012:stateMachine:Pipegate-StandardStateMachine/,
    );
    expect(JSON.stringify(policies)).not.toMatch(/"(Ref|Fn::[A-Za-z]+)"/);
    expect(stackOf(assembly, 'Pipegate').template.Outputs?.ApiUrl).toBeDefined();
  });
});

describe('the assembly cache key', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'pipegate-hash-'));
    for (const p of ['lib/stacks', 'lib/local', 'functions/execute', 'bin'])
      cpSync(path.join(REPO_ROOT, p), path.join(root, p), { recursive: true });
    for (const f of ['cdk.json', 'package-lock.json', 'lib/routes.ts']) cpSync(path.join(REPO_ROOT, f), path.join(root, f));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('changes with the app, the functions, the lock file and the context, not with lib/local', () => {
    // Prepare
    const before = inputsHash(root);
    const touch = (rel: string) => writeFileSync(path.join(root, rel), `${readFileSync(path.join(root, rel), 'utf8')}\n`);
    // Act / Assess
    touch(path.join('lib', 'local', readdirSync(path.join(root, 'lib', 'local'))[0] ?? ''));
    expect(inputsHash(root)).toBe(before);
    const seen = new Set([before]);
    for (const rel of [
      'functions/execute/handler.ts',
      'lib/stacks/app.ts',
      'lib/routes.ts',
      'bin/app.ts',
      'cdk.json',
      'package-lock.json',
    ]) {
      touch(rel);
      const h = inputsHash(root);
      expect(seen.has(h)).toBe(false);
      seen.add(h);
    }
    expect(seen.has(inputsHash(root, { stageName: 'v2' }))).toBe(false);
  });
});
