import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import {
  canonicalContext,
  isEnvelope,
  openEnvelope,
  ownerSecretContext,
  parseEnvelope,
  sealEnvelope,
} from '../../../functions/core/envelope';

const dataKey = Buffer.alloc(32, 3);
const edk = Buffer.from('an encrypted data key, as KMS returns it');

describe('the owner-secret envelope', () => {
  it('round-trips any value under any context, and opens under no other context', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 300 }),
        fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 8 }), { minKeys: 1, maxKeys: 4 }),
        fc.string({ minLength: 1, maxLength: 8 }),
        (value, context, changed) => {
          const sealed = sealEnvelope(value, dataKey, edk, randomBytes(12), context);
          const envelope = parseEnvelope(sealed);
          expect(isEnvelope(sealed)).toBe(true);
          expect(envelope.encryptedDataKey.equals(edk)).toBe(true);
          expect(openEnvelope(envelope, dataKey, { ...context })).toBe(value);
          const key = Object.keys(context)[0] as string;
          if (context[key] !== changed)
            expect(() => openEnvelope(envelope, dataKey, { ...context, [key]: changed })).toThrow('failed authentication');
        },
      ),
    );
  });

  it('binds the secret name: a value sealed for one name does not open as another', () => {
    // Act
    const sealed = sealEnvelope('sk_live_x', dataKey, edk, randomBytes(12), ownerSecretContext('A_TOKEN'));

    // Assess
    expect(openEnvelope(parseEnvelope(sealed), dataKey, ownerSecretContext('A_TOKEN'))).toBe('sk_live_x');
    expect(() => openEnvelope(parseEnvelope(sealed), dataKey, ownerSecretContext('B_TOKEN'))).toThrow('sealed for another name');
    expect(() => openEnvelope(parseEnvelope(sealed), Buffer.alloc(32, 4), ownerSecretContext('A_TOKEN'))).toThrow('failed authentication');
  });

  it('orders the context canonically (the same context in any key order is the same bytes)', () => {
    expect(canonicalContext({ a: '1', b: '2' }).equals(canonicalContext({ b: '2', a: '1' }))).toBe(true);
    expect(canonicalContext({ a: '1', b: '2' }).equals(canonicalContext({ a: '12' }))).toBe(false);
  });

  it('refuses anything that is not exactly one envelope, before any call to KMS', () => {
    const sealed = sealEnvelope('v', dataKey, edk, randomBytes(12), ownerSecretContext('N'));
    const parts = sealed.split('.');
    fc.assert(
      fc.property(fc.string(), (s) => {
        if (s === sealed) return;
        try {
          parseEnvelope(s);
        } catch (e) {
          expect(String(e)).toContain('malformed');
          return;
        }
        // Whatever parses is structurally an envelope: its GCM tag still has to check out.
        expect(s.split('.')).toHaveLength(5);
      }),
    );
    for (const bad of [
      parts.slice(0, 4).join('.'),
      ['v1', ...parts.slice(1)].join('.'),
      [...parts.slice(0, 2), 'AAAA', ...parts.slice(3)].join('.'),
      [parts[0], '', ...parts.slice(2)].join('.'),
      `${sealed}=`,
    ]) {
      expect(() => parseEnvelope(bad)).toThrow('malformed');
    }
  });

  it('refuses a tampered ciphertext', () => {
    const sealed = sealEnvelope('value', dataKey, edk, randomBytes(12), ownerSecretContext('N'));
    const parts = sealed.split('.');
    const ct = Buffer.from(parts[4] as string, 'base64url');
    ct[0] = (ct[0] as number) ^ 1;
    const tampered = [...parts.slice(0, 4), ct.toString('base64url')].join('.');
    expect(() => openEnvelope(parseEnvelope(tampered), dataKey, ownerSecretContext('N'))).toThrow('failed authentication');
  });
});
