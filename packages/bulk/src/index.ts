// Bulk mail (SPEC §14, §15, §27): contacts and audiences, campaigns, sequences and their enrollments,
// automations and their runs,
// the mail they produced (`bulk_emails`) and its statistics. The owner of these tables: the api's
// routes and the worker's fan-out and scheduler both call it. Named exports only.
export {
  claimInbox,
  followedTypes,
  followStream,
  handleInboxEvent,
  type InboxEvent,
} from './automations/inbox-store.js';
export {
  type ClaimedRun,
  claimDueRuns,
  contactMatches,
  INBOX_TABLE,
  type LockedRun,
  lockRun,
  moveRun,
  RUNS_TABLE,
  type RunMove,
  recordRunStep,
  setContactProperties,
} from './automations/runner-store.js';
export { afterBranch, nextPath, stepAt } from './automations/steps.js';
export {
  deleteAutomation,
  getAutomation,
  insertAutomation,
  listAutomations,
  listRuns,
  recordAutomationEvent,
  recordAutomationEvents,
  recordContactEvent,
  type TrackOutcome,
  trackEvent,
  updateAutomation,
} from './automations/store.js';
export {
  advanceFanout,
  type ChunkEmail,
  claimCampaign,
  FANOUT_TABLE,
  fanoutChunk,
  listSegmentRecipients,
  recordChunk,
} from './campaigns/fanout-store.js';
export {
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
  type NewCampaign,
  requestSend,
  updateDraft,
} from './campaigns/store.js';
export { exportContacts, type ImportedContact, upsertContacts } from './contacts/import.js';
export {
  type ContactProperty,
  checkPropertyValue,
  checkPropertyValues,
  MAX_PROPERTIES,
  normaliseDate,
  PROPERTY_TYPES,
  type PropertyType,
  type PropertyValue,
} from './contacts/properties.js';
export {
  type AudienceCounts,
  type ContactPatch,
  deleteContact,
  deleteContactsTo,
  getContact,
  insertContact,
  listAudiences,
  listContacts,
  type NewContact,
  type Recipient,
  reachableContactSql,
  updateContact,
} from './contacts/store.js';
export { rekeyErasedUnsubscribes, unsubscribeAddress } from './contacts/unsubscribe.js';
export {
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
} from './repositories.js';
export {
  type CompileOptions,
  compileSegmentFilter,
  ENGAGEMENT_KINDS,
  type EngagementKind,
  filterReferences,
  filterSize,
  MAX_ENGAGEMENT_DAYS,
  MAX_FILTER_DEPTH,
  MAX_FILTER_NODES,
  PROPERTY_OPS,
  type PropertyOp,
  propertyNameSchema,
  type SegmentFilter,
  segmentFilterSchema,
} from './segments/filter.js';
export { countMatching, getSegment, type Segment } from './segments/store.js';
export {
  advanceEnrollment,
  type ClaimedEnrollment,
  claimDueEnrollments,
  recordStepEmail,
  SCHEDULE_TABLE,
  stopEnrollment,
} from './sequences/scheduler-store.js';
export {
  cancelEnrollment,
  type EnrollOutcome,
  enroll,
  getSequence,
  insertSequence,
  listEnrollments,
  listSequences,
  type StoredStep,
  sequenceSource,
  toStoredSteps,
  updateSequence,
} from './sequences/store.js';
export { DAILY_EVENTS, type DailyKind, mailDaily, mailStats, statsKey, ZERO_STATS } from './stats.js';
export {
  contactPreferences,
  contactTopicStates,
  type Preferences,
  savePreferences,
  type Topic,
  type TopicDefault,
  topicSubscribedSql,
} from './topics/store.js';
