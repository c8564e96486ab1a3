export { envelopeSender } from './envelope.js';
export type {
  FollowUp,
  GetTemplate,
  IsSuppressed,
  MailProvider,
  ProviderFault,
  ProviderResult,
  SendContext,
  Signing,
  SuppressedAmong,
} from './ports.js';
export { createSandboxProvider, SANDBOX_DOMAIN } from './providers/sandbox.js';
export {
  classifySmtpError,
  createSmtpProvider,
  DEFAULT_SMTP_POOL,
  DKIM_SIGNED_HEADERS,
  relayMessageId,
  type SmtpPool,
  type SmtpProviderOptions,
} from './providers/smtp.js';
export {
  createSender,
  DEFAULT_RETRY_DELAYS_MS,
  type ProviderHealth,
  SENDER_GROUP,
  type Sender,
  type SenderOptions,
} from './sender.js';
export { applyTracking, type TrackingContext } from './tracking.js';
