/**
 * Custom resources as CloudFormation runs them on a deploy, and what stands for the API's own
 * execute-api address in the values they (and the functions' environments) are given.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { isPlainObject } from '../../../functions/core/values';
import { normaliseBasePath } from '../../local/gateway/routing';
import type { FunctionHost } from '../function-host';
import type { ResolvedStack } from '../physical';
import type { FunctionLookup } from './context';

/** Whether a resolved value names a REST API's execute-api address. */
export function apiAddressNamed(stacks: ResolvedStack[]): (value: unknown) => boolean {
  const hosts = stacks.flatMap((stack) =>
    Object.entries(stack.stack.template.Resources)
      .filter(([, r]) => r.Type === 'AWS::ApiGateway::RestApi')
      .map(([id]) => `${stack.physical[id]?.ref ?? id}.execute-api.`),
  );
  return (value) => {
    const text = JSON.stringify(value);
    return hosts.some((h) => text.includes(h));
  };
}

/**
 * What stands for the API's own address in resolved template values: its execute-api base URL
 * (stage included) becomes this runtime's URL (and base path), its bare origin this runtime's
 * origin, in every string of a value.
 */
export function localApiAddress(stacks: ResolvedStack[], url: string, basePath: string | undefined): <T>(value: T) => T {
  const pairs: Array<[string, string]> = [];
  for (const stack of stacks) {
    for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
      if (r.Type !== 'AWS::ApiGateway::RestApi') continue;
      const origin = `https://${stack.physical[id]?.ref ?? id}.execute-api.${stack.resolveString({ Ref: 'AWS::Region' })}.${stack.resolveString({ Ref: 'AWS::URLSuffix' })}`;
      for (const stage of Object.values(stack.stack.template.Resources)) {
        if (stage.Type !== 'AWS::ApiGateway::Stage' || typeof stage.Properties?.StageName !== 'string') continue;
        pairs.push([`${origin}/${stage.Properties.StageName}`, `${url}${normaliseBasePath(basePath)}`]);
      }
      pairs.push([origin, new URL(url).origin]);
    }
  }
  const swap = (v: unknown): unknown => {
    if (typeof v === 'string') return pairs.reduce((acc, [from, to]) => acc.split(from).join(to), v);
    if (Array.isArray(v)) return v.map(swap);
    if (isPlainObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, swap(x)]));
    return v;
  };
  return <T>(value: T): T => swap(value) as T;
}

/** A custom resource as the data dir remembers it: its properties (null: recorded before they were) and physical id. */
interface CreatedResource {
  properties: Record<string, unknown> | null;
  type?: string;
  physicalId?: string;
}

function readCreated(file: string): Record<string, CreatedResource> {
  if (!existsSync(file)) return {};
  const saved = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  // The first format listed the created resources' keys only.
  if (Array.isArray(saved)) return Object.fromEntries(saved.map((k) => [String(k), { properties: null }]));
  return isPlainObject(saved) ? (saved as Record<string, CreatedResource>) : {};
}

/**
 * Custom resources run as CloudFormation runs them: an event to the ServiceToken function with
 * a pre-signed URL (here a local one) it PUTs its outcome to. Each one's properties are recorded
 * in the data dir, and the next start sends what a redeploy would: nothing while they are the
 * same, Update (with the old ones) when they changed, Delete for a resource no longer in the
 * template. Resources recorded before their properties were are taken as unchanged.
 */
export async function runCustomResources(
  stack: ResolvedStack,
  dataDir: string,
  fnByArn: FunctionLookup,
  localize: <T>(value: T) => T,
  log: (line: string) => void,
  only: (properties: Record<string, unknown>) => boolean = () => true,
): Promise<void> {
  const file = join(dataDir, 'custom-resources.json');
  const created = readCreated(file);
  const save = () => writeFileSync(file, JSON.stringify(created), { mode: 0o600 });
  const prefix = `${stack.stack.stackName}/`;
  const present = new Set<string>();
  for (const [id, r] of Object.entries(stack.stack.template.Resources)) {
    if (!r.Type.startsWith('Custom::') && r.Type !== 'AWS::CloudFormation::CustomResource') continue;
    const key = `${prefix}${id}`;
    present.add(key);
    const where = `${stack.stack.id}.Resources.${id}.Properties`;
    const resolvedProps = stack.resolve(r.Properties ?? {}, where) as Record<string, unknown>;
    if (!only(resolvedProps)) continue;
    const properties = localize(resolvedProps);
    const before = created[key];
    if (before && (before.properties === null || isDeepStrictEqual(before.properties, properties))) {
      if (before.properties === null) created[key] = { ...before, properties };
      continue;
    }
    const physicalId = await invokeCustomResource(
      stack,
      id,
      r.Type,
      fnByArn(String(properties.ServiceToken), `${where}.ServiceToken`),
      properties,
      before?.properties ? { old: before.properties, physicalId: before.physicalId } : undefined,
    );
    created[key] = { properties, type: r.Type, physicalId };
    save();
  }
  for (const [key, was] of Object.entries(created)) {
    if (!key.startsWith(prefix) || present.has(key)) continue;
    const id = key.slice(prefix.length);
    if (was.properties) {
      let fn: FunctionHost | undefined;
      try {
        fn = fnByArn(String(was.properties.ServiceToken), `${key} (removed)`);
      } catch {
        log(`custom resource ${key} is no longer in the template, nor its function: not deleted`);
      }
      if (fn)
        await invokeCustomResource(stack, id, was.type ?? 'AWS::CloudFormation::CustomResource', fn, was.properties, {
          old: was.properties,
          physicalId: was.physicalId,
          remove: true,
        });
    }
    delete created[key];
    save();
  }
  save();
}

/** One event to a custom resource's function; its answered physical id, or an error naming its reason. */
async function invokeCustomResource(
  stack: ResolvedStack,
  id: string,
  type: string,
  fn: FunctionHost,
  properties: Record<string, unknown>,
  previous?: { old: Record<string, unknown>; physicalId?: string; remove?: boolean },
): Promise<string | undefined> {
  const requestType = previous === undefined ? 'Create' : previous.remove ? 'Delete' : 'Update';
  let answer: Record<string, unknown> | undefined;
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      try {
        answer = JSON.parse(body) as Record<string, unknown>;
      } catch {
        answer = { Status: 'FAILED', Reason: 'unreadable response' };
      }
      res.end();
    });
  });
  await new Promise<void>((res) => receiver.listen(0, '127.0.0.1', () => res()));
  try {
    const { port } = receiver.address() as AddressInfo;
    await fn.invoke({
      RequestType: requestType,
      ServiceToken: properties.ServiceToken,
      ResponseURL: `http://127.0.0.1:${port}/cloudformation-response/${randomUUID()}`,
      StackId: stack.resolveString({ Ref: 'AWS::StackId' }),
      RequestId: randomUUID(),
      LogicalResourceId: id,
      ResourceType: type,
      ResourceProperties: properties,
      ...(previous?.physicalId !== undefined ? { PhysicalResourceId: previous.physicalId } : {}),
      ...(requestType === 'Update' && previous ? { OldResourceProperties: previous.old } : {}),
    });
  } finally {
    receiver.closeAllConnections();
    await new Promise((res) => receiver.close(res));
  }
  const key = `${stack.stack.stackName}/${id}`;
  if (answer?.Status !== 'SUCCESS')
    throw new Error(`${key}: custom resource ${requestType} failed: ${String(answer?.Reason ?? 'no response')}`);
  return typeof answer.PhysicalResourceId === 'string' ? answer.PhysicalResourceId : undefined;
}
