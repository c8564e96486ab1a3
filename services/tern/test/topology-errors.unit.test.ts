import { ConfigError, loadConfig } from '@tern/config';
import { describe, expect, it } from 'vitest';
import { checkTopology } from '../src/runtime.js';
import { CORE_SERVICES, type Service } from '../src/services.js';

const roles = (...names: Service[]) => new Set<Service>(names);

function refusal(env: Record<string, string>, services: ReadonlySet<Service>): ConfigError {
  let error: unknown;
  try {
    checkTopology(loadConfig(env), services);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe('checkTopology: a topology the embedded stores cannot serve is a ConfigError (issue 25)', () => {
  it('a role alone without DATABASE_URL names DATABASE_URL', () => {
    const error = refusal({}, roles('sender'));
    expect(error.variables).toContain('DATABASE_URL');
    expect(error.message).toMatch(/^Starting sender alone needs DATABASE_URL/);
  });

  it('the api without the projector (or the reverse) and without CLICKHOUSE_URL names CLICKHOUSE_URL', () => {
    for (const role of ['api', 'projector'] as const) {
      const error = refusal({ DATABASE_URL: 'postgres://127.0.0.1/x' }, roles(role));
      expect(error.variables).toContain('CLICKHOUSE_URL');
      expect(error.message).toMatch(new RegExp(`^Starting ${role} without api\\+projector`));
    }
  });

  it('submission alone without SMTP_SUBMISSION_PORT names it', () => {
    const error = refusal({ DATABASE_URL: 'postgres://127.0.0.1/x' }, roles('submission'));
    expect(error.variables).toEqual(['SMTP_SUBMISSION_PORT']);
  });

  it('accepts the all-in-one process without any server, and a split role with its servers', () => {
    expect(() => checkTopology(loadConfig({}), new Set(CORE_SERVICES))).not.toThrow();
    const servers = { DATABASE_URL: 'postgres://127.0.0.1/x', CLICKHOUSE_URL: 'http://127.0.0.1:8123' };
    expect(() => checkTopology(loadConfig(servers), roles('api'))).not.toThrow();
    expect(() => checkTopology(loadConfig(servers), roles('sender'))).not.toThrow();
  });
});
