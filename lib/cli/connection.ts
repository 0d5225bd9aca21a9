/**
 * Where the CLI talks to and how it proves it is the owner: the base URL (`--url`,
 * `--stack`, `PIPEGATE_URL`, else the local default) and the owner credential (a bearer
 * token locally, SigV4 on AWS).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { UsageError } from './errors';
import { regionFromHost } from './sigv4';
import { RUNTIME_URL_FILE } from '../local/runtime-url';

export const DEFAULT_URL = 'http://127.0.0.1:3000';

export interface GlobalOptions {
  url?: string;
  token?: string;
  aws?: boolean;
  stack?: string;
  region?: string;
  json?: boolean;
  color?: boolean;
}

export type OwnerAuth =
  | { kind: 'bearer'; token: string; source: string }
  | { kind: 'sigv4'; region: string }
  /** No credential found; the owner routes will refuse with an explanation of where we looked. */
  | { kind: 'missing'; looked: string[] }
  /** On AWS but with no way to tell the region. */
  | { kind: 'no-region'; host: string };

export interface Connection {
  baseUrl: string;
  owner: OwnerAuth;
}

/** Resolves a stack's outputs (`ApiUrl`, `Region`); injected so tests need no AWS. */
export type StackLookup = (stack: string, region: string | undefined) => Promise<{ url: string; region?: string }>;

export function normaliseBaseUrl(raw: string, from: string): string {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    throw new UsageError(`${from} "${raw}" is not a URL`, `e.g. ${DEFAULT_URL}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`${from} "${raw}" must be an http or https URL`);
  if (u.search || u.hash) throw new UsageError(`${from} "${raw}" must not carry a query or fragment`);
  return `${u.origin}${u.pathname}`.replace(/\/+$/, '');
}

/** Loopback hosts: where the local runtime lives and a local owner token makes sense. */
export function isLoopback(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(h) || h === '::1' || h === '::ffff:127.0.0.1';
}

export function ownerTokenPath(env: Record<string, string | undefined>, cwd: string): string {
  return join(resolve(cwd, env.PIPEGATE_DATA_DIR ?? '.pipegate'), 'owner-token');
}

/** Where a running local runtime records its URL (beside the owner token), so any PORT is found. */
export function runtimeUrlPath(env: Record<string, string | undefined>, cwd: string): string {
  return join(resolve(cwd, env.PIPEGATE_DATA_DIR ?? '.pipegate'), RUNTIME_URL_FILE);
}

/** The URL the local runtime recorded, when it is a loopback URL (the token file goes there only). */
function recordedRuntimeUrl(env: Record<string, string | undefined>, cwd: string): string | undefined {
  const text = readTokenFile(runtimeUrlPath(env, cwd));
  if (text === undefined) return undefined;
  try {
    const url = normaliseBaseUrl(text, 'the recorded runtime URL');
    return isLoopback(new URL(url).hostname) ? url : undefined;
  } catch {
    return undefined;
  }
}

function readTokenFile(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const t = readFileSync(path, 'utf8').trim();
  return t === '' ? undefined : t;
}

export async function resolveConnection(
  opts: GlobalOptions,
  env: Record<string, string | undefined>,
  cwd: string,
  stackLookup?: StackLookup,
): Promise<Connection> {
  if (opts.url !== undefined && opts.stack !== undefined) throw new UsageError('give either --url or --stack, not both');
  let baseUrl: string;
  let stackRegion: string | undefined;
  if (opts.url !== undefined) baseUrl = normaliseBaseUrl(opts.url, '--url');
  else if (opts.stack !== undefined) {
    if (!stackLookup) throw new UsageError('--stack needs AWS access, which is not available here');
    const out = await stackLookup(opts.stack, opts.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION);
    baseUrl = normaliseBaseUrl(out.url, `the ApiUrl output of stack ${opts.stack}`);
    stackRegion = out.region;
  } else if (env.PIPEGATE_URL !== undefined && env.PIPEGATE_URL.trim() !== '') baseUrl = normaliseBaseUrl(env.PIPEGATE_URL, 'PIPEGATE_URL');
  else baseUrl = recordedRuntimeUrl(env, cwd) ?? DEFAULT_URL;

  const host = new URL(baseUrl).hostname;
  const explicitToken = opts.token ?? (env.PIPEGATE_OWNER_TOKEN?.trim() ? env.PIPEGATE_OWNER_TOKEN.trim() : undefined);
  const aws = opts.aws === true || opts.stack !== undefined || (!isLoopback(host) && explicitToken === undefined);

  if (aws) {
    const region = opts.region ?? regionFromHost(host) ?? stackRegion ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
    return { baseUrl, owner: region ? { kind: 'sigv4', region } : { kind: 'no-region', host } };
  }
  if (opts.token !== undefined) return { baseUrl, owner: { kind: 'bearer', token: opts.token, source: '--token' } };
  if (explicitToken !== undefined) return { baseUrl, owner: { kind: 'bearer', token: explicitToken, source: 'PIPEGATE_OWNER_TOKEN' } };
  // The data dir's token belongs to the local runtime; it is only ever sent to a loopback URL.
  const path = ownerTokenPath(env, cwd);
  const fromFile = readTokenFile(path);
  if (fromFile !== undefined) return { baseUrl, owner: { kind: 'bearer', token: fromFile, source: path } };
  return { baseUrl, owner: { kind: 'missing', looked: ['--token', 'PIPEGATE_OWNER_TOKEN', path] } };
}

/** CloudFormation outputs of a deployed pipegate stack (`cdk deploy` prints the same). */
export const cloudFormationLookup: StackLookup = async (stack, region) => {
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const client = new CloudFormationClient(region ? { region } : {});
  let outputs: { OutputKey?: string; OutputValue?: string }[];
  try {
    const res = await client.send(new DescribeStacksCommand({ StackName: stack }));
    outputs = res.Stacks?.[0]?.Outputs ?? [];
  } catch (e) {
    throw new UsageError(
      `cannot read the outputs of stack ${stack}: ${(e as Error).message}`,
      'check the stack name, AWS_REGION and your AWS credentials',
    );
  } finally {
    client.destroy();
  }
  const find = (key: string) => outputs.find((o) => o.OutputKey === key)?.OutputValue;
  const url = find('ApiUrl');
  if (!url) throw new UsageError(`stack ${stack} has no ApiUrl output; is it a pipegate service stack?`);
  const r = find('Region');
  return r ? { url, region: r } : { url };
};
