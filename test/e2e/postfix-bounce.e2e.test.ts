import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostfix, type TestPostfix } from '../support/postfix.js';
import { tempDir, waitFor } from '../support/services.js';
import { buildTern, freePort, startTern, type TernProcess } from './tern-process.js';

type Detail = {
  id: string;
  status: string;
  events: { type: string; occurredAt: string; data?: Record<string, unknown> }[];
};

/**
 * SPEC §21, "a real MTA writes the bounces": Debian's Postfix is the relay behind SMTP_URL of an
 * all-in-one `npm start` (embedded stores) whose bounce mailbox listens on BOUNCE_SMTP_PORT. The
 * recipients' domain is routed by Postfix to a test SMTP server that refuses one address (550 at
 * RCPT TO) and greylists another for a few seconds. Postfix itself writes every DSN — the
 * failure, the delay warning, the "relayed" success — and delivers it to the VERP envelope
 * sender on BOUNCE_DOMAIN, routed to Tern's bounce mailbox. No DSN is written by the test.
 */
const BOUNCE_DOMAIN = 'bounces.tern.test';
const GREYLIST_MS = 3_000;

let finalHop: { port: number; refusedAt: Map<string, number>; accepted: string[]; close(): Promise<void> };
let postfix: TestPostfix;
let tern: TernProcess;
let auth: Record<string, string>;

/** The recipients' server: `unknown@` → 550 5.1.1; `slow@` → 451 for GREYLIST_MS, then accepted. No DSN extension. */
async function startFinalHop(): Promise<typeof finalHop> {
  const refusedAt = new Map<string, number>();
  const firstTry = new Map<string, number>();
  const accepted: string[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    hideDSN: true,
    logger: false,
    onRcptTo(address, _session, callback) {
      const local = address.address.split('@')[0]!;
      if (local.startsWith('unknown')) {
        refusedAt.set(address.address, Date.now());
        return callback(
          Object.assign(new Error(`5.1.1 <${address.address}>: Recipient address rejected: User unknown`), {
            responseCode: 550,
          }),
        );
      }
      if (local.startsWith('slow')) {
        const first = firstTry.get(address.address) ?? Date.now();
        firstTry.set(address.address, first);
        if (Date.now() - first < GREYLIST_MS)
          return callback(
            Object.assign(new Error('4.7.1 Greylisted, try again later'), { responseCode: 451 }),
          );
      }
      callback();
    },
    onData(stream, session, callback) {
      stream.on('data', () => undefined);
      stream.on('end', () => {
        accepted.push(...session.envelope.rcptTo.map((r) => r.address));
        callback();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.server.address() as AddressInfo).port,
    refusedAt,
    accepted,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const get = async (id: string) =>
  (await (await fetch(`${tern.url}/emails/${id}`, { headers: auth })).json()) as Detail;

async function send(to: string): Promise<string> {
  const res = await fetch(`${tern.url}/emails/send`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ from: 'hello@acme.test', to, subject: 'Postfix e2e', text: 'Hello' }),
  });
  expect(res.status, await res.clone().text()).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

beforeAll(async () => {
  buildTern();
  finalHop = await startFinalHop();
  const postfixPort = await freePort();
  const bouncePort = await freePort();
  postfix = await startPostfix({
    port: postfixPort,
    transports: { 'rcpt.test': finalHop.port, [BOUNCE_DOMAIN]: bouncePort },
  });
  tern = await startTern({
    env: {
      DATA_DIR: tempDir('tern-e2e-postfix-'),
      NODE_ENV: 'development',
      SMTP_URL: `smtp://127.0.0.1:${postfixPort}`,
      BOUNCE_SMTP_PORT: String(bouncePort),
      BOUNCE_DOMAIN,
    },
  });
  const curl = tern
    .stdout()
    .split('\n')
    .find((l) => l.includes('/emails/send') && l.includes('Bearer'));
  expect(curl, tern.stdout()).toBeDefined();
  auth = { authorization: `Bearer ${/Bearer ([^']+)'/.exec(curl!)![1]!}` };
}, 240_000);

afterAll(async () => {
  await tern?.stop();
  await postfix?.stop();
  await finalHop?.close();
});

describe('Postfix as the relay: its DSNs reach the bounce mailbox', () => {
  it('an address the next hop refuses → Postfix’s DSN → BOUNCED with Postfix’s diagnostic, and suppressed', async () => {
    const to = `unknown-${Date.now()}@rcpt.test`;
    const id = await send(to);
    const bounced = await waitFor(
      async () => {
        const detail = await get(id);
        return detail.status === 'BOUNCED' ? detail : null;
      },
      {
        timeoutMs: 60_000,
        intervalMs: 25,
        description: `${id} BOUNCED (postfix log follows)\n${postfix.log()}`,
      },
    );
    const seenAt = Date.now();
    const refusedAt = finalHop.refusedAt.get(to)!;
    const bounce = bounced.events.find((e) => e.type === 'email.bounced')!;
    expect(bounced.events.map((e) => e.type)).toEqual(['email.queued', 'email.sent', 'email.bounced']);
    // Postfix's words: the next hop's reply as Postfix reports it in Diagnostic-Code.
    expect(bounce.data).toMatchObject({ bounceType: 'hard', smtpStatus: '5.1.1' });
    expect(String(bounce.data!.diagnostic)).toMatch(/^550 5\.1\.1 .*User unknown/);
    expect(postfix.log()).toMatch(/sender non-delivery notification/);
    const entry = await waitFor(
      async () => {
        const list = (await (await fetch(`${tern.url}/suppressions`, { headers: auth })).json()) as {
          data: { email: string; reason: string }[];
        };
        return list.data.find((s) => s.email === to);
      },
      { timeoutMs: 10_000, description: `${to} suppressed` },
    );
    expect(entry).toMatchObject({ reason: 'hard_bounce' });
    // The figure of issue 27: from the next hop's 550 (Postfix writes the DSN right after) to BOUNCED.
    console.log(
      `[figure] postfix 550 → DSN → BOUNCED seen via the API: ${((seenAt - refusedAt) / 1000).toFixed(2)} s`,
    );
    expect(seenAt - refusedAt).toBeLessThan(30_000);
  });

  it('greylisted, then accepted → Postfix’s delay warning (DELAYED on the way) and its “relayed” DSN → DELIVERED', async () => {
    const to = `slow-${Date.now()}@rcpt.test`;
    const id = await send(to);
    const delivered = await waitFor(
      async () => {
        const detail = await get(id);
        return detail.status === 'DELIVERED' ? detail : null;
      },
      {
        timeoutMs: 60_000,
        intervalMs: 50,
        description: `${id} DELIVERED (postfix log follows)\n${postfix.log()}`,
      },
    );
    expect(finalHop.accepted).toContain(to);
    const types = delivered.events.map((e) => e.type);
    expect(types).toContain('email.delayed');
    expect(types.at(-1)).toBe('email.delivered');
    expect(postfix.log()).toMatch(/sender delay notification/);
    expect(postfix.log()).toMatch(/sender delivery status notification/);
  });
});
