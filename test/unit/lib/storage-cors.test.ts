import {
  fromS3CorsRule,
  toS3CorsRule,
  uploadCorsRule,
  UPLOAD_CORS_RULE_ID,
  withoutUploadRule,
  withUploadRule,
  type BucketCorsRule,
} from '../../../lib/storage-cors';

const someoneElses: BucketCorsRule = {
  id: 'their-rule',
  allowedMethods: ['GET'],
  allowedOrigins: ['https://elsewhere.example'],
  allowedHeaders: [],
  exposedHeaders: [],
  maxAgeSeconds: 60,
};
const unnamed: BucketCorsRule = {
  allowedMethods: ['HEAD'],
  allowedOrigins: ['*'],
  allowedHeaders: [],
  exposedHeaders: [],
  maxAgeSeconds: 0,
};

describe('the upload rule in a bucket CORS configuration', () => {
  it('puts the rule in beside the rules others set, one origin list, no duplicates', () => {
    // Act
    const rules = withUploadRule([someoneElses, unnamed], ['https://a.example', 'https://b.example', 'https://a.example']);
    // Assess
    expect(rules).toEqual([someoneElses, unnamed, uploadCorsRule('https://a.example', 'https://b.example')]);
    expect(rules[2]).toMatchObject({ id: UPLOAD_CORS_RULE_ID, allowedMethods: ['PUT'], allowedHeaders: ['content-type'] });
  });

  it('replaces an earlier upload rule instead of adding a second (an update, or the same event twice)', () => {
    // Prepare
    const before = withUploadRule([someoneElses], ['https://old.example']);
    // Act
    const after = withUploadRule(before, ['https://new.example']);
    // Assess
    expect(after).toEqual([someoneElses, uploadCorsRule('https://new.example')]);
    expect(withUploadRule(after, ['https://new.example'])).toEqual(after);
  });

  it('takes only the upload rule out', () => {
    // Act / Assess
    expect(withoutUploadRule(withUploadRule([someoneElses, unnamed], ['https://a.example']))).toEqual([someoneElses, unnamed]);
    expect(withoutUploadRule([uploadCorsRule('https://a.example')])).toEqual([]);
  });

  it("round-trips through S3's API shape", () => {
    // Act / Assess
    for (const r of [someoneElses, uploadCorsRule('https://a.example')]) expect(fromS3CorsRule(toS3CorsRule(r))).toEqual(r);
  });
});
