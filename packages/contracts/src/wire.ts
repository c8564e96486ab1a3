/**
 * The wire types (`@tern/contracts/wire`): every answer the SDK and the dashboard read, spelled out
 * once and zod-free — types only, so importing them adds nothing to a bundle, and the SDK's
 * published declarations fold them in (tsconfig.build.json maps the entry for `dts.resolve`).
 * wire-checks.ts pins each to the output of the schema its route answers with: a drift fails `tsc`.
 */
export type { DomainEventType, EventType, WebhookEventType } from './event-types.js';
export type { Role, Scope } from './scope-names.js';
export type * from './wire-analytics.js';
export type * from './wire-audience.js';
export type * from './wire-mail.js';
