/**
 * SigV4 for the owner routes on AWS, where API Gateway checks IAM (service `execute-api`).
 * Credentials come from the standard chain (environment, profile, SSO, container, instance),
 * loaded only when an AWS call is made so local use never pays for the SDK.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}
export type CredentialSource = AwsCredentials | (() => Promise<AwsCredentials>);

export interface SignableRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
}

export interface SignOptions {
  region: string;
  credentials: CredentialSource;
  service?: string;
  /** Fixed signing time (tests); defaults to now. */
  now?: Date;
}

/**
 * The headers to send for `req`, signed: the given ones plus `authorization`, `x-amz-date`
 * and, with temporary credentials, `x-amz-security-token`. `host` is signed but left out of
 * the result, since fetch sets it from the URL itself.
 */
export async function signRequest(req: SignableRequest, opts: SignOptions): Promise<Record<string, string>> {
  const signer = new SignatureV4({
    service: opts.service ?? 'execute-api',
    region: opts.region,
    credentials: opts.credentials,
    sha256: Sha256,
    // execute-api does not need the payload hash header; the signature covers the body anyway.
    applyChecksum: false,
  });
  const query: Record<string, string> = {};
  for (const [k, v] of req.url.searchParams) query[k] = v;
  const headers: Record<string, string> = { host: req.url.host };
  for (const [k, v] of Object.entries(req.headers)) headers[k.toLowerCase()] = v;
  const signed = await signer.sign(
    {
      method: req.method.toUpperCase(),
      protocol: req.url.protocol,
      hostname: req.url.hostname,
      ...(req.url.port ? { port: Number(req.url.port) } : {}),
      path: req.url.pathname,
      query,
      headers,
      ...(req.body !== undefined ? { body: req.body } : {}),
    },
    opts.now ? { signingDate: opts.now } : {},
  );
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(signed.headers)) if (k.toLowerCase() !== 'host') out[k] = v;
  return out;
}

/** The standard AWS credential chain, resolved once per process. */
export async function defaultCredentials(): Promise<() => Promise<AwsCredentials>> {
  const { fromNodeProviderChain } = await import('@aws-sdk/credential-providers');
  return fromNodeProviderChain();
}

const EXECUTE_API_HOST = /\.execute-api\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(?:\.cn)?$/;

/** The region in an `*.execute-api.<region>.amazonaws.com` host, if it is one. */
export function regionFromHost(hostname: string): string | undefined {
  return EXECUTE_API_HOST.exec(hostname.toLowerCase())?.[1];
}
