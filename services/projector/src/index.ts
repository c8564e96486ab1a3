export * from './ch-sink.js';
export * from './mailbox-resolver.js';
export * from './pg-sink.js';
export * from './projector.js';
export * from './prune-job.js';
export * from './rebuild.js';
export * from './reproject.js';
