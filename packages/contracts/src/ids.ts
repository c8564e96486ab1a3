import { z } from 'zod';

/** Tenant, email and event ids: 1..128 characters of `[A-Za-z0-9_.:-]` (SPEC §5). */
export const ID_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;

export const idSchema = (what: string) =>
  z
    .string({ error: `${what} must be a string` })
    .regex(ID_PATTERN, { error: `${what} must be 1..128 characters of [A-Za-z0-9_.:-]` });

export const tenantIdSchema = idSchema('tenantId');
export type TenantId = z.infer<typeof tenantIdSchema>;
