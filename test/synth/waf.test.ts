import type { Assembly, Template } from '../../lib/synth/assembly';
import { resolveAssembly } from '../../lib/synth/physical';
import { firewallFromTemplate, UnservedWebAclError, webAclFirewall, type Firewall } from '../../lib/synth/waf';
import { localEnv } from './synth-helpers';

const headerRule = (name: string, priority: number, action: Record<string, unknown>, header: string, regex: string) => ({
  Name: name,
  Priority: priority,
  Action: action,
  Statement: {
    RegexMatchStatement: {
      FieldToMatch: { SingleHeader: { Name: header } },
      RegexString: regex,
      TextTransformations: [{ Priority: 0, Type: 'NONE' }],
    },
  },
  VisibilityConfig: { CloudWatchMetricsEnabled: false, MetricName: name, SampledRequestsEnabled: false },
});

const teapot = {
  Block: { CustomResponse: { ResponseCode: 418, CustomResponseBodyKey: 'Tea', ResponseHeaders: [{ Name: 'reason', Value: 'tea' }] } },
};
const bodies = { Tea: { ContentType: 'APPLICATION_JSON', Content: '{"error":"tea"}' } };

/** The status a request with these headers gets, or `pass`. */
const verdict = (fw: Firewall, headers: Record<string, string>): number | 'pass' => fw({ headers })?.status ?? 'pass';

describe('the web ACL evaluator', () => {
  it('evaluates rules by priority, not by their order in the list: the first matching Allow or Block decides', () => {
    // Prepare: listed Block first, but the Allow has the lower priority.
    const fw = webAclFirewall(
      {
        DefaultAction: { Allow: {} },
        CustomResponseBodies: bodies,
        Rules: [
          headerRule('block-big', 5, teapot, 'content-length', '^[0-9]{4,}$'),
          headerRule('allow-trusted', 1, { Allow: {} }, 'x-trusted', '^yes$'),
        ],
      },
      'Acl',
    );

    // Act / Assess
    expect(verdict(fw, { 'content-length': '5000', 'x-trusted': 'yes' })).toBe('pass');
    expect(verdict(fw, { 'content-length': '5000' })).toBe(418);
    expect(verdict(fw, { 'content-length': '999' })).toBe('pass');
  });

  it('goes on past a matching Count rule to the next rule and to the default action', () => {
    // Prepare
    const fw = webAclFirewall(
      {
        DefaultAction: { Block: {} },
        CustomResponseBodies: bodies,
        Rules: [
          headerRule('count-all', 0, { Count: {} }, 'x-any', '.*'),
          headerRule('allow-json', 1, { Allow: {} }, 'content-type', '^application/json'),
        ],
      },
      'Acl',
    );

    // Act
    const defaulted = fw({ headers: { 'x-any': 'a', 'content-type': 'text/plain' } });

    // Assess: the Count matched and did not end it; the default Block is WAF's own 403.
    expect(verdict(fw, { 'x-any': 'a', 'content-type': 'application/json' })).toBe('pass');
    expect(defaulted?.status).toBe(403);
    expect(defaulted?.body.toString()).toMatch(/403 Forbidden/);
  });

  it('answers a Block with its custom response: code, body by key with its type, headers as named', () => {
    // Prepare
    const fw = webAclFirewall({ DefaultAction: teapot, CustomResponseBodies: bodies, Rules: [] }, 'Acl');

    // Act
    const r = fw({ headers: {} });

    // Assess
    expect(r?.status).toBe(418);
    expect(r?.headers).toEqual([
      ['Content-Type', 'application/json'],
      ['reason', 'tea'],
    ]);
    expect(JSON.parse(r?.body.toString() ?? '')).toEqual({ error: 'tea' });
  });

  it('compares sizes, combines with And, Or and Not, lowercases, and matches nothing on a missing header', () => {
    // Prepare: block a body of 7 digits or more unless the request says it is a test (any case).
    const size = {
      SizeConstraintStatement: {
        FieldToMatch: { SingleHeader: { Name: 'Content-Length' } },
        ComparisonOperator: 'GE',
        Size: 7,
        TextTransformations: [{ Priority: 0, Type: 'NONE' }],
      },
    };
    const isTest = {
      RegexMatchStatement: {
        FieldToMatch: { SingleHeader: { Name: 'x-mode' } },
        RegexString: '^test$',
        TextTransformations: [{ Priority: 0, Type: 'LOWERCASE' }],
      },
    };
    const fw = webAclFirewall(
      {
        DefaultAction: { Allow: {} },
        Rules: [
          {
            Name: 'r',
            Priority: 0,
            Action: { Block: {} },
            Statement: { AndStatement: { Statements: [size, { NotStatement: { Statement: isTest } }] } },
          },
        ],
      },
      'Acl',
    );

    // Act / Assess
    expect(verdict(fw, { 'content-length': '1000000' })).toBe(403);
    expect(verdict(fw, { 'content-length': '999999' })).toBe('pass');
    expect(verdict(fw, { 'content-length': '1000000', 'x-mode': 'TEST' })).toBe('pass');
    expect(verdict(fw, { 'transfer-encoding': 'chunked' })).toBe('pass');
  });

  it.each([
    [
      'a statement it does not serve',
      {
        DefaultAction: { Allow: {} },
        Rules: [{ Priority: 0, Action: { Block: {} }, Statement: { GeoMatchStatement: { CountryCodes: ['XX'] } } }],
      },
      /Rules\[0\]\.Statement\.GeoMatchStatement/,
    ],
    [
      'a body field',
      {
        DefaultAction: { Allow: {} },
        Rules: [
          {
            Priority: 0,
            Action: { Block: {} },
            Statement: {
              SizeConstraintStatement: {
                FieldToMatch: { Body: {} },
                ComparisonOperator: 'GT',
                Size: 1,
                TextTransformations: [{ Priority: 0, Type: 'NONE' }],
              },
            },
          },
        ],
      },
      /FieldToMatch: only SingleHeader/,
    ],
    [
      'a transformation',
      {
        DefaultAction: { Allow: {} },
        Rules: [headerRule('r', 0, { Block: {} }, 'x', 'a')].map((r) => ({
          ...r,
          Statement: {
            RegexMatchStatement: { ...r.Statement.RegexMatchStatement, TextTransformations: [{ Priority: 0, Type: 'URL_DECODE' }] },
          },
        })),
      },
      /URL_DECODE is not served/,
    ],
    [
      'a CAPTCHA',
      { DefaultAction: { Allow: {} }, Rules: [headerRule('r', 0, { Captcha: {} }, 'x', 'a')] },
      /Rules\[0\]\.Action: Captcha is not served/,
    ],
    [
      'a rule group it does not accept',
      {
        DefaultAction: { Allow: {} },
        Rules: [
          {
            Priority: 0,
            OverrideAction: { None: {} },
            Statement: { ManagedRuleGroupStatement: { VendorName: 'AWS', Name: 'AWSManagedRulesCommonRuleSet' } },
          },
        ],
      },
      /AWSManagedRulesCommonRuleSet is not served/,
    ],
    [
      'an accepted rule group with an Action',
      {
        DefaultAction: { Allow: {} },
        Rules: [
          {
            Priority: 0,
            Action: { Block: {} },
            Statement: { ManagedRuleGroupStatement: { VendorName: 'AWS', Name: 'AWSManagedRulesKnownBadInputsRuleSet' } },
          },
        ],
      },
      /OverrideAction and no Action/,
    ],
    [
      'a rate rule keyed on a forwarded address',
      {
        DefaultAction: { Allow: {} },
        Rules: [{ Priority: 0, Action: { Block: {} }, Statement: { RateBasedStatement: { Limit: 10, AggregateKeyType: 'FORWARDED_IP' } } }],
      },
      /FORWARDED_IP is not served/,
    ],
    [
      'a rate window WAF does not take',
      {
        DefaultAction: { Allow: {} },
        Rules: [
          {
            Priority: 0,
            Action: { Block: {} },
            Statement: { RateBasedStatement: { Limit: 10, AggregateKeyType: 'IP', EvaluationWindowSec: 30 } },
          },
        ],
      },
      /EvaluationWindowSec/,
    ],
    [
      'inserted request headers',
      { DefaultAction: { Allow: { CustomRequestHandling: { InsertHeaders: [{ Name: 'a', Value: 'b' }] } } }, Rules: [] },
      /DefaultAction\.Allow\.CustomRequestHandling/,
    ],
    [
      'a missing response body',
      { DefaultAction: { Block: { CustomResponse: { ResponseCode: 413, CustomResponseBodyKey: 'Nope' } } }, Rules: [] },
      /no CustomResponseBodies\.Nope/,
    ],
  ])('refuses an ACL with %s, naming where', (_, props, message) => {
    // Act / Assess
    expect(() => webAclFirewall(props, 'Acl')).toThrow(UnservedWebAclError);
    expect(() => webAclFirewall(props, 'Acl')).toThrow(message);
  });
});

describe('rate-based rules', () => {
  const uriContains = (text: string) => ({
    ByteMatchStatement: {
      FieldToMatch: { UriPath: {} },
      PositionalConstraint: 'CONTAINS',
      SearchString: text,
      TextTransformations: [{ Priority: 0, Type: 'NONE' }],
    },
  });
  const rateRule = (name: string, priority: number, limit: number, status: number, scope?: unknown) => ({
    Name: name,
    Priority: priority,
    Action: { Block: { CustomResponse: { ResponseCode: status, ResponseHeaders: [{ Name: 'Retry-After', Value: '60' }] } } },
    Statement: {
      RateBasedStatement: {
        Limit: limit,
        AggregateKeyType: 'IP',
        EvaluationWindowSec: 60,
        ...(scope ? { ScopeDownStatement: scope } : {}),
      },
    },
  });
  const from = (ip: string, url = '/v1/deployments/d') => ({ headers: {}, url, socket: { remoteAddress: ip } });

  it('blocks an address past its limit within the window, counts each address apart, and lets it through once the window has passed', () => {
    // Prepare
    let now = 1_000_000;
    const fw = webAclFirewall({ DefaultAction: { Allow: {} }, Rules: [rateRule('per-address', 1, 10, 429)] }, 'Acl', () => now);

    // Act
    const first = Array.from({ length: 10 }, () => fw(from('203.0.113.1'))?.status ?? 'pass');
    const eleventh = fw(from('203.0.113.1'));
    const other = fw(from('203.0.113.2'));
    now += 60_001;
    const later = fw(from('203.0.113.1'));

    // Assess
    expect(first.every((s) => s === 'pass')).toBe(true);
    expect(eleventh?.status).toBe(429);
    expect(eleventh?.headers).toContainEqual(['Retry-After', '60']);
    expect(other).toBeUndefined();
    expect(later).toBeUndefined();
  });

  it('counts only the paths its scope-down statement matches, against the stricter limit', () => {
    // Prepare: the stack's shape, 20 a minute in all and 10 under /v1/forms/.
    const fw = webAclFirewall(
      { DefaultAction: { Allow: {} }, Rules: [rateRule('all', 1, 20, 429), rateRule('forms', 2, 10, 430, uriContains('/v1/forms/'))] },
      'Acl',
      () => 5,
    );

    // Act
    const forms = Array.from({ length: 11 }, () => fw(from('198.51.100.7', '/api/v1/forms/f1?x=1'))?.status ?? 'pass');
    const elsewhere = Array.from({ length: 9 }, () => fw(from('198.51.100.7'))?.status ?? 'pass');
    const overall = fw(from('198.51.100.7'));

    // Assess: the 11th form request meets the form limit; other paths go on to the overall one.
    expect(forms.slice(0, 10).every((s) => s === 'pass')).toBe(true);
    expect(forms[10]).toBe(430);
    expect(elsewhere.every((s) => s === 'pass')).toBe(true);
    expect(overall?.status).toBe(429);
  });

  it('accepts the AWS managed groups it knows as matching nothing, going on to the next rule', () => {
    // Prepare
    const fw = webAclFirewall(
      {
        DefaultAction: { Allow: {} },
        Rules: [
          {
            Name: 'bad',
            Priority: 0,
            OverrideAction: { None: {} },
            Statement: { ManagedRuleGroupStatement: { VendorName: 'AWS', Name: 'AWSManagedRulesKnownBadInputsRuleSet' } },
          },
          headerRule('teapot', 1, teapot, 'x-tea', '^yes$'),
        ],
        CustomResponseBodies: bodies,
      },
      'Acl',
    );
    // Act / Assess
    expect(verdict(fw, { host: 'localhost' })).toBe('pass');
    expect(verdict(fw, { 'x-tea': 'yes' })).toBe(418);
  });
});

describe('the web ACL of a stage', () => {
  const stageArn = (stage: string) => ({
    'Fn::Join': [
      '',
      ['arn:', { Ref: 'AWS::Partition' }, ':apigateway:', { Ref: 'AWS::Region' }, '::/restapis/', { Ref: 'Api' }, `/stages/${stage}`],
    ],
  });
  const acl = (status: number) => ({
    Type: 'AWS::WAFv2::WebACL',
    Properties: { Scope: 'REGIONAL', DefaultAction: { Block: { CustomResponse: { ResponseCode: status } } }, VisibilityConfig: {} },
  });
  const association = (stage: string, aclId: string) => ({
    Type: 'AWS::WAFv2::WebACLAssociation',
    Properties: { ResourceArn: stageArn(stage), WebACLArn: { 'Fn::GetAtt': [aclId, 'Arn'] } },
  });

  const firewallOf = (resources: Template['Resources'], stage: string): Firewall | undefined => {
    const template: Template = { Resources: { Api: { Type: 'AWS::ApiGateway::RestApi', Properties: {} }, ...resources } };
    const assembly: Assembly = {
      dir: '/nowhere',
      functions: [],
      stacks: [
        {
          id: 'S',
          stackName: 'S',
          account: '123456789012',
          region: 'eu-west-1',
          templateFile: 'S.template.json',
          template,
          dependencies: [],
        },
      ],
    };
    const resolved = resolveAssembly(assembly, localEnv());
    const s = resolved.stack('S');
    return firewallFromTemplate(s, `arn:aws:apigateway:eu-west-1::/restapis/${s.physical.Api?.ref ?? ''}/stages/${stage}`);
  };

  it('is the ACL the association for that stage names, not another ACL of the template', () => {
    // Prepare
    const resources = {
      First: acl(451),
      Second: acl(429),
      ProdAssoc: association('prod', 'Second'),
      DevAssoc: association('dev', 'First'),
    };

    // Act / Assess
    expect(firewallOf(resources, 'prod')?.({ headers: {} })?.status).toBe(429);
    expect(firewallOf(resources, 'dev')?.({ headers: {} })?.status).toBe(451);
  });

  it('is none when no association names the stage, even with an ACL in the template', () => {
    // Act / Assess
    expect(firewallOf({ First: acl(451) }, 'prod')).toBeUndefined();
    expect(firewallOf({ First: acl(451), DevAssoc: association('dev', 'First') }, 'prod')).toBeUndefined();
  });

  it('refuses a stage with two associations, as AWS does', () => {
    // Act / Assess
    expect(() =>
      firewallOf({ First: acl(451), Second: acl(429), A: association('prod', 'First'), B: association('prod', 'Second') }, 'prod'),
    ).toThrow(/second web ACL association/);
  });
});
