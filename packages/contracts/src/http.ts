import { z } from 'zod';
import { listMetaSchema, nullableString } from './resources.js';
import { emailStatusSchema } from './status.js';

/** One entry of `GET /emails/logs` (SPEC §7). */
export const emailLogEntrySchema = z.object({
  id: z.string(),
  toEmail: nullableString('Recipient; null once the address was erased (SPEC §14).'),
  subject: nullableString('Subject; null once the recipient was erased (SPEC §14).'),
  status: emailStatusSchema,
  provider: z.string().nullable(),
  messageId: z.string().nullable(),
  createdAt: z.string(),
  tags: z.array(z.string()),
  opened: z
    .boolean()
    .meta({ description: 'A human open was recorded (machine opens do not count, SPEC §21).' }),
  clicked: z.boolean().meta({ description: 'A human click was recorded (scanner clicks do not count).' }),
  complained: z.boolean().meta({ description: 'A complaint was recorded (SPEC §4 `email.complained`).' }),
});
export type EmailLogEntry = z.infer<typeof emailLogEntrySchema>;

/** `meta` of the delivery log: the one list meta of every resource. */
export const logsMetaSchema = listMetaSchema;
export type LogsMeta = z.infer<typeof logsMetaSchema>;

/**
 * `meta` as `GET /emails/logs` answers it: the list meta plus `nextCursor` (SPEC §19), the opaque
 * position after this page, null on the last one. The SDK's `LogsMeta` stays the seed's shape.
 */
export const logsPageMetaSchema = listMetaSchema.extend({ nextCursor: z.string().nullable() });
export type LogsPageMeta = z.infer<typeof logsPageMetaSchema>;

export const logsResponseSchema = z.object({ data: z.array(emailLogEntrySchema), meta: logsMetaSchema });
export type LogsResponse = z.infer<typeof logsResponseSchema>;
