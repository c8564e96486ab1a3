// Receiving for the tests of the API's readers (the SDK's `client.inbound`, `/compat/resend`'s
// `emails.receiving`, the dashboard's Inbound page): the real MX listener of packages/inbound on a
// loopback port, over the same Postgres as the API, with the Postgres-table log sealed under the
// API's own keyring key, and the in-process DNS server mailauth resolves through. Mail goes in
// over SMTP with nodemailer's client, as an MTA would deliver it.
import { createEventStream, createPostgresEventLog } from '@tern/event-log';
import {
  createInboundListener,
  createRecipientResolver,
  ensureInboundAddress,
  type InboundListener,
} from '@tern/inbound';
import { createKeyring, createSealer } from '@tern/privacy';
import type { FastifyInstance } from 'fastify';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type pg from 'pg';
import { startTestDnsServer, type TestDnsServer } from '../../../test/support/dns-server.js';
import {
  buildApp,
  createKey,
  ENCRYPTION_KEY,
  jwtFor,
  openStores,
  type Stores,
  type TestClock,
} from './support.js';

export const TEST_INBOUND_DOMAIN = 'in.tern.test';

export interface InboundWorld {
  /** The tenant's receiving address under INBOUND_DOMAIN: `<local>@<slug>.in.tern.test`. */
  address(tenantId: string, local?: string): Promise<string>;
  /** Delivers one message over SMTP; answers the inbound id of the `250 … Stored as inb_…`. */
  deliver(mail: Mail.Options): Promise<string>;
  close(): Promise<void>;
}

export async function openInboundWorld(pool: pg.Pool): Promise<InboundWorld> {
  const keyring = createKeyring({ pool, encryptionKey: ENCRYPTION_KEY });
  const rawLog = createPostgresEventLog({ pool, pollIntervalMs: 50 });
  await rawLog.ensureSchema();
  const stream = createEventStream(rawLog, { sealer: createSealer(keyring) });
  const dns: TestDnsServer = await startTestDnsServer();
  const listener: InboundListener = createInboundListener({
    pool,
    keyring,
    log: stream,
    resolve: (name, type) => dns.resolve(name, type),
    host: '127.0.0.1',
    port: 0,
    maxBytes: 10 * 1024 * 1024,
    hostname: 'mx.tern.test',
    tenantsOf: createRecipientResolver({
      pool,
      inboundDomain: TEST_INBOUND_DOMAIN,
      receivingTenants: async () => [],
    }),
  });
  const port = await listener.start();
  return {
    async address(tenantId, local = 'support') {
      return `${local}@${await ensureInboundAddress(pool, tenantId)}.${TEST_INBOUND_DOMAIN}`;
    },
    async deliver(mail) {
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port,
        secure: false,
        ignoreTLS: true,
      });
      try {
        const info = await transport.sendMail(mail);
        const id = /inb_[0-9a-z]+/.exec(info.response)?.[0];
        if (!id) throw new Error(`not stored: ${info.response}`);
        return id;
      } finally {
        transport.close();
      }
    },
    async close() {
      await listener.stop();
      await dns.close();
      await stream.close();
    },
  };
}

/**
 * What the tests of the `/inbound*` readers start with: fresh stores, the app under `clock`
 * listening on 127.0.0.1 at `origin`, a key of `tenant` with `inbound:read`, and the receiving
 * world over the same Postgres.
 */
export async function openInboundApi(
  tenant: string,
  clock: TestClock,
): Promise<{ stores: Stores; app: FastifyInstance; origin: string; key: string; world: InboundWorld }> {
  const stores = await openStores();
  const app = await buildApp(stores, clock);
  const origin = await app.listen({ host: '127.0.0.1', port: 0 });
  const key = (await createKey(app, jwtFor(clock, tenant), tenant, { scopes: ['inbound:read'] })).key;
  return { stores, app, origin, key, world: await openInboundWorld(stores.pool) };
}
