import type { RenderedMessage } from '@tern/contracts';
import type pg from 'pg';

/** A template's parts (SPEC §12). */
export interface TemplateParts {
  subject: string;
  html: string | null;
  text: string | null;
}
export type Variables = Record<string, string | number | boolean | null>;

/**
 * Renders a template with variables (SPEC §11: a missing variable is an empty string; values
 * are HTML-escaped in `html`). Injected: the templates work provides the real one
 * (`renderTemplate` of `@tern/domain`); `defaultRenderTemplate` is the minimal stand-in.
 */
export type RenderTemplate = (template: TemplateParts, variables: Variables) => TemplateParts;

/**
 * True when the address is on the tenant's suppression list (SPEC §13). Injected: the
 * suppressions work provides the real one (`isSuppressed` of its store).
 */
export type IsSuppressed = (pool: pg.Pool, tenantId: string, email: string) => Promise<boolean>;

/** Events a provider reports after accepting a message (the sandbox's simulated outcomes). */
export type FollowUp =
  | { type: 'email.delivered' }
  | { type: 'email.bounced'; bounceType: 'hard' | 'soft'; reason: string }
  | { type: 'email.complained'; feedbackType?: string };

/** What a provider answered for one message. */
export type ProviderResult =
  | { kind: 'sent'; messageId: string; followUps?: FollowUp[] }
  /** A temporary refusal (4xx, connection error): retried with backoff. */
  | { kind: 'delayed'; reason: string; retryAfterMs?: number }
  /** A permanent refusal (5xx): the address does not take mail. */
  | { kind: 'bounced'; reason: string }
  | { kind: 'failed'; reason: string };

export interface MailProvider {
  /** Stored as `provider` on `email.sent`. */
  readonly name: string;
  send(message: RenderedMessage, context: { tenantId: string; emailId: string }): Promise<ProviderResult>;
  close?(): Promise<void>;
}
