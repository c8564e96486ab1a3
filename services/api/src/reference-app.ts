import { createClient } from '@clickhouse/client';
import { createJwtVerifier } from '@tern/auth';
import type { EventStream } from '@tern/event-log';
import { createKeyring } from '@tern/privacy';
import { createDnsChecker, createSendingDomains } from '@tern/sending-domains';
import { createSecretBox } from '@tern/webhooks';
import pg from 'pg';
import { createApiApp } from './app.js';

/**
 * The query API as documented, without reachable stores: what `npm run docs:api` and the
 * freshness test render from.
 */
const unused = (): never => {
  throw new Error('the reference app has no event log');
};
const UNUSED_LOG: EventStream = {
  append: unused,
  partitionsOf: unused,
  consume: unused,
  lag: unused,
  spans: unused,
  ping: unused,
  close: async () => {},
};

export async function buildReferenceApp() {
  const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:9/none' });
  return createApiApp({
    data: { pool, ch: createClient({ url: 'http://127.0.0.1:9' }) },
    jwt: createJwtVerifier({ secret: 'api-reference' }),
    policy: { retentionDays: 90 },
    limits: { rateLimit: false },
    features: {
      trackingSecret: 'api-reference-tracking-secret',
      webhooks: {
        secretBox: createSecretBox('api-reference-webhook-secrets-key'),
        urlPolicy: { allowPrivate: false },
      },
      // Only the document is read: no request reaches the log.
      sending: { log: UNUSED_LOG },
      // Creating the keyring reaches no store either (keys are read on use).
      keyring: createKeyring({ pool, encryptionKey: 'api-reference-encryption-key-0123456789' }),
      // Nor the sending domains (no check runs: the poller is not started).
      domains: {
        domains: createSendingDomains({
          pool,
          log: UNUSED_LOG,
          dns: createDnsChecker(),
          sealer: createSecretBox('api-reference-webhook-secrets-key', 'dkim keys'),
          records: {
            bounceSubdomain: 'tern-bounces',
            bounceMxHost: 'bounces.tern.example.net',
            spf: 'v=spf1 ~all',
          },
          now: () => new Date(),
        }),
      },
      // Provider notifications (SPEC §21): every route documented; the credentials are placeholders.
      providers: {
        sesTopicArns: ['arn:aws:sns:eu-west-1:123456789012:tern-ses'],
        sendgridPublicKey: REFERENCE_SENDGRID_KEY,
        postmark: { user: 'postmark', password: 'api-reference-postmark-password' },
        mailgunSigningKey: 'api-reference-mailgun-signing-key',
        resendSecret: 'whsec_YXBpLXJlZmVyZW5jZS1yZXNlbmQtc2VjcmV0',
      },
    },
  });
}

/** A P-256 public key (SPKI, base64) standing for SendGrid's: only parsed, nothing is verified with it. */
export const REFERENCE_SENDGRID_KEY =
  'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEhBpJmb6q+XjeWEcP5NvtcGCcqNNJOebQEjPbWLDtFkaYUWQUz5Lcas2329WQEdkyQ3gdHIMpN3SgXxOC/iEuXg==';
