import { CANONICAL_DATA_FIELDS, ERASED_TEXT, EVENT_TYPES, PERSONAL_FIELDS } from '@tern/contracts';

/**
 * Per event type, the personal fields an erasure removes and what it writes in their place
 * (`PERSONAL_FIELDS`): null for email.queued's recipient and subject, `[erased]` for a required
 * field of another type (the timeline stays valid), nothing for an optional one.
 */
export const SCRUB_SPEC: Record<string, { remove: string[]; set: Record<string, string | null> }> =
  Object.fromEntries(
    EVENT_TYPES.filter((type) => PERSONAL_FIELDS[type].length > 0).map((type) => {
      const names: readonly string[] = PERSONAL_FIELDS[type];
      const set: Record<string, string | null> = {};
      for (const name of names) {
        if (type === 'email.queued') set[name] = null;
        else if (CANONICAL_DATA_FIELDS[type][name]?.[1]) set[name] = ERASED_TEXT;
      }
      return [type, { remove: [...names], set }];
    }),
  );

/** SQL: the jsonb `data` (of event type `type`) without its personal fields, per the spec in parameter `spec`. */
export const scrubbedData = (data: string, type: string, spec: string): string =>
  `CASE WHEN ${spec}::jsonb ? (${type})
        THEN ((${data}) - ARRAY(SELECT jsonb_array_elements_text(${spec}::jsonb -> (${type}) -> 'remove')))
             || (${spec}::jsonb -> (${type}) -> 'set')
        ELSE ${data} END`;
