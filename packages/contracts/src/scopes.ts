import { z } from 'zod';

/** The 14 API key scopes of SPEC §3 and those of part four (`inbound:read`, `inbound:manage`: SPEC §24; `events:read`, `events:write`: SPEC §25, §28; `analytics:read`: SPEC §26; `automations:read`, `automations:write`: SPEC §27). */
export const SCOPES = [
  'email:send',
  'email:read',
  'templates:read',
  'contacts:read',
  'contacts:write',
  'campaigns:read',
  'campaigns:write',
  'sequences:read',
  'sequences:write',
  'suppressions:read',
  'suppressions:write',
  'projects:read',
  'projects:write',
  'webhooks:manage',
  'inbound:read',
  'inbound:manage',
  'events:read',
  'events:write',
  'analytics:read',
  'automations:read',
  'automations:write',
] as const;
export type Scope = (typeof SCOPES)[number];
export const scopeSchema = z.enum(SCOPES, { error: `scope must be one of ${SCOPES.join(', ')}` });

export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

export const MISSING_SCOPE_MESSAGE = 'Missing required API key scope';
