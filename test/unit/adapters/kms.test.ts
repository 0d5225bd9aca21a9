/**
 * The KMS transport against a fake KMS on loopback: throttles tried again with jittered,
 * bounded waits; refusals thrown at once as KmsCallError named as KMS names them.
 */
import { awsKmsTransport, KMS_RETRY, KmsCallError, KmsDataKeys } from '../../../functions/adapters/kms';
import { startScriptedServer, type ScriptedServer } from '../../support/http-server';

describe('KMS over signed HTTP', () => {
  let fake: ScriptedServer;
  beforeAll(async () => {
    fake = await startScriptedServer([500, {}]);
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());
  const THROTTLE: [number, unknown] = [
    400,
    { __type: 'ThrottlingException', message: 'You have exceeded the rate at which you may call KMS.' },
  ];
  const keys = (waits: number[] = []) =>
    new KmsDataKeys(
      awsKmsTransport({
        region: 'eu-west-1',
        env: { AWS_ENDPOINT_URL_KMS: fake.origin, AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret' },
        retry: { ...KMS_RETRY, sleep: (ms) => (waits.push(ms), Promise.resolve()), random: () => 1 },
      }),
      'arn:aws:kms:eu-west-1:111122223333:key/k',
    );

  it('waits and tries a throttled Decrypt again, then opens the key', async () => {
    // Prepare
    const waits: number[] = [];
    fake.answers = [THROTTLE, THROTTLE, [200, { Plaintext: Buffer.alloc(32, 1).toString('base64'), KeyId: 'k' }]];

    // Act
    const plain = await keys(waits).decrypt(Buffer.from('blob'), { purpose: 'x' });

    // Assess
    expect(plain).toEqual(Buffer.alloc(32, 1));
    expect(fake.seen.map((r) => r.headers['x-amz-target'])).toEqual([
      'TrentService.Decrypt',
      'TrentService.Decrypt',
      'TrentService.Decrypt',
    ]);
    expect(waits).toEqual([100, 200]);
  });

  it('gives up after five throttled attempts, never waiting more than the cap, with the throttle as the error', async () => {
    const waits: number[] = [];
    fake.answers = [THROTTLE, THROTTLE, THROTTLE, THROTTLE, THROTTLE, THROTTLE];

    const e = await keys(waits)
      .generate({ purpose: 'x' })
      .catch((x: unknown) => x);

    expect(e).toBeInstanceOf(KmsCallError);
    expect(e).toMatchObject({
      name: 'ThrottlingException',
      status: 400,
      message: expect.stringMatching(/^KMS GenerateDataKey: ThrottlingException: You have exceeded/) as unknown,
    });
    expect(fake.seen).toHaveLength(5);
    expect(waits).toEqual([100, 200, 400, 800]);
    expect(Math.max(...waits)).toBeLessThanOrEqual(KMS_RETRY.capMs);
  });

  it('throws a refusal at once, named as KMS names it', async () => {
    fake.answers = [[400, { __type: 'com.amazonaws.kms#InvalidCiphertextException' }]];

    await expect(keys().decrypt(Buffer.from('blob'), { purpose: 'x' })).rejects.toMatchObject({
      name: 'InvalidCiphertextException',
      status: 400,
    });
    expect(fake.seen).toHaveLength(1);
  });
});
