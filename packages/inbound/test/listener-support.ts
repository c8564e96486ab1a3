// Set-up shared by the integration tests of the MX listener: the listener on a loopback port over a
// table log's sealed stream, its recipients under INBOUND_DOMAIN, and nodemailer's SMTP client to it.
import { createEventStream } from '@tern/event-log';
import { createSealer, type Keyring } from '@tern/privacy';
import nodemailer from 'nodemailer';
import type { LogDatabase } from '../../../test/support/log-database.js';
import {
  createInboundListener,
  createRecipientResolver,
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
