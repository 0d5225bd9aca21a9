/**
 * How an http node's failures read: the upstream's status travels with the failure, and
 * nothing the node sent as a credential (or anything that reads like one) comes back in a
 * message.
 */

/** An http node's URL on this service's own API, refused before any connection. */
export class LoopGuardError extends Error {
  override readonly name = 'LoopGuardError';
}

/** A non-2xx answer to an http node: the upstream's status travels with the failure. */
export class HttpNodeError extends Error {
  constructor(
    readonly httpStatus: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpNodeError';
  }
}

export const HTTP_ERROR_EXCERPT_CHARS = 160;

/** What the node itself sent that must never come back in a message: header values, query values, URL credentials. */
export function sensitiveValues(url: string, headers: Record<string, string>): string[] {
  const values = Object.values(headers).flatMap((h) => [h, ...h.split(/\s+/)]);
  try {
    const u = new URL(url);
    values.push(...u.searchParams.values(), decodeURIComponent(u.password), decodeURIComponent(u.username));
  } catch {
    // An invalid URL never reached the network.
  }
  return values.filter((x) => x.length >= 4);
}

/**
 * A short, single-line excerpt of an upstream's error body, fit for error_message: control
 * characters gone, whatever the node sent as a credential (or anything that reads like one)
 * replaced, and cut to HTTP_ERROR_EXCERPT_CHARS.
 */
export function bodyExcerpt(body: string, sensitive: readonly string[] = []): string {
  let text = body.slice(0, 4096);
  for (const s of [...sensitive].sort((a, b) => b.length - a.length)) text = text.split(s).join('[redacted]');
  text = redactCredentials(text)
    // eslint-disable-next-line no-control-regex -- control characters are exactly what is removed
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return text.length > HTTP_ERROR_EXCERPT_CHARS ? `${text.slice(0, HTTP_ERROR_EXCERPT_CHARS)}…` : text;
}

/** Credential-shaped text: auth schemes with their token, key=value pairs named like secrets, and long opaque tokens. */
export function redactCredentials(text: string): string {
  return text
    .replace(/\b(bearer|basic|api-key|token)(\s+)[^\s"',;]+/gi, '$1$2[redacted]')
    .replace(/("?[\w-]*(?:secret|password|passwd|token|api[_-]?key|authorization)[\w-]*"?\s*[:=]\s*"?)([^"\s,;}&]+)/gi, '$1[redacted]')
    .replace(/[A-Za-z0-9_\-+/=]{32,}/g, '[redacted]');
}

/** The URL without query, fragment or credentials: those may hold secrets. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}
