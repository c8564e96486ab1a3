import { PROCESS_LOG_OPTIONS } from '@tern/auth';
import { pino } from 'pino';

let stdout: ReturnType<typeof pino.destination> | undefined;

/**
 * Standard output, written asynchronously (issue 45 item 5; pino's documented asynchronous
 * logging): a log call copies its line into a buffer and returns; the buffer is written while the
 * event loop runs on, in one write for whatever lines came meanwhile. pino flushes it synchronously
 * when the process exits (an uncaught exception and `process.exit` included); a SIGKILL loses the
 * lines of the one write in flight. One destination per process: the runtimes a test starts one
 * after another share it, so their lines never interleave mid-line.
 */
export function stdoutDestination(): ReturnType<typeof pino.destination> {
  stdout ??= pino.destination({ dest: 1, sync: false });
  return stdout;
}

/**
 * The logger of a Tern process: credentials redacted, request lines with Fastify's fields and the
 * addresses in their URL masked (no personal datum in logs), into `stdoutDestination`
 * (`PROCESS_LOG_OPTIONS` of @tern/auth).
 */
export function processLogger(level: string) {
  return pino({ level, ...PROCESS_LOG_OPTIONS }, stdoutDestination());
}
