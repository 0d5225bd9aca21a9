/** Resume URL tokens (functions/core/resume-token.ts): bound to one execution and node, unforgeable, fuzzed. */
import fc from 'fast-check';
import {
  MAX_RESUME_TOKEN_CHARS,
  resumeKey,
  resumeUrlOf,
  signResumeToken,
  tokenOfResumeUrl,
  verifyResumeToken,
} from '../../../functions/core/resume-token';

const KEY = resumeKey(Buffer.alloc(32, 7));
const OTHER = resumeKey(Buffer.alloc(32, 8));
const EXECUTION = '0b6e3c1a-93a4-4c51-8f4e-7a1d2c3b4a5f';
const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.';

describe('resume tokens', () => {
  it('round-trip the execution and node they are bound to', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/), (execution_id, node_id) => {
        expect(verifyResumeToken(signResumeToken({ execution_id, node_id }, KEY), KEY)).toEqual({ execution_id, node_id });
      }),
    );
  });

  it('are the same each time they are derived, and differ by execution, node and key', () => {
    const a = signResumeToken({ execution_id: EXECUTION, node_id: 'approval' }, KEY);
    expect(signResumeToken({ execution_id: EXECUTION, node_id: 'approval' }, KEY)).toBe(a);
    const tagOf = (t: string) => t.split('.')[3];
    expect(tagOf(signResumeToken({ execution_id: EXECUTION, node_id: 'other' }, KEY))).not.toBe(tagOf(a));
    expect(tagOf(signResumeToken({ execution_id: '1b6e3c1a-93a4-4c51-8f4e-7a1d2c3b4a5f', node_id: 'approval' }, KEY))).not.toBe(tagOf(a));
    expect(signResumeToken({ execution_id: EXECUTION, node_id: 'approval' }, OTHER)).not.toBe(a);
  });

  it('refuse a token moved to another node or execution, of another key, altered, padded or too long', () => {
    const t = signResumeToken({ execution_id: EXECUTION, node_id: 'approval' }, KEY);
    const [v, e, , sig] = t.split('.');
    expect(verifyResumeToken(`${v}.${e}.other.${sig}`, KEY)).toBeNull();
    expect(verifyResumeToken(`${v}.1b6e3c1a-93a4-4c51-8f4e-7a1d2c3b4a5f.approval.${sig}`, KEY)).toBeNull();
    expect(verifyResumeToken(t, OTHER)).toBeNull();
    expect(verifyResumeToken(`${t}=`, KEY)).toBeNull();
    expect(verifyResumeToken(`w2${t.slice(2)}`, KEY)).toBeNull();
    expect(verifyResumeToken(`${t}.x`, KEY)).toBeNull();
    expect(verifyResumeToken('x'.repeat(MAX_RESUME_TOKEN_CHARS + 1), KEY)).toBeNull();
    // The last character of a 32-byte tag carries 4 bits: another spelling of the same bits is refused.
    const last = t.at(-1) ?? 'A';
    const twin = String.fromCharCode(last.charCodeAt(0) ^ 1);
    expect(verifyResumeToken(`${t.slice(0, -1)}${twin}`, KEY)).toBeNull();
  });

  it('never throw and never accept what they did not issue (fuzzed)', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...TOKEN_ALPHABET), maxLength: 300 }), (s) => {
        expect(verifyResumeToken(s, KEY)).toBeNull();
      }),
    );
  });

  it('need a 32-byte master key', () => {
    expect(() => resumeKey(Buffer.alloc(0))).toThrow('32 bytes');
  });

  it('sit at the end of their URL', () => {
    const t = signResumeToken({ execution_id: EXECUTION, node_id: 'approval' }, KEY);
    const url = resumeUrlOf('https://api.example/prod/', t);
    expect(url).toBe(`https://api.example/prod/v1/resume/${t}`);
    expect(tokenOfResumeUrl(url)).toBe(t);
  });
});
