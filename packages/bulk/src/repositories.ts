import { bindPool, type Repository, withTransaction } from '@tern/kernel';
import { templateExists } from '@tern/templates';
import type pg from 'pg';
import {
  deleteAutomation,
  getAutomation,
  insertAutomation,
  listAutomations,
  listRuns,
  recordAutomationEvent,
  recordAutomationEvents,
  trackEvent,
  updateAutomation,
} from './automations/store.js';
import {
  type CampaignRow,
  campaignOf,
  campaignSource,
  cancelCampaign,
  type DraftOutcome,
  deleteDraft,
  getCampaign,
  getCampaignRow,
  insertCampaign,
  listCampaigns,
  requestSend,
  updateDraft,
} from './campaigns/store.js';
import { exportContacts, upsertContacts } from './contacts/import.js';
import { deleteProperty, insertProperty, listProperties, propertyTypes } from './contacts/properties.js';
import {
  deleteContact,
  getContact,
  insertContact,
  listAudiences,
  listContacts,
  updateContact,
} from './contacts/store.js';
import { unsubscribeAddress } from './contacts/unsubscribe.js';
import {
  countMatching,
  deleteSegment,
  getSegment,
  insertSegment,
  listSegments,
  matchingContacts,
  updateSegment,
} from './segments/store.js';
import {
  cancelEnrollment,
  enroll,
  getSequence,
  insertSequence,
  listEnrollments,
  listSequences,
  updateSequence,
} from './sequences/store.js';
import { type DailyKind, mailDaily } from './stats.js';
import {
  contactPreferences,
  deleteTopic,
  getTopic,
  insertTopic,
  listTopics,
  savePreferences,
  unknownTopics,
  updateTopic,
} from './topics/store.js';

const contactStatements = {
  insert: insertContact,
  get: getContact,
  list: listContacts,
  update: updateContact,
  delete: deleteContact,
  audiences: listAudiences,
  /** One CSV import batch (`upsertContacts`). */
  upsert: upsertContacts,
  /** Every contact of the tenant (or an audience) in id order, a page at a time. */
  export: exportContacts,
  /** Contact properties (SPEC §27): definitions, and their types for the checks of a write. */
  insertProperty,
  properties: listProperties,
  deleteProperty,
  propertyTypes,
  /** Topic ids a write names that the tenant does not have. */
  unknownTopics,
};

/**
 * Contacts and audiences of a tenant (SPEC §14), over one pool. `insert`, `update` and each CSV
 * import batch (`upsert`) put their `contact.created` / `contact.updated` in the automations'
 * trigger inbox in the same transaction (SPEC §27), under an id derived from the contact (and, for
 * an update, the write's time): an imported contact triggers what a created one does.
 */
export type ContactStore = Repository<typeof contactStatements>;

export function createContactStore(pool: pg.Pool): ContactStore {
  const bound = bindPool(pool, contactStatements);
  return {
    ...bound,
    insert: (tenantId, c, now) =>
      withTransaction(pool, async (client) => {
        const created = await insertContact(client, tenantId, c, now);
        if (created !== 'exists')
          await recordAutomationEvent(client, {
            tenantId,
            id: `cev_${created.id}:created`,
            name: 'contact.created',
            contactId: created.id,
            at: now,
          });
        return created;
      }),
    update: (tenantId, id, patch, now) =>
      withTransaction(pool, async (client) => {
        const updated = await updateContact(client, tenantId, id, patch, now);
        if (updated !== null && updated !== 'exists')
          await recordAutomationEvent(client, {
            tenantId,
            id: `cev_${updated.id}:updated:${now.getTime()}`,
            name: 'contact.updated',
            contactId: updated.id,
            at: now,
          });
        return updated;
      }),
    upsert: (tenantId, batch, addAudience, now) =>
      withTransaction(pool, async (client) => {
        const written = await upsertContacts(client, tenantId, batch, addAudience, now);
        await recordAutomationEvents(client, {
          tenantId,
          name: 'contact.created',
          at: now,
          events: written.createdIds.map((id) => ({ id: `cev_${id}:created`, contactId: id })),
        });
        await recordAutomationEvents(client, {
          tenantId,
          name: 'contact.updated',
          at: now,
          events: written.updatedIds.map((id) => ({
            id: `cev_${id}:updated:${now.getTime()}`,
            contactId: id,
          })),
        });
        return written;
      }),
  };
}

const campaignStatements = {
  insert: insertCampaign,
  get: getCampaign,
  getRow: getCampaignRow,
  list: listCampaigns,
  /** The campaign of a row, with its stats. */
  of: campaignOf,
  deleteDraft,
  requestSend,
  cancel: cancelCampaign,
  /** Whether the tenant has the template a campaign or a sequence step names. */
  templateExists,
};

/** Campaigns of a tenant (SPEC §15), over one pool. The fan-out is the worker's. */
export interface CampaignStore extends Repository<typeof campaignStatements> {
  /**
   * `updateDraft` in one transaction with `check`, which sees the updated row: a `check` that
   * throws rolls the update back (a draft must keep content).
   */
  updateDraft(
    tenantId: string,
    id: string,
    patch: Parameters<typeof updateDraft>[3],
    at: Date,
    check: (row: CampaignRow) => void,
  ): Promise<DraftOutcome>;
  /** The campaign's mail per UTC day since `since` (`mailDaily`). */
  daily(tenantId: string, id: string, since: Date): Promise<{ day: string; kind: DailyKind; n: number }[]>;
}

export function createCampaignStore(pool: pg.Pool): CampaignStore {
  return {
    ...bindPool(pool, campaignStatements),
    updateDraft: (tenantId, id, patch, at, check) =>
      withTransaction(pool, async (client) => {
        const updated = await updateDraft(client, tenantId, id, patch, at);
        if (updated.kind === 'ok') check(updated.row);
        return updated;
      }),
    daily: (tenantId, id, since) => mailDaily(pool, tenantId, campaignSource(id), since),
  };
}

const sequenceStatements = {
  insert: insertSequence,
  get: getSequence,
  list: listSequences,
  update: updateSequence,
  enroll,
  enrollments: listEnrollments,
  cancelEnrollment,
  /** Whether the tenant has the template a step names. */
  templateExists,
};

/** Sequences and their enrollments (SPEC §15), over one pool. The schedule is the worker's. */
export type SequenceStore = Repository<typeof sequenceStatements>;

export function createSequenceStore(pool: pg.Pool): SequenceStore {
  return bindPool(pool, sequenceStatements);
}

const topicStatements = {
  insert: insertTopic,
  get: getTopic,
  list: listTopics,
  update: updateTopic,
  delete: deleteTopic,
};

/** Topics of a tenant (SPEC §27), over one pool. */
export type TopicStore = Repository<typeof topicStatements>;

export function createTopicStore(pool: pg.Pool): TopicStore {
  return bindPool(pool, topicStatements);
}

const segmentStatements = {
  insert: insertSegment,
  get: getSegment,
  list: listSegments,
  update: updateSegment,
  delete: deleteSegment,
  /** The contacts a filter matches now: one page and the total. */
  contacts: matchingContacts,
  count: countMatching,
};

/** Segments of a tenant (SPEC §27), over one pool. */
export type SegmentStore = Repository<typeof segmentStatements>;

export function createSegmentStore(pool: pg.Pool): SegmentStore {
  return bindPool(pool, segmentStatements);
}

const automationStatements = {
  insert: insertAutomation,
  get: getAutomation,
  list: listAutomations,
  update: updateAutomation,
  delete: deleteAutomation,
  runs: listRuns,
  /** Whether the tenant has the template a `send` step names. */
  templateExists,
};

/** Automations and their runs (SPEC §27), over one pool. The runner is the worker's. */
export interface AutomationStore extends Repository<typeof automationStatements> {
  /**
   * `POST /events/track`: a contact's custom event into the trigger inbox and the event stream,
   * in one transaction (`trackEvent`).
   */
  track(e: Parameters<typeof trackEvent>[1]): ReturnType<typeof trackEvent>;
}

export function createAutomationStore(pool: pg.Pool): AutomationStore {
  return {
    ...bindPool(pool, automationStatements),
    track: (e) => withTransaction(pool, (client) => trackEvent(client, e)),
  };
}

const unsubscribeStatements = {
  unsubscribe: unsubscribeAddress,
  /** The preference page's public topics of an address (SPEC §27), and their save. */
  preferences: contactPreferences,
  savePreferences,
};

/**
 * The unsubscribe repository (the api's unsubscribe routes). The erasure's re-keying of the unsubscribe
 * records (`rekeyErasedUnsubscribes`) runs inside its transaction, on its client.
 */
export type UnsubscribeStore = Repository<typeof unsubscribeStatements>;

export function createUnsubscribeStore(pool: pg.Pool): UnsubscribeStore {
  return bindPool(pool, unsubscribeStatements);
}
