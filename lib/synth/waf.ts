/**
 * The AWS WAF web ACL a template associates with the API's stage, evaluated in front of the
 * local gateway as WAF evaluates it in front of API Gateway: rules in priority order, the first
 * matching Block or Allow ends the evaluation, a matching Count goes on, then the default action.
 * Only what can be decided from the request's headers before its body is read is served:
 * RegexMatchStatement and SizeConstraintStatement on one header (SingleHeader) with the text
 * transformations NONE and LOWERCASE, combined with And, Or and Not; Block (WAF's 403, or a
 * custom response), Allow and Count without custom request handling. Anything else stops the
 * start with the template path it found it at, rather than letting through requests WAF would
 * block (or blocking ones it would let through).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isPlainObject } from '../../functions/core/values';
import type { Reply } from '../local/gateway/replies';
import type { ResolvedStack } from './physical';

/** What a rule may look at: the request before its body. */
export interface FirewallRequest {
  headers: IncomingHttpHeaders;
}

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
const DEFAULT_BLOCK: Reply = { status: 403, headers: [['Content-Type', 'text/html']], body: Buffer.from('<html><body><h1>403 Forbidden</h1></body></html>') };

const CONTENT_TYPES: Readonly<Record<string, string>> = { APPLICATION_JSON: 'application/json', TEXT_HTML: 'text/html', TEXT_PLAIN: 'text/plain' };

function headerField(field: unknown, where: string): (req: FirewallRequest) => string | undefined {
  if (!isPlainObject(field) || !isPlainObject(field.SingleHeader) || typeof field.SingleHeader.Name !== 'string' || Object.keys(field).length !== 1) {
    throw new UnservedWebAclError(`${where}.FieldToMatch`, `only SingleHeader is served (found ${JSON.stringify(field)})`);
  }
  const name = field.SingleHeader.Name.toLowerCase();
  return (req) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v.join(', ') : v;
  };
}

function transformed(transformations: unknown, where: string): (s: string) => string {
  if (!Array.isArray(transformations) || transformations.length === 0) throw new UnservedWebAclError(`${where}.TextTransformations`, 'missing (WAF requires at least NONE)');
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

function matcherOf(statement: unknown, where: string): Matcher {
  if (!isPlainObject(statement) || Object.keys(statement).length !== 1) throw new UnservedWebAclError(where, 'not a statement (one key expected)');
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
        throw new UnservedWebAclError(`${at}.RegexString`, `not a regular expression this host can run (${err instanceof Error ? err.message : String(err)})`);
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
    case 'NotStatement': {
      const inner = matcherOf(body.Statement, `${at}.Statement`);
      return (req) => !inner(req);
    }
    case 'AndStatement':
    case 'OrStatement': {
      if (!Array.isArray(body.Statements) || body.Statements.length < 2) throw new UnservedWebAclError(`${at}.Statements`, 'WAF requires at least two statements');
      const parts = body.Statements.map((s, i) => matcherOf(s, `${at}.Statements[${i}]`));
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
  if (!Number.isInteger(status) || status < 200 || status > 599) throw new UnservedWebAclError(`${where}.CustomResponse.ResponseCode`, `${String(custom.ResponseCode)} is not a status`);
  const headers: Array<[string, string]> = [];
  let body = Buffer.alloc(0);
  if (custom.CustomResponseBodyKey !== undefined) {
    const key = String(custom.CustomResponseBodyKey);
    const b = bodies[key];
    if (!isPlainObject(b)) throw new UnservedWebAclError(`${where}.CustomResponse.CustomResponseBodyKey`, `the ACL has no CustomResponseBodies.${key}`);
    const type = CONTENT_TYPES[String(b.ContentType)];
    if (!type) throw new UnservedWebAclError(`CustomResponseBodies.${key}.ContentType`, `${String(b.ContentType)} is unknown`);
    headers.push(['Content-Type', type]);
    body = Buffer.from(String(b.Content));
  }
  for (const h of Array.isArray(custom.ResponseHeaders) ? custom.ResponseHeaders.filter(isPlainObject) : []) {
    // WAF prefixes the names of custom response headers with x-amzn-waf-.
    headers.push([`x-amzn-waf-${String(h.Name)}`, String(h.Value)]);
  }
  return { status, headers, body };
}

/** A rule's or the default action: exactly one of Block, Allow, Count (the default: Block or Allow). */
function verdictOf(action: unknown, bodies: Record<string, unknown>, where: string, allowed: readonly string[]): Verdict {
  const keys = isPlainObject(action) ? Object.keys(action) : [];
  const [kind] = keys;
  if (keys.length !== 1 || kind === undefined || !allowed.includes(kind)) {
    throw new UnservedWebAclError(where, `${keys.join(', ') || 'no action'} is not served (${allowed.join(', ')} are; CAPTCHA, Challenge and rule groups are not)`);
  }
  const body = (action as Record<string, unknown>)[kind];
  if (kind === 'Block') return { kind: 'block', reply: blockReply(body, bodies, `${where}.Block`) };
  // Headers WAF would insert into the request for the API: the functions would see them.
  if (isPlainObject(body) && body.CustomRequestHandling !== undefined) throw new UnservedWebAclError(`${where}.${kind}.CustomRequestHandling`, 'inserting request headers is not served');
  return kind === 'Allow' ? { kind: 'allow' } : { kind: 'count' };
}

/**
 * The firewall of one web ACL, from its resolved Properties (`where` names them in errors):
 * every rule is checked now, so an ACL this host cannot serve fails here, not per request.
 */
export function webAclFirewall(props: Record<string, unknown>, where: string): Firewall {
  const bodies = isPlainObject(props.CustomResponseBodies) ? props.CustomResponseBodies : {};
  if (props.Rules !== undefined && !Array.isArray(props.Rules)) throw new UnservedWebAclError(`${where}.Rules`, 'not a list');
  const rules = ((props.Rules as unknown[] | undefined) ?? [])
    .map((rule, i) => {
      const at = `${where}.Rules[${i}]`;
      if (!isPlainObject(rule)) throw new UnservedWebAclError(at, 'not a rule');
      if (rule.OverrideAction !== undefined) throw new UnservedWebAclError(`${at}.OverrideAction`, 'rule group references are not served');
      const priority = Number(rule.Priority);
      if (!Number.isInteger(priority) || priority < 0) throw new UnservedWebAclError(`${at}.Priority`, `${String(rule.Priority)} is not a priority`);
      return { priority, matches: matcherOf(rule.Statement, `${at}.Statement`), verdict: verdictOf(rule.Action, bodies, `${at}.Action`, ['Block', 'Allow', 'Count']) };
    })
    .sort((a, b) => a.priority - b.priority);
  const fallback = verdictOf(props.DefaultAction, bodies, `${where}.DefaultAction`, ['Block', 'Allow']);
  return (req) => {
    for (const rule of rules) {
      if (rule.verdict.kind === 'count' || !rule.matches(req)) continue;
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
    ([id, r]) => r.Type === 'AWS::WAFv2::WebACLAssociation' && stack.resolveString(r.Properties?.ResourceArn, `${stack.stack.id}.Resources.${id}.Properties.ResourceArn`) === stageArn,
  );
  const [association, second] = associations;
  if (!association) return undefined;
  // AWS associates at most one web ACL with a resource; the second association fails to create.
  if (second) throw new UnservedWebAclError(`${stack.stack.id}.Resources.${second[0]}`, `a second web ACL association for ${stageArn} (the first is ${association[0]})`);
  const [assocId, assoc] = association;
  const aclArn = stack.resolveString(assoc.Properties?.WebACLArn, `${stack.stack.id}.Resources.${assocId}.Properties.WebACLArn`);
  const acl = resources.find(([id, r]) => r.Type === 'AWS::WAFv2::WebACL' && stack.physical[id]?.attributes.Arn === aclArn);
  if (!acl) throw new UnservedWebAclError(`${stack.stack.id}.Resources.${assocId}.Properties.WebACLArn`, `${aclArn} is not a web ACL of this template`);
  const [aclId, aclResource] = acl;
  const where = `${stack.stack.id}.Resources.${aclId}.Properties`;
  const props = stack.resolve(aclResource.Properties ?? {}, where);
  if (!isPlainObject(props)) throw new UnservedWebAclError(where, 'not an object');
  if (props.Scope !== 'REGIONAL') throw new UnservedWebAclError(`${where}.Scope`, `${String(props.Scope)}: an API Gateway stage takes a REGIONAL web ACL`);
  return webAclFirewall(props, where);
}
