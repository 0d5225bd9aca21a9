/**
 * The templates' data stores as start:synth creates them: DynamoDB tables (dynalite), Secrets
 * Manager secrets, KMS keys and S3 buckets (the local AWS endpoint serves the last three).
 */
import { randomInt } from 'node:crypto';
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import { isPlainObject } from '../../../functions/core/values';
import type { LocalKms } from '../../local/kms';
import type { BucketCorsRule } from '../../storage-cors';
import type { LocalSecretStore } from '../aws-endpoint';
import type { ResolvedStack } from '../physical';

/**
 * Each AWS::DynamoDB::Table of the template, as `npm start` makes its table (ensureTableAs):
 * created on first start, rebuilt when a data dir from before an index was added lacks it.
 * dynalite has no TTL (TimeToLiveSpecification): the stores treat expired items as absent.
 */
export function tableInputs(stack: ResolvedStack): CreateTableCommandInput[] {
  return Object.entries(stack.stack.template.Resources)
    .filter(([, r]) => r.Type === 'AWS::DynamoDB::Table')
    .map(([id, r]) => {
      const p = stack.resolve(r.Properties ?? {}, `${stack.stack.id}.Resources.${id}.Properties`) as Record<string, unknown>;
      return {
        TableName: stack.physical[id]?.ref ?? id,
        BillingMode: (p.BillingMode as CreateTableCommandInput['BillingMode']) ?? 'PROVISIONED',
        AttributeDefinitions: p.AttributeDefinitions as CreateTableCommandInput['AttributeDefinitions'],
        KeySchema: p.KeySchema as CreateTableCommandInput['KeySchema'],
        ...(p.GlobalSecondaryIndexes
          ? { GlobalSecondaryIndexes: p.GlobalSecondaryIndexes as CreateTableCommandInput['GlobalSecondaryIndexes'] }
          : {}),
        ...(p.ProvisionedThroughput
          ? { ProvisionedThroughput: p.ProvisionedThroughput as CreateTableCommandInput['ProvisionedThroughput'] }
          : {}),
      };
    });
}

/** Secrets Manager's GenerateSecretString, for a secret created on first start only. */
export function defineSecrets(stack: ResolvedStack, store: LocalSecretStore): void {
  for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
    if (r.Type !== 'AWS::SecretsManager::Secret') continue;
    const where = `${stack.stack.id}.Resources.${id}.Properties`;
    const p = stack.resolve(r.Properties ?? {}, where) as Record<string, unknown>;
    const arn = stack.physical[id]?.ref ?? '';
    store.define(arn, () => {
      if (typeof p.SecretString === 'string') return p.SecretString;
      const g = isPlainObject(p.GenerateSecretString) ? p.GenerateSecretString : {};
      let alphabet = '';
      if (g.ExcludeUppercase !== true) alphabet += 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
      if (g.ExcludeLowercase !== true) alphabet += 'abcdefghijklmnopqrstuvwxyz';
      if (g.ExcludeNumbers !== true) alphabet += '0123456789';
      if (g.ExcludePunctuation !== true) alphabet += '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
      if (g.IncludeSpace === true) alphabet += ' ';
      const excluded = typeof g.ExcludeCharacters === 'string' ? g.ExcludeCharacters : '';
      const chars = [...alphabet].filter((c) => !excluded.includes(c));
      const length = Number(g.PasswordLength ?? 32);
      const password = Array.from({ length }, () => chars[randomInt(chars.length)]).join('');
      if (typeof g.SecretStringTemplate === 'string' && typeof g.GenerateStringKey === 'string') {
        return JSON.stringify({ ...(JSON.parse(g.SecretStringTemplate) as Record<string, unknown>), [g.GenerateStringKey]: password });
      }
      return password;
    });
  }
}

/** The templates' KMS keys, created once (their material in the data dir, as KMS keeps it). */
export function defineKeys(stacks: ResolvedStack[], kms: LocalKms): void {
  for (const stack of stacks) {
    for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
      const arn = r.Type === 'AWS::KMS::Key' ? stack.physical[id]?.attributes.Arn : undefined;
      if (arn) kms.define(arn);
    }
  }
}

/** Each AWS::S3::Bucket: its name, whole-bucket expiry and CORS rules, as the local S3 serves them. */
export function bucketsOf(stacks: ResolvedStack[]): {
  buckets: string[];
  expirationDays: Record<string, number>;
  cors: Record<string, BucketCorsRule[]>;
} {
  const bucketResources = stacks.flatMap((stack) =>
    Object.entries(stack.stack.template.Resources)
      .filter(([, r]) => r.Type === 'AWS::S3::Bucket')
      .map(([id, r]) => {
        const props = stack.resolve(r.Properties ?? {}, `${stack.stack.id}.Resources.${id}.Properties`);
        return { name: stack.physical[id]?.ref ?? '', days: expirationDaysOf(props), cors: corsRulesOf(props) };
      }),
  );
  const corsRules = Object.fromEntries(bucketResources.map((b) => [b.name, b.cors]));
  const buckets = bucketResources.map((b) => b.name);
  const expirationDays = Object.fromEntries(bucketResources.flatMap((b) => (b.days === undefined ? [] : [[b.name, b.days]])));
  return { buckets, expirationDays, cors: corsRules };
}

/** A bucket's CORS rules from its CorsConfiguration, as S3 applies them (none: CORS not enabled). */
function corsRulesOf(props: unknown): BucketCorsRule[] {
  const rules = isPlainObject(props) && isPlainObject(props.CorsConfiguration) ? props.CorsConfiguration.CorsRules : undefined;
  const strings = (x: unknown): string[] => (Array.isArray(x) ? x.filter((s): s is string => typeof s === 'string') : []);
  return (Array.isArray(rules) ? rules : []).filter(isPlainObject).map((r) => ({
    allowedMethods: strings(r.AllowedMethods),
    allowedOrigins: strings(r.AllowedOrigins),
    allowedHeaders: strings(r.AllowedHeaders),
    exposedHeaders: strings(r.ExposedHeaders),
    maxAgeSeconds: typeof r.MaxAge === 'number' ? r.MaxAge : 0,
  }));
}

/**
 * The days of a bucket's whole-bucket expiry rule (enabled, no prefix, tag or size filter), as
 * S3 applies it; rules S3 would apply to part of the bucket only are not emulated (none today).
 */
function expirationDaysOf(props: unknown): number | undefined {
  const rules = isPlainObject(props) && isPlainObject(props.LifecycleConfiguration) ? props.LifecycleConfiguration.Rules : undefined;
  for (const r of Array.isArray(rules) ? rules : []) {
    if (!isPlainObject(r) || r.Status !== 'Enabled' || typeof r.ExpirationInDays !== 'number') continue;
    if (r.Prefix !== undefined || r.Filter !== undefined || r.TagFilters !== undefined) continue;
    return r.ExpirationInDays;
  }
  return undefined;
}
