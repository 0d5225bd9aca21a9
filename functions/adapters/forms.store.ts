import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { FormsPort } from '../core/ports';
import { keys } from './dynamo';

/** Web-form link lookups (FORM#<hash>) and their rate counters (FORMRATE#<key> / <window>). */
export class FormsStore implements FormsPort {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  async putLink(tokenHash: string, deploymentId: string): Promise<void> {
    await this.db.send(new PutCommand({ TableName: this.table, Item: { ...keys.formLink(tokenHash), deployment_id: deploymentId } }));
  }

  async findLink(tokenHash: string): Promise<string | null> {
    // Consistent: a link the owner was just handed works at once.
    const out = await this.db.send(new GetCommand({ TableName: this.table, Key: keys.formLink(tokenHash), ConsistentRead: true }));
    const id = out.Item?.deployment_id;
    return typeof id === 'string' ? id : null;
  }

  async removeLink(tokenHash: string): Promise<void> {
    await this.db.send(new DeleteCommand({ TableName: this.table, Key: keys.formLink(tokenHash) }));
  }

  async count(key: string, windowStart: number, expiresAt: number): Promise<number> {
    const out = await this.db.send(
      new UpdateCommand({
        TableName: this.table,
        Key: keys.formRate(key, windowStart),
        UpdateExpression: 'ADD hits :one SET expires_at = :exp',
        ExpressionAttributeValues: { ':one': 1, ':exp': expiresAt },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(out.Attributes?.hits ?? 1);
  }
}
