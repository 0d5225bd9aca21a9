import type { CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { PAYLOAD_GUARD_CONTENT_LENGTH, payloadTooLargeBody } from '../../lib/stacks/service-stack';
import { buildTestApp, refOf, resourcesOf } from './stack-fixture';

describe('the payload guard (bodies Lambda could not take)', () => {
  const built = buildTestApp();
  const svc = resourcesOf(Template.fromStack(built.service));
  const acls = Object.entries(svc).filter(([, r]) => r.Type === 'AWS::WAFv2::WebACL');

  it('answers 413 with the handlers body to a Content-Length of 1,000,000 bytes or more, on the stage', () => {
    // Prepare
    const [aclId, acl] = acls[0] ?? [];
    const rules = acl?.Properties?.Rules as { Statement: unknown; Action: unknown }[];
    const association = Object.values(svc).find((r) => r.Type === 'AWS::WAFv2::WebACLAssociation');
    const stageId = built.service.getLogicalId(built.service.api.deploymentStage.node.defaultChild as CfnElement);
    // Assess
    expect(acls).toHaveLength(1);
    expect(acl?.Properties?.Scope).toBe('REGIONAL');
    expect(acl?.Properties?.DefaultAction).toEqual({ Allow: {} });
    expect(rules[0]).toEqual(
      expect.objectContaining({
        Action: { Block: { CustomResponse: { ResponseCode: 413, CustomResponseBodyKey: 'PayloadTooLarge' } } },
        Statement: {
          RegexMatchStatement: {
            FieldToMatch: { SingleHeader: { Name: 'content-length' } },
            RegexString: PAYLOAD_GUARD_CONTENT_LENGTH,
            TextTransformations: [{ Priority: 0, Type: 'NONE' }],
          },
        },
      }),
    );
    expect(
      JSON.parse(
        String((acl?.Properties?.CustomResponseBodies as Record<string, { Content: string } | undefined>).PayloadTooLarge?.Content),
      ),
    ).toEqual(payloadTooLargeBody());
    expect(refOf(association?.Properties?.WebACLArn)).toBe(aclId);
    expect(JSON.stringify(association?.Properties?.ResourceArn)).toContain(stageId);
  });

  it('matches exactly the lengths at or above 5,000,000 bytes, the functions answering 413 below it already', () => {
    // Prepare
    const re = new RegExp(PAYLOAD_GUARD_CONTENT_LENGTH);
    // Assess
    for (const n of [0, 262_144, 999_999, 1_000_000, 4_194_304, 4_999_999]) expect(re.test(String(n))).toBe(false);
    for (const n of [5_000_000, 6_291_456, 9_999_999, 10_485_760, 99_000_000]) expect(re.test(String(n))).toBe(true);
    expect(payloadTooLargeBody().detail).toMatch(/262144 bytes/);
    expect(payloadTooLargeBody().detail).toMatch(/4194304 bytes .*uploads/);
  });

  it('is left out with payloadGuard=false', () => {
    // Act
    const off = buildTestApp({ payloadGuard: 'false' });
    // Assess
    const types = Object.values(resourcesOf(Template.fromStack(off.service))).map((r) => r.Type);
    expect(types.filter((t) => t.startsWith('AWS::WAFv2::'))).toEqual([]);
  });
});
