/**
 * The web form's upload rule on AWS: the service stack's custom resource puts it into the
 * objects bucket's CORS configuration for the API's own execute-api origin (and the public
 * URL's), and its function may touch that one bucket's CORS configuration and nothing else.
 */
import { Template } from 'aws-cdk-lib/assertions';
import type { CfnElement } from 'aws-cdk-lib';
import { asArray, buildTestApp, crossStackRef, refOf, resourcesOf, type Resources } from './stack-fixture';
import { isPlainObject } from '../../functions/core/values';

// Prepare: one app without a public URL, one with.
const plain = buildTestApp();
const custom = buildTestApp({ publicUrl: 'https://pipes.example.org/v1base' });

const customResourceOf = (r: Resources) => Object.values(r).find((x) => x.Type === 'Custom::PipegateUploadCors');

/** A template value as text: literals, `<Ref>` for references, `stateful:<id>` across stacks, joins flattened. */
function text(x: unknown, stateful: Template): string {
  if (typeof x === 'string') return x;
  const remote = crossStackRef(x, stateful);
  if (remote) return `stateful:${remote}`;
  if (isPlainObject(x) && typeof x.Ref === 'string') return `<${x.Ref}>`;
  if (isPlainObject(x) && Array.isArray(x['Fn::Join']))
    return asArray((x['Fn::Join'] as unknown[])[1])
      .map((p) => text(p, stateful))
      .join('');
  return JSON.stringify(x);
}

describe('the upload-cors custom resource', () => {
  const svc = resourcesOf(Template.fromStack(plain.service));
  const stateful = Template.fromStack(plain.stateful);
  const apiId = plain.service.getLogicalId(plain.service.api.node.defaultChild as CfnElement);
  const bucketId = plain.stateful.getLogicalId(plain.stateful.bucket.node.defaultChild as CfnElement);

  it("names the objects bucket and the API's own execute-api origin, and nothing else without a public URL", () => {
    // Act
    const props = customResourceOf(svc)?.Properties ?? {};
    // Assess
    expect(text(props.Bucket, stateful)).toBe(`stateful:${bucketId}`);
    expect(asArray(props.Origins).map((o) => text(o, stateful))).toEqual([
      `https://<${apiId}>.execute-api.${plain.service.region}.<AWS::URLSuffix>`,
    ]);
  });

  it("adds the public URL's origin (no path) when there is one", () => {
    // Act
    const t = Template.fromStack(custom.service);
    const props = customResourceOf(resourcesOf(t))?.Properties ?? {};
    // Assess
    expect(asArray(props.Origins).map((o) => text(o, Template.fromStack(custom.stateful)))).toEqual([
      expect.stringMatching(/^https:\/\/<Api[0-9A-F]+>\.execute-api\./),
      'https://pipes.example.org',
    ]);
  });

  it("is served by a function whose role may read and write that one bucket's CORS configuration, and nothing else of S3", () => {
    // Prepare
    const token = customResourceOf(svc)?.Properties?.ServiceToken;
    const fnId = refOf(token) ?? '';
    const roleId = refOf(svc[fnId]?.Properties?.Role) ?? '';
    // Act
    const statements = Object.values(svc)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && asArray(r.Properties?.Roles).map(refOf).includes(roleId))
      .flatMap(
        (r) =>
          (r.Properties?.PolicyDocument as { Statement: { Action: unknown; Resource: unknown; Effect: string; Condition?: unknown }[] })
            .Statement,
      );
    const s3 = statements.filter((s) => asArray(s.Action).some((a) => String(a).startsWith('s3:')));
    // Assess
    expect(svc[fnId]?.Type).toBe('AWS::Lambda::Function');
    expect(s3).toHaveLength(1);
    expect(s3[0]?.Effect).toBe('Allow');
    expect(asArray(s3[0]?.Action).map(String).sort()).toEqual(['s3:GetBucketCORS', 's3:PutBucketCORS']);
    expect(asArray(s3[0]?.Resource).map((r) => text(r, stateful))).toEqual([`stateful:${bucketId}`]);
    expect(s3[0]?.Condition).toBeUndefined();
    // Beyond S3: its own log group and its traces, as every function.
    const others = statements.filter((s) => !s3.includes(s)).flatMap((s) => asArray(s.Action).map(String));
    expect([...new Set(others)].sort()).toEqual([
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'xray:PutTelemetryRecords',
      'xray:PutTraceSegments',
    ]);
  });

  it("tells the form page the API's own URL, so it knows the page is served at an origin the rule names", () => {
    // Act
    const page = Object.values(svc).find((r) => r.Type === 'AWS::Lambda::Function' && r.Properties?.Description === 'pipegate form-page');
    const url = (page?.Properties?.Environment as { Variables: Record<string, unknown> }).Variables.PIPEGATE_API_URL;
    // Assess
    expect(text(url, stateful)).toBe(`https://<${apiId}>.execute-api.${plain.service.region}.<AWS::URLSuffix>/api`);
  });
});
