/**
 * KMS on start:synth's AWS endpoint: the templates' owner-secrets key, each call checked
 * against the caller's role and the key policy with the request's encryption context, answered
 * with KMS's errors. Calls go through the functions' own adapter (functions/adapters/kms.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { awsKmsTransport, KmsDataKeys } from '../../functions/adapters/kms';
import { ownerSecretContext } from '../../functions/core/envelope';
import { LocalKms } from '../../lib/local/kms';
import { startAwsEndpoint, type AwsEndpoint } from '../../lib/synth/aws-endpoint';
import { credentialsFor, IamEvaluator } from '../../lib/synth/iam';
import { resolveAssembly, type ResolvedAssembly } from '../../lib/synth/physical';
import { SYNTH_TIMEOUT_MS, testAssembly } from '../support/synth';
import { functionRoleArn, localEnv, logicalId } from './synth-helpers';

const errorName = async (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'no error',
    (e: unknown) => (e instanceof Error ? e.name : String(e)),
  );

describe('KMS on the local AWS endpoint', () => {
  let dir: string;
  let endpoint: AwsEndpoint;
  let resolved: ResolvedAssembly;
  let keyArn: string;

  beforeAll(async () => {
    const assembly = await testAssembly();
    dir = mkdtempSync(path.join(tmpdir(), 'pipegate-kms-'));
    endpoint = await startAwsEndpoint({ log: () => undefined });
    resolved = resolveAssembly(assembly, localEnv(endpoint.url));
    const stateful = resolved.stack('PipegateStateful');
    keyArn = stateful.physical[logicalId(resolved, 'PipegateStateful', 'AWS::KMS::Key', 'OwnerSecretsKey')]?.attributes.Arn ?? '';
    const kms = new LocalKms(path.join(dir, 'kms.json'));
    kms.define(keyArn);
    endpoint.serve({ iam: IamEvaluator.fromAssembly(resolved), arns: resolved.arns, kms });
  }, SYNTH_TIMEOUT_MS);

  afterAll(async () => {
    await endpoint?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The adapter as a function's bundle builds it, signed as that function's role. */
  const as = (fn: string, key = keyArn): KmsDataKeys => {
    const c = credentialsFor(functionRoleArn(resolved, fn), fn);
    const env = {
      AWS_ENDPOINT_URL: endpoint.url,
      AWS_ACCESS_KEY_ID: c.accessKeyId,
      AWS_SECRET_ACCESS_KEY: c.secretAccessKey,
      AWS_SESSION_TOKEN: c.sessionToken,
    };
    return new KmsDataKeys(awsKmsTransport({ region: resolved.env.region, env }), key);
  };

  it('lets secret-put generate a data key and task-run open it, under the same secret name only', async () => {
    // Act
    const made = await as('secret-put').generate(ownerSecretContext('RATES_TOKEN'));
    const opened = await as('task-run').decrypt(made.encrypted, ownerSecretContext('RATES_TOKEN'));
    const moved = await errorName(as('task-run').decrypt(made.encrypted, ownerSecretContext('OTHER_TOKEN')));

    // Assess
    expect(made.plaintext).toHaveLength(32);
    expect(opened.equals(made.plaintext)).toBe(true);
    expect(moved).toBe('InvalidCiphertextException');
  });

  it('refuses every function without the grant, and the granted ones the action they were not given, recording each denial', async () => {
    // Prepare
    const made = await as('secret-put').generate(ownerSecretContext('A'));
    const before = endpoint.denials.length;

    // Act
    const refused = {
      executeDecrypt: await errorName(as('execute').decrypt(made.encrypted, ownerSecretContext('A'))),
      dispatchDecrypt: await errorName(as('callback-dispatch').decrypt(made.encrypted, ownerSecretContext('A'))),
      taskRunGenerate: await errorName(as('task-run').generate(ownerSecretContext('A'))),
      secretPutDecrypt: await errorName(as('secret-put').decrypt(made.encrypted, ownerSecretContext('A'))),
    };

    // Assess
    expect(refused).toEqual({
      executeDecrypt: 'AccessDeniedException',
      dispatchDecrypt: 'AccessDeniedException',
      taskRunGenerate: 'AccessDeniedException',
      secretPutDecrypt: 'AccessDeniedException',
    });
    expect(endpoint.denials.slice(before).map((d) => [d.action, d.resource])).toEqual([
      ['kms:Decrypt', keyArn],
      ['kms:Decrypt', keyArn],
      ['kms:GenerateDataKey', keyArn],
      ['kms:Decrypt', keyArn],
    ]);
  });

  it("refuses a granted function any other encryption context (the grant and the key policy require an owner secret's)", async () => {
    // Act
    const noName = await errorName(as('secret-put').generate({ purpose: 'pipegate-owner-secret' }));
    const otherPurpose = await errorName(as('secret-put').generate({ purpose: 'something-else', secret_name: 'A' }));
    const none = await errorName(as('secret-put').generate({}));

    // Assess
    expect([noName, otherPurpose, none]).toEqual(['AccessDeniedException', 'AccessDeniedException', 'AccessDeniedException']);
  });

  it('keeps the key material in the data dir, and refuses a key the grants do not name (AccessDenied, as AWS answers before looking the key up)', async () => {
    // Act
    const unknown = await errorName(
      as('secret-put', keyArn.replace(/key\/.*/, 'key/00000000-0000-4000-8000-000000000000')).generate(ownerSecretContext('A')),
    );

    // Assess
    expect(Object.keys(JSON.parse(readFileSync(path.join(dir, 'kms.json'), 'utf8')) as object)).toEqual([keyArn]);
    expect(unknown).toBe('AccessDeniedException');
  });
});
