import { FRAMEWORK_ERRORS } from './errors.js';
import { ONE_REQUEST_LINE } from './request-log.js';

/**
 * The options every Fastify app of Tern is built with (`Fastify({ ...TERN_FASTIFY_OPTIONS, … })`):
 * one request line per answer, and the contract's answer to what Fastify refuses before any route.
 */
export const TERN_FASTIFY_OPTIONS = { ...ONE_REQUEST_LINE, ...FRAMEWORK_ERRORS } as const;
