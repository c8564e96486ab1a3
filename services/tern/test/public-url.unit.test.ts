import { ConfigError, loadConfig } from '@tern/config';
import { describe, expect, it } from 'vitest';
import { DEV_API_URL, resolvePublicUrl } from '../src/public-url.js';
import { SERVICES, type Service } from '../src/services.js';

const prod = {
  NODE_ENV: 'production',
  JWT_SECRET: 'public-url-unit-jwt-secret-0123456789ab',
  INGEST_TOKEN: 'public-url-unit-ingest-token-0123456789',
  TRACKING_SECRET: 'public-url-unit-tracking-secret',
  WEBHOOK_SECRETS_KEY: 'public-url-unit-webhook-secrets-key',
  ENCRYPTION_KEY: 'public-url-unit-encryption-key-0123456789ab',
};
const roles = (...names: Service[]) => new Set<Service>(names);

describe('PUBLIC_URL: the base of the links a process writes (issue 32, item 1)', () => {
  it('in production, a split-mode sender or api without PUBLIC_URL is a one-line start-up error', () => {
    const config = loadConfig(prod);
    for (const services of [
      roles('sender'),
      roles('projector', 'api'),
      roles('api'),
      roles('sender', 'api'),
    ]) {
      let error: unknown;
      try {
        resolvePublicUrl(config, services);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variables).toEqual(['PUBLIC_URL']);
      expect((error as ConfigError).message).toMatch(
        /^Invalid configuration: PUBLIC_URL must be set in production/,
      );
      expect((error as ConfigError).message).not.toContain('\n');
    }
  });

  it('in production, roles that write no link, and the all-in-one that serves its own, need none', () => {
    const config = loadConfig({ ...prod, PORT: '4100' });
    expect(resolvePublicUrl(config, roles('ingest'))).toBe(DEV_API_URL);
    expect(resolvePublicUrl(config, roles('dispatcher'))).toBe(DEV_API_URL);
    expect(resolvePublicUrl(config, new Set(SERVICES))).toBe('http://127.0.0.1:4100');
  });

  it('PUBLIC_URL set is used as is, by every role', () => {
    const config = loadConfig({ ...prod, PUBLIC_URL: 'https://mail.example.com/' });
    expect(resolvePublicUrl(config, roles('sender'))).toBe('https://mail.example.com');
    expect(resolvePublicUrl(config, roles('projector', 'api'))).toBe('https://mail.example.com');
  });

  it("in development, a sender alone links to the api's default address, never to its own port", () => {
    const config = loadConfig({ PORT: '4200' });
    expect(resolvePublicUrl(config, roles('sender'))).toBe('http://127.0.0.1:3000');
    expect(resolvePublicUrl(config, roles('projector', 'api'))).toBe('http://127.0.0.1:4200');
  });
});
