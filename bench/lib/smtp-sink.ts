/**
 * A sink SMTP relay in its own process (the SMTP benches' far end): `smtp-server` accepting every
 * message, no TLS, no auth, bodies read and dropped. Its own process, so the relay's CPU is not
 * the bench's. Prints {"smtpPort":N,"httpPort":M} once listening on 127.0.0.1;
 * `GET http://127.0.0.1:M/` answers {"messages":…,"connections":…,"peak":…}; closes on SIGTERM.
 * `--delay-ms=N`: each message is answered N ms after its last byte, as a remote MTA that writes it
 * to its queue before it says 250 (issue 45: 200 ms).
 *   node --import tsx bench/lib/smtp-sink.ts [--delay-ms=200]
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { countConnections } from '../../test/support/smtp-sink.js';

const delayMs = Number(process.argv.find((a) => a.startsWith('--delay-ms='))?.slice(11) ?? 0);
let messages = 0;
/** Connections accepted, open now and open at once at most. */
const { count, options: counting } = countConnections();
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  // The pools of both runs open their connections at once.
  maxClients: 1000,
  ...counting,
  onData(stream, _session, callback) {
    stream.on('data', () => undefined);
    stream.on('end', () => {
      if (delayMs > 0)
        setTimeout(() => {
          messages++;
          callback();
        }, delayMs);
      else {
        messages++;
        callback();
      }
    });
  },
});
// A client that goes away mid-session (a pool closed, a bench killed) is no reason to stop.
smtp.on('error', () => undefined);
const http = createServer((req, res) => {
  // `?reset`: the peak starts again from the connections open now (one run's peak).
  if (req.url?.includes('reset')) count.peak = count.open;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ messages, connections: count.accepted, peak: count.peak }));
});
await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', () => r()));
await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
process.stdout.write(
  `${JSON.stringify({
    smtpPort: (smtp.server.address() as AddressInfo).port,
    httpPort: (http.address() as AddressInfo).port,
  })}\n`,
);
process.once('SIGTERM', () => {
  http.close();
  smtp.close(() => process.exit(0));
});
