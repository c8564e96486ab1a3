import { z } from 'zod';
import { idSchema } from './ids.js';
import { nullableString } from './resources.js';

/**
 * Sending domains (SPEC §20): the bodies and answers of `/domains*`, and the two events a domain's
 * verification appends to the log (`domain.verified`, `domain.failed`) for the webhook dispatcher.
 */

export const DOMAIN_STATUSES = ['pending', 'verified', 'failed'] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];

/** What each published record is for, in the order Tern lists them. */
export const DOMAIN_RECORD_PURPOSES = [
  'dkim',
  'return_path_mx',
  'return_path_spf',
  'dmarc',
  'inbound_mx',
] as const;
export type DomainRecordPurpose = (typeof DOMAIN_RECORD_PURPOSES)[number];

/** The records a domain needs for `verified`; DMARC is advice and never blocks sending. */
export const REQUIRED_RECORD_PURPOSES: readonly DomainRecordPurpose[] = [
  'dkim',
  'return_path_mx',
  'return_path_spf',
];

const NAME_MESSAGE = 'name must be a domain name such as example.com (an IDN in its xn-- form)';
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * A domain name as Tern stores it: lowercase, no trailing dot. Null when it is not a name mail can
 * come from — at least two labels of letters, digits and inner hyphens (≤ 63 each, ≤ 253 in all),
 * a top-level label that is not all digits (so no IP address).
 */
export function normalizeDomainName(raw: string): string | null {
  const name = raw.trim().toLowerCase().replace(/\.$/, '');
  if (name.length === 0 || name.length > 253) return null;
  const labels = name.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) return null;
  if (/^\d+$/.test(labels.at(-1)!)) return null;
  return name;
}

/** The domain part of an address (`a@Mail.Example.com` → `mail.example.com`), or null. */
export function addressDomain(address: string): string | null {
  const at = address.lastIndexOf('@');
  return at < 0 ? null : normalizeDomainName(address.slice(at + 1));
}

/**
 * The name and each parent that could sign for it, most specific first, down to two labels:
 * `a.mail.example.com` → `[a.mail.example.com, mail.example.com, example.com]`.
 */
export function signingCandidates(name: string): string[] {
  const labels = name.split('.');
  const out: string[] = [];
  for (let i = 0; i <= labels.length - 2; i++) out.push(labels.slice(i).join('.'));
  return out;
}

export const createDomainBodySchema = z
  .strictObject({
    name: z
      .string({ error: NAME_MESSAGE })
      .max(254, { error: NAME_MESSAGE })
      .refine((v) => normalizeDomainName(v) !== null, { error: NAME_MESSAGE })
      .meta({
        description:
          'The domain mail will come from (the `From` domain, or a parent of it). Stored lowercase without a trailing dot.',
        example: 'example.com',
      }),
  })
  .meta({ examples: [{ name: 'example.com' }] });
export type CreateDomainBody = z.infer<typeof createDomainBodySchema>;

export const domainRecordSchema = z
  .object({
    purpose: z.enum(DOMAIN_RECORD_PURPOSES).meta({
      description:
        '`dkim`: the public key receivers check signatures with; `return_path_mx` / `return_path_spf`: the bounce ' +
        'subdomain the envelope sender uses (its MX brings bounces back, its SPF authorises the relay); `dmarc`: a ' +
        'suggested policy, `verified` once any DMARC record exists; `inbound_mx` (a receiving domain, SPEC §24): the ' +
        'MX that brings its mail to Tern (`10 <INBOUND_MX_HOST>`).',
    }),
    type: z.enum(['TXT', 'MX']),
    name: z.string().meta({ description: 'The full DNS name to publish the record at.' }),
    value: z.string().meta({
      description:
        'The exact value (TXT: the text, split into 255-character strings by the DNS provider if needed; MX: the mail ' +
        'host, any priority — 10 is usual).',
    }),
    status: z.enum(DOMAIN_STATUSES).meta({
      description:
        '`verified`: found with exactly this value; `pending`: not found (yet); `failed`: found with another value.',
    }),
  })
  .meta({ description: 'A DNS record to publish.' });
export type DomainRecord = z.infer<typeof domainRecordSchema>;

const EXAMPLE_KEY =
  'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo9z+40RQzuVaE8AkAFmxZzow3x+VJYKdjykkJ0iT9wCS0DRTXu269V264Vf/3jvredZiKRkgwlL9xNAwxXFg0x/XFw005UWVRIkdgcKWTjpBP2dPwVZ4WWC+9aGVd+Gyn1o0CLelf4rEjGoXbAAEgAqeGUxrcIlbjXfbcmwIDAQAB';

export const domainSchema = z
  .object({
    id: z.string().meta({ description: 'Domain id, `dom_…`.' }),
    name: z.string(),
    status: z.enum(DOMAIN_STATUSES).meta({
      description:
        '`pending` until the DKIM and return-path records match (re-checked with backoff for 72 h, then `failed`); ' +
        '`verified` (re-checked daily; a record gone or changed → `failed`).',
    }),
    records: z.array(domainRecordSchema),
    receiving: z.boolean().meta({
      description: 'Whether Tern receives mail at the domain (SPEC §24; `PATCH /domains/:id { receiving }`).',
    }),
    /** Why the domain is not verified: the records not found or with another value, by name; null when verified. */
    reason: z.string().nullable().meta({
      description:
        'Why it is not verified, naming each record that is missing or has another value; null when verified.',
    }),
    createdAt: z.string().meta({ description: 'ISO 8601.' }),
    verifiedAt: nullableString('When it was last found verified after not being so; null until then.'),
    lastCheckedAt: nullableString('When the DNS was last read; null before.'),
  })
  .meta({
    description: 'A sending domain and the records to publish for it.',
    examples: [
      {
        id: 'dom_8Kd2mQ7wE1rT6yU3iO9pAs4L',
        name: 'example.com',
        status: 'pending',
        records: [
          {
            purpose: 'dkim',
            type: 'TXT',
            name: 'tern202606-3f9a1c2e._domainkey.example.com',
            value: `v=DKIM1; k=rsa; p=${EXAMPLE_KEY}`,
            status: 'pending',
          },
          {
            purpose: 'return_path_mx',
            type: 'MX',
            name: 'tern-bounces.example.com',
            value: 'bounces.tern.example.net',
            status: 'pending',
          },
          {
            purpose: 'return_path_spf',
            type: 'TXT',
            name: 'tern-bounces.example.com',
            value: 'v=spf1 include:spf.tern.example.net ~all',
            status: 'pending',
          },
          {
            purpose: 'dmarc',
            type: 'TXT',
            name: '_dmarc.example.com',
            value: 'v=DMARC1; p=none;',
            status: 'pending',
          },
        ],
        receiving: false,
        reason:
          'not found: tern202606-3f9a1c2e._domainkey.example.com (TXT), tern-bounces.example.com (MX), tern-bounces.example.com (TXT)',
        createdAt: '2026-06-15T12:00:00.000Z',
        verifiedAt: null,
        lastCheckedAt: '2026-06-15T12:00:00.000Z',
      },
    ],
  });
export type Domain = z.infer<typeof domainSchema>;

// --- Events ------------------------------------------------------------------------------------

export { DOMAIN_EVENT_TYPES, type DomainEventType } from './event-types.js';

/** What a domain event carries: the domain as it was found (no key material beyond the public DKIM record). */
export const domainEventData = z.strictObject({
  name: z.string().max(253),
  status: z.enum(DOMAIN_STATUSES),
  records: z.array(domainRecordSchema.strict()).max(10),
  reason: z.string().max(2000).nullable(),
  verifiedAt: z.iso.datetime({ offset: true }).nullable(),
});

const domainEnvelope = {
  id: idSchema('id'),
  tenantId: idSchema('tenantId'),
  domainId: idSchema('domainId'),
  occurredAt: z.iso.datetime({ offset: true, error: 'occurredAt must be an ISO 8601 timestamp' }),
  data: domainEventData,
};

export const domainVerified = z.strictObject({ ...domainEnvelope, type: z.literal('domain.verified') });
export const domainFailed = z.strictObject({ ...domainEnvelope, type: z.literal('domain.failed') });

/**
 * A domain's verification outcome. Only Tern appends these (ingest's `POST /events` takes delivery
 * events only); the projector leaves them alone and the dispatcher delivers them to webhooks.
 */
export const domainEventSchema = z.discriminatedUnion('type', [domainVerified, domainFailed]);
export type DomainEvent = z.infer<typeof domainEventSchema>;

/** `PATCH /domains/:id` (SPEC §24): turns receiving at the domain on or off. */
export const updateDomainBodySchema = z
  .strictObject({
    receiving: z.boolean({ error: 'receiving must be a boolean' }).meta({
      description:
        'true: Tern receives mail at the domain; adds the `inbound_mx` record (`10 <INBOUND_MX_HOST>`), verified like the others.',
    }),
  })
  .meta({ examples: [{ receiving: true }] });
export type UpdateDomainBody = z.infer<typeof updateDomainBodySchema>;

/** `GET /domains/:id/dmarc?days=` (SPEC §26): the window, 1–365 days, default 30. */
export const dmarcQuerySchema = z.strictObject({
  days: z.coerce
    .number({ error: 'days must be an integer from 1 to 365' })
    .int({ error: 'days must be an integer from 1 to 365' })
    .min(1, { error: 'days must be an integer from 1 to 365' })
    .max(365, { error: 'days must be an integer from 1 to 365' })
    .default(30),
});

const passFail = z.strictObject({ pass: z.number().int(), fail: z.number().int() });

/** One sending source of a domain as DMARC reporters saw it. */
export const dmarcSourceSchema = z.strictObject({
  sourceIp: z.string().meta({ description: 'The IP address that sent mail as the domain.' }),
  count: z.number().int().meta({ description: 'Messages reported from it in the window.' }),
  disposition: z
    .strictObject({ none: z.number().int(), quarantine: z.number().int(), reject: z.number().int() })
    .meta({ description: 'Messages by the policy the receivers applied.' }),
  dkim: passFail.meta({ description: 'Messages by DMARC-aligned DKIM result.' }),
  spf: passFail.meta({ description: 'Messages by DMARC-aligned SPF result.' }),
  reporters: z
    .array(z.string())
    .meta({ description: 'The reporting organisations (report_metadata.org_name).' }),
  firstSeen: z.iso
    .datetime({ offset: true })
    .meta({ description: 'Start of the earliest report naming it.' }),
  lastSeen: z.iso.datetime({ offset: true }).meta({ description: 'End of the latest report naming it.' }),
});

export const dmarcSummarySchema = z
  .strictObject({
    domain: z.string(),
    days: z.number().int(),
    reports: z
      .number()
      .int()
      .meta({ description: 'Aggregate reports of the domain whose period ended in the window.' }),
    rejected: z.number().int().meta({
      description: 'Report attachments of the tenant refused in the window (malformed, oversized, a bomb).',
    }),
    messages: z.number().int().meta({ description: 'Messages reported, all sources.' }),
    sources: z
      .array(dmarcSourceSchema)
      .meta({ description: 'Sending sources by IP, most mail first (at most 1000).' }),
  })
  .meta({
    examples: [
      {
        domain: 'example.com',
        days: 30,
        reports: 2,
        rejected: 0,
        messages: 45,
        sources: [
          {
            sourceIp: '192.0.2.10',
            count: 42,
            disposition: { none: 42, quarantine: 0, reject: 0 },
            dkim: { pass: 42, fail: 0 },
            spf: { pass: 42, fail: 0 },
            reporters: ['google.com'],
            firstSeen: '2026-11-30T00:00:00.000Z',
            lastSeen: '2026-11-30T23:59:59.000Z',
          },
        ],
      },
    ],
  });
export type DmarcSummaryBody = z.infer<typeof dmarcSummarySchema>;
