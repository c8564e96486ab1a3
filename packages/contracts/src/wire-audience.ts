import type { MailOutcomes } from './wire-analytics.js';
import type { List } from './wire-mail.js';

// The answers of the audience routes (contacts, properties, topics, segments, campaigns,
// sequences, automations), spelled out once, zod-free (see wire-mail.ts).

/** A contact (SPEC §14). */
export interface Contact {
  id: string;
  /** Stored lowercased. */
  email: string;
  firstName: string | null;
  lastName: string | null;
  attributes: Record<string, string | number | boolean | null>;
  subscribed: boolean;
  /** When it last unsubscribed; null while subscribed. */
  unsubscribedAt: string | null;
  audiences: string[];
  /** Values of the tenant's contact properties (SPEC §27); a date as an ISO 8601 instant. */
  properties: Record<string, string | number | boolean>;
  /** The contact's own topic choices by topic id; a topic absent here has its default. */
  topics: Record<string, 'opt_in' | 'opt_out'>;
  createdAt: string;
  updatedAt: string;
}

export type ContactList = List<Contact>;

export interface Audience {
  name: string;
  contacts: number;
  subscribed: number;
  /** Subscribed and not suppressed: whom a campaign to this audience reaches now. */
  reachable: number;
}

export type AudienceList = List<Audience>;

/** What a CSV upload of contacts (`contacts.importCsv`) created, updated and refused. */
export interface ImportResult {
  rows: number;
  created: number;
  updated: number;
  failed: number;
  /** The first 1000 refused rows; `row` counts the header as row 1. */
  errors: { row: number; message: string }[];
}

/** What `POST /contacts/erase` removed (SPEC §14); every count is 0 when the address was already erased. */
export interface ErasureResult {
  erased: true;
  counts: {
    /** Data keys deleted: the event log's encrypted copies can no longer be read. */
    dataKeys: number;
    contacts: number;
    /** Log entries whose recipient, subject and content became null. */
    emails: number;
    sandboxMessages: number;
    webhookDeliveries: number;
    suppressions: number;
    unsubscribes: number;
  };
}

export type ContactPropertyType = 'string' | 'number' | 'boolean' | 'date';

/** SPEC §27 contact properties: a typed definition of the values contacts carry. */
export interface ContactProperty {
  name: string;
  type: ContactPropertyType;
  createdAt: string;
}

/** SPEC §27 topics: what contacts subscribe to. */
export interface Topic {
  id: string;
  name: string;
  /** What a contact that never chose gets. */
  default: 'opt_in' | 'opt_out';
  /** Shown on the preference page. */
  public: boolean;
  createdAt: string;
  updatedAt: string;
}

/**
 * A segment filter (SPEC §27), at most 8 deep and 100 clauses; also the condition of an
 * automation's `if` step, evaluated on the run's contact.
 */
export type SegmentFilter =
  | { and: SegmentFilter[] }
  | { or: SegmentFilter[] }
  | { not: SegmentFilter }
  | {
      property: string;
      op: 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'contains' | 'exists';
      value?: string | number | boolean | undefined;
    }
  | { audience: string }
  | { topic: string }
  | { engagement: 'opened' | 'clicked' | 'bounced' | 'received'; days: number }
  | { tag: string }
  | { campaign: string };

export interface Segment {
  id: string;
  name: string;
  filter: SegmentFilter;
  createdAt: string;
  updatedAt: string;
}

/** Counts of a campaign's (or a sequence step's) emails, from the delivery log (SPEC §15). */
export interface MailStats extends MailOutcomes {
  recipients: number;
  unsubscribed: number;
  /** Recipients skipped: their message could not be composed (nothing sent); not in `recipients`. */
  failed: number;
}

export type CampaignStatus = 'draft' | 'scheduled' | 'sending' | 'sent' | 'cancelled';

/** A campaign (SPEC §15). */
export interface Campaign {
  id: string;
  name: string;
  from: string;
  /** The audience, or null when the campaign goes to a segment. */
  audience: string | null;
  /** The segment (SPEC §27) instead of an audience, evaluated once when it starts sending. */
  segment: string | null;
  /** Only this topic's subscribers get it; null: every subscribed contact. */
  topic: string | null;
  templateId: string | null;
  subject: string | null;
  html: string | null;
  text: string | null;
  status: CampaignStatus;
  scheduledAt: string | null;
  sentAt: string | null;
  /** The campaign's pace in emails per minute (SPEC §23), or null (as fast as the tenant's send rate allows). */
  sendRatePerMinute: number | null;
  createdAt: string;
  updatedAt: string;
  stats: MailStats;
}

/** One UTC day of a campaign's emails: each counted once per kind, on the day of its first such event. */
export interface CampaignDay {
  date: string;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
}

export interface SequenceStep {
  delayMinutes: number;
  templateId: string | null;
  subject: string | null;
  html: string | null;
  text: string | null;
  stats: MailStats;
}

/** A sequence (SPEC §15). */
export interface Sequence {
  id: string;
  name: string;
  from: string;
  /** Only this topic's subscribers get its steps; null: every subscribed contact. */
  topic: string | null;
  steps: SequenceStep[];
  enrollments: { active: number; completed: number; stopped: number; cancelled: number };
  createdAt: string;
  updatedAt: string;
}

export interface Enrollment {
  id: string;
  sequenceId: string;
  contactId: string;
  /** The contact's address; null once the contact is deleted or erased. */
  email: string | null;
  state: 'active' | 'completed' | 'stopped' | 'cancelled';
  /** `unsubscribed`, `suppressed` or `erased` when stopped. */
  stopReason: string | null;
  nextStep: number;
  nextDueAt: string | null;
  enrolledAt: string;
}

/** The condition of an automation's `if` step: a segment filter on the run's contact. */
export type AutomationFilter = SegmentFilter;

/** One step of an automation (SPEC §27); `then`/`else` of a `waitFor`: the event came / the timeout passed. */
export type AutomationStep =
  | { delay: string }
  | { send: string }
  | {
      waitFor: { event: string; timeout: string };
      then?: AutomationStep[] | undefined;
      else?: AutomationStep[] | undefined;
    }
  | { if: AutomationFilter; then?: AutomationStep[] | undefined; else?: AutomationStep[] | undefined }
  | { update: Record<string, string | number | boolean | null> };

/** An automation (SPEC §27): a trigger and a tree of steps. */
export interface Automation {
  id: string;
  name: string;
  from: string | null;
  trigger: { event: string };
  steps: AutomationStep[];
  /** false: no new run starts (runs going on finish). */
  enabled: boolean;
  runs: { active: number; completed: number; stopped: number };
  createdAt: string;
  updatedAt: string;
}

/** One contact's run through an automation. */
export interface AutomationRun {
  id: string;
  automationId: string;
  contactId: string;
  email: string | null;
  state: 'active' | 'completed' | 'stopped';
  stopReason: string | null;
  /** Path of the current step (`1`, `1.else.0`); null once over. */
  position: string | null;
  waiting: 'delay' | 'event' | null;
  dueAt: string | null;
  stepsDone: number;
  startedAt: string;
  updatedAt: string;
}
