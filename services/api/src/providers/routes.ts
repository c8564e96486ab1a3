import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createRequire } from 'node:module';
import type { DeliveryEvent } from '@tern/contracts';
import { providerNoticeEvent } from '@tern/domain';
import { appendOr503, httpError } from '@tern/http';
import type { EmailRef } from '@tern/read-models';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { TAGS } from '../openapi.js';
import type { ApiRouteDeps, SendingDeps } from '../route-deps.js';
import { errorResponse, errors } from '../schemas.js';
import type { Notice, ProviderName } from './notice.js';
import { sesNotices } from './notices.js';
import { createSnsVerifier, parseSnsMessage, type SnsVerifierOptions } from './sns.js';
import { createUsedTokens } from './used-tokens.js';
import { mailgunNotices, postmarkNotices, resendNotices, sendgridNotices } from './webhook-notices.js';

/**
 * Credentials of the provider notification routes (SPEC §21), from configuration. A provider
 * whose credential is unset has no route (404).
 */
export interface ProviderRouteOptions {
  /** SES_TOPIC_ARNS: the SNS topics whose messages are accepted. */
  sesTopicArns?: readonly string[] | undefined;
  /** Where SNS certificates may come from; tests only (never from configuration). */
  sns?: SnsVerifierOptions | undefined;
  /** SENDGRID_WEBHOOK_PUBLIC_KEY: the Event Webhook's ECDSA verification key (base64 DER, or PEM). */
  sendgridPublicKey?: string | undefined;
  /** POSTMARK_WEBHOOK_USER / _PASSWORD: the basic auth set on the Postmark webhook's URL. */
  postmark?: { user: string; password: string } | undefined;
  /** MAILGUN_WEBHOOK_SIGNING_KEY. */
  mailgunSigningKey?: string | undefined;
  /** RESEND_WEBHOOK_SECRET (`whsec_…`, Standard Webhooks). */
  resendSecret?: string | undefined;
}

/** Largest notification body read (SendGrid batches events; SES/SNS messages are ≤ 256 KiB). */
export const PROVIDER_BODY_LIMIT = 5 * 1024 * 1024;

const answerSchema = z
  .object({
    received: z.number().int().meta({ description: 'Events the notification carried that Tern tracks.' }),
    applied: z.number().int().meta({
      description: 'Events appended to the log (a redelivered one is appended again and folded once).',
    }),
    ignored: z.number().int().meta({
      description:
        'Events of a message id that names no email of Tern, or names emails of several tenants (the same Message-ID): nothing appended for them.',
    }),
  })
  .meta({ examples: [{ received: 1, applied: 1, ignored: 0 }] });

const forged = errorResponse(
  401,
  'Unsigned, forged or altered: nothing was appended.',
  'Invalid provider notification signature',
  { code: 'INVALID_CREDENTIAL' },
);
const badBody = errorResponse(400, 'The verified body is not the provider’s JSON.', 'Body must be JSON', {
  code: 'BAD_REQUEST',
});
const responses = { 200: answerSchema, 400: badBody, 401: forged, 503: errors.unavailable };

const refuse = () =>
  httpError(401, 'Invalid provider notification signature', { code: 'INVALID_CREDENTIAL' });

const header = (request: FastifyRequest, name: string): string | undefined => {
  const v = request.headers[name];
  return typeof v === 'string' ? v : Array.isArray(v) ? v[0] : undefined;
};

/**
 * How far a signed timestamp (Mailgun's, SendGrid's) may be from the receiving clock, either way:
 * Mailgun's advice; Resend's library applies the same 5 minutes (issue 40 item 4).
 */
export const SIGNATURE_MAX_AGE_MS = 5 * 60_000;

/** Whether a Unix-seconds timestamp is within SIGNATURE_MAX_AGE_MS of `now`. */
export function freshTimestamp(seconds: string, now: Date): boolean {
  if (!/^\d{1,12}(\.\d{1,9})?$/.test(seconds)) return false;
  return Math.abs(now.getTime() - Number(seconds) * 1000) <= SIGNATURE_MAX_AGE_MS;
}

const sameSecret = (a: string, b: string) =>
  timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());

/**
 * The body as JSON, else the error of `failure`: a 400 for a verified body, the 401 of `refuse` for
 * one whose signature is inside it (SNS, Mailgun).
 */
function parseJson(
  raw: Buffer,
  failure: () => Error = () => httpError(400, 'Body must be JSON', { code: 'BAD_REQUEST' }),
): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw failure();
  }
}

/** A SendGrid key as configured: PEM, or the base64 DER the SendGrid settings page shows. */
function sendgridPem(key: string): string {
  if (key.includes('-----BEGIN')) return key.replaceAll('\\n', '\n');
  const body = key.replace(/\s+/g, '');
  return `-----BEGIN PUBLIC KEY-----\n${body.match(/.{1,64}/g)?.join('\n') ?? ''}\n-----END PUBLIC KEY-----\n`;
}

/**
 * `POST /providers/{ses,sendgrid,postmark,mailgun,resend}` (SPEC §21): delivery notifications of
 * upstream providers as event sources. Each request is verified first (nothing is read or
 * appended otherwise: 401), its events are matched to emails by the message ids `email.sent`
 * recorded (`provider_messages`), appended, and answered 200 only once the log has them (503
 * otherwise, so the provider redelivers). Public routes: the signature is the credential; no rate
 * limit (a provider's burst is not abuse, and a forged request costs one signature check).
 */
export const providerRoutes: FastifyPluginAsyncZod<
  Pick<ApiRouteDeps, 'logQueries' | 'now' | 'pool'> & {
    sending: SendingDeps;
    providers: ProviderRouteOptions;
  }
> = async (app, deps) => {
  const { providers, sending } = deps;
  // Signatures are over the bytes as sent: read every body raw (SNS posts JSON as text/plain).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: PROVIDER_BODY_LIMIT }, (_req, body, done) =>
    done(null, body),
  );

  async function apply(provider: ProviderName, notices: readonly Notice[]) {
    const refs = await deps.logQueries.byMessageId(notices.flatMap((n) => n.messageIds));
    const now = deps.now();
    const events: DeliveryEvent[] = [];
    for (const notice of notices) {
      const emails = new Map<string, EmailRef>();
      for (const id of notice.messageIds)
        for (const ref of refs.get(id) ?? []) emails.set(`${ref.tenantId}\u0000${ref.emailId}`, ref);
      // No email, or emails of several tenants sharing the id: applied to none.
      if (emails.size !== 1) continue;
      const [ref] = emails.values() as unknown as [EmailRef];
      const event = providerNoticeEvent({
        provider,
        key: notice.key,
        tenantId: ref.tenantId,
        emailId: ref.emailId,
        type: notice.outcome.type,
        data: notice.outcome.data,
        occurredAt: notice.occurredAt,
        receivedAt: now,
        recipient: notice.recipient,
      });
      if (event) events.push(event);
    }
    if (events.length > 0) await appendOr503(() => sending.log.append(events), 'queued');
    return { received: notices.length, applied: events.length, ignored: notices.length - events.length };
  }

  const route = (
    provider: ProviderName,
    summary: string,
    description: string,
    handler: (request: FastifyRequest, raw: Buffer, reply: FastifyReply) => Promise<Notice[] | null>,
  ) =>
    app.post(
      `/providers/${provider}`,
      {
        // Bodies name recipients: keep them out of request logs.
        logLevel: 'warn',
        bodyLimit: PROVIDER_BODY_LIMIT,
        config: {
          rateLimit: false,
          publicCredential:
            'None: the provider’s signature (or basic auth) over the request is the credential.',
        },
        schema: {
          tags: [TAGS.providers],
          operationId: `${provider}Notification`,
          summary,
          description,
          response: responses,
        },
      },
      async (request, reply) => {
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const notices = await handler(request, raw, reply);
        return apply(provider, notices ?? []);
      },
    );

  if (providers.sesTopicArns && providers.sesTopicArns.length > 0) {
    const topics = new Set(providers.sesTopicArns);
    const sns = createSnsVerifier(providers.sns);
    route(
      'ses',
      'Amazon SES notifications (SNS)',
      'An SNS HTTP(S) subscription of the topics in `SES_TOPIC_ARNS`. The signature is checked against the ' +
        'certificate at `SigningCertURL`, which must be on `sns.<region>.amazonaws.com` (the topic’s region). ' +
        'A `SubscriptionConfirmation` is confirmed (its `SubscribeURL`, same host rule). Notifications: Bounce ' +
        '(Permanent → hard, else soft, with the status and diagnostic), Complaint, Delivery, DeliveryDelay, Open, ' +
        'Click, Reject (→ `email.failed`); the Tern event id derives from the SNS `MessageId`.',
      async (_request, raw) => {
        const body = parseJson(raw, refuse);
        const message = parseSnsMessage(body);
        if (message === null || !(await sns.verify(message, topics))) throw refuse();
        if (message.Type === 'SubscriptionConfirmation') {
          try {
            await sns.confirm(message);
          } catch {
            throw httpError(503, 'Could not confirm the subscription: retry later', { code: 'UNAVAILABLE' });
          }
          return null;
        }
        if (message.Type !== 'Notification') return null;
        let inner: unknown;
        try {
          inner = JSON.parse(message.Message);
        } catch {
          return null;
        }
        return sesNotices(message.MessageId, inner);
      },
    );
  }

  if (providers.sendgridPublicKey) {
    // Loaded only where SendGrid is configured (its ECDSA library is a tenth of a start's imports).
    const { EventWebhook } = createRequire(import.meta.url)(
      '@sendgrid/eventwebhook',
    ) as typeof import('@sendgrid/eventwebhook');
    const verifier = new EventWebhook();
    const key = verifier.convertPublicKeyToECDSA(sendgridPem(providers.sendgridPublicKey));
    route(
      'sendgrid',
      'SendGrid Event Webhook',
      'A signed Event Webhook (`X-Twilio-Email-Event-Webhook-Signature` over the timestamp and the body, ECDSA ' +
        'with `SENDGRID_WEBHOOK_PUBLIC_KEY`), the timestamp within 5 minutes of the server clock. Events: delivered, deferred, bounce (`blocked` → soft), dropped ' +
        '(→ `email.failed`), spamreport, open (`sg_machine_open` → `machine: true`), click; the Tern event id ' +
        'derives from `sg_event_id`.',
      async (request, raw) => {
        const signature = header(request, 'x-twilio-email-event-webhook-signature');
        const timestamp = header(request, 'x-twilio-email-event-webhook-timestamp');
        let ok = false;
        try {
          ok =
            signature !== undefined &&
            timestamp !== undefined &&
            freshTimestamp(timestamp, deps.now()) &&
            verifier.verifySignature(key, raw.toString('utf8'), signature, timestamp);
        } catch {
          ok = false;
        }
        if (!ok) throw refuse();
        return sendgridNotices(parseJson(raw));
      },
    );
  }

  if (providers.postmark) {
    const { user, password } = providers.postmark;
    route(
      'postmark',
      'Postmark webhooks',
      'Basic auth (`POSTMARK_WEBHOOK_USER` / `_PASSWORD`, set in the webhook’s URL). Records: Delivery, Bounce ' +
        '(HardBounce and the like → hard; SoftBounce, Transient, DnsError… → soft), SpamComplaint, Open, Click.',
      async (request, raw) => {
        const auth = /^Basic\s+(\S+)$/i.exec(header(request, 'authorization') ?? '')?.[1];
        const decoded = auth === undefined ? '' : Buffer.from(auth, 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        // Both compared, whatever the first gives: the time says nothing about which was wrong.
        const userOk = colon >= 0 && sameSecret(decoded.slice(0, colon), user);
        const passwordOk = colon >= 0 && sameSecret(decoded.slice(colon + 1), password);
        if (!(userOk && passwordOk)) throw refuse();
        return postmarkNotices(parseJson(raw));
      },
    );
  }

  if (providers.mailgunSigningKey) {
    const signingKey = providers.mailgunSigningKey;
    // Kept past twice the age limit: an older signature is refused for its age before the lookup.
    const usedTokens = createUsedTokens(deps.pool, 3 * SIGNATURE_MAX_AGE_MS);
    route(
      'mailgun',
      'Mailgun webhooks',
      'JSON webhooks signed with `MAILGUN_WEBHOOK_SIGNING_KEY` (`signature.signature` = HMAC-SHA256 of ' +
        '`timestamp` + `token`), dated within 5 minutes of the server clock; a token already accepted with ' +
        'another body is a replay (401). Events: delivered, failed (temporary → `email.delayed`, permanent → hard bounce), ' +
        'complained, opened, clicked; the Tern event id derives from the event’s `id`.',
      async (_request, raw) => {
        const body = parseJson(raw, refuse);
        const sig = (body as { signature?: Record<string, unknown> } | null)?.signature ?? {};
        const { timestamp, token, signature } = sig;
        if (typeof timestamp !== 'string' || typeof token !== 'string' || typeof signature !== 'string')
          throw refuse();
        const expected = createHmac('sha256', signingKey)
          .update(timestamp + token)
          .digest('hex');
        if (!sameSecret(expected, signature.toLowerCase())) throw refuse();
        // The signature leaves the body out: too old, or its token seen with another body → a replay.
        const now = deps.now();
        if (!freshTimestamp(timestamp, now)) throw refuse();
        if (!(await usedTokens.claim('mailgun', token, raw, now))) throw refuse();
        return mailgunNotices(body);
      },
    );
  }

  if (providers.resendSecret) {
    const webhook = new Webhook(providers.resendSecret);
    route(
      'resend',
      'Resend webhooks',
      'Standard Webhooks signed with `RESEND_WEBHOOK_SECRET` (`svix-*` or `webhook-*` headers). Events: ' +
        'email.delivered, email.delivery_delayed, email.bounced (Transient → soft), email.complained, ' +
        'email.failed, email.opened, email.clicked; the Tern event id derives from the `svix-id`.',
      async (request, raw) => {
        const id = header(request, 'webhook-id') ?? header(request, 'svix-id');
        const headers = {
          'webhook-id': id ?? '',
          'webhook-timestamp':
            header(request, 'webhook-timestamp') ?? header(request, 'svix-timestamp') ?? '',
          'webhook-signature':
            header(request, 'webhook-signature') ?? header(request, 'svix-signature') ?? '',
        };
        let body: unknown;
        try {
          body = webhook.verify(raw, headers);
        } catch {
          throw refuse();
        }
        return resendNotices(id ?? '', body);
      },
    );
  }
};
