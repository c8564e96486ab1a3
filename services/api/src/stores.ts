import {
  type AutomationStore,
  type CampaignStore,
  type ContactStore,
  createAutomationStore,
  createCampaignStore,
  createContactStore,
  createSegmentStore,
  createSequenceStore,
  createTopicStore,
  createUnsubscribeStore,
  type SegmentStore,
  type SequenceStore,
  type TopicStore,
  type UnsubscribeStore,
} from '@tern/bulk';
import {
  createLogQueries,
  createSuppressionStore,
  type LogQueries,
  type SuppressionStore,
} from '@tern/read-models';
import {
  createEmailStore,
  createIdempotencyStore,
  type EmailStore,
  type IdempotencyStore,
} from '@tern/sending';
import { createTemplateStore, type TemplateStore } from '@tern/templates';
import {
  createProjectStore,
  createTenantSettingsStore,
  type ProjectStore,
  type TenantSettingsStore,
} from '@tern/tenant-settings';
import { createWebhookStore, type WebhookStore } from '@tern/webhooks';
import type pg from 'pg';

/**
 * The repositories of the tenant resources the routes use, each its owner package's factory over
 * the pool: a route calls `deps.templates.get(…)` and never holds SQL itself. `apiRoutes` builds
 * them (`stores` in its options replaces any, for a test's fake).
 */
export interface ApiStores {
  templates: TemplateStore;
  suppressions: SuppressionStore;
  projects: ProjectStore;
  /** Endpoints, deliveries and replays (SPEC §17); `webhooks` is the routes' sealing and URL policy. */
  webhookStore: WebhookStore;
  /** Sent emails: detail, sandbox content, cancel, reschedule (SPEC §11, §22). */
  emails: EmailStore;
  /** Idempotency-Key claims of the sends (SPEC §11). */
  idempotency: IdempotencyStore;
  unsubscribes: UnsubscribeStore;
  /** Contacts and audiences (SPEC §14; `@tern/bulk`). */
  contacts: ContactStore;
  /** Campaigns (SPEC §15; `@tern/bulk`). */
  campaigns: CampaignStore;
  /** Sequences and their enrollments (SPEC §15; `@tern/bulk`). */
  sequences: SequenceStore;
  /** Topics (SPEC §27; `@tern/bulk`). */
  topics: TopicStore;
  /** Segments (SPEC §27; `@tern/bulk`). */
  segments: SegmentStore;
  /** Automations and their runs (SPEC §27; `@tern/bulk`). */
  automations: AutomationStore;
  /** A tenant's retention, tracking and send rate (`/tenants/:id/settings`). */
  tenantSettings: TenantSettingsStore;
  /** The email log's reads outside a tenant resource: `GET /logs` pages, provider notices' message ids. */
  logQueries: LogQueries;
}

/**
 * Every repository of `ApiStores` over one pool, built once by `apiRoutes`, which hands each route
 * plugin the few it uses. `given` ones are kept as they are (a test's fake); the others are built
 * here with their owner's factory.
 */
export function createApiStores(pool: pg.Pool, given: Partial<ApiStores> = {}): ApiStores {
  return {
    templates: given.templates ?? createTemplateStore(pool),
    suppressions: given.suppressions ?? createSuppressionStore(pool),
    projects: given.projects ?? createProjectStore(pool),
    webhookStore: given.webhookStore ?? createWebhookStore(pool),
    emails: given.emails ?? createEmailStore(pool),
    idempotency: given.idempotency ?? createIdempotencyStore(pool),
    unsubscribes: given.unsubscribes ?? createUnsubscribeStore(pool),
    contacts: given.contacts ?? createContactStore(pool),
    campaigns: given.campaigns ?? createCampaignStore(pool),
    sequences: given.sequences ?? createSequenceStore(pool),
    topics: given.topics ?? createTopicStore(pool),
    segments: given.segments ?? createSegmentStore(pool),
    automations: given.automations ?? createAutomationStore(pool),
    tenantSettings: given.tenantSettings ?? createTenantSettingsStore(pool),
    logQueries: given.logQueries ?? createLogQueries(pool),
  };
}
