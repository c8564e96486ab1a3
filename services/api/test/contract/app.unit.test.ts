import { Writable } from 'node:stream';
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { createJwtVerifier, REDACT_OPTIONS, signDashboardToken } from '@tern/auth';
import pg from 'pg';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { type ApiStores, createApiApp } from '../../src/index.js';
import { type AppOverrides, withOverrides } from '../support.js';

// Wiring of the app that needs no store: health, readiness, the logger choices.

const lazyStores = () => ({
  pool: new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:9/none', connectionTimeoutMillis: 500 }),
  ch: createClient({
    url: 'http://127.0.0.1:9',
    request_timeout: 500,
    log: { level: ClickHouseLogLevel.OFF },
  }),
});

const build = (extra: AppOverrides = {}) =>
  createApiApp(
    withOverrides(
      { data: lazyStores(), jwt: createJwtVerifier({ secret: 'unit' }), policy: { retentionDays: 90 } },
      extra,
    ),
  );

/** A GET with the dashboard token of tenant acme's owner. */
function getAsOwner(app: Awaited<ReturnType<typeof createApiApp>>, url: string) {
  const token = signDashboardToken({ secret: 'unit', tenantId: 'acme', role: 'owner', expiresInSeconds: 60 });
  return app.inject({ url, headers: { authorization: `Bearer ${token}` } });
}

describe('createApiApp', () => {
  it('answers /health, and /ready with 503 naming the stores that do not answer', async () => {
    const app = await build();
    try {
      expect((await app.inject('/health')).json()).toEqual({ status: 'ok' });
      const ready = await app.inject('/ready');
      expect(ready.statusCode).toBe(503);
      expect(ready.json().message).toBe('Not ready: postgres, clickhouse unavailable');
    } finally {
      await app.close();
    }
  });

  it('uses the readiness checks it is given', async () => {
    const app = await build({ http: { readiness: [{ name: 'event-log', check: async () => {} }] } });
    try {
      expect((await app.inject('/ready')).json()).toEqual({ status: 'ready', checks: { 'event-log': 'ok' } });
    } finally {
      await app.close();
    }
  });

  it('logs through a logger instance it is given', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const app = await build({ http: { logger: pino({ level: 'info', redact: REDACT_OPTIONS }, stream) } });
    try {
      await app.inject({ url: '/emails/logs', headers: { 'x-request-id': 'req-42' } });
      expect(lines.join('')).toContain('req-42');
    } finally {
      await app.close();
    }
  });

  it('serves a resource from the repository it is given, not from the pool', async () => {
    const template = {
      id: 'tpl_given',
      name: 'Given',
      subject: 'Hello',
      html: null,
      text: 'Hi',
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    };
    const asked: unknown[][] = [];
    const unused = async () => {
      throw new Error('not used by this test');
    };
    const templates: ApiStores['templates'] = {
      get: async (...args) => {
        asked.push(args);
        return template;
      },
      insert: unused,
      replace: unused,
      list: unused,
      delete: unused,
      names: unused,
    };
    const app = await build({ data: { stores: { templates } } });
    try {
      const res = await getAsOwner(app, '/templates/tpl_given');
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual(template);
      expect(asked).toEqual([['acme', 'tpl_given']]);
    } finally {
      await app.close();
    }
  });

  it('reads a tenant’s settings from the repository it is given', async () => {
    const asked: string[] = [];
    const unused = async () => {
      throw new Error('not used by this test');
    };
    const tenantSettings: ApiStores['tenantSettings'] = {
      getRetention: async (tenantId) => {
        asked.push(`retention ${tenantId}`);
        return 30;
      },
      getTracking: async (tenantId) => {
        asked.push(`tracking ${tenantId}`);
        return { opens: false, clicks: true };
      },
      getSendRate: async (tenantId) => {
        asked.push(`rate ${tenantId}`);
        return null;
      },
      getTimeZone: async (tenantId) => {
        asked.push(`time zone ${tenantId}`);
        return 'Europe/Paris';
      },
      setRetention: unused,
      setTracking: unused,
      setSendRate: unused,
      setTimeZone: unused,
    };
    const app = await build({ data: { stores: { tenantSettings } } });
    try {
      const res = await getAsOwner(app, '/tenants/acme/settings');
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        retentionDays: 30,
        defaultRetentionDays: 90,
        tracking: { opens: false, clicks: true },
        sendRatePerSecond: null,
        timeZone: 'Europe/Paris',
      });
      expect(asked).toEqual(['retention acme', 'tracking acme', 'rate acme', 'time zone acme']);
    } finally {
      await app.close();
    }
  });

  it('refuses a key cache TTL over 5 s (revocations must apply within 5 s)', async () => {
    await expect(build({ limits: { keyCacheTtlMs: 5001 } })).rejects.toThrow(/keyCacheTtlMs/);
  });

  it('refuses a retention that is not a positive whole number of days', async () => {
    for (const retentionDays of [0, 1.5])
      await expect(build({ policy: { retentionDays } })).rejects.toThrow(
        'retentionDays must be a positive integer',
      );
  });
});
