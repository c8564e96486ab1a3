/** `bounce`: the bounce mailbox (SPEC §21), started only when BOUNCE_SMTP_PORT is set. */
export const SERVICES = ['ingest', 'projector', 'api', 'sender', 'dispatcher', 'bounce'] as const;
export type Service = (typeof SERVICES)[number];
