import type { z } from 'zod';
import { isCanonicalDeliveryEvent } from './canonical-events.js';
import { type DeliveryEvent, deliveryEventSchema } from './events.js';

// Ingest's validation of raw events (SPEC §4): the cheap canonical check first, zod for the rest,
// and zod's issues as the sender should read them.

export interface EventIssue {
  index: number;
  path: string;
  message: string;
}

/** Validate a list of raw events; returns the parsed events or every issue with its index. */
export function validateEvents(
  raw: readonly unknown[],
): { ok: true; events: DeliveryEvent[] } | { ok: false; issues: EventIssue[] } {
  const events: DeliveryEvent[] = [];
  const issues: EventIssue[] = [];
  raw.forEach((item, index) => {
    // Most senders post events already in canonical form: the cheap check accepts only what zod
    // accepts unchanged (canonical.unit.test.ts), so zod runs only for the rest and names the issues.
    if (isCanonicalDeliveryEvent(item)) {
      events.push(item);
      return;
    }
    const r = deliveryEventSchema.safeParse(item);
    if (r.success) {
      // null recipient/subject mean "erased" (a consumer's view); a sender always knows both.
      if (r.data.type === 'email.queued' && (r.data.data.toEmail === null || r.data.data.subject === null)) {
        for (const field of ['toEmail', 'subject'] as const)
          if (r.data.data[field] === null)
            issues.push({
              index,
              path: `data.${field}`,
              message: field === 'toEmail' ? 'toEmail must be an email address' : 'subject must be a string',
            });
      } else events.push(r.data);
    } else
      for (const i of r.error.issues)
        for (const issue of describeIssue(item, i)) issues.push({ index, ...issue });
  });
  return issues.length === 0 ? { ok: true, events } : { ok: false, issues };
}

/**
 * Zod's issue as the sender should read it (SPEC §4: the message names the field): an absent
 * field says "<field> is required" rather than what type it should have had, and each unknown
 * field gets its own issue whose path points at it.
 */
function describeIssue(item: unknown, issue: z.core.$ZodIssue): Omit<EventIssue, 'index'>[] {
  const path = issue.path.map(String);
  const field = path.at(-1);
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({
      path: [...path, key].join('.'),
      message: `${key} is not an allowed field`,
    }));
  }
  // An optional field raises no issue when absent, so any issue on an absent field means it is required.
  if (field !== undefined && isAbsent(item, path)) {
    return [{ path: path.join('.'), message: `${field} is required` }];
  }
  if (issue.code === 'invalid_type' && issue.expected === 'object') {
    return [{ path: path.join('.'), message: `${field ?? 'event'} must be an object` }];
  }
  return [{ path: path.join('.'), message: issue.message }];
}

/** True when the value at `path` is missing (or undefined) in the raw input. */
function isAbsent(item: unknown, path: readonly string[]): boolean {
  let value: unknown = item;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return true;
    value = (value as Record<string, unknown>)[key];
  }
  return value === undefined;
}
