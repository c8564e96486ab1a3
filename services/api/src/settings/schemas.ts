import { trackingSettingsSchema } from '@tern/contracts';
import { z } from 'zod';

/** Schemas of `/tenants/:id/settings` (SPEC §9, §11, §23): requests, responses and their OpenAPI. */

export const MAX_RETENTION_DAYS = 3650;

const retentionDaysSchema = z
  .number({ error: `retentionDays must be an integer from 1 to ${MAX_RETENTION_DAYS}, or null` })
  .int({ error: `retentionDays must be an integer from 1 to ${MAX_RETENTION_DAYS}, or null` })
  .min(1, { error: `retentionDays must be an integer from 1 to ${MAX_RETENTION_DAYS}, or null` })
  .max(MAX_RETENTION_DAYS, {
    error: `retentionDays must be an integer from 1 to ${MAX_RETENTION_DAYS}, or null`,
  })
  .nullable()
  .meta({
    description:
      'Log and analytics retention of the tenant in days; null = the server default (RETENTION_DAYS). ' +
      'Older entries are hidden at once and deleted by the retention job.',
  });

const trackingSchema = trackingSettingsSchema.meta({
  description:
    'Open and click tracking of sent mail (SPEC §11): a pixel and rewritten links. Default both on.',
});

/** SPEC §23: the tenant's send rate. */
export const MAX_SEND_RATE_PER_SECOND = 1_000_000;
const sendRateError = `sendRatePerSecond must be an integer from 1 to ${MAX_SEND_RATE_PER_SECOND}, or null`;
const sendRatePerSecondSchema = z
  .number({ error: sendRateError })
  .int({ error: sendRateError })
  .min(1, { error: sendRateError })
  .max(MAX_SEND_RATE_PER_SECOND, { error: sendRateError })
  .nullable()
  .meta({
    description:
      'Emails per second the tenant’s mail is handed to the provider at most (SPEC §23); null = the server ' +
      'default (SEND_RATE_PER_SECOND, `defaultSendRatePerSecond`).',
  });

/** `tracking` of a PUT: either field alone is merged into the current settings (issue 24, item 16). */
const trackingChangeSchema = trackingSettingsSchema
  .partial()
  .refine((t) => t.opens !== undefined || t.clicks !== undefined, {
    error: 'tracking needs opens, clicks or both',
  })
  .meta({
    description:
      'Open and click tracking of sent mail (SPEC §11): a pixel and rewritten links. Either field alone; the other keeps its value.',
  });

/** An IANA time zone name Node knows (Intl), or null (UTC). */
export const timeZoneSchema = z
  .string({ error: 'timeZone must be an IANA time zone name, e.g. Europe/Paris' })
  .max(64, { error: 'timeZone must be an IANA time zone name, e.g. Europe/Paris' })
  .refine(isTimeZone, { error: 'timeZone must be an IANA time zone name, e.g. Europe/Paris' })
  .nullable()
  .meta({
    description:
      'The IANA time zone of the analytics days and hours (SPEC §26), e.g. `Europe/Paris`; null = UTC.',
  });

export function isTimeZone(name: string): boolean {
  if (!/^[A-Za-z0-9_+\-/]{1,64}$/.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

export const tenantSettingsSchema = z
  .strictObject({
    retentionDays: retentionDaysSchema.optional(),
    tracking: trackingChangeSchema.optional(),
    sendRatePerSecond: sendRatePerSecondSchema.optional(),
    timeZone: timeZoneSchema.optional(),
  })
  .refine(
    (b) =>
      b.retentionDays !== undefined ||
      b.tracking !== undefined ||
      b.sendRatePerSecond !== undefined ||
      b.timeZone !== undefined,
    { error: 'retentionDays, tracking, sendRatePerSecond or timeZone is required' },
  )
  .meta({
    description: 'Fields left out keep their value.',
    examples: [
      { retentionDays: 30 },
      { tracking: { opens: false, clicks: true } },
      { tracking: { opens: false } },
      { sendRatePerSecond: 20 },
      { timeZone: 'Europe/Paris' },
    ],
  });

export const tenantSettingsResponseSchema = z
  .object({
    retentionDays: retentionDaysSchema,
    defaultRetentionDays: z.number().int().meta({
      description: 'The server default (RETENTION_DAYS): the retention while `retentionDays` is null.',
    }),
    tracking: trackingSchema,
    sendRatePerSecond: sendRatePerSecondSchema,
    defaultSendRatePerSecond: z.number().int().meta({
      description:
        'The server default (SEND_RATE_PER_SECOND) while `sendRatePerSecond` is null; 0 = unlimited.',
    }),
    timeZone: timeZoneSchema,
  })
  .meta({
    description: 'The tenant’s settings.',
    examples: [
      {
        retentionDays: 30,
        defaultRetentionDays: 90,
        tracking: { opens: true, clicks: true },
        sendRatePerSecond: null,
        defaultSendRatePerSecond: 100,
        timeZone: null,
      },
    ],
  });
