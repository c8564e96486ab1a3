export * from './errors.js';
export * from './fastify-options.js';
export * from './health.js';
export * from './request-log.js';
