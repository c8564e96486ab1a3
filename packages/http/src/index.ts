export * from './errors.js';
export * from './health.js';
export * from './request-log.js';
