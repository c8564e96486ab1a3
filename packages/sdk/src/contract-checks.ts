// The SDK's spelled-out public types pinned to the contract (`@tern/contracts`, zod-inferred): any
// drift fails `tsc`. Apart from the types so that no module of the SDK imports back the ones it
// describes; nothing imports this file, the typecheck reads it.

import type {
  Assert,
  Automation as ContractAutomation,
  AutomationRun as ContractAutomationRun,
  Contact as ContractContact,
  EmailLogEntry as ContractEmailLogEntry,
  EmailStatus as ContractEmailStatus,
  ErasureResult as ContractErasureResult,
  ImportResult as ContractImportResult,
  InboundMessage as ContractInboundMessage,
  InboundSummary as ContractInboundSummary,
  LogsMeta as ContractLogsMeta,
  LogsResponse as ContractLogsResponse,
  SendEmailInput as ContractSendEmailInput,
  Webhook as ContractWebhook,
  WebhookDelivery as ContractWebhookDelivery,
  WebhookReplay as ContractWebhookReplay,
  WebhookWithSecret as ContractWebhookWithSecret,
  Equals,
} from '@tern/contracts';
import type { Automation, AutomationRun } from './automations.js';
import type { Contact, ErasureResult, ImportContactsResult } from './contacts.js';
import type {
  InboundMessage,
  InboundSummary,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookReplay,
} from './index.js';
import type { EmailLogEntry, EmailStatus, LogsMeta, LogsResponse, SendEmailParams } from './types.js';

type _ContractChecks = [
  Assert<Equals<Automation, ContractAutomation>>,
  Assert<Equals<AutomationRun, ContractAutomationRun>>,
  Assert<Equals<SendEmailParams, ContractSendEmailInput>>,
  Assert<Equals<Contact, ContractContact>>,
  Assert<Equals<ImportContactsResult, ContractImportResult>>,
  Assert<Equals<ErasureResult, ContractErasureResult>>,
  Assert<Equals<EmailStatus, ContractEmailStatus>>,
  Assert<Equals<EmailLogEntry, ContractEmailLogEntry>>,
  Assert<Equals<LogsMeta, ContractLogsMeta>>,
  Assert<Equals<LogsResponse, ContractLogsResponse>>,
  Assert<Equals<WebhookEndpoint, ContractWebhook>>,
  Assert<Equals<WebhookEndpointWithSecret, ContractWebhookWithSecret>>,
  Assert<Equals<WebhookDelivery, ContractWebhookDelivery>>,
  Assert<Equals<WebhookReplay, ContractWebhookReplay>>,
  Assert<Equals<InboundSummary, ContractInboundSummary>>,
  Assert<Equals<InboundMessage, ContractInboundMessage>>,
];
