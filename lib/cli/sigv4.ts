/**
 * SigV4 for the owner routes on AWS, where API Gateway checks IAM (service `execute-api`).
 * Credentials come from the standard chain (environment, profile, SSO, container, instance),
 * loaded only when an AWS call is made so local use never pays for the SDK.
 */
import type { AwsCredentials } from '../../functions/adapters/sigv4';

// The one signer (functions/adapters/sigv4.ts), service `execute-api` by default.
export {
  signRequest,
  type AwsCredentials,
  type CredentialSource,
  type SignableRequest,
  type SignOptions,
} from '../../functions/adapters/sigv4';

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
