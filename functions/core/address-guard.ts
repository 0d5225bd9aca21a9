/**
 * The one address guard for every outbound call pipegate makes on a user's behalf (callbacks
 * and http nodes, contract §6), and for REFERENCE inputs at submit time. Only plain public
 * unicast addresses pass; everything else
 * (loopback, private, link-local and the cloud metadata address, unique-local, CGNAT,
 * unspecified, multicast, reserved and documentation ranges) is refused, and IPv6 forms that
 * carry an IPv4 address are judged by that IPv4 address.
 *
 * Pure: names are accepted by checkUrl and their resolved addresses are checked by the HTTP
 * adapter at connection time, on the address actually connected to.
 */
import ipaddr from 'ipaddr.js';

export interface UrlCheckOptions {
  /** The local runtime lets loopback and private addresses through (PIPEGATE_ALLOW_PRIVATE_URLS). */
  allowPrivate: boolean;
}

// Strict dotted decimal without leading zeros: ipaddr.js (like inet_aton) reads "0177" as octal
// and "127.1" as 127.0.0.1, so anything looser is refused rather than guessed at.
const DOTTED_QUAD = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

const REFUSED_NAME_SUFFIXES = ['.localhost', '.internal', '.local'];

function isBlockedIPv4(addr: ipaddr.IPv4): boolean {
  return addr.range() !== 'unicast';
}

function embeddedIPv4(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

function isBlockedIPv6(addr: ipaddr.IPv6): boolean {
  const [w0, w1, w2, w3, w4, w5, w6, w7] = addr.parts as [number, number, number, number, number, number, number, number];
  const firstFourZero = w0 === 0 && w1 === 0 && w2 === 0 && w3 === 0;
  // IPv4-compatible (::a.b.c.d, which also covers :: and ::1), IPv4-mapped (::ffff:a.b.c.d) and
  // SIIT (::ffff:0:a.b.c.d): a host or gateway may route these to the embedded IPv4 address.
  if (firstFourZero && ((w4 === 0 && (w5 === 0 || w5 === 0xffff)) || (w4 === 0xffff && w5 === 0))) {
    return isBlockedIPv4(embeddedIPv4(w6, w7));
  }
  // NAT64 well-known prefix 64:ff9b::/96 translates to the embedded IPv4 address.
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 0 && w3 === 0 && w4 === 0 && w5 === 0) {
    return isBlockedIPv4(embeddedIPv4(w6, w7));
  }
  // 6to4 2002:AABB:CCDD::/48 tunnels to AA.BB.CC.DD.
  if (w0 === 0x2002) {
    return isBlockedIPv4(embeddedIPv4(w1, w2));
  }
  // Only global unicast 2000::/3 outside every special range ipaddr.js knows (Teredo,
  // documentation, benchmarking, ORCHID, local-use NAT64 64:ff9b:1::/48 and so on).
  return (w0 & 0xe000) !== 0x2000 || addr.range() !== 'unicast';
}

/** True for anything that is not a plain public unicast address, including unparsable input. */
export function isBlockedAddress(ip: string): boolean {
  if (DOTTED_QUAD.test(ip)) {
    return isBlockedIPv4(ipaddr.IPv4.parse(ip));
  }
  // A zone id only makes sense on scoped (link-local) addresses.
  if (!ip.includes(':') || ip.includes('%')) {
    return true;
  }
  const lastColon = ip.lastIndexOf(':');
  const tail = ip.slice(lastColon + 1);
  if (tail.includes('.') && !DOTTED_QUAD.test(tail)) {
    return true;
  }
  if (!ipaddr.IPv6.isValid(ip)) {
    return true;
  }
  return isBlockedIPv6(ipaddr.IPv6.parse(ip));
}

/**
 * Addresses that hand out cloud credentials: the EC2 instance metadata service (IPv4 and its
 * IPv6 form on Nitro), the ECS/EKS container credential endpoints. They stay refused where
 * private addresses are otherwise allowed (the local runtime's default), because a developer's
 * laptop or a build runner on EC2 would otherwise hand its role's credentials to a pipeline.
 */
const METADATA_ADDRESSES: readonly string[] = [
  '169.254.169.254',
  '169.254.170.2',
  '169.254.170.23',
  'fd00:ec2:0:0:0:0:0:254',
  'fd00:ec2:0:0:0:0:0:23',
];

/** True for a cloud metadata address, in any spelling (IPv4-mapped and compatible IPv6 included). */
export function isMetadataAddress(ip: string): boolean {
  const host = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (DOTTED_QUAD.test(host)) return METADATA_ADDRESSES.includes(host);
  if (!host.includes(':') || host.includes('%') || !ipaddr.IPv6.isValid(host)) return false;
  const addr = ipaddr.IPv6.parse(host);
  const [w0, w1, w2, w3, w4, w5, w6, w7] = addr.parts as [number, number, number, number, number, number, number, number];
  if (w0 === 0 && w1 === 0 && w2 === 0 && w3 === 0 && (w4 === 0 || w4 === 0xffff) && (w5 === 0 || w5 === 0xffff)) {
    return METADATA_ADDRESSES.includes(embeddedIPv4(w6, w7).toString());
  }
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 0 && w3 === 0 && w4 === 0 && w5 === 0) {
    return METADATA_ADDRESSES.includes(embeddedIPv4(w6, w7).toString());
  }
  return METADATA_ADDRESSES.includes(addr.toNormalizedString());
}

function isIpLiteral(hostname: string): boolean {
  return DOTTED_QUAD.test(hostname) || hostname.includes(':');
}

/**
 * Checks a URL before any connection is made. Returns null when it is acceptable, otherwise a
 * short reason fit to show a user (it never repeats the path or query).
 */
export function checkUrl(url: string, opts: UrlCheckOptions): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not a valid URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return 'only http and https URLs are allowed';
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return 'URL must not contain credentials';
  }
  // WHATWG URL has already turned odd IPv4 spellings (0x7f.1, 2130706433, 0177.0.0.1, 127.1)
  // into dotted decimal and lower-cased names; IPv6 literals keep their brackets.
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  if (host === '') {
    return 'URL must name a host';
  }
  if (isIpLiteral(host) && isMetadataAddress(host)) {
    return `address ${host} is not allowed`;
  }
  if (opts.allowPrivate) {
    return null;
  }
  if (isIpLiteral(host)) {
    return isBlockedAddress(host) ? `address ${host} is not allowed` : null;
  }
  const name = host.replace(/\.+$/, '');
  if (name === 'localhost' || REFUSED_NAME_SUFFIXES.some((suffix) => name.endsWith(suffix))) {
    return `host ${name} is not allowed`;
  }
  return null;
}

/** What the loop guard says of a URL on pipegate's own API (shown to owners and, shortened, to callers). */
export const LOOP_GUARD_REASON =
  "calls this pipegate service's own API (loop guard): a pipeline may not start executions of itself or any other of this service's";

/** The host (name and port, lower-case, no trailing dot) a URL addresses; undefined when it is not a URL. */
function hostOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    const name = u.hostname.replace(/\.+$/, '');
    return u.port === '' ? name : `${name}:${u.port}`;
  } catch {
    return undefined;
  }
}

/**
 * The loop guard: whether a URL addresses this service's own API, by host (the API's own
 * execute-api host, a custom domain's, the local runtime's). Any path counts: every route of
 * the API is either a caller's, which can start executions, or needs no call from a node.
 */
export function isOwnApiUrl(url: string, ownUrls: readonly (string | undefined)[]): boolean {
  const host = hostOf(url);
  if (host === undefined) return false;
  return ownUrls.some((own) => own !== undefined && hostOf(own) === host);
}
