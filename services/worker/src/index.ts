// The worker (issue 25, item 5): the background jobs out of the api — retention, the campaign
// fan-out, the sequence scheduler and the send path of their mail. What the runtime's worker role,
// the benches and this service's tests use of it, named.
export {
  type AutomationRunner,
  type AutomationRunnerOptions,
  automationSource,
  createAutomationRunner,
  DEFAULT_AUTOMATION_LEASE_MS,
} from './automations/runner.js';
export {
  type BulkMail,
  type BulkMailer,
  type ComposeFailure,
  composeMail,
  cutSubject,
  derivedEmailId,
  type Recipient,
  resolveContent,
  tryComposeMail,
} from './bulk/mail.js';
export { outgoingMailer } from './bulk/outgoing-mailer.js';
export {
  type CampaignFanout,
  type CampaignFanoutOptions,
  createCampaignFanout,
  DEFAULT_LEASE_MS,
} from './campaigns/fanout.js';
export {
  createRetentionJob,
  RETENTION_LOCK_KEY,
  type RetentionJob,
  type RetentionJobOptions,
  type RetentionRunResult,
} from './retention-job.js';
export {
  createSequenceScheduler,
  DEFAULT_SEQUENCE_LEASE_MS,
  type SequenceScheduler,
  type SequenceSchedulerOptions,
} from './sequences/scheduler.js';
