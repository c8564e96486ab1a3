/**
 * The process roles of `--services=` (docs/deploy.md).
 * `worker`: the background jobs — retention, campaign fan-out, sequence scheduler (the api is HTTP only).
 * `bounce`: the bounce mailbox (SPEC §21), started only when BOUNCE_SMTP_PORT is set.
 * `submission`: SMTP submission (SPEC §22), started only when SMTP_SUBMISSION_PORT is set.
 * `inbound`: the inbound MX listener (SPEC §24), started only when INBOUND_SMTP_PORT is set.
 */
export const SERVICES = [
  'ingest',
  'projector',
  'api',
  'worker',
  'sender',
  'dispatcher',
  'bounce',
  'submission',
  'inbound',
] as const;
export type Service = (typeof SERVICES)[number];
/** The services of one all-in-one process; `submission` runs in it too when SMTP_SUBMISSION_PORT is set. */
export const CORE_SERVICES: readonly Service[] = SERVICES.filter((s) => s !== 'submission');
