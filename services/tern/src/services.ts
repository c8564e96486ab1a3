export const SERVICES = ['ingest', 'projector', 'api', 'sender', 'dispatcher'] as const;
export type Service = (typeof SERVICES)[number];
