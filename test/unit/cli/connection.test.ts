import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { mockClient } from 'aws-sdk-client-mock';
import { cloudFormationLookup, DEFAULT_URL, isLoopback, resolveConnection } from '../../../lib/cli/connection';
import { UsageError } from '../../../lib/cli/errors';

describe('connection', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'pipegate-cli-conn-'));
    mkdirSync(join(dir, '.pipegate'));
    writeFileSync(join(dir, '.pipegate', 'owner-token'), 'pgo_from_file\n');
    mkdirSync(join(dir, 'elsewhere'));
    writeFileSync(join(dir, 'elsewhere', 'owner-token'), 'pgo_elsewhere\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('defaults to the local runtime with the data dir token', async () => {
    // Act
    const c = await resolveConnection({}, {}, dir);

    // Assess
    expect(c.baseUrl).toBe(DEFAULT_URL);
    expect(c.owner).toEqual({ kind: 'bearer', token: 'pgo_from_file', source: join(dir, '.pipegate', 'owner-token') });
  });

  it('takes --url over PIPEGATE_URL, --token over PIPEGATE_OWNER_TOKEN over the file', async () => {
    // Prepare
    const env = { PIPEGATE_URL: 'http://127.0.0.1:4000/', PIPEGATE_OWNER_TOKEN: 'pgo_env' };

    // Act
    const flags = await resolveConnection({ url: 'http://localhost:5000//', token: 'pgo_flag' }, env, dir);
    const fromEnv = await resolveConnection({}, env, dir);

    // Assess
    expect(flags).toEqual({ baseUrl: 'http://localhost:5000', owner: { kind: 'bearer', token: 'pgo_flag', source: '--token' } });
    expect(fromEnv).toEqual({
      baseUrl: 'http://127.0.0.1:4000',
      owner: { kind: 'bearer', token: 'pgo_env', source: 'PIPEGATE_OWNER_TOKEN' },
    });
  });

  it('reads the token file under PIPEGATE_DATA_DIR', async () => {
    // Act
    const c = await resolveConnection({}, { PIPEGATE_DATA_DIR: 'elsewhere' }, dir);

    // Assess
    expect(c.owner).toMatchObject({ kind: 'bearer', token: 'pgo_elsewhere' });
  });

  it('reports where it looked when there is no token', async () => {
    // Act
    const c = await resolveConnection({}, {}, join(dir, 'elsewhere'));

    // Assess
    expect(c.owner).toEqual({
      kind: 'missing',
      looked: ['--token', 'PIPEGATE_OWNER_TOKEN', join(dir, 'elsewhere', '.pipegate', 'owner-token')],
    });
  });

  it('signs with SigV4 for a remote URL without a token, never sending the local token file there', async () => {
    // Act
    const c = await resolveConnection({ url: 'https://abc.execute-api.eu-west-1.amazonaws.com/prod' }, {}, dir);

    // Assess
    expect(c.owner).toEqual({ kind: 'sigv4', region: 'eu-west-1' });
  });

  it('uses a token given for a remote URL, and SigV4 whenever --aws is given', async () => {
    // Act
    const token = await resolveConnection({ url: 'http://10.0.0.5:3000' }, { PIPEGATE_OWNER_TOKEN: 't' }, dir);
    const aws = await resolveConnection({ aws: true }, { AWS_REGION: 'ap-south-1' }, dir);

    // Assess
    expect(token.owner.kind).toBe('bearer');
    expect(aws.owner).toEqual({ kind: 'sigv4', region: 'ap-south-1' });
  });

  it('prefers --region, then the URL host, then AWS_REGION; without any it cannot sign', async () => {
    // Prepare
    const url = 'https://abc.execute-api.eu-west-1.amazonaws.com/prod';

    // Act
    const flag = await resolveConnection({ url, region: 'us-east-1' }, { AWS_REGION: 'eu-central-1' }, dir);
    const host = await resolveConnection({ url }, { AWS_REGION: 'eu-central-1' }, dir);
    const custom = await resolveConnection({ url: 'https://api.example.com' }, { AWS_DEFAULT_REGION: 'eu-north-1' }, dir);
    const none = await resolveConnection({ url: 'https://api.example.com' }, {}, dir);

    // Assess
    expect(flag.owner).toEqual({ kind: 'sigv4', region: 'us-east-1' });
    expect(host.owner).toEqual({ kind: 'sigv4', region: 'eu-west-1' });
    expect(custom.owner).toEqual({ kind: 'sigv4', region: 'eu-north-1' });
    expect(none.owner).toEqual({ kind: 'no-region', host: 'api.example.com' });
  });

  it('takes the URL and region from a stack', async () => {
    // Prepare
    const lookup = jest.fn(async () => ({ url: 'https://custom.example.com/prod/', region: 'eu-west-3' }));

    // Act
    const c = await resolveConnection({ stack: 'Pipegate' }, { AWS_REGION: 'eu-west-3' }, dir, lookup);

    // Assess
    expect(lookup).toHaveBeenCalledWith('Pipegate', 'eu-west-3');
    expect(c).toEqual({ baseUrl: 'https://custom.example.com/prod', owner: { kind: 'sigv4', region: 'eu-west-3' } });
  });

  it.each([
    [{ url: 'localhost:3000' }, /must be an http or https URL/],
    [{ url: 'not a url' }, /is not a URL/],
    [{ url: 'http://x/?a=1' }, /must not carry a query/],
    [{ url: 'http://x', stack: 'S' }, /either --url or --stack/],
  ])('refuses %j as a usage error', async (opts, message) => {
    // Act
    const p = resolveConnection(opts, {}, dir);

    // Assess
    await expect(p).rejects.toThrow(UsageError);
    await expect(p).rejects.toThrow(message);
  });

  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['localhost', true],
    ['[::1]', true],
    ['10.0.0.1', false],
    ['example.com', false],
    ['127.0.0.1.nip.io', false],
  ])('loopback %s → %s', (host, expected) => {
    expect(isLoopback(host)).toBe(expected);
  });
});

describe('stack outputs', () => {
  const cfn = mockClient(CloudFormationClient);
  afterEach(() => cfn.reset());
  afterAll(() => cfn.restore());

  it('give ApiUrl and Region', async () => {
    // Prepare
    cfn.on(DescribeStacksCommand, { StackName: 'Pipegate' }).resolves({
      Stacks: [
        {
          StackName: 'Pipegate',
          CreationTime: new Date(),
          StackStatus: 'CREATE_COMPLETE',
          Outputs: [
            { OutputKey: 'ApiUrl', OutputValue: 'https://abc.execute-api.eu-west-1.amazonaws.com/prod/' },
            { OutputKey: 'Region', OutputValue: 'eu-west-1' },
          ],
        },
      ],
    });

    // Act
    const out = await cloudFormationLookup('Pipegate', 'eu-west-1');

    // Assess
    expect(out).toEqual({ url: 'https://abc.execute-api.eu-west-1.amazonaws.com/prod/', region: 'eu-west-1' });
  });

  it('explain a stack without ApiUrl, and a stack that cannot be read', async () => {
    // Prepare
    cfn
      .on(DescribeStacksCommand, { StackName: 'Other' })
      .resolves({ Stacks: [{ StackName: 'Other', CreationTime: new Date(), StackStatus: 'CREATE_COMPLETE', Outputs: [] }] });
    cfn.on(DescribeStacksCommand, { StackName: 'Gone' }).rejects(new Error('Stack with id Gone does not exist'));

    // Act
    const other = cloudFormationLookup('Other', 'eu-west-1');
    const gone = cloudFormationLookup('Gone', 'eu-west-1');

    // Assess
    await expect(other).rejects.toThrow(/has no ApiUrl output/);
    await expect(gone).rejects.toThrow(/cannot read the outputs of stack Gone: Stack with id Gone does not exist/);
  });
});
