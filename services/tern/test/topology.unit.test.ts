import { ConfigError, loadConfig } from '@tern/config';
import { describe, expect, it } from 'vitest';
import { checkTopology, effectiveServices } from '../src/runtime.js';
import type { Service } from '../src/services.js';

const servers = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/tern', NODE_ENV: 'test' };
const roles = (...names: Service[]) => new Set<Service>(names);
const refusal = (config: ReturnType<typeof loadConfig>, services: ReadonlySet<Service>) => {
  try {
    checkTopology(config, services);
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('the worker role (issue 25, item 5)', () => {
  it('alone, it needs CLICKHOUSE_URL: retention deletes ClickHouse rows, and chDB belongs to one process', () => {
    const error = refusal(loadConfig(servers), roles('worker'));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variables).toEqual(['CLICKHOUSE_URL']);
    expect(
      refusal(loadConfig({ ...servers, CLICKHOUSE_URL: 'http://127.0.0.1:8123' }), roles('worker')),
    ).toBe(undefined);
  });

  it('projector and api on the embedded engine take the worker in (their process is the only one with chDB)', () => {
    const embedded = loadConfig(servers);
    expect([...effectiveServices(embedded, roles('projector', 'api'))].sort()).toEqual([
      'api',
      'projector',
      'worker',
    ]);
    expect(refusal(embedded, effectiveServices(embedded, roles('projector', 'api')))).toBe(undefined);
    // With a ClickHouse server the api is HTTP only: the worker is a process of its own.
    const server = loadConfig({ ...servers, CLICKHOUSE_URL: 'http://127.0.0.1:8123' });
    expect([...effectiveServices(server, roles('projector', 'api'))].sort()).toEqual(['api', 'projector']);
    expect([...effectiveServices(server, roles('api'))]).toEqual(['api']);
  });

  it('topology errors are ConfigErrors naming their variable', () => {
    const { DATABASE_URL: _omit, ...noDb } = servers;
    expect((refusal(loadConfig(noDb), roles('api')) as ConfigError).variables).toContain('DATABASE_URL');
    expect((refusal(loadConfig(servers), roles('api')) as ConfigError).variables).toContain('CLICKHOUSE_URL');
  });
});
