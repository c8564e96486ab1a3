export const SERVICES = ['ingest', 'projector', 'api', 'sender', 'dispatcher', 'submission'] as const;
export type Service = (typeof SERVICES)[number];
/** The services of one all-in-one process; `submission` runs in it too when SMTP_SUBMISSION_PORT is set. */
export const CORE_SERVICES: readonly Service[] = ['ingest', 'projector', 'api', 'sender', 'dispatcher'];
