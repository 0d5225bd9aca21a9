/**
 * Defects the stacks had that only show against AWS's documented behaviour: each checked on the
 * synthesized templates, with the IAM evaluator or the local AWS endpoint.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { PipelinesStore } from '../../functions/adapters/pipelines.store';
import { ensureTable, startDynalite, type LocalDynamo } from '../../lib/local/dynamo';
import { startAwsEndpoint, type AwsEndpoint } from '../../lib/synth/aws-endpoint';
import { credentialsFor, IamEvaluator } from '../../lib/synth/iam';
import { resolveAssembly, type ResolvedAssembly } from '../../lib/synth/physical';
import { SYNTH_TIMEOUT_MS, testAssembly } from '../support/synth';
import { functionRoleArn, localEnv, logicalId, tableArn } from './synth-helpers';

describe('the synthesized stacks', () => {
  let resolved: ResolvedAssembly;
  let iam: IamEvaluator;

  beforeAll(async () => {
    resolved = resolveAssembly(await testAssembly(), localEnv());
    iam = IamEvaluator.fromAssembly(resolved);
  }, SYNTH_TIMEOUT_MS);

  describe('deployment-readiness, which brings run pointers up to date', () => {
    let dynamo: LocalDynamo;
    let endpoint: AwsEndpoint;
    let table: string;

    beforeAll(async () => {
      dynamo = await startDynalite();
      endpoint = await startAwsEndpoint({ log: () => undefined });
      const r = resolveAssembly(await testAssembly(), localEnv(endpoint.url));
      endpoint.serve({ iam: IamEvaluator.fromAssembly(r), arns: r.arns, dynamoEndpoint: dynamo.endpoint });
      table = r.stack('PipegateStateful').physical[logicalId(r, 'PipegateStateful', 'AWS::DynamoDB::Table', 'Table')]?.ref ?? '';
      await ensureTable(dynamo.endpoint, table);
    });
    afterAll(async () => {
      await endpoint?.stop();
      await dynamo?.close();
    });

    it('may UpdateItem the table (recordRunFinished)', async () => {
      // Act
      const d = await iam.evaluate({
        principal: functionRoleArn(resolved, 'deployment-readiness'),
        action: 'dynamodb:UpdateItem',
        resource: tableArn(resolved),
      });
      // Assess
      expect(d).toMatchObject({ allowed: true });
    });

    it('records a finished run through the endpoint with its own role', async () => {
      // Prepare: a pipeline meta item, written past IAM straight into dynalite.
      const admin = DynamoDBDocumentClient.from(
        new DynamoDBClient({ endpoint: dynamo.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }),
      );
      await admin.send(new PutCommand({ TableName: table, Item: { pk: 'PIPELINE#p1', sk: 'META' } }));
      const role = functionRoleArn(resolved, 'deployment-readiness');
      const client = new DynamoDBClient({
        endpoint: endpoint.url,
        region: 'us-east-1',
        credentials: credentialsFor(role, 'deployment-readiness'),
      });
      const store = new PipelinesStore(DynamoDBDocumentClient.from(client), table);
      const run = {
        run_id: '00000000-0000-4000-8000-000000000001',
        status: 'completed' as const,
        version: 1,
        created_at: '2026-11-22T00:00:00.000Z',
      };
      // Act
      await store.recordRunFinished('p1', run);
      // Assess
      const item = await admin.send(new GetCommand({ TableName: table, Key: { pk: 'PIPELINE#p1', sk: 'META' } }));
      expect(item.Item).toMatchObject({ latest_finished: run, last_success: run });
      expect(endpoint.denials).toEqual([]);
    });
  });

  describe('the alarm topic', () => {
    const topic = () =>
      resolved.stack('PipegateStateful').physical[logicalId(resolved, 'PipegateStateful', 'AWS::SNS::Topic', 'Alarms')]?.ref ?? '';
    const alarm = () =>
      resolved.stack('PipegateStateful').physical[
        logicalId(resolved, 'PipegateStateful', 'AWS::CloudWatch::Alarm', 'ExecutionsDeadLetterAlarm')
      ]?.attributes.Arn ?? '';
    const publish = (context: Record<string, string>) =>
      iam.evaluate({ principal: 'cloudwatch.amazonaws.com', action: 'sns:Publish', resource: topic(), context });

    it("lets this account's CloudWatch alarms publish (the dead-letter alarm included)", async () => {
      // Act
      const d = await publish({ 'aws:SourceAccount': resolved.env.account, 'aws:SourceArn': alarm() });
      // Assess
      expect(alarm()).toMatch(/^arn:aws:cloudwatch:us-east-1:123456789012:alarm:/);
      expect(d).toMatchObject({ allowed: true });
    });

    it("refuses another account's alarms and any publish without TLS", async () => {
      // Act
      const other = await publish({
        'aws:SourceAccount': '210987654321',
        'aws:SourceArn': 'arn:aws:cloudwatch:us-east-1:210987654321:alarm:x',
      });
      const plain = await publish({ 'aws:SourceAccount': resolved.env.account, 'aws:SourceArn': alarm(), 'aws:SecureTransport': 'false' });
      // Assess
      expect(other.allowed).toBe(false);
      expect(plain).toMatchObject({ allowed: false, result: 'ExplicitlyDenied' });
    });
  });

  it("keeps API Gateway's execution logs for the configured retention, in the group it writes to", () => {
    // Prepare
    const service = resolved.stack('Pipegate');
    const resources = service.stack.template.Resources;
    const apiId = service.physical[logicalId(resolved, 'Pipegate', 'AWS::ApiGateway::RestApi', 'Api')]?.ref;
    const stageId = logicalId(resolved, 'Pipegate', 'AWS::ApiGateway::Stage', 'ApiDeploymentStage');
    const stageName = service.resolveString(resources[stageId]?.Properties?.StageName);
    // Act
    const groups = Object.entries(resources)
      .filter(([, r]) => r.Type === 'AWS::Logs::LogGroup')
      .map(([id, r]) => ({ id, name: service.physical[id]?.ref, retention: r.Properties?.RetentionInDays }));
    const execution = groups.find((g) => g.name === `API-Gateway-Execution-Logs_${apiId}/${stageName}`);
    // Assess
    expect(execution?.retention).toBe(30);
    expect([resources[stageId]?.DependsOn ?? []].flat()).toContain(execution?.id);
    expect(groups.filter((g) => g.retention === undefined)).toEqual([]);
  });
});
