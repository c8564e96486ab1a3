/**
 * The names of the API key scopes and of the roles, and nothing else: no zod, no import, so the
 * dashboard's browser bundle takes them from here (`@tern/contracts/scope-names`); `scopes.ts`
 * builds the schema of a scope on them.
 */

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

export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];
