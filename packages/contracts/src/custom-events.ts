import { z } from 'zod';
import { existingContactEmailSchema } from './contacts.js';

/**
 * Custom events (SPEC §27): what a program reports of a contact (`POST /events/track`), which
 * automations may trigger on and the event stream carries beside Tern's own events.
 */

/** Prefixes only Tern's own event types use: a custom event may not take them. */
export const RESERVED_EVENT_PREFIX = /^(email|contact|domain)\./;
export const CUSTOM_EVENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$/;

/** The name of a custom event (`POST /events/track`): 1..100 of `A-Z a-z 0-9 _ . : -`. */
export const customEventNameSchema = z
  .string({ error: 'name must be a string' })
  .regex(CUSTOM_EVENT_NAME, { error: 'name must be 1 to 100 characters of A-Z, a-z, 0-9, _ . : -' })
  .refine((n) => !RESERVED_EVENT_PREFIX.test(n), {
    error: 'name must not start with email., contact. or domain.',
  })
  .meta({ description: 'Name of the custom event.', example: 'signup.completed' });

export const trackEventBodySchema = z
  .strictObject({
    email: existingContactEmailSchema,
    name: customEventNameSchema,
    data: z
      .record(z.string(), z.unknown())
      .optional()
      .refine((d) => d === undefined || JSON.stringify(d).length <= 16_384, {
        error: 'data must be at most 16384 bytes of JSON',
      })
      .meta({ description: 'Free-form fields of the event (≤ 16 KiB of JSON).' }),
  })
  .meta({ examples: [{ email: 'ada@example.com', name: 'signup.completed', data: { plan: 'pro' } }] });
export type TrackEventBody = z.infer<typeof trackEventBodySchema>;

export const trackEventResponseSchema = z
  .object({
    id: z.string().meta({ description: 'The event’s id, `evt_…`.' }),
    name: z.string(),
    contactId: z.string(),
  })
  .meta({
    examples: [
      {
        id: 'evt_4Hs9dK2mQ7wE1rT6yU3iO8pA',
        name: 'signup.completed',
        contactId: 'ct_4Hs9dK2mQ7wE1rT6yU3iO8pA',
      },
    ],
  });
