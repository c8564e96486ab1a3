import { bindPool, type Repository } from '@tern/kernel';
import type pg from 'pg';
import { logsPage } from './email-log/logs-query.js';
import { emailsByMessageId } from './provider-messages.js';

const logStatements = { page: logsPage, byMessageId: emailsByMessageId };

/**
 * The email log's reads outside a tenant resource, over one pool: `GET /logs` pages and the
 * message ids of provider notices (SPEC §7, §21).
 */
export type LogQueries = Repository<typeof logStatements>;

export function createLogQueries(pool: pg.Pool): LogQueries {
  return bindPool(pool, logStatements);
}
