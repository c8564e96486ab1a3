import { bindPool, type PoolBound, withTransaction } from '@tern/jobs';
import { templateExists } from '@tern/templates';
import type pg from 'pg';
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
import {
  deleteContact,
  getContact,
  insertContact,
  listAudiences,
  listContacts,
  updateContact,
} from './contacts/store.js';
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

/** Contacts and audiences of a tenant (SPEC §14), over one pool. */
export interface ContactStore {
  insert: PoolBound<typeof insertContact>;
  get: PoolBound<typeof getContact>;
  list: PoolBound<typeof listContacts>;
  update: PoolBound<typeof updateContact>;
  delete: PoolBound<typeof deleteContact>;
  audiences: PoolBound<typeof listAudiences>;
  /** One CSV import batch (`upsertContacts`). */
  upsert: PoolBound<typeof upsertContacts>;
  /** Every contact of the tenant (or an audience) in id order, a page at a time. */
  export: PoolBound<typeof exportContacts>;
}

export function createContactStore(pool: pg.Pool): ContactStore {
  return bindPool(pool, {
    insert: insertContact,
    get: getContact,
    list: listContacts,
    update: updateContact,
    delete: deleteContact,
    audiences: listAudiences,
    upsert: upsertContacts,
    export: exportContacts,
  });
}

/** Campaigns of a tenant (SPEC §15), over one pool. The fan-out is the worker's. */
export interface CampaignStore {
  insert: PoolBound<typeof insertCampaign>;
  get: PoolBound<typeof getCampaign>;
  getRow: PoolBound<typeof getCampaignRow>;
  list: PoolBound<typeof listCampaigns>;
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
  /** The campaign of a row, with its stats. */
  of: PoolBound<typeof campaignOf>;
  deleteDraft: PoolBound<typeof deleteDraft>;
  requestSend: PoolBound<typeof requestSend>;
  cancel: PoolBound<typeof cancelCampaign>;
  /** Whether the tenant has the template a campaign or a sequence step names. */
  templateExists: PoolBound<typeof templateExists>;
  /** The campaign's mail per UTC day since `since` (`mailDaily`). */
  daily(tenantId: string, id: string, since: Date): Promise<{ day: string; kind: DailyKind; n: number }[]>;
}

export function createCampaignStore(pool: pg.Pool): CampaignStore {
  return {
    ...bindPool(pool, {
      insert: insertCampaign,
      get: getCampaign,
      getRow: getCampaignRow,
      list: listCampaigns,
      of: campaignOf,
      deleteDraft,
      requestSend,
      cancel: cancelCampaign,
      templateExists,
    }),
    updateDraft: (tenantId, id, patch, at, check) =>
      withTransaction(pool, async (client) => {
        const updated = await updateDraft(client, tenantId, id, patch, at);
        if (updated.kind === 'ok') check(updated.row);
        return updated;
      }),
    daily: (tenantId, id, since) => mailDaily(pool, tenantId, campaignSource(id), since),
  };
}

/** Sequences and their enrollments (SPEC §15), over one pool. The schedule is the worker's. */
export interface SequenceStore {
  insert: PoolBound<typeof insertSequence>;
  get: PoolBound<typeof getSequence>;
  list: PoolBound<typeof listSequences>;
  update: PoolBound<typeof updateSequence>;
  enroll: PoolBound<typeof enroll>;
  enrollments: PoolBound<typeof listEnrollments>;
  cancelEnrollment: PoolBound<typeof cancelEnrollment>;
  /** Whether the tenant has the template a step names. */
  templateExists: PoolBound<typeof templateExists>;
}

export function createSequenceStore(pool: pg.Pool): SequenceStore {
  return bindPool(pool, {
    insert: insertSequence,
    get: getSequence,
    list: listSequences,
    update: updateSequence,
    enroll,
    enrollments: listEnrollments,
    cancelEnrollment,
    templateExists,
  });
}
