// Set-up shared by the integration tests of the MX listener: the listener on a loopback port over a
// table log's sealed stream, its recipients under INBOUND_DOMAIN, and nodemailer's SMTP client to it.
import { createEventStream } from '@tern/event-log';
import { createKeyring, createSealer, type Keyring } from '@tern/privacy';
import nodemailer from 'nodemailer';
import type pg from 'pg';
import { type LogDatabase, openLogDatabase } from '../../../test/support/log-database.js';
import {
  createInboundListener,
  createRecipientResolver,
  ensureInboundAddress,
  type InboundListener,
  type InboundListenerOptions,
} from '../src/index.js';

export const INBOUND_DOMAIN = 'in.tern.test';

/**
 * A listener on any free loopback port as `mx.tern.test`, appending to `db`'s log sealed under
 * `keyring`, taking the tenants' addresses under INBOUND_DOMAIN (no tenant's own receiving domain),
 * resolving no DNS name, 64 KiB at most; `options` add to or replace any of that.
 */
export function createTestListener(
  db: LogDatabase,
  keyring: Keyring,
  options: Partial<InboundListenerOptions> = {},
): InboundListener {
  const { pool } = db;
  return createInboundListener({
    pool,
    keyring,
    log: createEventStream(db.log, { sealer: createSealer(keyring) }),
    resolve: async () => [],
    host: '127.0.0.1',
    port: 0,
    maxBytes: 64 * 1024,
    hostname: 'mx.tern.test',
    tenantsOf: createRecipientResolver({
      pool,
      inboundDomain: INBOUND_DOMAIN,
      receivingTenants: async () => [],
    }),
    ...options,
  });
}

/** A listener test's database: a table log, a keyring under `encryptionKey`, `tenant`'s inbound address. */
export async function openListenerDb(
  tenant: string,
  encryptionKey: string,
): Promise<{ db: LogDatabase; pool: pg.Pool; keyring: Keyring }> {
  const db = await openLogDatabase({ pollIntervalMs: 50 });
  const { pool } = db;
  try {
    const keyring = createKeyring({ pool, encryptionKey });
    await ensureInboundAddress(pool, tenant);
    return { db, pool, keyring };
  } catch (err) {
    await db.close();
    throw err;
  }
}

const smtpClient = (port: number) =>
  nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });

/** `send` given nodemailer's SMTP client to the listener on `port` (no TLS), closed after it. */
export async function withSmtpClient<T>(
  port: number,
  send: (transport: ReturnType<typeof smtpClient>) => Promise<T>,
): Promise<T> {
  const transport = smtpClient(port);
  try {
    return await send(transport);
  } finally {
    transport.close();
  }
}
