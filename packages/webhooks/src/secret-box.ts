import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Webhook secrets must be usable to sign, so they cannot be hashed like API keys: they are kept
 * encrypted at rest with AES-256-GCM under a server key (`WEBHOOK_SECRETS_KEY`). The AES key is
 * derived from that value with HKDF-SHA256, so any long random string works as the variable.
 * Stored form: `v1:` + base64(iv 12 bytes ‖ tag 16 bytes ‖ ciphertext). A database dump alone
 * reveals no secret; a changed or lost server key makes the stored secrets unreadable (rotate
 * every endpoint's secret then).
 */
export interface SecretBox {
  encrypt(clear: string): string;
  /** Throws when the value was not sealed with this key (or was altered). */
  decrypt(sealed: string): string;
}

const VERSION = 'v1:';

export const MIN_SECRETS_KEY_LENGTH = 16;

/**
 * What a box seals; each purpose gets its own AES key from the one server key (HKDF `info`), so a
 * value sealed for one purpose never opens as another: webhook signing secrets, and the DKIM
 * private keys of sending domains (SPEC §20).
 */
export type SecretPurpose = 'webhook secrets' | 'dkim keys';

export function createSecretBox(serverKey: string, purpose: SecretPurpose = 'webhook secrets'): SecretBox {
  if (serverKey.length < MIN_SECRETS_KEY_LENGTH) {
    throw new Error(`the webhook secrets key must be at least ${MIN_SECRETS_KEY_LENGTH} characters`);
  }
  const key = Buffer.from(hkdfSync('sha256', serverKey, Buffer.alloc(0), `tern ${purpose} v1`, 32));
  return {
    encrypt(clear) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const ct = Buffer.concat([cipher.update(clear, 'utf8'), cipher.final()]);
      return VERSION + Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64');
    },
    decrypt(sealed) {
      if (!sealed.startsWith(VERSION)) throw new Error('unknown sealed secret format');
      const raw = Buffer.from(sealed.slice(VERSION.length), 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
  };
}
