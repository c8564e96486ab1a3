import { z } from 'zod';
import { listResponseSchema, nullableString } from './resources.js';

/**
 * Contacts and audiences (SPEC §14). An audience is a name on the contact (Resend's "audience",
 * without a resource of its own): `GET /contacts?audience=` lists its members, `GET /audiences`
 * lists the names in use with their counts.
 */

/** RFC 5321 limit of a forward path; longer addresses cannot be delivered anyway. */
export const MAX_EMAIL_LENGTH = 254;
export const MAX_NAME_LENGTH = 200;
export const MAX_AUDIENCES = 50;
export const MAX_ATTRIBUTES = 50;
export const MAX_ATTRIBUTE_KEY_LENGTH = 64;
export const MAX_ATTRIBUTE_STRING_LENGTH = 1000;

/** An audience name: 1..64 characters of letters, digits, space, `_ . : -`, not starting or ending with a space. */
export const AUDIENCE_PATTERN = /^[A-Za-z0-9_.:-](?:[A-Za-z0-9 _.:-]{0,62}[A-Za-z0-9_.:-])?$/;
const AUDIENCE_MESSAGE =
  'audience must be 1..64 characters of letters, digits, space, _ . : - (no leading or trailing space)';

/** A contact's address: syntax checked, compared and stored lowercased. */
export const contactEmailSchema = z
  .string({ error: 'email must be a string' })
  .trim()
  .max(MAX_EMAIL_LENGTH, { error: `email must be at most ${MAX_EMAIL_LENGTH} characters` })
  .pipe(z.email({ error: 'email must be a valid email address' }))
  .transform((v) => v.toLowerCase())
  .meta({ description: 'Email address; stored and compared lowercased.', example: 'ada@example.com' });

/** The address of an existing contact of the tenant (a sequence's enrollment, a tracked event). */
export const existingContactEmailSchema = contactEmailSchema.meta({
  description: 'Address of an existing contact of the tenant.',
  example: 'ada@example.com',
});

export const audienceNameSchema = z
  .string({ error: AUDIENCE_MESSAGE })
  .regex(AUDIENCE_PATTERN, { error: AUDIENCE_MESSAGE })
  .meta({ description: 'Audience name.', example: 'newsletter' });

export const audiencesSchema = z
  .array(audienceNameSchema)
  .max(MAX_AUDIENCES, { error: `audiences must have at most ${MAX_AUDIENCES} names` })
  .refine((list) => new Set(list).size === list.length, { error: 'audiences must not repeat a name' })
  .meta({ description: 'Audience names the contact belongs to (unique, case-sensitive).' });

const personNameSchema = (field: string) =>
  z
    .string({ error: `${field} must be a string or null` })
    .max(MAX_NAME_LENGTH, { error: `${field} must be at most ${MAX_NAME_LENGTH} characters` })
    .nullable();

const attributeValueSchema = z.union([
  z.string().max(MAX_ATTRIBUTE_STRING_LENGTH, {
    error: `attribute values must be at most ${MAX_ATTRIBUTE_STRING_LENGTH} characters`,
  }),
  z.number(),
  z.boolean(),
  z.null(),
]);

export const contactAttributesSchema = z
  .record(
    z
      .string()
      .min(1, { error: 'attribute names must not be empty' })
      .max(MAX_ATTRIBUTE_KEY_LENGTH, {
        error: `attribute names must be at most ${MAX_ATTRIBUTE_KEY_LENGTH} characters`,
      }),
    attributeValueSchema,
    { error: 'attributes must be an object of string, number, boolean or null values' },
  )
  .refine((a) => Object.keys(a).length <= MAX_ATTRIBUTES, {
    error: `attributes must have at most ${MAX_ATTRIBUTES} keys`,
  })
  .meta({ description: 'Free attributes (e.g. for template variables).', example: { plan: 'pro' } });
export type ContactAttributes = z.infer<typeof contactAttributesSchema>;

/** Values of the tenant's contact properties (SPEC §27), checked against their types on write; null clears one. */
export const contactPropertiesSchema = z
  .record(
    z.string().min(1).max(MAX_ATTRIBUTE_KEY_LENGTH, { error: 'property names must be 1..64 characters' }),
    z.union([z.string(), z.number(), z.boolean(), z.null()]),
    { error: 'properties must be an object of string, number, boolean or null values' },
  )
  .refine((a) => Object.keys(a).length <= 100, { error: 'properties must have at most 100 keys' })
  .meta({
    description:
      'Values of defined contact properties (`POST /contact-properties`), each of its type (a date as ISO 8601); null removes one. A write merges them into the contact’s.',
    example: { plan: 'pro', seats: 3, trialEndsAt: '2026-07-01T00:00:00.000Z' },
  });

export const TOPIC_CHOICES = ['opt_in', 'opt_out'] as const;
/** A contact's topic choices (SPEC §27): topic id → opt_in | opt_out; null returns one to its default. */
export const contactTopicsSchema = z
  .record(
    z.string().min(1).max(200),
    z.enum(TOPIC_CHOICES, { error: 'a topic choice must be opt_in, opt_out or null' }).nullable(),
    { error: 'topics must be an object of topic id → opt_in | opt_out | null' },
  )
  .refine((a) => Object.keys(a).length <= 100, { error: 'topics must have at most 100 keys' })
  .meta({
    description:
      'Topic choices by topic id; absent = the topic’s default, null forgets a choice. A write merges them into the contact’s.',
    example: { top_3WzN8kQ1vYp0aB7cD9eF2gH4: 'opt_out' },
  });

/** `POST /contacts`. */
export const createContactBodySchema = z
  .strictObject({
    email: contactEmailSchema,
    firstName: personNameSchema('firstName').optional(),
    lastName: personNameSchema('lastName').optional(),
    attributes: contactAttributesSchema.optional(),
    subscribed: z.boolean({ error: 'subscribed must be a boolean' }).optional(),
    audiences: audiencesSchema.optional(),
    properties: contactPropertiesSchema.optional(),
    topics: contactTopicsSchema.optional(),
  })
  .meta({
    examples: [
      { email: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace', audiences: ['newsletter'] },
    ],
  });
export type CreateContactBody = z.infer<typeof createContactBodySchema>;

/** `PATCH /contacts/:id`: any subset; `attributes` and `audiences` replace the whole value, `properties` and `topics` merge. */
export const updateContactBodySchema = createContactBodySchema
  .partial()
  .meta({ examples: [{ firstName: 'Ada', subscribed: false }] });
export type UpdateContactBody = z.infer<typeof updateContactBodySchema>;

const EXAMPLE_CONTACT = {
  id: 'ct_3WzN8kQ1vYp0aB7cD9eF2gH4',
  email: 'ada@example.com',
  firstName: 'Ada',
  lastName: 'Lovelace',
  attributes: { plan: 'pro' },
  subscribed: true,
  unsubscribedAt: null,
  audiences: ['newsletter'],
  properties: { plan: 'pro' },
  topics: {},
  createdAt: '2026-06-15T12:00:00.000Z',
  updatedAt: '2026-06-15T12:00:00.000Z',
};

export const contactSchema = z
  .object({
    id: z.string().meta({ example: 'ct_3WzN8kQ1vYp0aB7cD9eF2gH4' }),
    email: z.string(),
    firstName: z.string().nullable(),
    lastName: z.string().nullable(),
    attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
    subscribed: z.boolean(),
    unsubscribedAt: nullableString('When it last unsubscribed; null while subscribed.'),
    audiences: z.array(z.string()),
    properties: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
      .meta({ description: 'Values of the tenant’s contact properties (a date as an ISO 8601 instant).' }),
    topics: z.record(z.string(), z.enum(TOPIC_CHOICES)).meta({
      description: 'The contact’s own topic choices by topic id; a topic absent here has its default.',
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ examples: [EXAMPLE_CONTACT] });
export type Contact = z.infer<typeof contactSchema>;

export const contactListSchema = listResponseSchema(contactSchema).meta({
  examples: [{ data: [EXAMPLE_CONTACT], meta: { page: 1, limit: 20, total: 1, totalPages: 1 } }],
});
export type ContactList = z.infer<typeof contactListSchema>;

export const audienceSchema = z.object({
  name: z.string(),
  contacts: z.number().int().meta({ description: 'Contacts in the audience.' }),
  subscribed: z.number().int().meta({ description: 'Of those, the subscribed ones.' }),
  reachable: z.number().int().meta({
    description:
      'Of those, the subscribed ones not on the suppression list: whom a campaign to this audience reaches now.',
  }),
});
export const audienceListSchema = listResponseSchema(audienceSchema).meta({
  examples: [
    {
      data: [{ name: 'newsletter', contacts: 1200, subscribed: 1130, reachable: 1121 }],
      meta: { page: 1, limit: 20, total: 1, totalPages: 1 },
    },
  ],
});
export type AudienceList = z.infer<typeof audienceListSchema>;

/** One refused row of `POST /contacts/import`; `row` counts the header as row 1, like a spreadsheet. */
export const importRowErrorSchema = z.object({ row: z.number().int(), message: z.string() });

export const importResultSchema = z
  .object({
    rows: z.number().int().meta({ description: 'Data rows read (header excluded).' }),
    created: z.number().int(),
    updated: z.number().int(),
    failed: z.number().int().meta({ description: 'Rows refused; the first ones are in `errors`.' }),
    errors: z.array(importRowErrorSchema).meta({ description: 'At most 1000 refused rows, in file order.' }),
  })
  .meta({
    examples: [
      {
        rows: 3,
        created: 2,
        updated: 0,
        failed: 1,
        errors: [{ row: 3, message: 'email must be a valid email address' }],
      },
    ],
  });
export type ImportResult = z.infer<typeof importResultSchema>;

/** The columns of the export, in order; the import reads the same names. */
export const CONTACT_CSV_COLUMNS = [
  'id',
  'email',
  'first_name',
  'last_name',
  'subscribed',
  'audiences',
  'attributes',
  'created_at',
  'updated_at',
] as const;
/** Separator of audience names inside the `audiences` cell (names never contain it). */
export const CSV_AUDIENCE_SEPARATOR = ';';

/** `POST /contacts/erase` (SPEC §14): the address whose personal data is erased everywhere. */
export const eraseContactBodySchema = z
  .strictObject({ email: contactEmailSchema })
  .meta({ examples: [{ email: 'ada@example.com' }] });
export type EraseContactBody = z.infer<typeof eraseContactBodySchema>;

const count = (description: string) => z.number().int().min(0).meta({ description });

/** What one erasure removed; a repeat finds nothing left (every count 0). */
export const erasureResultSchema = z
  .object({
    erased: z.literal(true),
    counts: z
      .object({
        dataKeys: count(
          'Data keys deleted: the event log’s sealed copies of this recipient are unreadable from now on.',
        ),
        contacts: count('Contacts deleted (their audience memberships with them).'),
        emails: count('Delivery log entries whose recipient, subject and content became null.'),
        sandboxMessages: count('Messages kept by the sandbox provider, deleted.'),
        webhookDeliveries: count('Webhook delivery records whose body and recipient were removed.'),
        suppressions: count('Clear suppression entries replaced by the keyed hash.'),
        unsubscribes: count(
          'Campaign/sequence unsubscribe records re-keyed to the keyed hash (counts unchanged).',
        ),
      })
      .meta({ description: 'What this call erased (all 0 on a repeat: nothing left to do).' }),
  })
  .meta({
    examples: [
      {
        erased: true,
        counts: {
          dataKeys: 1,
          contacts: 1,
          emails: 3,
          sandboxMessages: 3,
          webhookDeliveries: 6,
          suppressions: 0,
          unsubscribes: 0,
        },
      },
    ],
  });
export type ErasureResult = z.infer<typeof erasureResultSchema>;
