import { createHmac, createSign, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { DeliveryEvent } from '@tern/contracts';
import { attemptEvents, queuedEvent } from '@tern/domain';
import type pg from 'pg';
import { generate } from 'selfsigned';
import { Webhook } from 'standardwebhooks';
import type { ProviderRouteOptions } from '../src/index.js';
import { openSendingWorld, type SendingWorld } from './sending-support.js';

// The five providers' side of SPEC §21 in tests and the bench: their keys, an HTTPS server that
// serves the SNS signing certificate (generated here, trusted only through the route's `ca`
// option) and the subscription URL, and functions that sign notifications exactly as each
// provider does. Nothing here is a mock of Tern: it is what the providers would send.
export const SES_TOPIC = 'arn:aws:sns:eu-west-1:123456789012:tern-ses';
export const POSTMARK_USER = 'postmark';
export const POSTMARK_PASSWORD = 'postmark-password-0123456789';
export const MAILGUN_KEY = 'mailgun-signing-key-0123456789abcdef';
export const RESEND_SECRET = `whsec_${randomBytes(24).toString('base64')}`;

export interface ProviderSenders {
  /** What the app needs (credentials, and the SNS host widened to the test's HTTPS server). */
  options: ProviderRouteOptions;
  /** SubscribeURL requests the HTTPS server received (paths). */
  confirmations: string[];
  /** Its base URL (`https://127.0.0.1:port`). */
  httpsBase: string;
  /** An SNS message of `Type`, signed with the served certificate (SignatureVersion 2). */
  sns(fields: Record<string, string>, opts?: { certUrl?: string; sign?: boolean }): Record<string, string>;
  /** Headers of a SendGrid Event Webhook request for `body`. */
  sendgridHeaders(body: string, at?: Date): Record<string, string>;
  postmarkHeaders(password?: string): Record<string, string>;
  /** Mailgun's `signature` object. */
  mailgunSignature(key?: string, at?: Date): { timestamp: string; token: string; signature: string };
  /** Resend's svix headers for `body`. */
  resendHeaders(id: string, body: string): Record<string, string>;
  close(): Promise<void>;
}

export async function openProviderSenders(): Promise<ProviderSenders> {
  const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    algorithm: 'sha256',
    notBeforeDate: new Date(Date.now() - 3_600_000),
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  const confirmations: string[] = [];
  const server: Server = createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
    if (req.url === '/SimpleNotificationService-test.pem') {
      res.writeHead(200, { 'content-type': 'application/x-pem-file' }).end(pems.cert);
    } else if (req.url?.startsWith('/confirm')) {
      confirmations.push(req.url);
      res.writeHead(200, { 'content-type': 'text/xml' }).end('<ConfirmSubscriptionResponse/>');
    } else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const httpsBase = `https://${host}`;

  const sendgrid = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const sendgridPublicKey = sendgrid.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  const resend = new Webhook(RESEND_SECRET);

  const SIGNED = {
    Notification: ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
    SubscriptionConfirmation: [
      'Message',
      'MessageId',
      'SubscribeURL',
      'Timestamp',
      'Token',
      'TopicArn',
      'Type',
    ],
  } as const;

  return {
    options: {
      sesTopicArns: [SES_TOPIC],
      sns: { certHost: () => host, ca: pems.cert },
      sendgridPublicKey,
      postmark: { user: POSTMARK_USER, password: POSTMARK_PASSWORD },
      mailgunSigningKey: MAILGUN_KEY,
      resendSecret: RESEND_SECRET,
    },
    confirmations,
    httpsBase,
    sns(fields, opts = {}) {
      const message: Record<string, string> = {
        MessageId: randomUUID(),
        TopicArn: SES_TOPIC,
        Timestamp: new Date().toISOString(),
        SignatureVersion: '2',
        SigningCertURL: opts.certUrl ?? `${httpsBase}/SimpleNotificationService-test.pem`,
        ...fields,
      };
      const type = message.Type as keyof typeof SIGNED;
      let text = '';
      for (const f of SIGNED[type]) if (message[f] !== undefined) text += `${f}\n${message[f]}\n`;
      message.Signature =
        opts.sign === false
          ? randomBytes(256).toString('base64')
          : createSign('RSA-SHA256').update(text, 'utf8').sign(pems.private, 'base64');
      return message;
    },
    sendgridHeaders(body, at = new Date()) {
      const timestamp = String(Math.floor(at.getTime() / 1000));
      const signature = createSign('sha256')
        .update(timestamp + body)
        .sign(sendgrid.privateKey, 'base64');
      return {
        'content-type': 'application/json',
        'x-twilio-email-event-webhook-signature': signature,
        'x-twilio-email-event-webhook-timestamp': timestamp,
      };
    },
    postmarkHeaders(password = POSTMARK_PASSWORD) {
      return {
        'content-type': 'application/json',
        authorization: `Basic ${Buffer.from(`${POSTMARK_USER}:${password}`).toString('base64')}`,
      };
    },
    mailgunSignature(key = MAILGUN_KEY, at = new Date()) {
      const timestamp = String(Math.floor(at.getTime() / 1000));
      const token = randomBytes(25).toString('hex');
      return {
        timestamp,
        token,
        signature: createHmac('sha256', key)
          .update(timestamp + token)
          .digest('hex'),
      };
    },
    resendHeaders(id, body) {
      const at = new Date();
      return {
        'content-type': 'application/json',
        'svix-id': id,
        'svix-timestamp': String(Math.floor(at.getTime() / 1000)),
        'svix-signature': resend.sign(id, at, body),
      };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The body of each provider's notification of `kind` about message `messageId` (provider event id `eventId`). */
export type ProviderKind = 'ses' | 'sendgrid' | 'postmark' | 'mailgun' | 'resend';
export type Happening = 'delivered' | 'hard_bounce' | 'complaint' | 'open';

export function notification(
  senders: ProviderSenders,
  provider: ProviderKind,
  happening: Happening,
  messageId: string,
  eventId: string,
  userAgent = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) Thunderbird/128.0',
): { body: string; headers: Record<string, string> } {
  const now = new Date().toISOString();
  switch (provider) {
    case 'ses': {
      const mail = { messageId, timestamp: now, commonHeaders: { messageId: `<${messageId}>` } };
      const inner =
        happening === 'delivered'
          ? { notificationType: 'Delivery', mail, delivery: { timestamp: now } }
          : happening === 'hard_bounce'
            ? {
                notificationType: 'Bounce',
                mail,
                bounce: {
                  bounceType: 'Permanent',
                  bounceSubType: 'General',
                  timestamp: now,
                  bouncedRecipients: [
                    {
                      emailAddress: 'x@example.com',
                      status: '5.1.1',
                      diagnosticCode: 'smtp; 550 5.1.1 user unknown',
                    },
                  ],
                },
              }
            : happening === 'complaint'
              ? {
                  notificationType: 'Complaint',
                  mail,
                  complaint: { complaintFeedbackType: 'abuse', timestamp: now },
                }
              : { eventType: 'Open', mail, open: { timestamp: now, userAgent, ipAddress: '198.51.100.7' } };
      const body = JSON.stringify(
        senders.sns({ Type: 'Notification', MessageId: eventId, Message: JSON.stringify(inner) }),
      );
      return { body, headers: { 'content-type': 'text/plain; charset=UTF-8' } };
    }
    case 'sendgrid': {
      const event =
        happening === 'delivered'
          ? 'delivered'
          : happening === 'hard_bounce'
            ? 'bounce'
            : happening === 'complaint'
              ? 'spamreport'
              : 'open';
      const body = JSON.stringify([
        {
          email: 'x@example.com',
          timestamp: Math.floor(Date.now() / 1000),
          event,
          sg_event_id: eventId,
          sg_message_id: `${messageId}.filterdrecv-1.2.3`,
          ...(event === 'bounce'
            ? { type: 'bounce', status: '5.1.1', reason: '550 5.1.1 user unknown' }
            : {}),
          ...(event === 'open' ? { useragent: userAgent, ip: '198.51.100.7' } : {}),
        },
      ]);
      return { body, headers: senders.sendgridHeaders(body) };
    }
    case 'postmark': {
      const record =
        happening === 'delivered'
          ? { RecordType: 'Delivery', DeliveredAt: now }
          : happening === 'hard_bounce'
            ? {
                RecordType: 'Bounce',
                Type: 'HardBounce',
                Details: 'smtp;550 5.1.1 user unknown',
                BouncedAt: now,
              }
            : happening === 'complaint'
              ? { RecordType: 'SpamComplaint', BouncedAt: now }
              : { RecordType: 'Open', ReceivedAt: now, UserAgent: userAgent };
      // Postmark has no event id: its records differ by ID (bounces) or time; the test's id goes in ID.
      const body = JSON.stringify({
        ...record,
        ID: eventId,
        MessageID: messageId,
        Recipient: 'x@example.com',
      });
      return { body, headers: senders.postmarkHeaders() };
    }
    case 'mailgun': {
      const event =
        happening === 'delivered'
          ? { event: 'delivered' }
          : happening === 'hard_bounce'
            ? {
                event: 'failed',
                severity: 'permanent',
                reason: 'bounce',
                'delivery-status': { code: 550, description: '5.1.1 user unknown' },
              }
            : happening === 'complaint'
              ? { event: 'complained' }
              : { event: 'opened', 'client-info': { 'user-agent': userAgent } };
      const body = JSON.stringify({
        signature: senders.mailgunSignature(),
        'event-data': {
          id: eventId,
          timestamp: Date.now() / 1000,
          ...event,
          message: { headers: { 'message-id': messageId } },
        },
      });
      return { body, headers: { 'content-type': 'application/json' } };
    }
    case 'resend': {
      const type =
        happening === 'delivered'
          ? 'email.delivered'
          : happening === 'hard_bounce'
            ? 'email.bounced'
            : happening === 'complaint'
              ? 'email.complained'
              : 'email.opened';
      const body = JSON.stringify({
        type,
        created_at: now,
        data: {
          email_id: messageId,
          to: ['x@example.com'],
          ...(type === 'email.bounced'
            ? { bounce: { type: 'Permanent', subType: 'General', message: '550 5.1.1 user unknown' } }
            : {}),
          ...(type === 'email.opened' ? { open: { userAgent } } : {}),
        },
      });
      return { body, headers: senders.resendHeaders(eventId, body) };
    }
  }
}

// Fixtures of the provider-notification tests (SPEC §21): the providers' side (above)
// and a sending world whose app takes their notifications over a real socket; the emails they name.
/** The providers' senders, and a sending world (no sender) whose app, listening at `base`, takes their notifications. */
export async function openProviderWorld(): Promise<{
  senders: ProviderSenders;
  world: SendingWorld;
  base: string;
}> {
  const senders = await openProviderSenders();
  const world = await openSendingWorld({
    sender: false,
    app: () => ({ features: { providers: senders.options } }),
  });
  return { senders, world, base: await world.app.listen({ port: 0, host: '127.0.0.1' }) };
}

/** An email queued and sent (as the sender would have appended it): its Message-ID and relay id. */
export function sentEmail(tenantId: string, emailId: string, relayId?: string): DeliveryEvent[] {
  const at = new Date(Date.now() - 60_000);
  return [
    queuedEvent({ tenantId, emailId, at, toEmail: `${emailId}@example.com`, subject: 'hello' }),
    attemptEvents(tenantId, emailId, 1, new Date(at.getTime() + 1000)).sent({
      provider: 'smtp',
      messageId: `<${emailId}@tern.test>`,
      ...(relayId ? { providerMessageId: relayId } : {}),
    }),
  ];
}

/** A notification POSTed to `<base>/providers/<provider>`: the status and the JSON answer. */
export async function postNotification(
  base: string,
  provider: string,
  body: string,
  headers: Record<string, string>,
) {
  const res = await fetch(`${base}/providers/${provider}`, { method: 'POST', body, headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The email's status in the delivery log (null: no such email, or none yet). */
export async function emailStatus(pool: pg.Pool, tenantId: string, emailId: string): Promise<string | null> {
  const { rows } = await pool.query<{ status: string | null }>(
    'SELECT status FROM email_logs WHERE tenant_id = $1 AND id = $2',
    [tenantId, emailId],
  );
  return rows[0]?.status ?? null;
}
