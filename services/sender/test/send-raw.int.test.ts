// `sendRaw` (issue 45 item 1) hands composed bytes to nodemailer's transport without `sendMail`:
// what reaches a real SMTP server (smtp-server) must be what `sendMail({ raw, envelope, dsn })`
// puts on the wire — the same bytes, MAIL FROM, RCPT TO (nodemailer's envelope parsing, an IDN
// domain among them), DSN parameters — and the same result, pooled or not.
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SmtpSink, startSmtpSink } from '../../../test/support/smtp-sink.js';
import { sendRaw } from '../src/providers/send-raw.js';

let sink: SmtpSink;

beforeAll(async () => {
  sink = await startSmtpSink({ hideDSN: false });
});

afterAll(async () => {
  await sink?.close();
});

const bytes = (id: string, end: string) =>
  Buffer.from(
    `From: Acme <hello@acme.test>\r\nTo: ann@jõgeva.ee\r\nSubject: raw ${id}\r\nMessage-ID: <${id}@acme.test>\r\n` +
      `MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello ${id}\r\n..a dot\r\nlast line${end}`,
  );
const envelope = { from: 'bounces+x1@bounces.acme.test', to: ['ann@jõgeva.ee', 'bob@example.com'] };
const dsn = { id: 'em_raw', return: 'headers' as const, notify: ['failure', 'delay', 'success'] as const };

/** What the sink received for the message whose body names `id`, without its own id. */
const wire = (id: string) => {
  const got = sink.received.filter((r) => r.raw.includes(`Hello ${id}`));
  expect(got).toHaveLength(1);
  const { raw, mailFrom, rcptTo, mailDsn, rcptDsn } = got[0]!;
  return { raw: raw.replaceAll(id, '<id>'), mailFrom, rcptTo, mailDsn, rcptDsn };
};

describe.each([
  ['pooled', { pool: true, maxConnections: 2 }],
  ['a connection per message', {}],
])('sendRaw, %s', (name, options) => {
  it.each([
    ['ending with a line break', '\r\n'],
    ['ending without one', ''],
  ])('puts on the wire what sendMail does, %s', async (_case, end) => {
    const transport = nodemailer.createTransport({ url: sink.url, ...options });
    try {
      const a = `a-${name.length}-${end.length}`;
      const b = `b-${name.length}-${end.length}`;
      const viaSendMail = await transport.sendMail({
        raw: bytes(a, end),
        messageId: `<${a}@acme.test>`,
        envelope,
        dsn: { ...dsn, notify: [...dsn.notify] },
      });
      const viaRaw = await sendRaw(transport, bytes(b, end), {
        messageId: `<${b}@acme.test>`,
        envelope,
        dsn: { ...dsn, notify: [...dsn.notify] },
      });
      expect(wire(b)).toEqual(wire(a));
      expect(wire(b).mailDsn).toMatchObject({ ret: 'HDRS', envid: 'em_raw' });
      const {
        messageId: _a,
        response: _ra,
        messageTime: _ta,
        messageSize: _sa,
        envelopeTime: _ea,
        ...restA
      } = viaSendMail;
      const {
        messageId,
        response: _rb,
        messageTime: _tb,
        messageSize: _sb,
        envelopeTime: _eb,
        ...restB
      } = viaRaw;
      expect(messageId).toBe(`<${b}@acme.test>`);
      expect(restB).toEqual(restA);
      // nodemailer's envelope parsing: the IDN domain in punycode at RCPT TO.
      expect(restB.envelope.to).toEqual(['ann@xn--jgeva-dua.ee', 'bob@example.com']);
      expect(restB.accepted).toHaveLength(2);
    } finally {
      transport.close();
    }
  });
});

describe('sendRaw through a proxy', () => {
  let proxy: Server;
  const tunnels: string[] = [];

  beforeAll(async () => {
    // An HTTP CONNECT proxy (nodemailer's `proxy=http://…`): it records each tunnel and relays it.
    proxy = createServer();
    proxy.on('connect', (req, client, head) => {
      tunnels.push(req.url ?? '');
      const [host, port] = (req.url ?? '').split(':');
      const upstream = connect(Number(port), host, () => {
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    proxy.closeAllConnections();
    await new Promise((resolve) => proxy.close(resolve));
  });

  it('goes through the proxy of the relay URL from the first message, as sendMail does', async () => {
    const { port } = proxy.address() as { port: number };
    const url = `${sink.url}?proxy=${encodeURIComponent(`http://127.0.0.1:${port}`)}`;
    const transport = nodemailer.createTransport({ url, pool: true, maxConnections: 1 });
    try {
      await sendRaw(transport, bytes('proxied', '\r\n'), { messageId: '<proxied@acme.test>', envelope });
      expect(tunnels).toEqual([`127.0.0.1:${sink.port}`]);
      expect(wire('proxied').rcptTo).toHaveLength(2);
    } finally {
      transport.close();
    }
  });
});
