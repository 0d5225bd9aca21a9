/**
 * The AWS WAF web ACL a template associates with the API's stage, evaluated in front of the
 * local gateway as WAF evaluates it in front of API Gateway: rules in priority order, the first
 * matching Block or Allow ends the evaluation, a matching Count goes on, then the default action.
 * Only what can be decided from the request's headers, path and source address before its body
 * is read is served: RegexMatchStatement and SizeConstraintStatement on one header
 * (SingleHeader), ByteMatchStatement on one header or the URI path, with the text
 * transformations NONE and LOWERCASE, combined with And, Or and Not; RateBasedStatement keyed on
 * the source address (AggregateKeyType IP) with an optional scope-down statement; Block (WAF's
 * 403, or a custom response), Allow and Count without custom request handling. Anything else
 * stops the start with the template path it found it at, rather than letting through requests
 * WAF would block (or blocking ones it would let through), with one stated exception: the AWS
 * managed rule groups in UNEVALUATED_MANAGED_GROUPS are accepted and match nothing here (their
 * rules are AWS's; an IP reputation list holds no loopback address, and no test sends exploits).
 *
 * A rate-based rule counts, per address, the requests that reach it and match its scope-down
 * statement over its evaluation window, and matches while that count is above its limit. WAF
 * checks rates every few seconds, so on AWS a burst overshoots the limit a little before the
 * block starts; here the count is exact.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isPlainObject } from '../../functions/core/values';
import type { Reply } from '../local/gateway/replies';
import type { ResolvedStack } from './physical';

/** What a rule may look at: the request before its body. */
export interface FirewallRequest {
  headers: IncomingHttpHeaders;
  /** The request target (path and query), as an IncomingMessage has it. */
  url?: string;
  /** The connection, for the source address rate-based rules count by. */
  socket?: { remoteAddress?: string | undefined };
}

/** AWS managed rule groups accepted without evaluating their rules (see above). */
export const UNEVALUATED_MANAGED_GROUPS: readonly string[] = [
  'AWSManagedRulesAmazonIpReputationList',
  'AWSManagedRulesKnownBadInputsRuleSet',
];

const RATE_WINDOWS = [60, 120, 300, 600];

/** The ACL's answer to a request: a Block's reply, or undefined to let it through. */
export type Firewall = (req: FirewallRequest) => Reply | undefined;

/** The configuration a WebACL or its association holds that this host cannot serve. */
export class UnservedWebAclError extends Error {
  constructor(where: string, what: string) {
    super(`${where}: ${what} (start:synth serves web ACL rules on single headers only; see docs/aws.md)`);
    this.name = 'UnservedWebAclError';
  }
}

type Matcher = (req: FirewallRequest) => boolean;
type Verdict = { kind: 'block'; reply: Reply } | { kind: 'allow' } | { kind: 'count' };

/** WAF's own answer to a Block without a custom response. */
const DEFAULT_BLOCK: Reply = {
  status: 403,
  headers: [['Content-Type', 'text/html']],
  body: Buffer.from('<html><body><h1>403 Forbidden</h1></body></html>'),
};

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  APPLICATION_JSON: 'application/json',
  TEXT_HTML: 'text/html',
  TEXT_PLAIN: 'text/plain',
};

/** The URI path WAF inspects: the target without its query. */
const uriPathOf = (req: FirewallRequest): string => (req.url ?? '/').split('?')[0] ?? '/';

function headerField(field: unknown, where: string, uriPath = false): (req: FirewallRequest) => string | undefined {
  if (uriPath && isPlainObject(field) && isPlainObject(field.UriPath) && Object.keys(field).length === 1) return uriPathOf;
  if (
    !isPlainObject(field) ||
    !isPlainObject(field.SingleHeader) ||
    typeof field.SingleHeader.Name !== 'string' ||
    Object.keys(field).length !== 1
  ) {
    throw new UnservedWebAclError(
      `${where}.FieldToMatch`,
      `only SingleHeader${uriPath ? ' and UriPath are' : ' is'} served (found ${JSON.stringify(field)})`,
    );
  }
  const name = field.SingleHeader.Name.toLowerCase();
  return (req) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v.join(', ') : v;
  };
}

function transformed(transformations: unknown, where: string): (s: string) => string {
  if (!Array.isArray(transformations) || transformations.length === 0)
    throw new UnservedWebAclError(`${where}.TextTransformations`, 'missing (WAF requires at least NONE)');
  const steps = transformations
    .map((t, i) => {
      if (!isPlainObject(t)) throw new UnservedWebAclError(`${where}.TextTransformations[${i}]`, 'not a transformation');
      if (t.Type === 'NONE') return { priority: Number(t.Priority), step: (s: string) => s };
      if (t.Type === 'LOWERCASE') return { priority: Number(t.Priority), step: (s: string) => s.toLowerCase() };
      throw new UnservedWebAclError(`${where}.TextTransformations[${i}]`, `${String(t.Type)} is not served (NONE and LOWERCASE are)`);
    })
    .sort((a, b) => a.priority - b.priority);
  return (s) => steps.reduce((acc, t) => t.step(acc), s);
}

const COMPARE: Readonly<Record<string, (n: number, size: number) => boolean>> = {
  EQ: (n, size) => n === size,
  NE: (n, size) => n !== size,
  LE: (n, size) => n <= size,
  LT: (n, size) => n < size,
  GE: (n, size) => n >= size,
  GT: (n, size) => n > size,
};

const POSITIONS: Readonly<Record<string, (value: string, search: string) => boolean>> = {
  EXACTLY: (v, x) => v === x,
  STARTS_WITH: (v, x) => v.startsWith(x),
  ENDS_WITH: (v, x) => v.endsWith(x),
  CONTAINS: (v, x) => v.includes(x),
};

/** A rate-based statement's per-address counts: the times of the requests it counted, in its window. */
function rateMatcher(body: Record<string, unknown>, at: string, now: () => number): Matcher {
  if (body.AggregateKeyType !== 'IP')
    throw new UnservedWebAclError(`${at}.AggregateKeyType`, `${String(body.AggregateKeyType)} is not served (IP is)`);
  const limit = Number(body.Limit);
  if (!Number.isInteger(limit) || limit < 10)
    throw new UnservedWebAclError(`${at}.Limit`, `${String(body.Limit)} is not a limit WAF takes (10 or more)`);
  const windowSec = body.EvaluationWindowSec === undefined ? 300 : Number(body.EvaluationWindowSec);
  if (!RATE_WINDOWS.includes(windowSec))
    throw new UnservedWebAclError(
      `${at}.EvaluationWindowSec`,
      `${String(body.EvaluationWindowSec)} is not one of ${RATE_WINDOWS.join(', ')}`,
    );
  const scope = body.ScopeDownStatement === undefined ? () => true : matcherOf(body.ScopeDownStatement, `${at}.ScopeDownStatement`, now);
  const seen = new Map<string, number[]>();
  return (req) => {
    if (!scope(req)) return false;
    const key = req.socket?.remoteAddress ?? '';
    const t = now();
    const times = (seen.get(key) ?? []).filter((x) => x > t - windowSec * 1000);
    times.push(t);
    seen.set(key, times);
    return times.length > limit;
  };
}

function matcherOf(statement: unknown, where: string, now: () => number): Matcher {
  if (!isPlainObject(statement) || Object.keys(statement).length !== 1)
    throw new UnservedWebAclError(where, 'not a statement (one key expected)');
  const [kind, body] = Object.entries(statement)[0] as [string, unknown];
  const at = `${where}.${kind}`;
  if (!isPlainObject(body)) throw new UnservedWebAclError(at, 'empty statement');
  switch (kind) {
    case 'RegexMatchStatement': {
      const read = headerField(body.FieldToMatch, at);
      const transform = transformed(body.TextTransformations, at);
      let re: RegExp;
      try {
        re = new RegExp(String(body.RegexString));
      } catch (err) {
        throw new UnservedWebAclError(
          `${at}.RegexString`,
          `not a regular expression this host can run (${err instanceof Error ? err.message : String(err)})`,
        );
      }
      // A request without the header has nothing to match.
      return (req) => {
        const v = read(req);
        return v !== undefined && re.test(transform(v));
      };
    }
    case 'SizeConstraintStatement': {
      const read = headerField(body.FieldToMatch, at);
      const transform = transformed(body.TextTransformations, at);
      const size = Number(body.Size);
      if (!Number.isInteger(size) || size < 0) throw new UnservedWebAclError(`${at}.Size`, `${String(body.Size)} is not a size`);
      const compare = COMPARE[String(body.ComparisonOperator)];
      if (!compare) throw new UnservedWebAclError(`${at}.ComparisonOperator`, `${String(body.ComparisonOperator)} is unknown`);
      return (req) => {
        const v = read(req);
        return v !== undefined && compare(Buffer.byteLength(transform(v), 'utf8'), size);
      };
    }
    case 'ByteMatchStatement': {
      const read = headerField(body.FieldToMatch, at, true);
      const transform = transformed(body.TextTransformations, at);
      const position = POSITIONS[String(body.PositionalConstraint)];
      if (!position)
        throw new UnservedWebAclError(
          `${at}.PositionalConstraint`,
          `${String(body.PositionalConstraint)} is not served (${Object.keys(POSITIONS).join(', ')} are)`,
        );
      const search = String(body.SearchString);
      return (req) => {
        const v = read(req);
        return v !== undefined && position(transform(v), search);
      };
    }
    case 'RateBasedStatement':
      return rateMatcher(body, at, now);
    case 'ManagedRuleGroupStatement': {
      if (body.VendorName !== 'AWS' || !UNEVALUATED_MANAGED_GROUPS.includes(String(body.Name))) {
        throw new UnservedWebAclError(
          at,
          `${String(body.VendorName)} ${String(body.Name)} is not served (${UNEVALUATED_MANAGED_GROUPS.join(', ')} are accepted, unevaluated)`,
        );
      }
      for (const key of ['ExcludedRules', 'RuleActionOverrides', 'ScopeDownStatement', 'ManagedRuleGroupConfigs']) {
        if (body[key] !== undefined) throw new UnservedWebAclError(`${at}.${key}`, 'not served');
      }
      return () => false;
    }
    case 'NotStatement': {
      const inner = matcherOf(body.Statement, `${at}.Statement`, now);
      return (req) => !inner(req);
    }
    case 'AndStatement':
    case 'OrStatement': {
      if (!Array.isArray(body.Statements) || body.Statements.length < 2)
        throw new UnservedWebAclError(`${at}.Statements`, 'WAF requires at least two statements');
      const parts = body.Statements.map((s, i) => matcherOf(s, `${at}.Statements[${i}]`, now));
      return kind === 'AndStatement' ? (req) => parts.every((m) => m(req)) : (req) => parts.some((m) => m(req));
    }
    default:
      throw new UnservedWebAclError(at, 'this statement is not served');
  }
}

function blockReply(block: unknown, bodies: Record<string, unknown>, where: string): Reply {
  if (!isPlainObject(block)) throw new UnservedWebAclError(where, 'not a Block action');
  if (block.CustomResponse === undefined) return DEFAULT_BLOCK;
  const custom = block.CustomResponse;
  if (!isPlainObject(custom)) throw new UnservedWebAclError(`${where}.CustomResponse`, 'not a custom response');
  const status = Number(custom.ResponseCode);
  if (!Number.isInteger(status) || status < 200 || status > 599)
    throw new UnservedWebAclError(`${where}.CustomResponse.ResponseCode`, `${String(custom.ResponseCode)} is not a status`);
  const headers: Array<[string, string]> = [];
  let body = Buffer.alloc(0);
  if (custom.CustomResponseBodyKey !== undefined) {
    const key = String(custom.CustomResponseBodyKey);
    const b = bodies[key];
    if (!isPlainObject(b))
      throw new UnservedWebAclError(`${where}.CustomResponse.CustomResponseBodyKey`, `the ACL has no CustomResponseBodies.${key}`);
    const type = CONTENT_TYPES[String(b.ContentType)];
    if (!type) throw new UnservedWebAclError(`CustomResponseBodies.${key}.ContentType`, `${String(b.ContentType)} is unknown`);
    headers.push(['Content-Type', type]);
    body = Buffer.from(String(b.Content));
  }
  // Sent as named: WAF prefixes x-amzn-waf- only to headers it inserts into a request it lets through.
  for (const h of Array.isArray(custom.ResponseHeaders) ? custom.ResponseHeaders.filter(isPlainObject) : [])
    headers.push([String(h.Name), String(h.Value)]);
  return { status, headers, body };
}

/** A rule's or the default action: exactly one of Block, Allow, Count (the default: Block or Allow). */
function verdictOf(action: unknown, bodies: Record<string, unknown>, where: string, allowed: readonly string[]): Verdict {
  const keys = isPlainObject(action) ? Object.keys(action) : [];
  const [kind] = keys;
  if (keys.length !== 1 || kind === undefined || !allowed.includes(kind)) {
    throw new UnservedWebAclError(
      where,
      `${keys.join(', ') || 'no action'} is not served (${allowed.join(', ')} are; CAPTCHA, Challenge and rule groups are not)`,
    );
  }
  const body = (action as Record<string, unknown>)[kind];
  if (kind === 'Block') return { kind: 'block', reply: blockReply(body, bodies, `${where}.Block`) };
  // Headers WAF would insert into the request for the API: the functions would see them.
  if (isPlainObject(body) && body.CustomRequestHandling !== undefined)
    throw new UnservedWebAclError(`${where}.${kind}.CustomRequestHandling`, 'inserting request headers is not served');
  return kind === 'Allow' ? { kind: 'allow' } : { kind: 'count' };
}

/**
 * The firewall of one web ACL, from its resolved Properties (`where` names them in errors):
 * every rule is checked now, so an ACL this host cannot serve fails here, not per request.
 */
export function webAclFirewall(props: Record<string, unknown>, where: string, now: () => number = Date.now): Firewall {
  const bodies = isPlainObject(props.CustomResponseBodies) ? props.CustomResponseBodies : {};
  if (props.Rules !== undefined && !Array.isArray(props.Rules)) throw new UnservedWebAclError(`${where}.Rules`, 'not a list');
  const rules = ((props.Rules as unknown[] | undefined) ?? [])
    .map((rule, i) => {
      const at = `${where}.Rules[${i}]`;
      if (!isPlainObject(rule)) throw new UnservedWebAclError(at, 'not a rule');
      const priority = Number(rule.Priority);
      if (!Number.isInteger(priority) || priority < 0)
        throw new UnservedWebAclError(`${at}.Priority`, `${String(rule.Priority)} is not a priority`);
      const group = isPlainObject(rule.Statement) && rule.Statement.ManagedRuleGroupStatement !== undefined;
      if (group !== (rule.OverrideAction !== undefined) || (group && rule.Action !== undefined)) {
        throw new UnservedWebAclError(at, 'a rule group statement takes an OverrideAction and no Action; any other statement an Action');
      }
      // A group's own rules decide; the ones accepted here match nothing, whatever the override.
      const verdict: Verdict = group ? { kind: 'count' } : verdictOf(rule.Action, bodies, `${at}.Action`, ['Block', 'Allow', 'Count']);
      return { priority, matches: matcherOf(rule.Statement, `${at}.Statement`, now), verdict };
    })
    .sort((a, b) => a.priority - b.priority);
  const fallback = verdictOf(props.DefaultAction, bodies, `${where}.DefaultAction`, ['Block', 'Allow']);
  return (req) => {
    for (const rule of rules) {
      // Every rule reached is evaluated, a Count's too: a rate-based rule counts what it sees.
      if (!rule.matches(req) || rule.verdict.kind === 'count') continue;
      return rule.verdict.kind === 'block' ? rule.verdict.reply : undefined;
    }
    return fallback.kind === 'block' ? fallback.reply : undefined;
  };
}

/**
 * The firewall in front of the stage `stageArn`: the web ACL that the stack's
 * AWS::WAFv2::WebACLAssociation for that ARN names, or undefined when no association names the
 * stage (a web ACL no association names guards nothing).
 */
export function firewallFromTemplate(stack: ResolvedStack, stageArn: string): Firewall | undefined {
  const resources = Object.entries(stack.stack.template.Resources);
  const associations = resources.filter(
    ([id, r]) =>
      r.Type === 'AWS::WAFv2::WebACLAssociation' &&
      stack.resolveString(r.Properties?.ResourceArn, `${stack.stack.id}.Resources.${id}.Properties.ResourceArn`) === stageArn,
  );
  const [association, second] = associations;
  if (!association) return undefined;
  // AWS associates at most one web ACL with a resource; the second association fails to create.
  if (second)
    throw new UnservedWebAclError(
      `${stack.stack.id}.Resources.${second[0]}`,
      `a second web ACL association for ${stageArn} (the first is ${association[0]})`,
    );
  const [assocId, assoc] = association;
  const aclArn = stack.resolveString(assoc.Properties?.WebACLArn, `${stack.stack.id}.Resources.${assocId}.Properties.WebACLArn`);
  const acl = resources.find(([id, r]) => r.Type === 'AWS::WAFv2::WebACL' && stack.physical[id]?.attributes.Arn === aclArn);
  if (!acl)
    throw new UnservedWebAclError(
      `${stack.stack.id}.Resources.${assocId}.Properties.WebACLArn`,
      `${aclArn} is not a web ACL of this template`,
    );
  const [aclId, aclResource] = acl;
  const where = `${stack.stack.id}.Resources.${aclId}.Properties`;
  const props = stack.resolve(aclResource.Properties ?? {}, where);
  if (!isPlainObject(props)) throw new UnservedWebAclError(where, 'not an object');
  if (props.Scope !== 'REGIONAL')
    throw new UnservedWebAclError(`${where}.Scope`, `${String(props.Scope)}: an API Gateway stage takes a REGIONAL web ACL`);
  return webAclFirewall(props, where);
}
