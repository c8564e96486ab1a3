import type { AddressInfo } from 'node:net';
import type { SMTPServer } from 'smtp-server';
import type { SmtpGuard } from './guard.js';

/** A guarded SMTP listener's life: listen, count, close (the same for every listener of Tern). */
export interface GuardedListener {
  /** Listens on `port` (0: any) and resolves the port it got. */
  listen(): Promise<number>;
  /** Connections open now and distinct clients among them (the guard's count). */
  stats(): { connections: number; clients: number };
  close(): Promise<void>;
}

/**
 * Attaches the guard to `server` and gives its life: a client's protocol error or a dropped
 * socket is reported to `onError`, never thrown at the process; only a failed `listen` rejects.
 */
export function serveGuarded(
  server: SMTPServer,
  guard: SmtpGuard,
  opts: { port: number; host?: string; onError(error: Error): void },
): GuardedListener {
  server.on('error', opts.onError);
  guard.attach(server);
  return {
    listen() {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.port, opts.host, () => {
          server.off('error', reject);
          resolve((server.server.address() as AddressInfo).port);
        });
      });
    },
    stats: () => guard.stats(),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
