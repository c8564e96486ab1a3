import { type DeliveryEvent, type EmailLogEntry, type EmailStatus, STATUS_RANK } from '@tern/contracts';
import { type EmailDims, evolveDims } from './email-dims.js';
import { instant, normaliseTimestamp } from './time.js';

/**
 * The fold of one email's delivery events (SPEC §5, emmett style): `evolve(state, event)` is
 * pure, and for distinct events it commutes — any order of the same set of events gives the
 * same state. That is what lets the projector apply events as they come (late, early,
 * redelivered) and still agree with a rebuild from the log.
 *
 * Every part of the state is a maximum (or minimum, or count) over the events seen, under a
 * total order that breaks ties by event id, so commutativity holds by construction.
 */

/** Fields of the email, taken from its defining `email.queued` (earliest `occurredAt`, then smallest id). */
export type QueuedInfo = {
  /** `occurredAt` of the defining `email.queued`, normalised to `…Z`. */
  createdAt: string;
  /** Null once the recipient was erased (its data key is gone, SPEC §14). */
  toEmail: string | null;
  subject: string | null;
  templateId: string | null;
  tags: string[];
  from: string | null;
  /** Normalised to `…Z`, or null. */
  scheduledAt: string | null;
  /** The email's project (SPEC §16), or null. States stored before projects existed lack it: read with `?? null`. */
  projectId: string | null;
  /** The campaign the email belongs to (SPEC §26), or null. States stored before it lack it: read with `?? null`. */
  campaignId?: string | null;
  queuedEventId: string;
};

/**
 * State of one email. Only JSON values: it is stored as `jsonb` next to the query columns.
 * All timestamps are normalised (`new Date(ms).toISOString()`).
 */
export type EmailState = {
  tenantId: string;
  emailId: string;
  /** Null until an `email.queued` is known; such an email is invisible. */
  queued: QueuedInfo | null;
  /** Winner of the status fold; null while neither `email.queued` nor a status event is known. */
  status: EmailStatus | null;
  /** `occurredAt` and id of the event that set `status` — kept for the tie rule. */
  statusAt: string | null;
  statusEventId: string | null;
  /** From the latest `email.sent` (`occurredAt`, then greatest id). */
  provider: string | null;
  messageId: string | null;
  sentAt: string | null;
  sentEventId: string | null;
  openCount: number;
  firstOpenedAt: string | null;
  lastOpenedAt: string | null;
  clickCount: number;
  complaintCount: number;
  /**
   * An `email.bounced` with `bounceType: hard` was seen (whatever status won): the recipient goes
   * on the suppression list (SPEC §13). States stored before this field lack it: read with `?? false`.
   */
  hardBounced: boolean;
  /**
   * Opens no person made (`machine: true`: Apple Mail Privacy Protection, security scanners; SPEC
   * §21): kept apart from `openCount`. States stored before this field lack it: read with `?? 0`.
   */
  machineOpenCount: number;
  /**
   * Complaints that name one recipient of several (SPEC §22): counted in `complaintCount`, but
   * the address the projector suppresses is the named one, not `toEmail`. Read with `?? 0`.
   */
  namedComplaintCount?: number;
  /** Analytics dimensions (SPEC §26, `email-dims.ts`). States stored before them lack it. */
  dims?: EmailDims;
};

/** The one recipient (of several) an event is about, or undefined when it is the whole message's (SPEC §22). */
export function recipientOf(event: DeliveryEvent): string | undefined {
  const data = event.data as { recipient?: unknown } | undefined;
  return typeof data?.recipient === 'string' ? data.recipient : undefined;
}

export function initialEmailState(tenantId: string, emailId: string): EmailState {
  return {
    tenantId,
    emailId,
    queued: null,
    status: null,
    statusAt: null,
    statusEventId: null,
    provider: null,
    messageId: null,
    sentAt: null,
    sentEventId: null,
    openCount: 0,
    firstOpenedAt: null,
    lastOpenedAt: null,
    clickCount: 0,
    complaintCount: 0,
    hardBounced: false,
    machineOpenCount: 0,
  };
}

/** A point in the total order of events: instant, then id (ids are ASCII, so `<` is byte order). */
type Stamp = { ms: number; id: string };

/** True when `a` comes after `b`: later instant, or the same instant and a greater id. */
function isAfter(a: Stamp, b: Stamp): boolean {
  return a.ms !== b.ms ? a.ms > b.ms : a.id > b.id;
}

function stampOf(at: string | null, id: string | null): Stamp | null {
  return at === null || id === null ? null : { ms: instant(at), id };
}

/** Status of a queued email: SCHEDULED when it is scheduled after its own `occurredAt` (never the wall clock, so replays agree). */
export function queuedStatus(queued: Pick<QueuedInfo, 'createdAt' | 'scheduledAt'>): EmailStatus {
  return queued.scheduledAt !== null && instant(queued.scheduledAt) > instant(queued.createdAt)
    ? 'SCHEDULED'
    : 'QUEUED';
}

/** Status rule: highest rank wins, ties → later `occurredAt`, then greater event id. */
function withStatus(state: EmailState, status: EmailStatus, at: Stamp): EmailState {
  const current = stampOf(state.statusAt, state.statusEventId);
  if (state.status !== null && current !== null) {
    const rank = STATUS_RANK[status];
    const currentRank = STATUS_RANK[state.status];
    if (rank < currentRank || (rank === currentRank && !isAfter(at, current))) return state;
  }
  return { ...state, status, statusAt: new Date(at.ms).toISOString(), statusEventId: at.id };
}

function queuedInfoOf(event: Extract<DeliveryEvent, { type: 'email.queued' }>): QueuedInfo {
  const { data } = event;
  return {
    createdAt: normaliseTimestamp(event.occurredAt),
    toEmail: data.toEmail,
    subject: data.subject,
    templateId: data.templateId ?? null,
    tags: [...(data.tags ?? [])],
    from: data.from ?? null,
    scheduledAt: data.scheduledAt === undefined ? null : normaliseTimestamp(data.scheduledAt),
    projectId: data.projectId ?? null,
    ...(data.campaignId === undefined ? {} : { campaignId: data.campaignId }),
    queuedEventId: event.id,
  };
}

function onQueued(
  state: EmailState,
  event: Extract<DeliveryEvent, { type: 'email.queued' }>,
  at: Stamp,
): EmailState {
  const defining =
    state.queued === null ? null : { ms: instant(state.queued.createdAt), id: state.queued.queuedEventId };
  // Only the earliest email.queued defines the email; later ones change nothing.
  if (defining !== null && !isAfter(defining, at)) return state;
  const queued = queuedInfoOf(event);
  // Every status event ranks above 0, so a rank-0 status can only be the previous defining
  // email.queued's own: the new defining one takes its place. A higher status stays.
  const keepsStatus = state.status !== null && STATUS_RANK[state.status] > 0;
  return keepsStatus
    ? { ...state, queued }
    : {
        ...state,
        queued,
        status: queuedStatus(queued),
        statusAt: queued.createdAt,
        statusEventId: event.id,
      };
}

function onSent(
  state: EmailState,
  event: Extract<DeliveryEvent, { type: 'email.sent' }>,
  at: Stamp,
): EmailState {
  const latest = stampOf(state.sentAt, state.sentEventId);
  const next =
    latest === null || isAfter(at, latest)
      ? {
          ...state,
          provider: event.data.provider,
          messageId: event.data.messageId,
          sentAt: new Date(at.ms).toISOString(),
          sentEventId: event.id,
        }
      : state;
  return withStatus(next, 'SENT', at);
}

function onOpened(state: EmailState, at: Stamp): EmailState {
  const iso = new Date(at.ms).toISOString();
  const first = state.firstOpenedAt;
  const last = state.lastOpenedAt;
  return {
    ...state,
    openCount: state.openCount + 1,
    firstOpenedAt: first === null || at.ms < instant(first) ? iso : first,
    lastOpenedAt: last === null || at.ms > instant(last) ? iso : last,
  };
}

/**
 * Apply one event. Pure: returns a new state (or the same object when nothing changed) and
 * never mutates its input. Callers dedupe by event id first (a count would count a duplicate twice).
 */
export function evolve(state: EmailState, event: DeliveryEvent): EmailState {
  const next = evolveCore(state, event);
  const dims = evolveDims(state.dims, event);
  return dims === state.dims ? next : { ...next, dims };
}

function evolveCore(state: EmailState, event: DeliveryEvent): EmailState {
  if (event.tenantId !== state.tenantId || event.emailId !== state.emailId) {
    throw new Error(
      `event ${event.id} is for ${event.tenantId}/${event.emailId}, not for ${state.tenantId}/${state.emailId}`,
    );
  }
  const at: Stamp = { ms: instant(event.occurredAt), id: event.id };
  switch (event.type) {
    case 'email.queued':
      return onQueued(state, event, at);
    case 'email.sent':
      return onSent(state, event, at);
    case 'email.delayed':
      return withStatus(state, 'DELAYED', at);
    case 'email.delivered':
      return withStatus(state, 'DELIVERED', at);
    case 'email.bounced': {
      // The email's status is the fold of all its events, whichever recipient they name (SPEC
      // §22, docs/sending.md); `hardBounced` is the whole message's (its `toEmail`'s) only.
      const bounced = withStatus(state, 'BOUNCED', at);
      return event.data.bounceType === 'hard' && !state.hardBounced && recipientOf(event) === undefined
        ? { ...bounced, hardBounced: true }
        : bounced;
    }
    case 'email.failed':
      return withStatus(state, 'FAILED', at);
    case 'email.suppressed':
      // One address of several taken out of the envelope: the message still goes to the others.
      return recipientOf(event) === undefined ? withStatus(state, 'SUPPRESSED', at) : state;
    case 'email.cancelled':
      return withStatus(state, 'CANCELLED', at);
    // A scanner's open or click (bot: true) stays on the timeline but is not a human one; a
    // machine open (SPEC §21) is counted apart.
    case 'email.opened':
      if (event.data.machine) return { ...state, machineOpenCount: (state.machineOpenCount ?? 0) + 1 };
      return event.data.bot ? state : onOpened(state, at);
    case 'email.clicked':
      return event.data.bot ? state : { ...state, clickCount: state.clickCount + 1 };
    case 'email.complained':
      return recipientOf(event) === undefined
        ? { ...state, complaintCount: state.complaintCount + 1 }
        : {
            ...state,
            complaintCount: state.complaintCount + 1,
            namedComplaintCount: (state.namedComplaintCount ?? 0) + 1,
          };
    default: {
      const _exhaustive: never = event;
      throw new Error(`unknown event type: ${JSON.stringify(_exhaustive)}`);
    }
  }
}

/**
 * Fold a list of events of one email from the initial state: duplicates (same id) count once,
 * the first occurrence wins. For tests and rebuild checks; the projector dedupes through its
 * timeline's key (`email_events`) and calls `evolve` itself.
 */
export function foldEmail(events: readonly DeliveryEvent[]): EmailState {
  const first = events[0];
  if (first === undefined) throw new RangeError('foldEmail needs at least one event');
  const seen = new Set<string>();
  let state = initialEmailState(first.tenantId, first.emailId);
  for (const event of events) {
    if (seen.has(event.id)) continue;
    seen.add(event.id);
    state = evolve(state, event);
  }
  return state;
}

/** The log entry of SPEC §7, or null while the email is not queued (invisible). */
export function toLogEntry(state: EmailState): EmailLogEntry | null {
  const { queued } = state;
  if (queued === null) return null;
  return {
    id: state.emailId,
    toEmail: queued.toEmail,
    subject: queued.subject,
    // A known email.queued always yields a status; the fallback only satisfies the type.
    status: state.status ?? queuedStatus(queued),
    provider: state.provider,
    messageId: state.messageId,
    createdAt: queued.createdAt,
    tags: [...queued.tags],
    opened: state.openCount > 0,
    clicked: state.clickCount > 0,
    complained: state.complaintCount > 0,
  };
}
