import { dailyAnalytics, OUTBOX_TABLE } from './daily-analytics.js';
import { emailLog } from './email-log/email-log.js';
import { logCounts } from './email-log/log-counts.js';
import { recipientEngagement } from './engagement.js';
import { eventStream } from './event-stream/model.js';
import { projectionStatus } from './projection-status.js';
import { providerMessages } from './provider-messages.js';
import type { ChReadModel, PgReadModel, ReadModel } from './read-model.js';
import { suppressionList } from './suppressions/model.js';
import { timeline } from './timeline.js';

/**
 * Every read model of the projector, in the order a batch is applied: the log rows, their
 * counters, the suppressions they cause, the message ids, the recipients' engagement, the event stream (its tenant heads are
 * locked late: held for the shortest time), then the projection's progress (its notice goes last). Retention, erasure and rebuild loop over this list instead of naming tables.
 */
export const PG_READ_MODELS: readonly PgReadModel[] = [
  emailLog,
  logCounts,
  suppressionList,
  providerMessages,
  recipientEngagement,
  timeline,
  eventStream,
  projectionStatus,
];
export const CH_READ_MODELS: readonly ChReadModel[] = [dailyAnalytics];
export const READ_MODELS: readonly ReadModel[] = [...PG_READ_MODELS, ...CH_READ_MODELS];

/** The Postgres tables a rebuild empties (the models replayed from the log). */
export const REBUILT_TABLES: readonly string[] = [
  ...PG_READ_MODELS.filter((m) => m.rebuild === 'truncate').flatMap((m) => m.tables),
  OUTBOX_TABLE,
];
