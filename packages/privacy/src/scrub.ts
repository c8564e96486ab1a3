import { ERASED_TEXT, EVENT_TYPES, erasedValueOf, PERSONAL_FIELDS, recipientsOf } from '@tern/contracts';

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
        const v = erasedValueOf(type, name);
        if (v !== undefined) set[name] = v;
      }
      return [type, { remove: [...names], set }];
    }),
  );

/** SQL: the jsonb `data` (of event type `type`) without its personal fields, per the spec in parameter `spec`. */
export const scrubbedData = (data: string, type: string, spec: string): string =>
  `CASE WHEN ${spec}::jsonb ? (${type})
        THEN ((${data}) - ARRAY(SELECT jsonb_array_elements_text(${spec}::jsonb -> (${type}) -> 'remove')))
             || (${spec}::jsonb -> (${type}) -> 'set')
             -- An outcome that named one recipient still names one, erased (SPEC §22).
             || CASE WHEN (${data}) ? 'recipient' THEN '{"recipient": "${ERASED_TEXT}"}'::jsonb ELSE '{}'::jsonb END
        ELSE ${data} END`;

/** `entry` (an address, or `Name <address>`) is `address` (lowercased). */
function namesAddress(entry: unknown, address: string): boolean {
  if (typeof entry !== 'string') return false;
  const e = entry.trim().toLowerCase();
  return e === address || e.endsWith(`<${address}>`);
}

/**
 * A message (send content or sandbox copy) without the address in its to, cc, bcc and reply-to;
 * null when it has none there. `to` keeps its form (a string stays one while it names another).
 */
export function withoutCopies(
  message: Record<string, unknown>,
  address: string,
): Record<string, unknown> | null {
  let changed = false;
  const out = { ...message };
  for (const field of ['to', 'cc', 'bcc'] as const) {
    const value = message[field];
    if (typeof value !== 'string' && !Array.isArray(value)) continue;
    const list = recipientsOf(value);
    const kept = list.filter((entry) => !namesAddress(entry, address));
    if (kept.length !== list.length || (Array.isArray(value) && kept.length !== value.length)) {
      out[field] = typeof value === 'string' && kept.length === 1 ? kept[0] : kept;
      changed = true;
    }
  }
  if (namesAddress(message.replyTo, address)) {
    out.replyTo = null;
    changed = true;
  }
  return changed ? out : null;
}

/** Whether a message still has someone to go to. */
export const hasRecipients = (m: Record<string, unknown>): boolean =>
  recipientsOf(m.to).length + recipientsOf(m.cc).length + recipientsOf(m.bcc).length > 0;

/**
 * A regular expression (JavaScript and PostgreSQL alike) matching `address` (lowercased) in
 * lowercased text, not inside a longer word: `cc.person@example.com` is not found inside
 * `bcc.person@example.com`. Where text is ambiguous (`report-for-x@example.com.txt`: a file name,
 * or the address `report-for-x@…`?) it matches: an erasure scrubs too much rather than too little.
 */
export const mentionPattern = (address: string): string =>
  `(?<![a-z0-9])${address.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![a-z0-9-])`;

/**
 * `value` with every mention of `address` (any case) in its strings replaced by `[erased]`, keys
 * kept; null when nothing named it (issue 40 item 10: a Bcc's address inside an attachment's file
 * name, a subject or a body of another person's mail outlived the erasure).
 */
export function withoutMentions<T>(value: T, address: string): T | null {
  const pattern = new RegExp(mentionPattern(address), 'gi');
  let changed = false;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const next = v.replace(pattern, ERASED_TEXT);
      if (next !== v) changed = true;
      return next;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  const out = walk(value) as T;
  return changed ? out : null;
}
