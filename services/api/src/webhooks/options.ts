import type { SecretBox, UrlPolicy } from '@tern/webhooks';

/** What `/webhooks*` needs beyond the shared route deps; a leaf module, so route-deps.ts needs no route. */
export interface WebhookRouteOptions {
  /** Seals secrets at rest (WEBHOOK_SECRETS_KEY). */
  secretBox: SecretBox;
  /** WEBHOOK_ALLOW_PRIVATE and the resolver used by the URL check. */
  urlPolicy: UrlPolicy;
  /** How long a rotated-out secret keeps signing. Default 24 h. */
  rotationOverlapMs?: number;
}
