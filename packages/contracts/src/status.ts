import { z } from 'zod';

/** Delivery statuses of a log entry and their fold rank (SPEC §5). */
export const STATUS_RANK = {
  QUEUED: 0,
  SCHEDULED: 0,
  SENT: 1,
  DELAYED: 2,
  DELIVERED: 3,
  BOUNCED: 4,
  FAILED: 4,
  SUPPRESSED: 4,
  CANCELLED: 4,
} as const;
export type EmailStatus = keyof typeof STATUS_RANK;
export const EMAIL_STATUSES = Object.keys(STATUS_RANK) as EmailStatus[];
export const emailStatusSchema = z.enum(EMAIL_STATUSES as [EmailStatus, ...EmailStatus[]]);
